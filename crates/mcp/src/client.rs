//! [`McpClient`], a client of one MCP server: connects on `connect` (the session itself is
//! [`crate::connection`]) and turns the server's tools into agent tools with `tools`, checking
//! their names and schemas.

use std::collections::BTreeSet;
use std::sync::Arc;

use oxpi_agent_core::AgentToolHandle;
use oxpi_ai::tool::SchemaError;
use oxpi_ai::Tool;

use crate::connection::Shared;
use crate::error::McpError;
use crate::server::McpServer;
use crate::tool::McpTool;

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
        Ok(Self {
            shared: Arc::new(Shared::connect(server).await?),
        })
    }

    /// The server's name.
    pub fn server_name(&self) -> &str {
        &self.shared.server.name
    }

    /// The process id of a stdio server's current process (`None` for HTTP, or before the
    /// next call restarts a server that exited).
    pub async fn server_pid(&self) -> Option<u32> {
        self.shared.pid().await
    }

    /// Whether the server said its tool list changed (`notifications/tools/list_changed`) since
    /// the last [`tools`](Self::tools); call `tools` again to get the new list.
    pub fn tools_changed(&self) -> bool {
        self.shared.tools_changed()
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
        self.shared.clear_tools_changed();
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
            let definition = Tool::new(
                name.clone(),
                tool.description.as_deref().unwrap_or_default(),
                serde_json::Value::Object((*tool.input_schema).clone()),
            );
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
        self.shared.close().await;
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
