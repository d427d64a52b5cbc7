//! The session with one MCP server: the MCP handshake over stdio or streamable HTTP, the live
//! connection shared by a client and its tools, and a new connection once the old one closed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use crate::error::McpError;
use crate::server::{Endpoint, McpServer};
use crate::stdio::{self, Diagnostics};

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

    /// Starts (stdio) or reaches (HTTP) `server` and completes MCP's handshake.
    pub(crate) async fn connect(server: McpServer) -> Result<Self, McpError> {
        let tools_changed = Arc::new(AtomicBool::new(false));
        let connection = Arc::new(connect(&server, tools_changed.clone()).await?);
        Ok(Self {
            server,
            connection: tokio::sync::Mutex::new(Some(connection)),
            tools_changed,
        })
    }

    /// The process id of a stdio server's current process, if there is one.
    pub(crate) async fn pid(&self) -> Option<u32> {
        let slot = self.connection.lock().await;
        slot.as_ref().and_then(|c| c.pid)
    }

    /// Whether the server said its tool list changed since [`Self::clear_tools_changed`].
    pub(crate) fn tools_changed(&self) -> bool {
        self.tools_changed.load(Ordering::SeqCst)
    }

    /// Forgets that the server said its tool list changed.
    pub(crate) fn clear_tools_changed(&self) {
        self.tools_changed.store(false, Ordering::SeqCst);
    }

    /// Ends the session: a stdio server gets its stdin closed, then SIGTERM, then SIGKILL.
    /// The next [`connection`](Self::connection) connects again.
    pub(crate) async fn close(&self) {
        let connection = self.connection.lock().await.take();
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
