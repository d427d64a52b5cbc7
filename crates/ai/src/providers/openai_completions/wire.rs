//! Chat Completions wire types: the request body (serialized) and stream chunks (parsed
//! leniently: unknown fields are ignored, missing ones default).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// Model id.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Value>,
    /// Always true.
    pub stream: bool,
    /// `{"include_usage": true}` where supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<Value>,
    /// Output limit (OpenAI's newer name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    /// Output limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Function tools.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Value>,
    /// `low` / `medium` / `high`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// OpenRouter's reasoning object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Value>,
    /// `false` to opt out of storage (OpenAI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
}

/// One `data:` chunk of the stream.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ChatChunk {
    /// Response id.
    pub id: Option<String>,
    /// Choices (only the first is used).
    pub choices: Vec<ChunkChoice>,
    /// Usage, usually in the last chunk.
    pub usage: Option<ChunkUsage>,
    /// An error object some servers send mid-stream.
    pub error: Option<Value>,
}

/// A choice of a chunk.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ChunkChoice {
    /// The delta.
    pub delta: ChunkDelta,
    /// Set on the last content chunk.
    pub finish_reason: Option<String>,
    /// Some servers put usage on the choice.
    pub usage: Option<ChunkUsage>,
}

/// What a chunk adds.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ChunkDelta {
    /// Text.
    pub content: Option<String>,
    /// Reasoning (DeepSeek, llama.cpp, vLLM).
    pub reasoning_content: Option<String>,
    /// Reasoning (OpenRouter, Ollama).
    pub reasoning: Option<String>,
    /// Tool-call fragments.
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A tool-call fragment.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ToolCallDelta {
    /// Which call it belongs to.
    pub index: Option<u64>,
    /// Call id (first fragment).
    pub id: Option<String>,
    /// Name and argument text.
    pub function: Option<FunctionDelta>,
}

/// The function part of a tool-call fragment.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FunctionDelta {
    /// Tool name (first fragment).
    pub name: Option<String>,
    /// Argument text; some servers send an object instead of a string.
    pub arguments: Option<Value>,
}

/// Token usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ChunkUsage {
    /// Input tokens, cached included.
    pub prompt_tokens: u64,
    /// Output tokens, reasoning included.
    pub completion_tokens: u64,
    /// Input details.
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// Input token details.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PromptTokensDetails {
    /// Tokens read from the prompt cache.
    pub cached_tokens: u64,
}
