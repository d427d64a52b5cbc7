//! Content blocks: the pieces that user, assistant and tool-result messages are made of.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Plain text. `textSignature` is an opaque provider token replayed on later turns.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider signature for this text block, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
}

/// Model reasoning ("thinking").
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text (may be a summary, depending on the provider).
    pub thinking: String,
    /// Provider signature that must be replayed with this block, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// True when the provider redacted the reasoning (only the signature is meaningful).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
}

/// An image, base64-encoded.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64 data, without a `data:` prefix.
    pub data: String,
    /// MIME type such as `image/png`.
    pub mime_type: String,
}

/// A request from the model to run a tool.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Provider-assigned (or generated) id; the matching tool result carries the same id.
    pub id: String,
    /// Name of the tool to run.
    pub name: String,
    /// Arguments as a JSON object.
    #[serde(default = "empty_object")]
    pub arguments: Map<String, Value>,
    /// Gemini's thought signature, replayed on the next turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    /// The OpenAI Responses namespace of a namespaced (dynamically loaded) tool, replayed with
    /// the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Set when the streamed arguments were not a valid JSON object. The text says why and quotes
    /// what was received; `arguments` is then empty and must not be executed (pi 1.6's field of
    /// the same name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
}

fn empty_object() -> Map<String, Value> {
    Map::new()
}

impl ToolCall {
    /// A tool call with the given id, name and arguments.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Map<String, Value>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            thought_signature: None,
            namespace: None,
            arguments_error: None,
        }
    }
}

/// A block of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum AssistantContent {
    /// Text.
    #[serde(rename = "text")]
    Text(TextContent),
    /// Reasoning.
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    /// A tool call.
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
}

/// A block of user or tool-result content: text or an image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum UserContent {
    /// Text.
    #[serde(rename = "text")]
    Text(TextContent),
    /// An image.
    #[serde(rename = "image")]
    Image(ImageContent),
}

impl UserContent {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }

    /// An image block.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }

    /// The text of a text block, `None` for an image.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            Self::Image(_) => None,
        }
    }
}

impl AssistantContent {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }

    /// A thinking block.
    pub fn thinking(thinking: impl Into<String>) -> Self {
        Self::Thinking(ThinkingContent {
            thinking: thinking.into(),
            ..Default::default()
        })
    }
}
