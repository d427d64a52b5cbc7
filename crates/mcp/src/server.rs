//! How to reach an MCP server (a program over stdio, or a URL over streamable HTTP) and how its
//! tools are offered (name prefix, timeout, result size, target API).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The default time one tool call may take.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The default time starting a server with its handshake may take, and listing its tools.
/// Generous: `npx -y` or `uvx` may download the server first.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// The default cap on a result's text sent to the model (pi's tools cap output at 50 KB too).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 50 * 1024;

/// Where the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// A program spawned with its stdin and stdout as the transport.
    Stdio {
        program: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        current_dir: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        bearer: Option<String>,
    },
}

/// An MCP server to connect to, and how its tools are offered to an agent.
///
/// ```
/// use std::time::Duration;
/// let git = oxpi_mcp::McpServer::stdio("git", "mcp-server-git")
///     .args(["--repository", "."])
///     .env("LOG_LEVEL", "warning")
///     .prefix_tool_names(true)
///     .call_timeout(Duration::from_secs(30));
/// assert_eq!(git.name(), "git");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub(crate) name: String,
    pub(crate) endpoint: Endpoint,
    pub(crate) prefix: bool,
    pub(crate) pi_names: bool,
    pub(crate) call_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) max_result_bytes: usize,
    pub(crate) target_api: Option<String>,
}

impl McpServer {
    fn new(name: impl Into<String>, endpoint: Endpoint) -> Self {
        Self {
            name: name.into(),
            endpoint,
            prefix: false,
            pi_names: false,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            target_api: None,
        }
    }

    /// A server run as `program`, spoken to over its stdin and stdout. The process is killed
    /// when the client is dropped (also when a panic unwinds), and started again on the next
    /// call after it exits.
    pub fn stdio(name: impl Into<String>, program: impl Into<String>) -> Self {
        Self::new(
            name,
            Endpoint::Stdio {
                program: program.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                current_dir: None,
            },
        )
    }

    /// A server at `url` over MCP's streamable HTTP transport (feature `http`, on by default).
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            Endpoint::Http {
                url: url.into(),
                headers: BTreeMap::new(),
                bearer: None,
            },
        )
    }

    /// Adds an argument (stdio servers; ignored for HTTP).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        if let Endpoint::Stdio { args, .. } = &mut self.endpoint {
            args.push(arg.into());
        }
        self
    }

    /// Adds arguments (stdio servers; ignored for HTTP).
    pub fn args<I, S>(mut self, more: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let Endpoint::Stdio { args, .. } = &mut self.endpoint {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable for the server's process (stdio servers; ignored for HTTP).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Endpoint::Stdio { env, .. } = &mut self.endpoint {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// The server process's working directory (stdio servers; ignored for HTTP).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Endpoint::Stdio { current_dir, .. } = &mut self.endpoint {
            *current_dir = Some(dir.into());
        }
        self
    }

    /// Adds a header to every HTTP request (HTTP servers; ignored for stdio).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Endpoint::Http { headers, .. } = &mut self.endpoint {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` (HTTP servers; ignored for stdio).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let Endpoint::Http { bearer, .. } = &mut self.endpoint {
            *bearer = Some(token.into());
        }
        self
    }

    /// Names each tool `<server>_<tool>` instead of `<tool>`, so two servers' tools cannot clash.
    pub fn prefix_tool_names(mut self, prefix: bool) -> Self {
        self.prefix = prefix;
        self
    }

    /// How long one call may take before it is cancelled and ends as an error
    /// ([`DEFAULT_CALL_TIMEOUT`] unless set). It includes starting the server again when it
    /// exited since the last call.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// How long starting (or reaching) the server and MCP's handshake may take, and how long
    /// listing its tools may take, before they fail ([`DEFAULT_CONNECT_TIMEOUT`] unless set).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The most bytes of a result's text sent to the model; the rest is cut with a notice
    /// ([`DEFAULT_MAX_RESULT_BYTES`] unless set).
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// Checks every tool's schema against this wire API (a `Model`'s `api`, e.g.
    /// `"google-generative-ai"`) when the tools are listed, so a schema the provider cannot
    /// express fails then, not as a 400 on the first request.
    pub fn target_api(mut self, api: impl Into<String>) -> Self {
        self.target_api = Some(api.into());
        self
    }

    /// Names the tools as pi 1.6 does: `mcp__<server>__<tool>`, every character other than a
    /// letter, digit or `_` replaced by `_` (instead of [`prefix_tool_names`](Self::prefix_tool_names)).
    pub fn pi_tool_names(mut self) -> Self {
        self.pi_names = true;
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name a tool of this server is offered under.
    pub(crate) fn tool_name(&self, tool: &str) -> String {
        if self.pi_names {
            let clean = |s: &str| -> String {
                s.chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '_' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect()
            };
            return format!("mcp__{}__{}", clean(&self.name), clean(tool));
        }
        if self.prefix {
            format!("{}_{tool}", self.name)
        } else {
            tool.to_string()
        }
    }
}
