//! oxpi-agent-core: the [`Agent`] — state, `prompt`/`continue_`/`abort`, event subscriptions —
//! and the run loop that streams a reply, executes its tool calls, appends the results and asks
//! again until the model stops.
//!
//! Mirrors pi-agent-core; events serialize to the same JSON.

mod agent;
mod event;
mod hooks;
mod inner;
mod options;
mod retry;
mod run_loop;
mod tool;
mod tool_calls;
mod tool_run;
mod turn_hooks;

pub use agent::{Agent, AgentError, PromptInput, RunOutcome, Subscription};
pub use event::AgentEvent;
pub use hooks::{
    AfterToolCall, AfterToolCallFn, AfterToolCallResult, BeforeToolCall, BeforeToolCallFn,
    ConvertToLlmFn, GetApiKeyFn, QueueMode, StreamFn, ToolCallDecision, ToolOutcome,
    TransformContextFn,
};
pub use options::{AgentOptions, DEFAULT_MAX_TURNS};
pub use retry::{is_retryable_assistant_error, RetryPolicy, DEFAULT_MAX_RETRY_DELAY};
pub use tool::{
    AgentTool, AgentToolHandle, AgentToolResult, DynamicAgentTool, Replay, ToolCallFailure,
    ToolError, ToolExecution, ToolUpdateFn,
};
pub use tool_run::{run_tool_call, RunToolCallOptions, BLOCKED_TEXT};
pub use turn_hooks::{
    AgentContext, FinishTurnFn, PrepareNextTurnFn, PrepareNextTurnWithContextFn, PrepareRequestFn,
    RequestContext, RequestUpdate, TurnAction, TurnContext, TurnUpdate,
};
