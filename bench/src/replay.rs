//! Replaying the recorded provider traffic (`fixtures/recorded`) through oxpi and through pi-ai
//! 0.73.1 or 1.6.0 (TypeScript, `bench/node/replay.mjs`) and comparing the final messages, for
//! `cargo xtask pi-replay` ([`crate::explain`] names the documented differences).
//!
//! Both sides get the same exchanges: the manifest lists each recorded response stream of a wire
//! API oxpi implements, with the provider, model id and base URL it was recorded against. Each
//! side serves the recorded bytes from its own local server (exchange `i` under `/<i>/`), streams
//! one reply with a fixed one-message context and reduces the final message to a
//! [`Summary`]: text, thinking, tool calls, stop reason, error or not, and the five usage counts.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use oxpi_ai::{AssistantContent, AssistantMessage, Context, Message, Model, StreamOptions};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One recorded exchange to replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// The exchange's path stem relative to the recordings folder (`openai/suite/cassette/00`).
    pub id: String,
    /// pi's API name.
    pub api: String,
    /// pi's provider name (the recordings folder, `gemini` → `google`).
    pub provider: String,
    /// The model id the request named.
    pub model: String,
    /// The recorded response body.
    pub sse: PathBuf,
    /// The recorded status.
    pub status: u16,
    /// The recorded response headers.
    pub headers: Map<String, Value>,
}

/// What is compared of a final message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The exchange's id.
    pub id: String,
    /// `stop`, `length`, `toolUse`, `error`, `aborted` (pi's side may also say `exception` or
    /// `timeout` when the library threw or hung).
    pub stop_reason: String,
    /// The error message, if any.
    pub error_message: Option<String>,
    /// The text blocks, concatenated.
    pub text: String,
    /// The thinking blocks, concatenated.
    pub thinking: String,
    /// The tool calls: name and arguments.
    pub tool_calls: Vec<SummaryCall>,
    /// The five usage counts.
    pub usage: SummaryUsage,
}

/// A tool call of a [`Summary`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryCall {
    /// The tool's name.
    pub name: String,
    /// The arguments.
    pub arguments: Value,
    /// The arguments could not be used: oxpi's `argumentsError`, and pi 1.6's (pi 0.73.1 has no
    /// such field, so its side is always `false`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub arguments_error: bool,
}

/// The usage counts of a [`Summary`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SummaryUsage {
    /// Input tokens not read from cache.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Cache reads.
    pub cache_read: u64,
    /// Cache writes.
    pub cache_write: u64,
    /// The total.
    pub total_tokens: u64,
}

/// The wire API of a recorded request path, if oxpi implements it.
fn api_of(path: &str) -> Option<&'static str> {
    if path.ends_with("/chat/completions") {
        Some("openai-completions")
    } else if path.ends_with("/responses") {
        Some("openai-responses")
    } else if path.ends_with("/messages") {
        Some("anthropic-messages")
    } else if path.contains(":streamGenerateContent") {
        Some("google-generative-ai")
    } else {
        None
    }
}

fn read_json(path: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every recorded exchange under `root` whose response is a stream of an API oxpi implements,
/// sorted by id.
pub fn manifest(root: &Path) -> Result<Vec<Exchange>, String> {
    let mut stems = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Some(stem) = path.to_str().and_then(|p| p.strip_suffix(".response.sse")) {
                stems.push(PathBuf::from(stem));
            }
        }
    }
    stems.sort();
    let mut out = Vec::new();
    for stem in stems {
        let with = |suffix: &str| PathBuf::from(format!("{}.{suffix}", stem.display()));
        let request = read_json(&with("request.json"))?;
        let meta = read_json(&with("response.meta.json"))?;
        let path = request["path"].as_str().unwrap_or("");
        let Some(api) = api_of(path) else { continue };
        let rel = stem.strip_prefix(root).unwrap_or(&stem);
        let folder = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let model = if api == "google-generative-ai" {
            path.split("/models/")
                .nth(1)
                .and_then(|rest| rest.split(':').next())
                .unwrap_or("")
                .to_string()
        } else {
            request["body"]["model"].as_str().unwrap_or("").to_string()
        };
        out.push(Exchange {
            id: rel.to_string_lossy().into_owned(),
            api: api.to_string(),
            provider: if folder == "gemini" {
                "google".to_string()
            } else {
                folder
            },
            model,
            sse: with("response.sse"),
            status: meta["status"]
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .unwrap_or(200),
            headers: meta["headers"].as_object().cloned().unwrap_or_default(),
        });
    }
    Ok(out)
}

/// A local server that answers any request under `/<i>/` with exchange `i`'s recorded status,
/// headers and body, then closes the connection.
#[derive(Debug)]
pub struct RecordingServer {
    origin: String,
}

impl RecordingServer {
    /// Binds a free port and serves in background threads.
    pub fn start(exchanges: &[Exchange]) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let origin = format!("http://{}", listener.local_addr()?);
        let exchanges: Arc<Vec<Exchange>> = Arc::new(exchanges.to_vec());
        std::thread::spawn(move || {
            for socket in listener.incoming().flatten() {
                let exchanges = exchanges.clone();
                std::thread::spawn(move || {
                    let _ = serve(socket, &exchanges);
                });
            }
        });
        Ok(Self { origin })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

fn serve(socket: TcpStream, exchanges: &[Exchange]) -> io::Result<()> {
    let mut reader = BufReader::new(socket.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let index = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .and_then(|i| i.parse::<usize>().ok());
    let mut socket = socket;
    let Some(exchange) = index.and_then(|i| exchanges.get(i)) else {
        return socket.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
    };
    let bytes = std::fs::read(&exchange.sse)?;
    let mut head = format!("HTTP/1.1 {} Recorded\r\n", exchange.status);
    for (name, value) in &exchange.headers {
        let skip = [
            "content-length",
            "transfer-encoding",
            "content-encoding",
            "connection",
        ];
        if skip.contains(&name.to_ascii_lowercase().as_str()) {
            continue;
        }
        if let Some(value) = value.as_str() {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        bytes.len()
    ));
    socket.write_all(head.as_bytes())?;
    socket.write_all(&bytes)?;
    socket.flush()
}

/// The base URL that makes oxpi's request for `api` land under `/<index>/`.
fn base_url(origin: &str, index: usize, api: &str) -> String {
    match api {
        "google-generative-ai" => format!("{origin}/{index}/v1beta"),
        _ => format!("{origin}/{index}/v1"),
    }
}

/// Replays exchange `index` through oxpi.
pub async fn replay_oxpi(origin: &str, index: usize, exchange: &Exchange) -> Summary {
    let mut model =
        Model::openai_compatible(base_url(origin, index, &exchange.api), &exchange.model);
    model.api = exchange.api.as_str().into();
    model.provider = exchange.provider.clone();
    let context = Context::new("replay").with_message(Message::user("replay"));
    let options = StreamOptions::default()
        .with_api_key("test-key")
        .with_max_retries(0);
    let mut stream = oxpi_ai::stream(&model, &context, options);
    let mut last = None;
    while let Some(event) = stream.next().await {
        if let Some(message) = event.final_message() {
            last = Some(message.clone());
        }
    }
    match last {
        Some(message) => summarize(&exchange.id, &message),
        None => Summary {
            id: exchange.id.clone(),
            stop_reason: "no terminal event".into(),
            error_message: None,
            text: String::new(),
            thinking: String::new(),
            tool_calls: Vec::new(),
            usage: SummaryUsage::default(),
        },
    }
}

/// The [`Summary`] of a final message.
pub fn summarize(id: &str, message: &AssistantMessage) -> Summary {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut tool_calls = Vec::new();
    for block in &message.content {
        match block {
            AssistantContent::Text(t) => text.push_str(&t.text),
            AssistantContent::Thinking(t) => thinking.push_str(&t.thinking),
            AssistantContent::ToolCall(c) => tool_calls.push(SummaryCall {
                name: c.name.clone(),
                arguments: Value::Object(c.arguments.clone()),
                arguments_error: c.arguments_error.is_some(),
            }),
        }
    }
    let stop_reason = serde_json::to_value(message.stop_reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    Summary {
        id: id.to_string(),
        stop_reason,
        error_message: message.error_message.clone(),
        text,
        thinking,
        tool_calls,
        usage: SummaryUsage {
            input: message.usage.input,
            output: message.usage.output,
            cache_read: message.usage.cache_read,
            cache_write: message.usage.cache_write,
            total_tokens: message.usage.total_tokens,
        },
    }
}

/// The fields in which two summaries of the same exchange differ (`stopReason`, `error`,
/// `text`, `thinking`, `toolCalls` (names and arguments), `toolCalls.argumentsError` (which calls
/// carry an `argumentsError`), `usage.input`, …); empty when they agree.
pub fn differences(oxpi: &Summary, pi: &Summary) -> Vec<&'static str> {
    let mut out = Vec::new();
    if oxpi.stop_reason != pi.stop_reason {
        out.push("stopReason");
    }
    if oxpi.error_message.is_some() != pi.error_message.is_some() {
        out.push("error");
    }
    if oxpi.text != pi.text {
        out.push("text");
    }
    if oxpi.thinking != pi.thinking {
        out.push("thinking");
    }
    let calls = |s: &Summary| -> Vec<(String, Value)> {
        s.tool_calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect()
    };
    if calls(oxpi) != calls(pi) {
        out.push("toolCalls");
    }
    let flags =
        |s: &Summary| -> Vec<bool> { s.tool_calls.iter().map(|c| c.arguments_error).collect() };
    if flags(oxpi) != flags(pi) {
        out.push("toolCalls.argumentsError");
    }
    let (a, b) = (oxpi.usage, pi.usage);
    for (name, x, y) in [
        ("usage.input", a.input, b.input),
        ("usage.output", a.output, b.output),
        ("usage.cacheRead", a.cache_read, b.cache_read),
        ("usage.cacheWrite", a.cache_write, b.cache_write),
        ("usage.totalTokens", a.total_tokens, b.total_tokens),
    ] {
        if x != y {
            out.push(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> Summary {
        Summary {
            id: "x".into(),
            stop_reason: "stop".into(),
            error_message: None,
            text: "hi".into(),
            thinking: String::new(),
            tool_calls: vec![SummaryCall {
                name: "read".into(),
                arguments: serde_json::json!({"path": "a"}),
                arguments_error: false,
            }],
            usage: SummaryUsage {
                input: 1,
                output: 2,
                cache_read: 0,
                cache_write: 0,
                total_tokens: 3,
            },
        }
    }

    #[test]
    fn differences_name_each_field() {
        assert_eq!(differences(&summary(), &summary()), Vec::<&str>::new());
        let mut other = summary();
        other.stop_reason = "error".into();
        other.error_message = Some("boom".into());
        other.tool_calls[0].arguments = serde_json::json!({});
        other.usage.total_tokens = 4;
        assert_eq!(
            differences(&summary(), &other),
            ["stopReason", "error", "toolCalls", "usage.totalTokens"]
        );
        // Which calls carry an arguments error is a field of its own.
        let mut flagged = summary();
        flagged.tool_calls[0].arguments_error = true;
        assert_eq!(
            differences(&flagged, &summary()),
            ["toolCalls.argumentsError"]
        );
        assert_eq!(differences(&flagged, &flagged), Vec::<&str>::new());
    }

    #[test]
    fn summaries_read_pi_shaped_json() {
        let line = r#"{"id":"x","stopReason":"stop","errorMessage":null,"text":"hi","thinking":"","toolCalls":[{"name":"read","arguments":{"path":"a"}}],"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3}}"#;
        let parsed: Summary = serde_json::from_str(line).unwrap();
        assert_eq!(parsed, summary());
    }

    #[test]
    fn api_of_request_paths() {
        let got: Vec<Option<&str>> = [
            "/v1/chat/completions",
            "/api/v1/responses",
            "/v1/messages",
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            "/v2/chat",
            "/v1beta/interactions",
        ]
        .into_iter()
        .map(api_of)
        .collect();
        assert_eq!(
            got,
            [
                Some("openai-completions"),
                Some("openai-responses"),
                Some("anthropic-messages"),
                Some("google-generative-ai"),
                None,
                None
            ]
        );
    }
}
