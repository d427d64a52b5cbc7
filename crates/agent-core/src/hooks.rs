//! Hook types: how an application shapes each request and each tool call.

use std::sync::Arc;

use futures::future::BoxFuture;
use oxpi_ai::{
    ApiKey, AssistantMessage, AssistantMessageEventStream, Context, Message, Model, StreamOptions,
    ToolCall,
};
use tokio_util::sync::CancellationToken;

use crate::tool::AgentToolResult;

/// Starts one model request. The default uses oxpi-ai's built-in providers; tests and
/// applications swap it (e.g. a registry holding the faux provider).
pub type StreamFn =
    Arc<dyn Fn(&Model, &Context, StreamOptions) -> AssistantMessageEventStream + Send + Sync>;

/// Rewrites the history before each request (prune, inject). Receives the shared history; return
/// it unchanged to cost nothing.
pub type TransformContextFn = Arc<
    dyn Fn(Arc<Vec<Message>>, CancellationToken) -> BoxFuture<'static, Arc<Vec<Message>>>
        + Send
        + Sync,
>;

/// Converts the agent's messages to the messages sent to the model (after `transform_context`).
pub type ConvertToLlmFn = Arc<dyn Fn(&[Message]) -> Vec<Message> + Send + Sync>;

/// Decides, after validation, whether a tool call may run. The hook is raced against the run's
/// abort: after `abort()` the call is refused at once, whether or not the hook returns (a hook
/// waiting for a person's approval should still watch [`BeforeToolCall::cancel`]).
pub type BeforeToolCallFn =
    Arc<dyn Fn(BeforeToolCall) -> BoxFuture<'static, ToolCallDecision> + Send + Sync>;

/// What a [`BeforeToolCallFn`] sees (pi's `BeforeToolCallContext`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BeforeToolCall {
    /// The assistant message that asked for the call.
    pub assistant_message: AssistantMessage,
    /// The call as the model sent it.
    pub tool_call: ToolCall,
    /// The arguments after validation (coerced and normalized, as the tool will get them).
    pub args: serde_json::Map<String, serde_json::Value>,
    /// Cancelled when the run is aborted.
    pub cancel: CancellationToken,
}

/// Sees (and may replace) each tool call's result. Raced against the run's abort like
/// [`BeforeToolCallFn`]: after `abort()` the call ends as aborted at once.
pub type AfterToolCallFn =
    Arc<dyn Fn(AfterToolCall) -> BoxFuture<'static, Option<ToolOutcome>> + Send + Sync>;

/// The answer of a [`BeforeToolCallFn`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCallDecision {
    /// Run it.
    Allow,
    /// Do not run it; the model gets an error result with this reason.
    Block {
        /// Sent to the model.
        reason: String,
    },
}

/// What an [`AfterToolCallFn`] sees.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AfterToolCall {
    /// The call.
    pub tool_call: ToolCall,
    /// Its result.
    pub result: AgentToolResult,
    /// Whether it is an error.
    pub is_error: bool,
    /// Cancelled when the run is aborted.
    pub cancel: CancellationToken,
}

/// A tool call's result and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolOutcome {
    /// The result.
    pub result: AgentToolResult,
    /// Whether it is an error.
    pub is_error: bool,
}

impl ToolOutcome {
    /// `result`, an error when `is_error`.
    pub fn new(result: AgentToolResult, is_error: bool) -> Self {
        Self { result, is_error }
    }

    /// A successful `result`.
    pub fn ok(result: AgentToolResult) -> Self {
        Self::new(result, false)
    }

    /// `result` as an error.
    pub fn error(result: AgentToolResult) -> Self {
        Self::new(result, true)
    }
}

/// Asked before each model request for the API key of a provider (pi's `getApiKey`): for keys
/// that rotate or expire (OAuth tokens) during a long run. `Ok(Some(key))` is used for that
/// request; `Ok(None)` keeps the key of [`StreamOptions::api_key`] (or the provider's variable);
/// `Err(text)` ends the run with that error before anything is sent.
pub type GetApiKeyFn =
    Arc<dyn Fn(&str) -> BoxFuture<'static, Result<Option<ApiKey>, String>> + Send + Sync>;

/// How queued steering or follow-up messages are taken (pi's `QueueMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMode {
    /// One message per turn, oldest first (pi's default, `one-at-a-time`).
    #[default]
    OneAtATime,
    /// Every queued message at once (`all`).
    All,
}

/// Awaits a hook, turning a panic into an error text that names the hook.
pub(crate) async fn guarded<T>(
    hook: &str,
    work: impl std::future::Future<Output = T>,
) -> Result<T, String> {
    use futures::FutureExt;
    std::panic::AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .map_err(|panic| {
            format!(
                "The {hook} hook panicked: {}",
                oxpi_ai::registry::panic_text(&*panic)
            )
        })
}
