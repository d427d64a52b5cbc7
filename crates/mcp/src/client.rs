//! The connection to one MCP server: started on `connect`, started again on the next call after
//! it closed, and turned into agent tools by `tools`.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use oxpi_agent_core::AgentToolHandle;
use oxpi_ai::tool::SchemaError;
use oxpi_ai::Tool;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use crate::error::McpError;
use crate::server::{Endpoint, McpServer};
use crate::stdio::{self, Diagnostics};
use crate::tool::McpTool;

/// Receives the server's notifications.
#[derive(Clone)]
pub(crate) struct Handler {
    tools_changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("oxpi-mcp", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// One live session with the server.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, Handler>,
    pid: Option<u32>,
    diagnostics: Diagnostics,
}

impl Connection {
    /// The last lines the server wrote to stderr (and its last unreadable line on stdout), as
    /// a suffix for an error message.
    pub(crate) fn stderr_tail(&self) -> String {
        self.diagnostics.suffix()
    }
}

/// What the client and its tools share.
pub(crate) struct Shared {
    pub(crate) server: McpServer,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    tools_changed: Arc<AtomicBool>,
}

impl Shared {
    /// The live connection, or a new one when there is none or it has closed.
    pub(crate) async fn connection(&self) -> Result<Arc<Connection>, McpError> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            if !connection.service.is_transport_closed() && !connection.service.is_closed() {
                return Ok(connection.clone());
            }
            tracing::info!(server = %self.server.name, "MCP server connection closed; reconnecting");
        }
        let connection = Arc::new(connect(&self.server, self.tools_changed.clone()).await?);
        *slot = Some(connection.clone());
        Ok(connection)
    }
}

/// A client of one MCP server. Its [`tools`](Self::tools) are [`AgentToolHandle`]s that call the
/// server; the client and those handles share one connection, which ends (and a stdio server's
/// process is killed) when the last of them is dropped.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use oxpi_mcp::{McpClient, McpServer};
///
/// let time = McpClient::connect(McpServer::stdio("time", "mcp-server-time")).await?;
/// let tools = time.tools().await?; // get_current_time, convert_time
/// let model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
/// let agent = oxpi_agent_core::Agent::new(
///     oxpi_agent_core::AgentOptions::new(model).with_tools(tools),
/// );
/// agent.prompt("What time is it in Tokyo?").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.shared.server.name)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts (stdio) or reaches (HTTP) the server and completes MCP's handshake.
    pub async fn connect(server: McpServer) -> Result<Self, McpError> {
        let tools_changed = Arc::new(AtomicBool::new(false));
        let connection = Arc::new(connect(&server, tools_changed.clone()).await?);
        Ok(Self {
            shared: Arc::new(Shared {
                server,
                connection: tokio::sync::Mutex::new(Some(connection)),
                tools_changed,
            }),
        })
    }

    /// The server's name.
    pub fn server_name(&self) -> &str {
        &self.shared.server.name
    }

    /// The process id of a stdio server's current process (`None` for HTTP, or before the
    /// next call restarts a server that exited).
    pub async fn server_pid(&self) -> Option<u32> {
        let slot = self.shared.connection.lock().await;
        slot.as_ref().and_then(|c| c.pid)
    }

    /// Whether the server said its tool list changed (`notifications/tools/list_changed`) since
    /// the last [`tools`](Self::tools); call `tools` again to get the new list.
    pub fn tools_changed(&self) -> bool {
        self.shared.tools_changed.load(Ordering::SeqCst)
    }

    /// Lists the server's tools (every page) as agent tools. Fails, naming every such tool, when
    /// a schema does not compile, is not an object schema, is nested too deep, or cannot be
    /// expressed by the server's [`target_api`](McpServer::target_api), and when a tool's name
    /// (with the server's prefix, if set) is not one every model API accepts: 1 to 64 ASCII
    /// letters, digits, `_` or `-`. Listing takes at most the server's
    /// [`connect_timeout`](McpServer::connect_timeout).
    pub async fn tools(&self) -> Result<Vec<AgentToolHandle>, McpError> {
        let (handles, rejected) = self.list().await?;
        if rejected.is_empty() {
            Ok(handles)
        } else {
            Err(McpError::Schema {
                server: self.shared.server.name.clone(),
                tools: rejected,
            })
        }
    }

    /// Like [`tools`](Self::tools), but leaves out the tools whose schema cannot be used and
    /// returns their errors beside the others.
    pub async fn tools_lenient(
        &self,
    ) -> Result<(Vec<AgentToolHandle>, Vec<SchemaError>), McpError> {
        self.list().await
    }

    async fn list(&self) -> Result<(Vec<AgentToolHandle>, Vec<SchemaError>), McpError> {
        let server = &self.shared.server;
        self.shared.tools_changed.store(false, Ordering::SeqCst);
        let limit = server.connect_timeout;
        let listing = async {
            let connection = self.shared.connection().await?;
            connection
                .service
                .list_all_tools()
                .await
                .map_err(|e| McpError::Request {
                    server: server.name.clone(),
                    request: "tools/list",
                    reason: format!("{e}{}", connection.stderr_tail()),
                })
        };
        let listed =
            tokio::time::timeout(limit, listing)
                .await
                .map_err(|_| McpError::Request {
                    server: server.name.clone(),
                    request: "tools/list",
                    reason: format!(
                        "no complete answer within {:.1}s (the connect timeout)",
                        limit.as_secs_f64()
                    ),
                })??;
        let mut names = BTreeSet::new();
        let mut handles = Vec::with_capacity(listed.len());
        let mut rejected = Vec::new();
        for tool in listed {
            let name = server.tool_name(&tool.name);
            if !names.insert(name.clone()) {
                return Err(McpError::DuplicateTool {
                    server: server.name.clone(),
                    name,
                });
            }
            if let Err(reason) = check_tool_name(&name) {
                rejected.push(SchemaError {
                    tool: shown_name(&name),
                    reason,
                });
                continue;
            }
            let definition = Tool {
                name: name.clone(),
                description: tool.description.as_deref().unwrap_or_default().to_string(),
                parameters: serde_json::Value::Object((*tool.input_schema).clone()),
            };
            if let Some(api) = &server.target_api {
                if let Err(error) = oxpi_ai::schema::check_for_api(api, &definition) {
                    rejected.push(error);
                    continue;
                }
            }
            let label = tool.title.clone().unwrap_or_else(|| tool.name.to_string());
            let call = McpTool::new(self.shared.clone(), tool.name.to_string());
            match AgentToolHandle::from_definition(definition, label, call) {
                Ok(handle) => handles.push(handle),
                Err(error) => rejected.push(error),
            }
        }
        Ok((handles, rejected))
    }

    /// Ends the session: a stdio server gets its stdin closed, then SIGTERM, then SIGKILL.
    /// The next call through one of this client's tools connects again.
    pub async fn close(&self) {
        let connection = self.shared.connection.lock().await.take();
        if let Some(connection) = connection {
            match Arc::try_unwrap(connection) {
                Ok(mut connection) => {
                    let _ = connection.service.close().await;
                }
                Err(shared) => shared.service.cancellation_token().cancel(),
            }
        }
    }
}

/// The most characters of a tool name: what OpenAI's and Anthropic's APIs accept.
const MAX_TOOL_NAME_CHARS: usize = 64;

/// Whether every model API accepts `name` as a tool name (OpenAI and Anthropic take
/// `^[a-zA-Z0-9_-]{1,64}$`; Gemini takes those too, and more).
fn check_tool_name(name: &str) -> Result<(), String> {
    let rule = format!(
        "a tool name must be 1 to {MAX_TOOL_NAME_CHARS} ASCII letters, digits, `_` or `-`, \
         as the model APIs require"
    );
    if name.is_empty() {
        return Err(format!("the name is empty; {rule}"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!("the name has {bad:?}; {rule}"));
    }
    let chars = name.chars().count();
    if chars > MAX_TOOL_NAME_CHARS {
        return Err(format!("the name has {chars} characters; {rule}"));
    }
    Ok(())
}

/// `name` for an error message: its first 80 characters.
fn shown_name(name: &str) -> String {
    match name.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &name[..end]),
        None => name.to_string(),
    }
}

/// Starts or reaches the server and runs the handshake, within the server's connect timeout.
async fn connect(
    server: &McpServer,
    tools_changed: Arc<AtomicBool>,
) -> Result<Connection, McpError> {
    let handler = Handler { tools_changed };
    let connect_error = |reason: String| McpError::Connect {
        server: server.name.clone(),
        reason,
    };
    let limit = server.connect_timeout;
    let no_answer = || {
        format!(
            "no answer to `initialize` within {:.1}s (the connect timeout)",
            limit.as_secs_f64()
        )
    };
    match &server.endpoint {
        Endpoint::Stdio {
            program,
            args,
            env,
            current_dir,
        } => {
            let spawned = stdio::spawn(
                &server.name,
                program,
                args,
                env,
                current_dir.as_ref(),
                server.max_result_bytes,
            )
            .map_err(|source| McpError::Spawn {
                server: server.name.clone(),
                program: program.clone(),
                source,
            })?;
            let diagnostics = spawned.diagnostics;
            // On a timeout the transport is dropped, and with it the process (killed).
            let reason = match tokio::time::timeout(limit, handler.serve(spawned.transport)).await {
                Ok(Ok(service)) => {
                    return Ok(Connection {
                        service,
                        pid: spawned.pid,
                        diagnostics,
                    })
                }
                Ok(Err(error)) => {
                    // Give the reader a moment to collect why the process ended.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    error.to_string()
                }
                Err(_) => no_answer(),
            };
            Err(connect_error(format!("{reason}{}", diagnostics.suffix())))
        }
        Endpoint::Http {
            url,
            headers,
            bearer,
        } => {
            let reaching = connect_http(server, handler, url, headers, bearer.as_deref());
            match tokio::time::timeout(limit, reaching).await {
                Ok(connected) => connected,
                Err(_) => Err(connect_error(no_answer())),
            }
        }
    }
}

#[cfg(feature = "http")]
async fn connect_http(
    server: &McpServer,
    handler: Handler,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    bearer: Option<&str>,
) -> Result<Connection, McpError> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;

    let connect_error = |reason: String| McpError::Connect {
        server: server.name.clone(),
        reason,
    };
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| connect_error(format!("bad header name {name:?}: {e}")))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|e| connect_error(format!("bad value for header {name}: {e}")))?;
        custom.insert(name, value);
    }
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(custom);
    if let Some(token) = bearer {
        config = config.auth_header(token.to_string());
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    let service = handler
        .serve(transport)
        .await
        .map_err(|e| connect_error(e.to_string()))?;
    Ok(Connection {
        service,
        pid: None,
        diagnostics: Diagnostics::default(),
    })
}

#[cfg(not(feature = "http"))]
async fn connect_http(
    server: &McpServer,
    _handler: Handler,
    url: &str,
    _headers: &std::collections::BTreeMap<String, String>,
    _bearer: Option<&str>,
) -> Result<Connection, McpError> {
    Err(McpError::Unsupported(format!(
        "MCP server `{}` is at {url}, but oxpi-mcp was built without its feature \"http\"",
        server.name
    )))
}
