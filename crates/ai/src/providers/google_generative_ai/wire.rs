//! Gemini wire types: the `streamGenerateContent` request body (serialized) and the
//! `GenerateContentResponse` objects of the stream (parsed leniently: unknown fields and part
//! kinds are ignored, missing fields default).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentRequest {
    /// The conversation: `user` and `model` turns.
    pub contents: Vec<Content>,
    /// The system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Content>,
    /// `[{"functionDeclarations": [...]}]` when tools are offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Value>,
    /// `{"functionCallingConfig": {"mode": …}}` from the tool choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<Value>,
    /// Output limit, temperature, thinking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation_config: Option<GenerationConfig>,
}

/// `generationConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationConfig {
    /// Output token limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// `{"includeThoughts": true, "thinkingBudget": n}` or `{…, "thinkingLevel": "HIGH"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_config: Option<Value>,
}

impl GenerationConfig {
    /// True when no field is set (the object is then left out of the request).
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// One turn: a role and its parts. Also the `content` of a streamed candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Content {
    /// `user` or `model`; absent on `systemInstruction`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The parts, in order.
    pub parts: Vec<Part>,
}

/// A part of a turn. Exactly one of `text`, `inline_data`, `function_call` and
/// `function_response` is set in a request; a streamed part may be of a kind not modelled here
/// (`executableCode`, …), which leaves them all unset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Part {
    /// Text, or thought text when `thought` is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// True for reasoning ("thought summary") text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    /// Opaque signature that must be replayed with this part on the next turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    /// An image (base64).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inline_data: Option<Blob>,
    /// A tool call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    /// A tool result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_response: Option<FunctionResponse>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// An image part.
    pub fn image(mime_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self {
            inline_data: Some(Blob {
                mime_type: mime_type.into(),
                data: data.into(),
            }),
            ..Self::default()
        }
    }
}

/// Inline binary data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Blob {
    /// MIME type such as `image/png`.
    pub mime_type: String,
    /// Base64 data.
    pub data: String,
}

/// A function call made by the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FunctionCall {
    /// Call id; Gemini 3 sends one, older models do not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Function name.
    pub name: String,
    /// Arguments: a JSON object (absent when the function takes none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
}

/// The result of a function call, sent back in a `user` turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FunctionResponse {
    /// The id of the call, when the call had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Function name.
    pub name: String,
    /// `{"output": text}` or `{"error": text}`.
    pub response: Value,
    /// Images returned by the tool (Gemini 3).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
}

/// One `data:` object of the stream.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GenerateContentResponse {
    /// Candidates (only the first is used).
    pub candidates: Vec<Candidate>,
    /// Token counts so far (each chunk repeats the running totals).
    pub usage_metadata: Option<UsageMetadata>,
    /// Response id.
    pub response_id: Option<String>,
    /// Set when the prompt itself was blocked.
    pub prompt_feedback: Option<PromptFeedback>,
    /// An error object sent in place of a response.
    pub error: Option<Value>,
}

/// A candidate reply.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Candidate {
    /// New parts of the reply.
    pub content: Option<Content>,
    /// Why generation stopped (`STOP`, `MAX_TOKENS`, `SAFETY`, …).
    pub finish_reason: Option<String>,
    /// A human-readable note on the finish reason.
    pub finish_message: Option<String>,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UsageMetadata {
    /// Prompt tokens, cached ones included.
    pub prompt_token_count: u64,
    /// Reply tokens, thoughts excluded.
    pub candidates_token_count: u64,
    /// Thought tokens.
    pub thoughts_token_count: u64,
    /// Prompt tokens read from the context cache.
    pub cached_content_token_count: u64,
    /// Total as counted by Gemini (includes tool-use prompt tokens).
    pub total_token_count: u64,
}

/// Feedback on the prompt.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PromptFeedback {
    /// Why the prompt was blocked (`SAFETY`, `OTHER`, …).
    pub block_reason: Option<String>,
    /// A human-readable note on it.
    pub block_reason_message: Option<String>,
}
