//! oxpi-agent-core: the [`Agent`] — state, `prompt`/`continue_`/`abort`, event subscriptions —
//! and the run loop that streams a reply, executes its tool calls, appends the results and asks
//! again until the model stops.
//!
//! Mirrors pi-agent-core; events serialize to the same JSON.

mod agent;
mod event;
mod hooks;
mod run_loop;
mod tool;

pub use agent::{Agent, AgentError, AgentOptions, PromptInput, Subscription, DEFAULT_MAX_TURNS};
pub use event::AgentEvent;
pub use hooks::{
    AfterToolCall, AfterToolCallFn, BeforeToolCall, BeforeToolCallFn, ConvertToLlmFn, GetApiKeyFn,
    QueueMode, ShouldStopAfterTurnFn, StreamFn, ToolCallDecision, ToolExecution, ToolOutcome,
    TransformContextFn, TurnSummary,
};
pub use tool::{
    AgentTool, AgentToolHandle, AgentToolResult, DynamicAgentTool, ToolCallFailure, ToolError,
    ToolUpdateFn,
};
