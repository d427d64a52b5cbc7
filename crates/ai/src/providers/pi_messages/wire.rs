//! pi-messages on the wire: the request (`{model, context, options}`, the context as pi's
//! transcript: a leading system message with the prompt and tools, then the conversation) and
//! the serialized events a backend streams back. Unknown fields are ignored.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::options::{CacheRetention, ReasoningLevel, ToolChoice};
use crate::types::message::{Message, StopReason};
use crate::types::usage::Usage;

/// The request body.
#[derive(Debug, Serialize)]
pub(crate) struct Request<'a> {
    /// The model id.
    pub(crate) model: &'a str,
    /// `{messages}`: pi's transcript context.
    pub(crate) context: TranscriptContext<'a>,
    /// The request options pi sends (absent ones left out, as `JSON.stringify` drops
    /// `undefined`).
    pub(crate) options: RequestOptions,
}

/// pi's `TranscriptContext`.
#[derive(Debug, Serialize)]
pub(crate) struct TranscriptContext<'a> {
    pub(crate) messages: Vec<std::borrow::Cow<'a, Message>>,
}

/// pi's `options` of a pi-messages request.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning: Option<ReasoningLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cache_retention: Option<CacheRetention>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<Value>,
}

/// pi's tool choice: `"auto" | "none" | "required" | {type: "function", function: {name}}`.
pub(crate) fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Tool(name) => {
            serde_json::json!({"type": "function", "function": {"name": name}})
        }
    }
}

/// One serialized event (pi's `PiMessagesEvent`).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Event {
    Start {},
    TextStart {
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    TextDelta {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        delta: String,
    },
    TextEnd {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        #[serde(default)]
        content: String,
        #[serde(default, rename = "contentSignature")]
        content_signature: Option<String>,
    },
    ThinkingStart {
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    ThinkingDelta {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        delta: String,
    },
    ThinkingEnd {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        #[serde(default)]
        content: String,
        #[serde(default, rename = "contentSignature")]
        content_signature: Option<String>,
        #[serde(default)]
        redacted: Option<bool>,
    },
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
    },
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        delta: String,
    },
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        #[serde(rename = "toolCall")]
        tool_call: WireToolCall,
    },
    Done {
        reason: StopReason,
        #[serde(default)]
        usage: Option<Usage>,
        #[serde(default, rename = "responseId")]
        response_id: Option<String>,
    },
    Error {
        reason: StopReason,
        #[serde(default)]
        usage: Option<Usage>,
        #[serde(default, rename = "errorMessage")]
        error_message: Option<String>,
        #[serde(default, rename = "responseId")]
        response_id: Option<String>,
    },
}

/// The finished call of a `toolcall_end`.
#[derive(Debug, Deserialize)]
pub(crate) struct WireToolCall {
    #[serde(default)]
    pub(crate) arguments: Map<String, Value>,
}
