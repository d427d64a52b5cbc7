//! Responses API wire types: the request body (serialized) and stream events (parsed leniently:
//! unknown fields are ignored, missing ones default, unknown event types are kept as
//! [`StreamEvent::type_`] so the caller can skip them).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The request body of `POST /responses`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponsesRequest {
    /// Model id.
    pub model: String,
    /// The conversation as input items (messages, function calls and outputs, reasoning).
    pub input: Vec<Value>,
    /// Always true.
    pub stream: bool,
    /// Always false: nothing is kept on the server, so reasoning is replayed from its
    /// encrypted content.
    pub store: bool,
    /// Output limit (reasoning included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Function tools: `{type: "function", name, description, parameters, strict?}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Value>,
    /// `{effort, summary}` for reasoning models when reasoning was asked for, `{effort}` (the
    /// model's `off` value) when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Value>,
    /// `["reasoning.encrypted_content"]` when reasoning is asked for (always on xAI).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Prompt cache key: the session id (unless cache retention is `none`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// `24h` for long cache retention where supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_retention: Option<&'static str>,
    /// `{mode: "explicit"}` (no caching) or `{ttl: "30m"}` (long retention) where the model
    /// takes explicit cache modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_options: Option<Value>,
    /// Processing tier (`flex`, `priority`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<&'static str>,
    /// `"auto"`, `"none"`, `"required"` or `{"type": "function", "name": …}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
}

/// One `data:` event of the stream. Only the fields this provider reads are typed; the event's
/// `type` decides which are set.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct StreamEvent {
    /// Event type, e.g. `response.output_text.delta`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The response (`response.created`, `.completed`, `.incomplete`, `.failed`).
    pub response: Option<ResponseObject>,
    /// The output item (`response.output_item.added` / `.done`).
    pub item: Option<Value>,
    /// The item an event refers to.
    pub item_id: Option<String>,
    /// Text or argument fragment.
    pub delta: Option<String>,
    /// Complete arguments (`response.function_call_arguments.done`).
    pub arguments: Option<String>,
    /// Error code (`error` event).
    pub code: Option<Value>,
    /// Error message (`error` event).
    pub message: Option<String>,
    /// Nested error object some servers send on the `error` event.
    pub error: Option<Value>,
}

/// The response object carried by lifecycle events.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ResponseObject {
    /// Response id.
    pub id: Option<String>,
    /// `completed`, `incomplete`, `failed`, …
    pub status: Option<String>,
    /// Token usage (terminal events).
    pub usage: Option<ResponseUsage>,
    /// Why the response is incomplete.
    pub incomplete_details: Option<IncompleteDetails>,
    /// What went wrong (`response.failed`).
    pub error: Option<ResponseError>,
    /// The tier that processed the request (prices scale with it).
    pub service_tier: Option<String>,
}

/// Why a response is incomplete.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct IncompleteDetails {
    /// `max_output_tokens`, `content_filter`, …
    pub reason: Option<String>,
}

/// The error of a failed response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ResponseError {
    /// Machine-readable code, e.g. `server_error` (any JSON value is accepted).
    pub code: Option<Value>,
    /// Human-readable message.
    pub message: Option<String>,
}

/// Token usage of a response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ResponseUsage {
    /// Input tokens, cached included.
    pub input_tokens: Option<u64>,
    /// Output tokens, reasoning included.
    pub output_tokens: Option<u64>,
    /// Everything.
    pub total_tokens: Option<u64>,
    /// Input details.
    pub input_tokens_details: Option<InputTokensDetails>,
    /// Output details.
    pub output_tokens_details: Option<OutputTokensDetails>,
}

/// Input token details.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct InputTokensDetails {
    /// Tokens read from the prompt cache.
    pub cached_tokens: Option<u64>,
}

/// Output token details.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct OutputTokensDetails {
    /// Reasoning tokens (part of `output_tokens`).
    pub reasoning_tokens: Option<u64>,
}

/// A `function_call` output item.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FunctionCallItem {
    /// Item id (`fc_…`).
    pub id: Option<String>,
    /// Call id (`call_…`), which the result answers.
    pub call_id: Option<String>,
    /// Tool name.
    pub name: Option<String>,
    /// Argument text so far (complete on `.done`).
    pub arguments: Option<String>,
}
