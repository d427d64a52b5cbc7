//! A stdio server: its process, and the transport over its stdin and stdout. Unlike rmcp's own
//! (which drops an unreadable or overlong line and so leaves its request waiting for ever), an
//! answer to one of our requests that cannot be read becomes an error answer to that request,
//! and an overlong answer to `tools/call` is read with its text cut (see [`crate::scan`]). The
//! server's stderr is read to its end in bounded memory, whatever its bytes.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use rmcp::model::JsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::scan::{scan, Scanner};

/// The longest line read whole (rmcp's limit too); a longer answer to `tools/call` is read with
/// its text cut, any other is answered with an error.
pub(crate) const LINE_LIMIT: usize = 16 * 1024 * 1024;

/// The `_meta` key under which an answer cut on reading tells how many text bytes it lost.
pub(crate) const CUT_META_KEY: &str = "oxpi-mcp/cutTextBytes";

/// How many bytes of the server's stderr are kept for error messages.
const STDERR_TAIL_BYTES: usize = 4096;

/// The most bytes of one stderr line written to the log.
const STDERR_LOG_LINE_BYTES: usize = 4096;

/// How many requests are remembered while they wait for their answers.
const MAX_PENDING: usize = 1024;

/// How long `close` waits for the process after closing its stdin, and again after SIGTERM.
const WAIT_ON_CLOSE: Duration = Duration::from_secs(3);

/// What a connection keeps to explain a failure: the end of stderr, and the last line on stdout
/// that was not a message.
#[derive(Clone, Default)]
pub(crate) struct Diagnostics {
    stderr: Arc<StdMutex<VecDeque<u8>>>,
    unreadable: Arc<StdMutex<Option<String>>>,
}

impl Diagnostics {
    /// The kept end of stderr and the last unreadable line, as a suffix for an error message
    /// (empty if there are none).
    pub(crate) fn suffix(&self) -> String {
        let mut suffix = String::new();
        if let Ok(line) = self.unreadable.lock() {
            if let Some(line) = line.as_deref() {
                suffix.push_str(&format!("; its last unreadable line on stdout: {line}"));
            }
        }
        let text = match self.stderr.lock() {
            Ok(bytes) => {
                let bytes: Vec<u8> = bytes.iter().copied().collect();
                String::from_utf8_lossy(&bytes).trim().to_string()
            }
            Err(_) => String::new(),
        };
        if !text.is_empty() {
            suffix.push_str(&format!("; its stderr ends with: {text}"));
        }
        suffix
    }
}

/// The requests sent and not yet answered, oldest first: (id as JSON text, method).
type Pending = Arc<StdMutex<VecDeque<(String, String)>>>;

/// The transport over a server process's stdin and stdout.
pub(crate) struct StdioTransport {
    child: Option<Child>,
    stdout: BufReader<ChildStdout>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    /// The line read so far, while it is under [`LINE_LIMIT`].
    line: Vec<u8>,
    /// Past [`LINE_LIMIT`]: the line's scan (and cut copy), and its length.
    long_line: Option<(Scanner, u64)>,
    pending: Pending,
    max_text_bytes: usize,
    diagnostics: Diagnostics,
}

/// What `spawn` started.
pub(crate) struct Spawned {
    pub(crate) transport: StdioTransport,
    pub(crate) pid: Option<u32>,
    pub(crate) diagnostics: Diagnostics,
}

/// Starts `program` with piped stdio and starts reading its stderr (logged under `server`).
pub(crate) fn spawn(
    server: &str,
    program: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    current_dir: Option<&PathBuf>,
    max_text_bytes: usize,
) -> std::io::Result<Spawned> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = current_dir {
        command.current_dir(dir);
    }
    let mut child = command.spawn()?;
    let missing = |what: &str| std::io::Error::other(format!("the process's {what} is missing"));
    let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
    let diagnostics = Diagnostics::default();
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(keep_stderr_tail(
            server.to_string(),
            stderr,
            diagnostics.stderr.clone(),
        ));
    }
    let pid = child.id();
    Ok(Spawned {
        transport: StdioTransport {
            child: Some(child),
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            line: Vec::new(),
            long_line: None,
            pending: Arc::default(),
            max_text_bytes,
            diagnostics: diagnostics.clone(),
        },
        pid,
        diagnostics,
    })
}

/// One read of a line.
enum Read {
    Line(Vec<u8>),
    /// A line over [`LINE_LIMIT`]: its scan and length.
    Long(crate::scan::Scan, u64),
    Eof,
    Failed(std::io::Error),
}

impl StdioTransport {
    /// Reads the next line, keeping at most [`LINE_LIMIT`] bytes of it (plus its cut copy).
    /// Cancel-safe: what was read stays in `self` for the next call.
    async fn read_line(&mut self) -> Read {
        loop {
            let available = match self.stdout.fill_buf().await {
                Ok(available) => available,
                Err(error) => return Read::Failed(error),
            };
            if available.is_empty() {
                return Read::Eof;
            }
            let newline = memchr(available);
            let piece = &available[..newline.unwrap_or(available.len())];
            let taken = newline.map_or(available.len(), |at| at + 1);
            if self.long_line.is_none() && self.line.len() + piece.len() > LINE_LIMIT {
                let cut = (self.max_text_bytes.min(LINE_LIMIT), LINE_LIMIT);
                let mut scanner = Scanner::new(Some(cut));
                scanner.feed(&self.line);
                let len = self.line.len() as u64;
                self.line = Vec::new();
                self.long_line = Some((scanner, len));
            }
            match &mut self.long_line {
                Some((scanner, len)) => {
                    scanner.feed(piece);
                    *len += piece.len() as u64;
                }
                None => self.line.extend_from_slice(piece),
            }
            self.stdout.consume(taken);
            if newline.is_some() {
                return match self.long_line.take() {
                    Some((scanner, len)) => Read::Long(scanner.finish(), len),
                    None => Read::Line(std::mem::take(&mut self.line)),
                };
            }
        }
    }

    /// Forgets the request `id` and returns its method, if it was waiting.
    fn answered(&self, id: &str) -> Option<String> {
        let mut pending = self.pending.lock().ok()?;
        let at = pending.iter().position(|(sent, _)| sent == id)?;
        pending.remove(at).map(|(_, method)| method)
    }

    /// A whole line: the message; an error answer when it is an unreadable answer to one of our
    /// requests; else `None`.
    fn on_line(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.trim_ascii().is_empty() {
            return None;
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
            Ok(message) => {
                let id = match &message {
                    JsonRpcMessage::Response(response) => Some(&response.id),
                    JsonRpcMessage::Error(error) => error.id.as_ref(),
                    _ => None,
                };
                if let Some(id) = id.and_then(|id| serde_json::to_string(id).ok()) {
                    self.answered(&id);
                }
                Some(message)
            }
            Err(error) => {
                let found = scan(line);
                let reason = format!("it is not a JSON-RPC message MCP knows ({error})");
                if let Some(id) = found.id.filter(|_| !found.has_method) {
                    if let Some(id) = canonical(&id) {
                        if self.answered(&id).is_some() {
                            return made_up_error(
                                &id,
                                &format!("its answer cannot be read: {reason}"),
                            );
                        }
                    }
                }
                self.note_unreadable(&format!("`{}` ({reason})", shorten(line)), found.has_method);
                None
            }
        }
    }

    /// A line over [`LINE_LIMIT`]: an answer to `tools/call` with its text cut, an error answer
    /// to any other request of ours, or nothing.
    fn on_long_line(
        &mut self,
        found: crate::scan::Scan,
        len: u64,
    ) -> Option<RxJsonRpcMessage<RoleClient>> {
        let method = found
            .id
            .as_deref()
            .filter(|_| !found.has_method)
            .and_then(canonical)
            .and_then(|id| Some((self.answered(&id)?, id)));
        let Some((method, id)) = method else {
            self.note_unreadable(
                &format!(
                    "a line of {len} bytes (over the {LINE_LIMIT} bytes one message may have)"
                ),
                found.has_method,
            );
            return None;
        };
        if method == "tools/call" {
            if let Some(message) = found
                .cut
                .as_deref()
                .and_then(|cut| with_cut(cut, found.cut_bytes))
            {
                return Some(message);
            }
        }
        made_up_error(
            &id,
            &format!(
                "its answer of {len} bytes is over the {LINE_LIMIT} bytes one message may have{}",
                if method == "tools/call" {
                    ", also with its text cut"
                } else {
                    ""
                }
            ),
        )
    }

    fn note_unreadable(&self, what: &str, has_method: bool) {
        if has_method {
            tracing::debug!("ignoring a message from the MCP server oxpi cannot read: {what}");
        } else {
            tracing::warn!("the MCP server wrote a line that is not a message: {what}");
        }
        if let Ok(mut unreadable) = self.diagnostics.unreadable.lock() {
            *unreadable = Some(what.to_string());
        }
    }
}

/// The answer in `cut` (a cut copy of a long line), noting `cut_bytes` in its result's `_meta`.
fn with_cut(cut: &[u8], cut_bytes: u64) -> Option<RxJsonRpcMessage<RoleClient>> {
    let mut value: Value = serde_json::from_slice(cut).ok()?;
    let result = value.get_mut("result")?.as_object_mut()?;
    let meta = result.entry("_meta").or_insert_with(|| json!({}));
    meta.as_object_mut()?
        .insert(CUT_META_KEY.into(), json!(cut_bytes));
    serde_json::from_value(value).ok()
}

/// An error answer to the request `id` (JSON text) saying `message`.
fn made_up_error(id: &str, message: &str) -> Option<RxJsonRpcMessage<RoleClient>> {
    let id: Value = serde_json::from_str(id).ok()?;
    let error = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": message},
    });
    serde_json::from_value(error).ok()
}

/// `id` (raw JSON text) as `serde_json` writes it, so it compares with the ids we sent.
fn canonical(id: &str) -> Option<String> {
    let value: Value = serde_json::from_str(id).ok()?;
    matches!(value, Value::Number(_) | Value::String(_)).then(|| value.to_string())
}

/// The start of `line` for an error message.
fn shorten(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    if line.len() > 200 {
        format!("{text}…")
    } else {
        text
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let bytes = serde_json::to_vec(&item).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        if let (Ok(bytes), Ok(mut pending)) = (&bytes, self.pending.lock()) {
            remember(&item, bytes, &mut pending);
        }
        let stdin = self.stdin.clone();
        async move {
            let bytes = bytes.map_err(std::io::Error::other)?;
            let mut stdin = stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the server's stdin is closed",
                ));
            };
            stdin.write_all(&bytes).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = match self.read_line().await {
                Read::Line(line) => self.on_line(&line),
                Read::Long(found, len) => self.on_long_line(found, len),
                Read::Eof => return None,
                Read::Failed(error) => {
                    tracing::warn!("reading the MCP server's stdout failed: {error}");
                    return None;
                }
            };
            if message.is_some() {
                return message;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // A write to a server that stopped reading holds the stdin lock for ever (its pipe is
        // full): wait a bounded time for it, then go on to the signals, which end that write.
        if let Ok(mut stdin) = tokio::time::timeout(WAIT_ON_CLOSE, self.stdin.lock()).await {
            drop(stdin.take());
        }
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        if tokio::time::timeout(WAIT_ON_CLOSE, child.wait())
            .await
            .is_err()
        {
            #[cfg(unix)]
            if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
                use nix::sys::signal::{kill, Signal};
                let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM);
            }
            if tokio::time::timeout(WAIT_ON_CLOSE, child.wait())
                .await
                .is_err()
            {
                child.kill().await?;
            }
        }
        self.child = None;
        Ok(())
    }
}

/// Notes a request being sent (its id and method), or forgets one being cancelled.
fn remember(
    item: &TxJsonRpcMessage<RoleClient>,
    bytes: &[u8],
    pending: &mut VecDeque<(String, String)>,
) {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    match item {
        JsonRpcMessage::Request(request) => {
            let (Ok(id), Some(method)) = (
                serde_json::to_string(&request.id),
                value.get("method").and_then(Value::as_str),
            ) else {
                return;
            };
            if pending.len() >= MAX_PENDING {
                pending.pop_front();
            }
            pending.push_back((id, method.to_string()));
        }
        JsonRpcMessage::Notification(_)
            if value.get("method").and_then(Value::as_str) == Some("notifications/cancelled") =>
        {
            if let Some(id) = value.pointer("/params/requestId").map(Value::to_string) {
                pending.retain(|(sent, _)| *sent != id);
            }
        }
        _ => {}
    }
}

/// Reads the server's stderr to its end: logs each line (cut at [`STDERR_LOG_LINE_BYTES`]) and
/// keeps the last [`STDERR_TAIL_BYTES`]. Any bytes (not UTF-8, no newline) are fine; memory
/// stays bounded, and the pipe stays open, so the server never dies of SIGPIPE for writing.
async fn keep_stderr_tail(
    server: String,
    mut stderr: ChildStderr,
    tail: Arc<StdMutex<VecDeque<u8>>>,
) {
    let mut buffer = vec![0u8; 8192];
    let mut line = Vec::new();
    let mut line_dropped = 0usize;
    let log = |line: &[u8], dropped: usize| {
        let text = String::from_utf8_lossy(line);
        if dropped > 0 {
            tracing::debug!(server = %server, "stderr: {text}… ({dropped} more bytes)");
        } else {
            tracing::debug!(server = %server, "stderr: {text}");
        }
    };
    loop {
        let read = match stderr.read(&mut buffer).await {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => {
                tracing::debug!(server = %server, "reading stderr failed: {error}");
                break;
            }
        };
        let bytes = &buffer[..read];
        if let Ok(mut kept) = tail.lock() {
            let from = bytes.len().saturating_sub(STDERR_TAIL_BYTES);
            kept.extend(&bytes[from..]);
            let excess = kept.len().saturating_sub(STDERR_TAIL_BYTES);
            kept.drain(..excess);
        }
        for (index, part) in bytes.split(|&b| b == b'\n').enumerate() {
            if index > 0 {
                log(&line, line_dropped);
                line.clear();
                line_dropped = 0;
            }
            let room = STDERR_LOG_LINE_BYTES - line.len();
            line.extend_from_slice(&part[..part.len().min(room)]);
            line_dropped += part.len().saturating_sub(room);
        }
    }
    if !line.is_empty() {
        log(&line, line_dropped);
    }
}
