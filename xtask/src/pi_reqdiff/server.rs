//! The recording server of `pi-reqdiff`: a small HTTP/1.1 server on 127.0.0.1 that keeps the
//! method, path, query, headers and body of every request and answers each with a final error
//! (HTTP 400, which neither pi nor oxpi retries), so every case sends exactly one request.
//!
//! A request's path starts with `/<side>/<case id>` (the base URL each side was given); the
//! server strips that prefix and files the request under (side, case id).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Largest request body kept (a case's body is a few kilobytes).
const MAX_BODY: usize = 8 << 20;
/// Largest header block.
const MAX_HEAD: usize = 64 << 10;
/// A connection silent this long is dropped.
const IDLE: Duration = Duration::from_secs(30);

/// One recorded request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recorded {
    /// `POST`, …
    pub(crate) method: String,
    /// The path after the `/<side>/<id>` prefix.
    pub(crate) path: String,
    /// The query string without `?` (empty when none).
    pub(crate) query: String,
    /// Header names in lowercase, in the order sent.
    pub(crate) headers: Vec<(String, String)>,
    /// The body (chunked bodies decoded).
    pub(crate) body: Vec<u8>,
}

/// Requests by (side, case id).
pub(crate) type Recordings = Arc<Mutex<HashMap<(String, String), Vec<Recorded>>>>;

/// A running recording server.
pub(crate) struct Server {
    /// `http://127.0.0.1:<port>`.
    pub(crate) url: String,
    /// What it recorded so far.
    pub(crate) recordings: Recordings,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Binds a free port on 127.0.0.1 and starts serving.
    pub(crate) async fn start() -> Result<Self, String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("the recording server could not bind 127.0.0.1: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("the recording server has no address: {e}"))?;
        let recordings: Recordings = Arc::default();
        let shared = recordings.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, shared).await;
                });
            }
        });
        Ok(Self {
            url: format!("http://{addr}"),
            recordings,
            task,
        })
    }

    /// The requests recorded for `side` and `id` (empty when none came).
    pub(crate) fn take(&self, side: &str, id: &str) -> Vec<Recorded> {
        self.recordings
            .lock()
            .map(|mut map| {
                map.remove(&(side.to_string(), id.to_string()))
                    .unwrap_or_default()
            })
            .unwrap_or_default()
    }
}

/// Splits `/<side>/<id>/rest?query` into side, id, `/rest` and `query`.
pub(crate) fn split_target(target: &str) -> Option<(String, String, String, String)> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut parts = path.trim_start_matches('/').splitn(3, '/');
    let side = parts.next().filter(|s| !s.is_empty())?;
    let id = parts.next().filter(|s| !s.is_empty())?;
    let rest = format!("/{}", parts.next().unwrap_or(""));
    Some((side.into(), id.into(), rest, query.into()))
}

async fn serve(stream: TcpStream, recordings: Recordings) -> Result<(), String> {
    let mut reader = BufReader::new(stream);
    loop {
        let request = match tokio::time::timeout(IDLE, read_request(&mut reader)).await {
            Ok(Ok(Some(request))) => request,
            Ok(Ok(None)) | Err(_) => return Ok(()),
            Ok(Err(message)) => {
                let _ = respond(reader.get_mut(), 400, &message).await;
                return Err(message);
            }
        };
        let (target, recorded) = request;
        if let Some((side, id, path, query)) = split_target(&target) {
            if let Ok(mut map) = recordings.lock() {
                map.entry((side, id)).or_default().push(Recorded {
                    path,
                    query,
                    ..recorded
                });
            }
        }
        respond(reader.get_mut(), 400, "pi-reqdiff recorded this request").await?;
    }
}

/// The final answer: HTTP 400 with an error body every API's parser reads as an error.
async fn respond(stream: &mut TcpStream, status: u16, message: &str) -> Result<(), String> {
    let body = serde_json::json!({
        "error": {"message": message, "type": "invalid_request_error", "code": 400, "status": "INVALID_ARGUMENT"},
        "type": "error",
        "message": message,
    })
    .to_string();
    let head = format!(
        "HTTP/1.1 {status} Bad Request\r\ncontent-type: application/json\r\nx-amzn-errortype: ValidationException\r\nx-should-retry: false\r\ncontent-length: {}\r\nconnection: keep-alive\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    stream
        .write_all(body.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    stream.flush().await.map_err(|e| e.to_string())
}

/// Reads one request: `None` at a clean end of the connection.
async fn read_request(
    reader: &mut BufReader<TcpStream>,
) -> Result<Option<(String, Recorded)>, String> {
    let mut line = String::new();
    let mut head_bytes = 0usize;
    if reader
        .read_line(&mut line)
        .await
        .map_err(|e| e.to_string())?
        == 0
    {
        return Ok(None);
    }
    let mut words = line.split_whitespace();
    let method = words.next().ok_or("empty request line")?.to_string();
    let target = words
        .next()
        .ok_or("request line without a target")?
        .to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        let n = reader
            .read_line(&mut line)
            .await
            .map_err(|e| e.to_string())?;
        head_bytes += n;
        if n == 0 {
            return Err("connection closed inside the headers".into());
        }
        if head_bytes > MAX_HEAD {
            return Err("header block too large".into());
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        read_chunked(reader).await?
    } else {
        let length: usize = header("content-length")
            .map(|v| v.parse().map_err(|_| format!("bad content-length `{v}`")))
            .transpose()?
            .unwrap_or(0);
        if length > MAX_BODY {
            return Err(format!("body of {length} bytes is too large"));
        }
        let mut body = vec![0; length];
        reader
            .read_exact(&mut body)
            .await
            .map_err(|e| e.to_string())?;
        body
    };
    Ok(Some((
        target,
        Recorded {
            method,
            path: String::new(),
            query: String::new(),
            headers,
            body,
        },
    )))
}

async fn read_chunked(reader: &mut BufReader<TcpStream>) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .await
            .map_err(|e| e.to_string())?;
        let size_text = line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size `{size_text}`"))?;
        if body.len() + size > MAX_BODY {
            return Err("chunked body too large".into());
        }
        if size == 0 {
            // Trailers, then the empty line.
            loop {
                let mut trailer = String::new();
                let n = reader
                    .read_line(&mut trailer)
                    .await
                    .map_err(|e| e.to_string())?;
                if n == 0 || trailer.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader
            .read_exact(&mut body[start..])
            .await
            .map_err(|e| e.to_string())?;
        let mut crlf = [0u8; 2];
        reader
            .read_exact(&mut crlf)
            .await
            .map_err(|e| e.to_string())?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_side_case_and_path() {
        assert_eq!(
            split_target("/pi/c12/v1/chat/completions?x=1"),
            Some((
                "pi".into(),
                "c12".into(),
                "/v1/chat/completions".into(),
                "x=1".into()
            ))
        );
        assert_eq!(
            split_target("/ox/c1"),
            Some(("ox".into(), "c1".into(), "/".into(), String::new()))
        );
        assert_eq!(split_target("/"), None);
    }

    #[tokio::test]
    async fn records_plain_and_chunked_bodies_and_answers_400() {
        let server = Server::start().await.unwrap();
        let client = reqwest::Client::new();
        let response = client
            .post(format!("{}/ox/c7/v1/messages?beta=true", server.url))
            .header("X-Api-Key", "k")
            .body("{\"a\":1}")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 400);
        let mut raw = TcpStream::connect(server.url.trim_start_matches("http://"))
            .await
            .unwrap();
        raw.write_all(
            b"POST /pi/c7/x HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\n\r\n5\r\n{\"b\":\r\n2\r\n2}\r\n0\r\n\r\n",
        )
        .await
        .unwrap();
        let mut answer = [0u8; 12];
        raw.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"HTTP/1.1 400");
        let ox = server.take("ox", "c7");
        assert_eq!(ox.len(), 1);
        assert_eq!(ox[0].method, "POST");
        assert_eq!(ox[0].path, "/v1/messages");
        assert_eq!(ox[0].query, "beta=true");
        assert!(ox[0].headers.contains(&("x-api-key".into(), "k".into())));
        assert_eq!(ox[0].body, b"{\"a\":1}");
        let pi = server.take("pi", "c7");
        assert_eq!(pi[0].body, b"{\"b\":2}");
        assert!(server.take("pi", "c7").is_empty());
    }
}
