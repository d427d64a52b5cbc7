//! oxpi-ai: one streaming API over LLM provider APIs.

pub mod tool;
pub mod types;

pub use types::content::{
    AssistantContent, ImageContent, TextContent, ThinkingContent, ToolCall, UserContent,
};
pub use types::context::{Context, Tool};
pub use types::message::{
    now_millis, AssistantMessage, Message, StopReason, ToolResultMessage, UserMessage,
    UserMessageContent,
};
pub use types::model::{InputKind, Model, ModelCost, API_FAUX, API_OPENAI_COMPLETIONS};
pub use types::usage::{Usage, UsageCost};
