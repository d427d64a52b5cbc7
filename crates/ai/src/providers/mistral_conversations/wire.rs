//! Mistral's chat request (`POST /v1/chat/completions`) in its own field names. The stream is
//! Chat Completions chunks, read by [`crate::providers::openai_completions`] after
//! [`super::stream::normalize_chunk`].

use serde::Serialize;
use serde_json::Value;

/// The request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// Model id.
    pub model: String,
    /// Always true.
    pub stream: bool,
    /// System, user, assistant and tool messages.
    pub messages: Vec<Value>,
    /// Function tools.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Value>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Output limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// `auto`, `none`, `any` or `{"type": "function", "function": {"name": …}}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    /// `reasoning` for Magistral-style reasoning models.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_mode: Option<&'static str>,
    /// Effort, for the models with a `thinking_level_map`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// The session id, for Mistral's prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
}
