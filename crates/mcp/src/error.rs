//! What can go wrong between oxpi and an MCP server, before any tool runs.

use oxpi_ai::tool::SchemaError;

/// Connecting to an MCP server or listing its tools failed.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The server's program could not be started.
    #[error("could not start MCP server `{server}` ({program}): {source}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program that was run.
        program: String,
        /// Why it did not start.
        source: std::io::Error,
    },
    /// The connection or the MCP handshake failed.
    #[error("could not connect to MCP server `{server}`: {reason}")]
    Connect {
        /// The server's name.
        server: String,
        /// What went wrong (with the server's last lines of stderr, where there are some).
        reason: String,
    },
    /// A request to the server failed.
    #[error("MCP server `{server}` failed to answer {request}: {reason}")]
    Request {
        /// The server's name.
        server: String,
        /// The request (`tools/list`).
        request: &'static str,
        /// What went wrong.
        reason: String,
    },
    /// Tools whose schema oxpi cannot use (it does not compile, is not an object schema, or the
    /// target API cannot express it); every such tool is listed.
    #[error("MCP server `{server}` has tools oxpi cannot offer: {}", list(.tools))]
    Schema {
        /// The server's name.
        server: String,
        /// One error per tool.
        tools: Vec<SchemaError>,
    },
    /// Two tools would have the same name (also after prefixing with the server's name).
    #[error("MCP server `{server}` lists the tool name `{name}` twice")]
    DuplicateTool {
        /// The server's name.
        server: String,
        /// The name.
        name: String,
    },
    /// The feature this needs was not compiled in.
    #[error("{0}")]
    Unsupported(String),
}

fn list(tools: &[SchemaError]) -> String {
    tools
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
