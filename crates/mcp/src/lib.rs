//! Tools from [Model Context Protocol](https://modelcontextprotocol.io) servers as oxpi agent
//! tools, over the official Rust SDK (`rmcp`).
//!
//! [`McpClient::connect`] starts a server program (stdio) or reaches a URL (streamable HTTP,
//! feature `http`), and [`McpClient::tools`] turns each of the server's tools into an
//! [`oxpi_agent_core::AgentToolHandle`]: the server's schema validates the arguments before a
//! call, text and images come back as the result's content, `isError` as an error result,
//! structured content in `details`. An abort of the agent cancels the call on the server; a
//! call that times out, or a server that crashes mid-call, ends that call with an error and the
//! agent goes on; a stdio server that exited is started again on the next call.
//!
//! ```
//! use oxpi_agent_core::{Agent, AgentOptions};
//! use oxpi_mcp::{McpClient, McpServer};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use oxpi_ai::faux::{FauxProvider, FauxReply};
//! # let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake_server.py");
//! # let faux = FauxProvider::new();
//! # faux.push(FauxReply::tool_call("echo", serde_json::json!({"text": "hi"})));
//! # faux.push(FauxReply::text("It said hi."));
//! # let mut registry = oxpi_ai::ProviderRegistry::new();
//! # registry.register(faux.clone());
//! # let model = faux.model();
//! // A stdio server (here a small Python one with an `echo` tool); `McpServer::http(url)` for
//! // streamable HTTP. `mcp-server-git` would be `McpServer::stdio("git", "mcp-server-git")`.
//! let server = McpServer::stdio("demo", "python3").args([script]);
//! let client = McpClient::connect(server).await?;
//! let tools = client.tools().await?;
//! let agent = Agent::new(AgentOptions::new(model).with_tools(tools).with_registry(registry));
//! let reply = agent.prompt("Echo hi.").await?;
//! assert_eq!(reply.text(), "It said hi.");
//! # let result = agent.messages().iter().find_map(|m| match m {
//! #     oxpi_ai::Message::ToolResult(r) => Some(r.text_content()),
//! #     _ => None,
//! # });
//! # assert_eq!(result.as_deref(), Some("hi"));
//! # Ok(())
//! # }
//! ```

mod client;
mod connection;
mod content;
mod error;
mod scan;
mod server;
mod stdio;
mod tool;

pub use client::McpClient;
pub use error::McpError;
pub use server::{
    McpServer, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RESULT_BYTES,
};
