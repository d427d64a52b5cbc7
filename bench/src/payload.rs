//! The pre-rendered streams: deterministic content, cut into 10-byte deltas, written as
//! OpenAI Chat Completions or Anthropic Messages server-sent events.
//!
//! Sizes are in bytes of *content*: the text of the reply, or the raw JSON text of the tool
//! call's arguments. The body on the wire is larger (each 10-byte delta is wrapped in an event
//! of about 150–200 bytes).

use std::fmt::Write as _;

/// Bytes of content per delta event.
pub const DELTA_BYTES: usize = 10;

/// The tool the scripted call asks for.
pub const TOOL_NAME: &str = "write";
/// The path in the scripted call's arguments.
pub const TOOL_PATH: &str = "bench/output.txt";

/// Which stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Chat Completions, one text block.
    OpenAiText,
    /// Chat Completions, one tool call.
    OpenAiTool,
    /// Anthropic Messages, one `tool_use` block.
    AnthropicTool,
    /// Chat Completions, one text block that ends with [`TUI_END`] on a line of its own (the
    /// interactive-mode rows wait for it on screen).
    TuiText,
}

/// The last line of the [`Kind::TuiText`] reply.
pub const TUI_END: &str = "oxpi-bench: reply complete";

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 4] = [
        Kind::OpenAiText,
        Kind::OpenAiTool,
        Kind::AnthropicTool,
        Kind::TuiText,
    ];

    /// The name used in URLs and on command lines.
    pub fn name(self) -> &'static str {
        match self {
            Kind::OpenAiText => "openai-text",
            Kind::OpenAiTool => "openai-tool",
            Kind::AnthropicTool => "anthropic-tool",
            Kind::TuiText => "tui-text",
        }
    }

    /// Parses [`name`](Self::name).
    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == text)
    }

    /// The `model.api` a client uses for this stream.
    pub fn api(self) -> &'static str {
        match self {
            Kind::OpenAiText | Kind::OpenAiTool | Kind::TuiText => "openai-completions",
            Kind::AnthropicTool => "anthropic-messages",
        }
    }

    /// True for the tool-call streams.
    pub fn is_tool(self) -> bool {
        !matches!(self, Kind::OpenAiText | Kind::TuiText)
    }
}

/// The base URL a client is given for `kind` at `size` on the server at `origin`
/// (`http://127.0.0.1:PORT`). Clients append their own path (`/chat/completions`,
/// `/v1/messages`); the server routes on this prefix.
pub fn base_url(origin: &str, kind: Kind, size: usize) -> String {
    format!("{origin}/{}/{size}", kind.name())
}

/// Parses the `/<kind>/<size>` prefix of a request path.
pub fn route(path: &str) -> Option<(Kind, usize)> {
    let mut parts = path.trim_start_matches('/').split('/');
    let kind = Kind::parse(parts.next()?)?;
    let size = parts.next()?.parse().ok()?;
    Some((kind, size))
}

const WORDS: [&str; 24] = [
    "stream", "delta", "token", "parser", "linear", "agent", "tool", "call", "reply", "model",
    "event", "buffer", "bytes", "quote", "escape", "value", "object", "array", "string", "oxpi",
    "rust", "node", "bench", "line",
];

/// `len` bytes of ASCII prose (words, spaces, a newline every few words), the same every time.
pub fn prose(len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    let mut state: u32 = 0x9e37_79b9;
    let mut words_on_line = 0;
    while out.len() < len {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        out.push_str(WORDS[(state >> 16) as usize % WORDS.len()]);
        words_on_line += 1;
        if words_on_line == 12 {
            out.push('\n');
            words_on_line = 0;
        } else {
            out.push(' ');
        }
    }
    out.truncate(len);
    out
}

/// The tool call's arguments: `{"path":"bench/output.txt","content":"…"}`, exactly `size` bytes
/// of JSON text (at least the fixed part). The content has `\n` and `\"` escapes, so deltas cut
/// escapes in two.
pub fn tool_arguments(size: usize) -> String {
    let head = format!(r#"{{"path":"{TOOL_PATH}","content":""#);
    let tail = "\"}";
    let room = size.saturating_sub(head.len() + tail.len());
    let mut content = String::with_capacity(room + 8);
    let text = prose(room);
    for (i, ch) in text.chars().enumerate() {
        if content.len() >= room {
            break;
        }
        match ch {
            '\n' if content.len() + 2 <= room => content.push_str("\\n"),
            ' ' if i % 97 == 0 && content.len() + 2 <= room => content.push_str("\\\""),
            '\n' => content.push(' '),
            c => content.push(c),
        }
    }
    while content.len() < room {
        content.push('.');
    }
    format!("{head}{content}{tail}")
}

/// The length in characters of the decoded `content` argument of [`tool_arguments`]`(size)`.
pub fn tool_content_chars(size: usize) -> usize {
    match serde_json::from_str::<serde_json::Value>(&tool_arguments(size)) {
        Ok(v) => v["content"].as_str().map_or(0, |s| s.chars().count()),
        Err(_) => 0,
    }
}

/// The text of the text stream of `size` bytes.
pub fn text_content(size: usize) -> String {
    prose(size)
}

fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// The text of the [`Kind::TuiText`] stream of `size` bytes: prose, a blank line, [`TUI_END`].
pub fn tui_text(size: usize) -> String {
    let end = format!("\n\n{TUI_END}");
    let mut text = prose(size.saturating_sub(end.len()));
    text.push_str(&end);
    text
}

/// Cuts `text` (ASCII) into [`DELTA_BYTES`]-byte pieces.
fn deltas(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.len();
    (0..bytes.div_ceil(DELTA_BYTES)).map(move |i| {
        let start = i * DELTA_BYTES;
        &text[start..(start + DELTA_BYTES).min(bytes)]
    })
}

/// The whole SSE body for `kind` at `size`.
pub fn render(kind: Kind, size: usize) -> Vec<u8> {
    match kind {
        Kind::OpenAiText => render_openai(&text_content(size), false),
        Kind::TuiText => render_openai(&tui_text(size), false),
        Kind::OpenAiTool => render_openai(&tool_arguments(size), true),
        Kind::AnthropicTool => render_anthropic(&tool_arguments(size)),
    }
}

const CHUNK_HEAD: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,"delta":"#;

fn render_openai(content: &str, tool: bool) -> Vec<u8> {
    let pieces = content.len().div_ceil(DELTA_BYTES);
    let mut out = String::with_capacity(pieces * 200 + 1024);
    let mut event = |delta: &str, finish: &str| {
        let _ = write!(
            out,
            "data: {CHUNK_HEAD}{delta},\"finish_reason\":{finish}}}]}}\n\n"
        );
    };
    if tool {
        event(
            &format!(
                r#"{{"role":"assistant","content":null,"tool_calls":[{{"index":0,"id":"call_bench","type":"function","function":{{"name":"{TOOL_NAME}","arguments":""}}}}]}}"#
            ),
            "null",
        );
        for piece in deltas(content) {
            event(
                &format!(
                    r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":{}}}}}]}}"#,
                    json_string(piece)
                ),
                "null",
            );
        }
        event("{}", "\"tool_calls\"");
    } else {
        event(r#"{"role":"assistant","content":""}"#, "null");
        for piece in deltas(content) {
            event(&format!(r#"{{"content":{}}}"#, json_string(piece)), "null");
        }
        event("{}", "\"stop\"");
    }
    let _ = write!(
        out,
        "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"bench-model\",\"choices\":[],\"usage\":{{\"prompt_tokens\":20,\"completion_tokens\":{pieces},\"total_tokens\":{}}}}}\n\n",
        pieces + 20
    );
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

fn render_anthropic(arguments: &str) -> Vec<u8> {
    let pieces = arguments.len().div_ceil(DELTA_BYTES);
    let mut out = String::with_capacity(pieces * 160 + 1024);
    let mut event = |name: &str, data: &str| {
        let _ = write!(out, "event: {name}\ndata: {data}\n\n");
    };
    event(
        "message_start",
        r#"{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"bench-model","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1}}}"#,
    );
    event(
        "content_block_start",
        &format!(
            r#"{{"type":"content_block_start","index":0,"content_block":{{"type":"tool_use","id":"toolu_bench","name":"{TOOL_NAME}","input":{{}}}}}}"#
        ),
    );
    event("ping", r#"{"type": "ping"}"#);
    for piece in deltas(arguments) {
        event(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"input_json_delta","partial_json":{}}}}}"#,
                json_string(piece)
            ),
        );
    }
    event(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0}"#,
    );
    event(
        "message_delta",
        &format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"tool_use","stop_sequence":null}},"usage":{{"output_tokens":{pieces}}}}}"#
        ),
    );
    event("message_stop", r#"{"type":"message_stop"}"#);
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn arguments_have_the_exact_size_and_parse() {
        for size in [1000, 10 * 1024, 100 * 1024 + 3] {
            let args = tool_arguments(size);
            assert_eq!(args.len(), size);
            let v: serde_json::Value = serde_json::from_str(&args).unwrap();
            assert_eq!(v["path"], TOOL_PATH);
            assert!(v["content"].as_str().unwrap().contains('\n'));
            assert!(v["content"].as_str().unwrap().contains('"'));
        }
        assert_eq!(text_content(1234).len(), 1234);
    }

    #[test]
    fn every_event_is_json_and_deltas_rebuild_the_content() {
        for kind in Kind::ALL {
            let body = String::from_utf8(render(kind, 2048)).unwrap();
            let mut rebuilt = String::new();
            for block in body.split("\n\n").filter(|b| !b.is_empty()) {
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .unwrap();
                if data == "[DONE]" {
                    continue;
                }
                let v: serde_json::Value = serde_json::from_str(data).unwrap();
                let piece = match kind {
                    Kind::OpenAiText | Kind::TuiText => {
                        v["choices"][0]["delta"]["content"].as_str()
                    }
                    Kind::OpenAiTool => {
                        v["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str()
                    }
                    Kind::AnthropicTool => v["delta"]["partial_json"].as_str(),
                };
                rebuilt.push_str(piece.unwrap_or_default());
            }
            let expected = match kind {
                Kind::OpenAiText => text_content(2048),
                Kind::TuiText => tui_text(2048),
                _ => tool_arguments(2048),
            };
            assert_eq!(rebuilt, expected, "{kind:?}");
        }
    }

    #[test]
    fn routes() {
        let url = base_url("http://127.0.0.1:1", Kind::AnthropicTool, 300);
        let path = url.trim_start_matches("http://127.0.0.1:1").to_string() + "/v1/messages";
        assert_eq!(route(&path), Some((Kind::AnthropicTool, 300)));
        assert_eq!(route("/nope/1"), None);
    }
}
