//! Anthropic Messages wire types: the request body ([`request`], serialized, re-exported here)
//! and stream events (parsed leniently: unknown fields are ignored, unknown event, block and
//! delta types are kept as `Other`, `null` counters read as absent).

use std::borrow::Cow;

use serde::Deserialize;

use crate::providers::text::Text;
use serde_json::Value;

pub mod request;
pub use request::*;

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
