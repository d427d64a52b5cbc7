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
//! ```no_run
//! use oxpi_agent_core::{Agent, AgentOptions};
//! use oxpi_mcp::{McpClient, McpServer};
//!
//! async fn ask_git(model: oxpi_ai::Model) -> Result<(), Box<dyn std::error::Error>> {
//!     let server = McpServer::stdio("git", "mcp-server-git").args(["--repository", "."]);
//!     let git = McpClient::connect(server).await?;
//!     let agent = Agent::new(AgentOptions::new(model).with_tools(git.tools().await?));
//!     agent.prompt("What was the last commit about?").await?;
//!     Ok(())
//! }
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
