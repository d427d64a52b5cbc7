//! Anthropic Messages wire types: the request body (serialized) and stream events (parsed
//! leniently: unknown fields are ignored, unknown event, block and delta types are kept as
//! `Other`, `null` counters read as absent).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::providers::text::Text;
use serde_json::{Map, Value};

/// The request body of `POST /v1/messages`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessagesRequest {
    /// Model id.
    pub model: String,
    /// Output limit (required by Anthropic); thinking tokens count against it.
    pub max_tokens: u64,
    /// The conversation: alternating user and assistant turns.
    pub messages: Vec<MessageParam>,
    /// System prompt, as text blocks (so a cache marker can be attached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<Vec<ContentBlock>>,
    /// Always true.
    pub stream: bool,
    /// Sampling temperature (only without thinking: Anthropic rejects both together).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Client tools.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolParam>,
    /// Extended thinking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingParam>,
    /// Whether a tool must be called.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoiceParam>,
    /// Request metadata (`user_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<MetadataParam>,
    /// `{"effort": …}` with adaptive thinking (the level the model thinks at).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_config: Option<OutputConfig>,
    /// Models the server may answer with instead (`compat.allowedFallbackModels`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<FallbackParam>,
}

/// `output_config`: the effort of adaptive thinking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputConfig {
    /// `low`, `medium`, `high`, `xhigh` or `max` (the model's `thinkingLevelMap` value).
    pub effort: String,
}

/// One entry of `fallbacks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FallbackParam {
    /// The fallback model's id.
    pub model: String,
}

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user (also carries tool results).
    User,
    /// The model.
    Assistant,
    /// A mid-conversation system turn: here only the effort markers of
    /// `compat.supportsMidConvoEffort` models (empty content, an `output_config`).
    System,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageParam {
    /// Who says it.
    pub role: Role,
    /// Its content: a plain string (a user's text, as pi sends it) or blocks (never empty,
    /// except in an effort marker).
    pub content: MessageContent,
    /// The effort from this point on (effort markers only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_config: Option<OutputConfig>,
}

impl MessageParam {
    /// A turn of `role` with these blocks.
    pub fn blocks(role: Role, blocks: Vec<ContentBlock>) -> Self {
        Self {
            role,
            content: MessageContent::Blocks(blocks),
            output_config: None,
        }
    }

    /// An effort marker: a system turn without content that sets `effort` for the replies after
    /// it.
    pub fn effort_marker(effort: &str) -> Self {
        Self {
            role: Role::System,
            content: MessageContent::Blocks(Vec::new()),
            output_config: Some(OutputConfig {
                effort: effort.to_string(),
            }),
        }
    }

    /// Puts `marker` on the last block; a string content becomes one text block to carry it.
    /// False when there is no block that can carry one.
    pub fn set_cache_control(&mut self, marker: CacheControl) -> bool {
        match &mut self.content {
            MessageContent::Text(text) => {
                let text = std::mem::take(text);
                self.content = MessageContent::Blocks(vec![ContentBlock::Text {
                    text,
                    cache_control: Some(marker),
                }]);
                true
            }
            MessageContent::Blocks(blocks) => blocks
                .last_mut()
                .is_some_and(|block| block.set_cache_control(marker)),
        }
    }
}

/// The content of a message or a tool result: a string or blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Content blocks.
    Blocks(Vec<ContentBlock>),
}

/// `{"type": "ephemeral"}`: a prompt-cache breakpoint after the block that carries it; with
/// `"ttl": "1h"` the prefix is kept an hour instead of five minutes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheControl {
    /// Always `ephemeral`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `1h` for long retention; absent for the default five minutes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<&'static str>,
}

impl CacheControl {
    /// The default (five-minute) cache breakpoint.
    pub const EPHEMERAL: CacheControl = CacheControl {
        kind: "ephemeral",
        ttl: None,
    };
    /// A one-hour cache breakpoint.
    pub const ONE_HOUR: CacheControl = CacheControl {
        kind: "ephemeral",
        ttl: Some("1h"),
    };
}

/// Base64 image data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageSource {
    /// Always `base64`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The data, without a `data:` prefix.
    pub data: String,
}

/// A content block of a request message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text (never empty: Anthropic rejects empty text blocks).
        text: String,
        /// Cache breakpoint.
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An image.
    Image {
        /// The data.
        source: ImageSource,
        /// Cache breakpoint.
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A tool call made by the model (assistant turns).
    ToolUse {
        /// Call id (`[A-Za-z0-9_-]{1,64}`).
        id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        input: Map<String, Value>,
    },
    /// The result of a tool call (user turns).
    ToolResult {
        /// Id of the call it answers.
        tool_use_id: String,
        /// The text (without images, as pi sends it), or text and image blocks.
        content: MessageContent,
        /// Whether the tool failed (always sent, as pi sends it).
        is_error: bool,
        /// Cache breakpoint.
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// Reasoning replayed to the model that produced it, with its signature.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The signature Anthropic sent with it.
        signature: String,
    },
    /// Encrypted reasoning replayed to the model that produced it.
    RedactedThinking {
        /// The opaque data Anthropic sent.
        data: String,
    },
}

impl ContentBlock {
    /// A text block without a cache marker.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            cache_control: None,
        }
    }

    /// Sets the cache marker on blocks that can carry one; false for the others.
    pub fn set_cache_control(&mut self, marker: CacheControl) -> bool {
        match self {
            Self::Text { cache_control, .. }
            | Self::Image { cache_control, .. }
            | Self::ToolResult { cache_control, .. } => {
                *cache_control = Some(marker);
                true
            }
            _ => false,
        }
    }
}

/// A client tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolParam {
    /// Tool name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// `true` asks for the arguments to stream as they are written, not buffered
    /// (`compat.supportsEagerToolInputStreaming`, default true, as pi 1.6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eager_input_streaming: Option<bool>,
    /// JSON Schema of its input (see [`crate::schema::anthropic`]).
    pub input_schema: Value,
    /// Cache breakpoint (on the last tool, so the tool list is cached with the system prompt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// `true` on a tool that is declared but not loaded until searched for (the placeholder of
    /// native tool changes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defer_loading: Option<bool>,
}

/// `tool_choice`: `{"type": "auto" | "any" | "none"}` or `{"type": "tool", "name": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ToolChoiceParam {
    /// The model decides.
    Auto,
    /// At least one tool call.
    Any,
    /// No tool calls.
    None,
    /// This tool.
    Tool {
        /// Its name.
        name: String,
    },
}

/// `metadata`: what Anthropic accepts of [`crate::StreamOptions::metadata`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetadataParam {
    /// An opaque id of the end user, for abuse detection.
    pub user_id: String,
}

/// `thinking`: `{"type": "enabled", "budget_tokens": N, "display": …}` (budget thinking),
/// `{"type": "adaptive", "display": …}` (the model decides how much) or
/// `{"type": "disabled"}` (reasoning off on a model that would think).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThinkingParam {
    /// `enabled`, `adaptive` or `disabled`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Tokens the model may spend thinking (at least 1,024, less than `max_tokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    /// How thinking is shown: `summarized` (pi's default, the API's default before Opus 4.7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display: Option<&'static str>,
    /// What the server does with replayed thinking that no longer matches its prefix
    /// (`compat.supportsMidConvoEffort` models: `drop_block`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_binding: Option<BlockBinding>,
}

/// `thinking.block_binding`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockBinding {
    /// `drop_block`: such a thinking block is dropped instead of failing the request.
    pub prefix_mismatch_behavior: &'static str,
}

/// One event of the stream (the `data` of an SSE event, tagged by `type`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The reply begins: id and input usage.
    MessageStart {
        /// The message shell.
        #[serde(default)]
        message: MessageShell,
    },
    /// A content block begins.
    ContentBlockStart {
        /// Its index in the reply.
        index: u64,
        /// Its type and initial fields.
        content_block: StartBlock,
    },
    /// A fragment of the open block.
    ContentBlockDelta {
        /// Index of the block.
        index: u64,
        /// The fragment.
        delta: Delta,
    },
    /// The block ends.
    ContentBlockStop {
        /// Index of the block.
        index: u64,
    },
    /// Stop reason and final usage.
    MessageDelta {
        /// The stop reason.
        #[serde(default)]
        delta: MessageDeltaBody,
        /// Cumulative usage.
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    /// The reply is complete.
    MessageStop,
    /// Keep-alive.
    Ping,
    /// An error after the response started (e.g. `overloaded_error`).
    Error {
        /// What went wrong.
        #[serde(default)]
        error: ErrorBody,
    },
    /// An event type this version does not know.
    #[serde(other)]
    Other,
}

/// The `message` of `message_start`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct MessageShell {
    /// Message id (`msg_…`).
    pub id: Option<String>,
    /// Usage so far (input tokens).
    pub usage: Option<WireUsage>,
}

/// Token counters; any may be absent or `null` (proxies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct WireUsage {
    /// Input tokens not read from or written to the cache.
    pub input_tokens: Option<u64>,
    /// Output tokens (thinking included).
    pub output_tokens: Option<u64>,
    /// Input tokens written to the cache.
    pub cache_creation_input_tokens: Option<u64>,
    /// Input tokens read from the cache.
    pub cache_read_input_tokens: Option<u64>,
}

/// The first state of a content block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StartBlock {
    /// Text.
    Text {
        /// Initial text (normally empty).
        #[serde(default)]
        text: String,
    },
    /// Reasoning.
    Thinking {
        /// Initial reasoning (normally empty).
        #[serde(default)]
        thinking: String,
        /// Initial signature (normally absent).
        #[serde(default)]
        signature: Option<String>,
    },
    /// Encrypted reasoning.
    RedactedThinking {
        /// The opaque data to replay.
        #[serde(default)]
        data: String,
    },
    /// A client tool call.
    ToolUse {
        /// Call id.
        #[serde(default)]
        id: String,
        /// Tool name.
        #[serde(default)]
        name: String,
        /// Initial input (normally `{}`; the arguments arrive as `input_json_delta`).
        #[serde(default)]
        input: Value,
    },
    /// Server tools, their results and future block types: not part of the reply's content.
    #[serde(other)]
    Other,
}

/// A fragment of a content block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
// The variants are the wire's `type` tags (`text_delta`, …), named as Anthropic names them.
#[allow(clippy::enum_variant_names)]
pub enum Delta {
    /// Text.
    TextDelta {
        /// The text.
        #[serde(default)]
        text: String,
    },
    /// Reasoning.
    ThinkingDelta {
        /// The reasoning text.
        #[serde(default)]
        thinking: String,
    },
    /// The signature of a thinking block.
    SignatureDelta {
        /// The signature (or part of it).
        #[serde(default)]
        signature: String,
    },
    /// Tool-call arguments, as raw JSON text.
    InputJsonDelta {
        /// The fragment.
        #[serde(default)]
        partial_json: String,
    },
    /// Citations and future delta types.
    #[serde(other)]
    Other,
}

/// The `delta` of `message_delta`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct MessageDeltaBody {
    /// `end_turn`, `max_tokens`, `tool_use`, `stop_sequence`, `pause_turn`, `refusal`, …
    pub stop_reason: Option<String>,
}

/// The `error` of an `error` event.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ErrorBody {
    /// `overloaded_error`, `api_error`, …
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Anthropic's message.
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_deltas_read_flat_equal_the_tagged_enum() {
        let cases = [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi \"there\""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"c2ln"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"index":2,"delta":{"partial_json":"1}","type":"input_json_delta"},"type":"content_block_delta"}"#,
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"citations_delta","citation":{"x":1}}}"#,
            r#"{"type":"content_block_delta","index":4,"delta":{"type":"text_delta"}}"#,
        ];
        for data in cases {
            let tagged: StreamEvent = serde_json::from_str(data).unwrap();
            let flat = BlockDeltaData::parse(data).unwrap();
            let StreamEvent::ContentBlockDelta { delta, .. } = &tagged else {
                panic!("{data}");
            };
            assert_eq!(
                flat.delta.clone().into_delta_text(),
                delta.clone().into_delta_text(),
                "{data}"
            );
            assert_eq!(flat.into_event(), tagged, "{data}");
        }
    }

    #[test]
    fn other_events_and_broken_deltas_are_left_to_the_tagged_enum() {
        for data in [
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"no index"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":5}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":"#,
        ] {
            assert_eq!(BlockDeltaData::parse(data), None, "{data}");
        }
    }

    #[test]
    fn parses_events_leniently() {
        let event: StreamEvent = serde_json::from_value(json!({
            "type": "message_start",
            "message": {"id": "msg_1", "usage": {"input_tokens": 5, "cache_read_input_tokens": null}}
        }))
        .unwrap();
        assert_eq!(
            event,
            StreamEvent::MessageStart {
                message: MessageShell {
                    id: Some("msg_1".into()),
                    usage: Some(WireUsage {
                        input_tokens: Some(5),
                        ..WireUsage::default()
                    }),
                }
            }
        );
        let unknown: StreamEvent =
            serde_json::from_value(json!({"type": "future_event", "x": 1})).unwrap();
        assert_eq!(unknown, StreamEvent::Other);
        let server_tool: StreamEvent = serde_json::from_value(json!({
            "type": "content_block_start", "index": 0,
            "content_block": {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}}
        }))
        .unwrap();
        assert_eq!(
            server_tool,
            StreamEvent::ContentBlockStart {
                index: 0,
                content_block: StartBlock::Other
            }
        );
        let citation: StreamEvent = serde_json::from_value(json!({
            "type": "content_block_delta", "index": 2,
            "delta": {"type": "citations_delta", "citation": {}}
        }))
        .unwrap();
        assert_eq!(
            citation,
            StreamEvent::ContentBlockDelta {
                index: 2,
                delta: Delta::Other
            }
        );
    }

    #[test]
    fn serializes_blocks_in_anthropic_shape() {
        let mut block = ContentBlock::ToolResult {
            tool_use_id: "toolu_1".into(),
            content: MessageContent::Text("ok".into()),
            is_error: false,
            cache_control: None,
        };
        assert!(block.set_cache_control(CacheControl::EPHEMERAL));
        assert_eq!(
            serde_json::to_value(&block).unwrap(),
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok",
                   "is_error": false, "cache_control": {"type": "ephemeral"}})
        );
        let mut user = MessageParam {
            role: Role::User,
            content: MessageContent::Text("hi".into()),
            output_config: None,
        };
        assert_eq!(
            serde_json::to_value(&user).unwrap(),
            json!({"role": "user", "content": "hi"})
        );
        assert!(user.set_cache_control(CacheControl::ONE_HOUR));
        assert_eq!(
            serde_json::to_value(&user).unwrap(),
            json!({"role": "user", "content": [{"type": "text", "text": "hi",
                   "cache_control": {"type": "ephemeral", "ttl": "1h"}}]})
        );
        assert_eq!(
            serde_json::to_value(MessageParam::effort_marker("high")).unwrap(),
            json!({"role": "system", "content": [], "output_config": {"effort": "high"}})
        );
        let mut thinking = ContentBlock::RedactedThinking { data: "d".into() };
        assert!(!thinking.set_cache_control(CacheControl::EPHEMERAL));
        assert_eq!(
            serde_json::to_value(&thinking).unwrap(),
            json!({"type": "redacted_thinking", "data": "d"})
        );
    }
}

/// A [`Delta`]'s type and text, whether the delta came as a [`StreamEvent`] or as a
/// [`BlockDeltaData`]: what the stream processor works on. Text the chunk had without escapes
/// stays borrowed from it; owned text is moved, never copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaText<'a> {
    /// `text_delta`.
    Text(Cow<'a, str>),
    /// `thinking_delta`.
    Thinking(Cow<'a, str>),
    /// `signature_delta`.
    Signature(Cow<'a, str>),
    /// `input_json_delta`.
    InputJson(Cow<'a, str>),
    /// Any other type.
    Other,
}

impl<'a> DeltaText<'a> {
    /// The delta of `kind` with `text`.
    pub fn new(kind: DeltaKind, text: Cow<'a, str>) -> Self {
        match kind {
            DeltaKind::Text => DeltaText::Text(text),
            DeltaKind::Thinking => DeltaText::Thinking(text),
            DeltaKind::Signature => DeltaText::Signature(text),
            DeltaKind::InputJson => DeltaText::InputJson(text),
        }
    }

    /// The delta type's name (`delta` for other types).
    pub fn name(&self) -> &'static str {
        let kind = match self {
            DeltaText::Text(_) => DeltaKind::Text,
            DeltaText::Thinking(_) => DeltaKind::Thinking,
            DeltaText::Signature(_) => DeltaKind::Signature,
            DeltaText::InputJson(_) => DeltaKind::InputJson,
            DeltaText::Other => return "delta",
        };
        kind.name()
    }
}

/// The delta types whose one field is a text: what a [`FlatDelta`] can be read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaKind {
    /// `text_delta` (`text`).
    Text,
    /// `thinking_delta` (`thinking`).
    Thinking,
    /// `signature_delta` (`signature`).
    Signature,
    /// `input_json_delta` (`partial_json`).
    InputJson,
}

impl DeltaKind {
    /// Every kind.
    pub const ALL: [DeltaKind; 4] = [
        DeltaKind::Text,
        DeltaKind::Thinking,
        DeltaKind::Signature,
        DeltaKind::InputJson,
    ];

    /// The delta's `type`.
    pub fn name(self) -> &'static str {
        match self {
            DeltaKind::Text => "text_delta",
            DeltaKind::Thinking => "thinking_delta",
            DeltaKind::Signature => "signature_delta",
            DeltaKind::InputJson => "input_json_delta",
        }
    }

    /// The kind named `name`, if it is one of these.
    pub fn from_name(name: &str) -> Option<DeltaKind> {
        DeltaKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

impl Delta {
    /// This delta as a [`DeltaText`].
    pub fn into_delta_text(self) -> DeltaText<'static> {
        match self {
            Delta::TextDelta { text } => DeltaText::Text(Cow::Owned(text)),
            Delta::ThinkingDelta { thinking } => DeltaText::Thinking(Cow::Owned(thinking)),
            Delta::SignatureDelta { signature } => DeltaText::Signature(Cow::Owned(signature)),
            Delta::InputJsonDelta { partial_json } => {
                DeltaText::InputJson(Cow::Owned(partial_json))
            }
            Delta::Other => DeltaText::Other,
        }
    }
}

impl<'a> FlatDelta<'a> {
    /// A delta of `kind` holding `text` in its field, and nothing else.
    pub fn new(kind: DeltaKind, text: Text<'a>) -> Self {
        let mut delta = FlatDelta {
            kind: Text(Cow::Borrowed(kind.name())),
            text: None,
            thinking: None,
            signature: None,
            partial_json: None,
        };
        *delta.field_mut(kind) = Some(text);
        delta
    }

    /// The field that delta type `kind` carries.
    pub fn field(&self, kind: DeltaKind) -> &Option<Text<'a>> {
        match kind {
            DeltaKind::Text => &self.text,
            DeltaKind::Thinking => &self.thinking,
            DeltaKind::Signature => &self.signature,
            DeltaKind::InputJson => &self.partial_json,
        }
    }

    fn field_mut(&mut self, kind: DeltaKind) -> &mut Option<Text<'a>> {
        match kind {
            DeltaKind::Text => &mut self.text,
            DeltaKind::Thinking => &mut self.thinking,
            DeltaKind::Signature => &mut self.signature,
            DeltaKind::InputJson => &mut self.partial_json,
        }
    }

    /// This delta as a [`DeltaText`] (a missing field reads as empty text, as in [`Delta`]).
    pub fn into_delta_text(mut self) -> DeltaText<'a> {
        match DeltaKind::from_name(self.kind.as_str()) {
            Some(kind) => {
                let text = self.field_mut(kind).take();
                DeltaText::new(kind, text.map_or(Cow::Borrowed(""), |text| text.0))
            }
            None => DeltaText::Other,
        }
    }
}

/// The data of a `content_block_delta` event, read without serde's buffering of internally
/// tagged enums (which copies every key and value of `StreamEvent` and `Delta` into an
/// intermediate tree first). This event is most of a stream, one per delta; every other
/// event goes through `StreamEvent`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BlockDeltaData<'a> {
    /// Must be `content_block_delta`.
    #[serde(borrow, rename = "type")]
    pub kind: Text<'a>,
    /// Index of the block.
    pub index: u64,
    /// The fragment, with every field any delta type has.
    #[serde(borrow)]
    pub delta: FlatDelta<'a>,
}

/// A [`Delta`] as one flat object: its `type` and whichever field that type carries.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FlatDelta<'a> {
    /// `text_delta`, `input_json_delta`, …
    #[serde(borrow, rename = "type")]
    pub kind: Text<'a>,
    /// Of `text_delta`.
    #[serde(borrow)]
    pub text: Option<Text<'a>>,
    /// Of `thinking_delta`.
    #[serde(borrow)]
    pub thinking: Option<Text<'a>>,
    /// Of `signature_delta`.
    #[serde(borrow)]
    pub signature: Option<Text<'a>>,
    /// Of `input_json_delta`.
    #[serde(borrow)]
    pub partial_json: Option<Text<'a>>,
}

impl BlockDeltaData<'_> {
    /// Parses `data` as a `content_block_delta`; `None` when it is something else or does not
    /// parse this way (the caller then parses it as a [`StreamEvent`], which says what is
    /// wrong).
    pub fn parse(data: &str) -> Option<BlockDeltaData<'_>> {
        serde_json::from_str::<BlockDeltaData<'_>>(data)
            .ok()
            .filter(|event| event.kind.as_str() == "content_block_delta")
    }

    /// The event, as [`StreamEvent::ContentBlockDelta`] would hold it.
    pub fn into_event(self) -> StreamEvent {
        let delta = match self.delta.into_delta_text() {
            DeltaText::Text(text) => Delta::TextDelta {
                text: text.into_owned(),
            },
            DeltaText::Thinking(thinking) => Delta::ThinkingDelta {
                thinking: thinking.into_owned(),
            },
            DeltaText::Signature(signature) => Delta::SignatureDelta {
                signature: signature.into_owned(),
            },
            DeltaText::InputJson(partial_json) => Delta::InputJsonDelta {
                partial_json: partial_json.into_owned(),
            },
            DeltaText::Other => Delta::Other,
        };
        StreamEvent::ContentBlockDelta {
            index: self.index,
            delta,
        }
    }
}
