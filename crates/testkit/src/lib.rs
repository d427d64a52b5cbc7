//! A scriptable HTTP/1.1 server on 127.0.0.1 for provider tests.
//!
//! Each incoming request takes the next [`Reply`] from the script and gets exactly the bytes it
//! describes: a status and headers, then body parts written one by one (with pauses, a stall, or
//! a cut connection), or a connection reset before any header. Every request is recorded
//! ([`Recorded`]) so tests can check what the client sent.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use oxpi_testkit::{Reply, TestServer};
//! let server = TestServer::start(vec![Reply::sse(["data: {\"x\":1}\n\n", "data: [DONE]\n\n"])]).await.unwrap();
//! assert!(server.base_url().starts_with("http://127.0.0.1:"));
//! # });
//! ```

pub mod mcp_servers;
pub mod oauth_backend;
pub mod oauth_issuer;
pub mod pi;
pub mod scripted_runs;
pub mod wire;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One piece of a response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Bytes written as they are.
    Bytes(Vec<u8>),
    /// A pause before the next part.
    Sleep(Duration),
    /// Stop sending but keep the connection open (a stalled server).
    Stall,
    /// Close the connection here, mid-body.
    Cut,
}

/// What the server does with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A response.
    Respond {
        /// HTTP status code.
        status: u16,
        /// Headers (no Content-Length: the body ends when the connection closes).
        headers: Vec<(String, String)>,
        /// The body, part by part.
        body: Vec<Part>,
    },
    /// Close the connection before sending anything.
    Reset,
    /// Send headers, then never anything else.
    StallAfterHeaders {
        /// HTTP status code.
        status: u16,
    },
}

impl Reply {
    /// A 200 `text/event-stream` response with these body parts.
    pub fn sse<I, S>(events: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Respond {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: events
                .into_iter()
                .map(|e| Part::Bytes(e.into().into_bytes()))
                .collect(),
        }
    }

    /// A 200 event stream with raw parts (pauses, cuts…).
    pub fn sse_parts(body: Vec<Part>) -> Self {
        Self::Respond {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body,
        }
    }

    /// A JSON error response.
    pub fn json_error(status: u16, body: &str) -> Self {
        Self::Respond {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![Part::Bytes(body.as_bytes().to_vec())],
        }
    }

    /// Adds a header to a `Respond` reply.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if let Self::Respond { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// `POST`, …
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers, names lowercased, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first header with this (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_default()
    }
}

/// Computes a reply from the request (for servers shared by many concurrent clients).
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

#[derive(Default)]
struct Shared {
    script: VecDeque<Reply>,
    responder: Option<Responder>,
    recorded: Vec<Recorded>,
}

/// The server; stops when dropped.
pub struct TestServer {
    base_url: String,
    shared: Arc<Mutex<Shared>>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("base_url", &self.base_url)
            .finish()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

impl TestServer {
    /// Starts a server on a free port with this script. A request beyond the script gets a 500.
    pub async fn start(script: Vec<Reply>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Mutex::new(Shared {
            script: script.into(),
            responder: None,
            recorded: Vec::new(),
        }));
        let task_shared = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let shared = task_shared.clone();
                tokio::spawn(async move {
                    let _ = serve(socket, shared).await;
                });
            }
        });
        Ok(Self {
            base_url,
            shared,
            task,
        })
    }

    /// Starts a server that answers every request with `responder(request)`.
    pub async fn start_fn(
        responder: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        let server = Self::start(Vec::new()).await?;
        lock(&server.shared).responder = Some(Arc::new(responder));
        Ok(server)
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Queues more replies.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared).script.push_back(reply);
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared).recorded.clone()
    }
}

/// Closes with a TCP reset (`SO_LINGER` 0). The deprecation warns that a non-zero linger blocks
/// on drop; with zero it returns at once.
#[allow(deprecated)]
fn reset(socket: TcpStream) -> std::io::Result<()> {
    socket.set_linger(Some(Duration::ZERO))?;
    drop(socket);
    Ok(())
}

async fn serve(mut socket: TcpStream, shared: Arc<Mutex<Shared>>) -> std::io::Result<()> {
    let Some(request) = read_request(&mut socket).await? else {
        return Ok(());
    };
    let reply = {
        let mut shared = lock(&shared);
        let reply = match &shared.responder {
            Some(responder) => Some(responder(&request)),
            None => shared.script.pop_front(),
        };
        shared.recorded.push(request);
        reply
    };
    let reply = reply.unwrap_or_else(|| {
        Reply::json_error(
            500,
            r#"{"error":{"message":"test server: script exhausted"}}"#,
        )
    });
    match reply {
        Reply::Reset => reset(socket)?,
        Reply::StallAfterHeaders { status } => {
            write_head(
                &mut socket,
                status,
                &[("content-type".into(), "text/event-stream".into())],
            )
            .await?;
            std::future::pending::<()>().await;
        }
        Reply::Respond {
            status,
            headers,
            body,
        } => {
            write_head(&mut socket, status, &headers).await?;
            for part in body {
                match part {
                    Part::Bytes(bytes) => {
                        socket.write_all(&bytes).await?;
                        socket.flush().await?;
                    }
                    Part::Sleep(d) => tokio::time::sleep(d).await,
                    Part::Stall => std::future::pending::<()>().await,
                    Part::Cut => return reset(socket),
                }
            }
            socket.shutdown().await?;
        }
    }
    Ok(())
}

async fn write_head(
    socket: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} Status\r\nconnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<Option<Recorded>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split_whitespace();
    let method = words.next().unwrap_or_default().to_string();
    let path = words.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(Recorded {
        method,
        path,
        headers,
        body,
    }))
}

/// Reads a recorded fixture's SSE body, from `fixtures/recorded/<rel>` in the repository.
///
/// # Panics
/// When the file cannot be read: the recordings are part of the repository, so a test that
/// needs one fails instead of passing without it.
pub fn recorded_fixture(rel: &str) -> Vec<u8> {
    let path = fixtures_root().join(rel);
    match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) => panic!("recorded fixture {} unreadable: {e}", path.display()),
    }
}

/// Every recorded request of `provider` (`<fixtures>/<provider>/<suite>/<cassette>/*.request.json`),
/// sorted. The response of each sits beside it (`.response.sse`, `.response.meta.json`).
///
/// # Panics
/// When the provider has no recordings (a missing or emptied folder is a broken checkout, not a
/// reason to replay nothing).
pub fn recorded_requests(provider: &str) -> Vec<std::path::PathBuf> {
    let root = fixtures_root();
    let children = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .collect::<Vec<_>>()
    };
    let mut requests: Vec<std::path::PathBuf> = children(&root.join(provider))
        .iter()
        .flat_map(|suite| children(suite))
        .flat_map(|cassette| children(&cassette))
        .filter(|file| file.to_string_lossy().ends_with(".request.json"))
        .collect();
    assert!(
        !requests.is_empty(),
        "no recorded exchanges of {provider} under {}",
        root.display()
    );
    requests.sort();
    requests
}

/// The recorded provider traffic shipped with the repository: `fixtures/recorded` at the
/// workspace root (see its README.md).
///
/// # Panics
/// When the folder is missing: the replay tests must not silently skip.
pub fn fixtures_root() -> std::path::PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../../fixtures/recorded");
    assert!(
        root.join("README.md").is_file(),
        "the recorded fixtures are missing at {}: they are part of the repository \
         (fixtures/recorded); restore them with `git checkout -- fixtures`",
        root.display()
    );
    root
}
