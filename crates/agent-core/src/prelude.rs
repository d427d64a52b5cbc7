//! The names most programs use, in one import: `use oxpi_agent_core::prelude::*;`.
//!
//! Derives of the re-exported `serde` and `schemars` need to be told where those crates are
//! (`#[serde(crate = "oxpi_agent_core::serde")]`, `#[schemars(crate = "oxpi_agent_core::schemars")]`)
//! unless the program depends on them itself.

pub use crate::{
    extract, Agent, AgentError, AgentEvent, AgentOptions, AgentTool, AgentToolHandle,
    AgentToolResult, CancellationToken, RunOutcome, ToolError, ToolUpdateFn,
};
pub use oxpi_ai::{
    AssistantMessage, Message, Model, Models, ReasoningLevel, StopReason, ThinkingLevel,
};
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
pub use serde_json::json;
