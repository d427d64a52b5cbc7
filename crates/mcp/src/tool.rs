//! One tool of an MCP server as a [`DynamicAgentTool`]: a call with a timeout, cancelled (MCP's
//! `notifications/cancelled`) when the agent aborts, and a clear error when the server fails.

use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt};
use oxpi_agent_core::{AgentToolResult, DynamicAgentTool, ToolError, ToolUpdateFn};
use rmcp::model::CallToolRequestParams;
use rmcp::ServiceError;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::connection::Shared;
use crate::content::to_agent_result;

/// The text of a call ended by the agent's abort (as oxpi-tools' tools say it).
const ABORTED: &str = "Operation aborted";

/// Calls the tool `name` of the server behind `shared`.
pub(crate) struct McpTool {
    shared: Arc<Shared>,
    name: String,
}

impl McpTool {
    pub(crate) fn new(shared: Arc<Shared>, name: String) -> Self {
        Self { shared, name }
    }

    async fn call(
        &self,
        args: Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<AgentToolResult, ToolError> {
        let server = &self.shared.server;
        if cancel.is_cancelled() {
            return Err(ToolError::new(ABORTED));
        }
        // One deadline for (re)starting the server and the call: a server that restarts but
        // never completes its handshake ends the call in time too.
        let deadline = tokio::time::Instant::now() + server.call_timeout;
        let connection = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ToolError::new(ABORTED)),
            connection = tokio::time::timeout_at(deadline, self.shared.connection()) => match connection {
                Ok(connection) => connection.map_err(|e| ToolError::new(e.to_string()))?,
                Err(_) => return Err(ToolError::new(format!(
                    "MCP tool {} (server `{}`) did not answer within {:.1}s: the server was \
                     being started again and did not complete its handshake",
                    self.name,
                    server.name,
                    server.call_timeout.as_secs_f64()
                ))),
            },
        };
        let params = CallToolRequestParams::new(self.name.clone()).with_arguments(args);
        // Dropping the call (abort, timeout) makes rmcp send `notifications/cancelled`.
        let call = connection.service.peer().call_tool(params);
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ToolError::new(ABORTED)),
            outcome = tokio::time::timeout_at(deadline, call) => outcome,
        };
        match outcome {
            Err(_) => Err(ToolError::new(format!(
                "MCP tool {} (server `{}`) did not answer within {:.1}s; the call was cancelled",
                self.name,
                server.name,
                server.call_timeout.as_secs_f64()
            ))),
            Ok(Ok(result)) => to_agent_result(&self.name, result, server.max_result_bytes),
            Ok(Err(ServiceError::TransportClosed)) => Err(ToolError::new(format!(
                "MCP server `{}` closed the connection during the call to {} (it exited or \
                 crashed){}; it is started again on the next call",
                server.name,
                self.name,
                connection.stderr_tail()
            ))),
            Ok(Err(ServiceError::McpError(error))) => Err(ToolError::new(format!(
                "MCP tool {} (server `{}`) failed: {}",
                self.name, server.name, error.message
            ))),
            Ok(Err(error)) => Err(ToolError::new(format!(
                "MCP tool {} (server `{}`) failed: {error}",
                self.name, server.name
            ))),
        }
    }
}

impl DynamicAgentTool for McpTool {
    fn execute<'a>(
        &'a self,
        _tool_call_id: &'a str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> BoxFuture<'a, Result<AgentToolResult, ToolError>> {
        self.call(args, cancel).boxed()
    }
}
