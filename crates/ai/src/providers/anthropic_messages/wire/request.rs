//! The request body of `POST /v1/messages` (serialized).

use serde::Serialize;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
