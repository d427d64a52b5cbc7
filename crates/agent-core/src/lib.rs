//! oxpi-agent-core: the [`Agent`] — state, `prompt`/`continue_`/`abort`, event subscriptions —
//! and the run loop that streams a reply, executes its tool calls, appends the results and asks
//! again until the model stops.
//!
//! Mirrors pi-agent-core; events serialize to the same JSON. With this crate and `tokio` a
//! program has all it names: [`prelude`], and the re-exported [`oxpi_ai`] (models, messages),
//! [`CancellationToken`], [`schemars`], [`serde`] and [`serde_json`].
//!
//! An agent with one tool (here the scripted faux provider stands in for a model; a catalogue
//! model is `oxpi_ai::models::get_model("anthropic", "claude-sonnet-4-5")`):
//!
//! ```
//! use oxpi_agent_core::prelude::*;
//! # use oxpi_agent_core::oxpi_ai::{faux::{FauxProvider, FauxReply}, ProviderRegistry};
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "oxpi_agent_core::serde")]
//! #[schemars(crate = "oxpi_agent_core::schemars")]
//! struct City {
//!     /// The city's name.
//!     city: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let faux = FauxProvider::new();
//! # faux.push(FauxReply::tool_call("get_weather", json!({"city": "Paris"})));
//! # faux.push(FauxReply::text("21°C and sunny."));
//! # let mut registry = ProviderRegistry::new();
//! # registry.register(faux.clone());
//! let weather = AgentToolHandle::from_fn("get_weather", "Current weather of a city", |a: City| async move {
//!     Ok::<_, ToolError>(format!("{}: 21°C, sunny", a.city))
//! })?;
//! let agent = Agent::new(AgentOptions::new(faux.model()).with_registry(registry).with_tool(weather));
//! // A failed run (connection refused, no API key…) is an `Err` here, and stays in the history.
//! let reply = agent.prompt("What's the weather in Paris?").await?;
//! assert_eq!(reply.text(), "21°C and sunny.");
//! # Ok(())
//! # }
//! ```
//!
//! More in `examples/` (each run by `cargo test -p oxpi-agent-core --examples`).

mod agent;
mod event;
mod extract;
mod fn_tool;
mod hooks;
mod inner;
mod options;
pub mod prelude;
mod retry;
mod run_loop;
mod tool;
mod tool_calls;
mod tool_run;
mod turn_hooks;

// What a user of this crate names, so `oxpi-agent-core` and `tokio` are the only dependencies.
pub use oxpi_ai;
pub use schemars;
pub use serde;
pub use serde_json;
pub use tokio_util::sync::CancellationToken;

pub use agent::{Agent, AgentError, PromptInput, RunOutcome, Subscription};
pub use event::AgentEvent;
pub use extract::{extract, EXTRACT_TOOL};
pub use hooks::{
    AfterToolCall, AfterToolCallFn, AfterToolCallResult, BeforeToolCall, BeforeToolCallFn,
    ConvertToLlmFn, ExecuteToolFn, GetApiKeyFn, QueueMode, StreamFn, ToolCallDecision, ToolOutcome,
    TransformContextFn,
};
pub use options::{AgentOptions, DEFAULT_MAX_TURNS};
pub use retry::{is_retryable_assistant_error, RetryPolicy, DEFAULT_MAX_RETRY_DELAY};
pub use tool::{
    AgentTool, AgentToolHandle, AgentToolResult, DynamicAgentTool, Replay, ToolCallFailure,
    ToolError, ToolExecution, ToolInvocation, ToolUpdateFn,
};
pub use tool_run::{run_tool_call, RunToolCallOptions, BLOCKED_TEXT};
pub use turn_hooks::{
    AgentContext, FinishTurnFn, PrepareNextTurnFn, PrepareNextTurnWithContextFn, PrepareRequestFn,
    RequestContext, RequestUpdate, TurnAction, TurnContext, TurnUpdate,
};
