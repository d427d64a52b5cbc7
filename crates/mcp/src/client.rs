//! The connection to one MCP server: started on `connect`, started again on the next call after
//! it closed, and turned into agent tools by `tools`.

use std::collections::{BTreeSet, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use oxpi_agent_core::AgentToolHandle;
use oxpi_ai::Tool;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;

use crate::error::McpError;
use crate::server::{Endpoint, McpServer};
use crate::tool::McpTool;

/// How many bytes of the server's stderr are kept for error messages.
const STDERR_TAIL_BYTES: usize = 4096;

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
    stderr: Arc<StdMutex<VecDeque<u8>>>,
}

impl Connection {
    /// The last lines the server wrote to stderr, as a suffix for an error message.
    pub(crate) fn stderr_tail(&self) -> String {
        stderr_suffix(&self.stderr)
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
    /// a schema does not compile, is not an object schema, or cannot be expressed by the
    /// server's [`target_api`](McpServer::target_api).
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
    ) -> Result<(Vec<AgentToolHandle>, Vec<oxpi_ai::tool::SchemaError>), McpError> {
        self.list().await
    }

    async fn list(
        &self,
    ) -> Result<(Vec<AgentToolHandle>, Vec<oxpi_ai::tool::SchemaError>), McpError> {
        let server = &self.shared.server;
        self.shared.tools_changed.store(false, Ordering::SeqCst);
        let connection = self.shared.connection().await?;
        let listed = connection
            .service
            .list_all_tools()
            .await
            .map_err(|e| McpError::Request {
                server: server.name.clone(),
                request: "tools/list",
                reason: format!("{e}{}", connection.stderr_tail()),
            })?;
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

/// Starts or reaches the server and runs the handshake.
async fn connect(
    server: &McpServer,
    tools_changed: Arc<AtomicBool>,
) -> Result<Connection, McpError> {
    let handler = Handler { tools_changed };
    let connect_error = |reason: String| McpError::Connect {
        server: server.name.clone(),
        reason,
    };
    match &server.endpoint {
        Endpoint::Stdio {
            program,
            args,
            env,
            current_dir,
        } => {
            let mut command = tokio::process::Command::new(program);
            command.args(args).envs(env).kill_on_drop(true);
            if let Some(dir) = current_dir {
                command.current_dir(dir);
            }
            let (transport, stderr) = TokioChildProcess::builder(command)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|source| McpError::Spawn {
                    server: server.name.clone(),
                    program: program.clone(),
                    source,
                })?;
            let pid = transport.id();
            let tail = Arc::new(StdMutex::new(VecDeque::new()));
            if let Some(stderr) = stderr {
                tokio::spawn(keep_stderr_tail(server.name.clone(), stderr, tail.clone()));
            }
            let service = match handler.serve(transport).await {
                Ok(service) => service,
                Err(error) => {
                    // Give the reader a moment to collect why the process ended.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    return Err(connect_error(format!("{error}{}", stderr_suffix(&tail))));
                }
            };
            Ok(Connection {
                service,
                pid,
                stderr: tail,
            })
        }
        Endpoint::Http {
            url,
            headers,
            bearer,
        } => connect_http(server, handler, url, headers, bearer.as_deref()).await,
    }
}

/// The kept end of the server's stderr as a suffix for an error message (empty if none).
fn stderr_suffix(tail: &Arc<StdMutex<VecDeque<u8>>>) -> String {
    let text = match tail.lock() {
        Ok(bytes) => String::from_utf8_lossy(&bytes.iter().copied().collect::<Vec<_>>())
            .trim()
            .to_string(),
        Err(_) => String::new(),
    };
    if text.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends with: {text}")
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
        stderr: Arc::new(StdMutex::new(VecDeque::new())),
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

/// Reads the server's stderr line by line: logs each line and keeps the last few KiB.
async fn keep_stderr_tail(
    server: String,
    stderr: tokio::process::ChildStderr,
    tail: Arc<StdMutex<VecDeque<u8>>>,
) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %server, "stderr: {line}");
        if let Ok(mut bytes) = tail.lock() {
            bytes.extend(line.as_bytes());
            bytes.push_back(b'\n');
            let excess = bytes.len().saturating_sub(STDERR_TAIL_BYTES);
            bytes.drain(..excess);
        }
    }
}
