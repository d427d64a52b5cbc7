//! ConverseStream's events: the JSON payloads of the `event` messages of the binary event
//! stream, by `:event-type`. Unknown fields are ignored; an unknown event type is skipped by the
//! processor.

use serde::Deserialize;

/// `contentBlockStart`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContentBlockStart {
    /// Index of the block.
    pub content_block_index: u64,
    /// What starts (only tool use has a start event).
    pub start: Option<BlockStart>,
}

/// The start of a block.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BlockStart {
    /// A tool call.
    pub tool_use: Option<ToolUseStart>,
}

/// A tool call's id and name.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolUseStart {
    /// The call id.
    pub tool_use_id: String,
    /// The tool.
    pub name: String,
}

/// `contentBlockStop`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContentBlockStop {
    /// Index of the block.
    pub content_block_index: u64,
}

/// `contentBlockDelta`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContentBlockDelta {
    /// Index of the block.
    pub content_block_index: u64,
    /// The delta.
    pub delta: Delta,
}

/// One delta: text, tool input, or reasoning.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Delta {
    /// Text.
    pub text: Option<String>,
    /// A fragment of a tool call's JSON input.
    pub tool_use: Option<ToolUseDelta>,
    /// Reasoning text or its signature.
    pub reasoning_content: Option<ReasoningDelta>,
}

/// A tool-input fragment.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ToolUseDelta {
    /// JSON text.
    pub input: String,
}

/// A reasoning fragment.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ReasoningDelta {
    /// Reasoning text.
    pub text: Option<String>,
    /// Part of the signature (Claude).
    pub signature: Option<String>,
}

/// `messageStop`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MessageStop {
    /// `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `guardrail_intervened`,
    /// `content_filtered`, `model_context_window_exceeded`.
    pub stop_reason: String,
}

/// `metadata`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Metadata {
    /// Token counts.
    pub usage: Option<TokenUsage>,
}

/// Bedrock's token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TokenUsage {
    /// Input tokens (not read from or written to the cache).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Total.
    pub total_tokens: Option<u64>,
    /// Read from the prompt cache.
    pub cache_read_input_tokens: u64,
    /// Written to the prompt cache.
    pub cache_write_input_tokens: u64,
}

/// The payload of an exception message (`:message-type: exception`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ExceptionPayload {
    /// What went wrong.
    pub message: Option<String>,
    /// Some services capitalise it.
    #[serde(rename = "Message")]
    pub message_capitalised: Option<String>,
}
