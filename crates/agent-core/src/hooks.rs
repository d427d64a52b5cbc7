//! Hook types: how an application shapes each request and each tool call.

use std::sync::Arc;

use futures::future::BoxFuture;
use oxpi_ai::{
    ApiKey, AssistantMessage, AssistantMessageEventStream, Context, Message, Model, StreamOptions,
    ToolCall, Usage, UserContent,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::tool::{AgentToolResult, ToolCallFailure, ToolInvocation};
use crate::turn_hooks::AgentContext;

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

/// Converts the agent's messages to the messages sent to the model (after `transform_context`),
/// as pi's `convertToLlm`: e.g. an app-defined [`Message::Custom`] made into a user message.
/// Without one, the agent keeps the four kinds a model reads and leaves app-defined messages out
/// (pi's default). Whatever it returns, an app-defined message still in it is left out of the
/// request: no provider ever receives one.
///
/// ```
/// use oxpi_agent_core::AgentOptions;
/// use oxpi_ai::{Message, UserMessage, UserMessageContent};
/// let model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
/// // pi's coding agent sends an extension's `custom` message as a user message.
/// let options = AgentOptions::new(model).with_convert_to_llm(|messages| {
///     messages
///         .iter()
///         .map(|m| match m {
///             Message::Custom(c) if c.role() == "custom" => Message::User(UserMessage {
///                 content: serde_json::from_value(c.get("content").cloned().unwrap_or_default())
///                     .unwrap_or(UserMessageContent::Text(String::new())),
///                 timestamp: c.timestamp(),
///             }),
///             other => other.clone(),
///         })
///         .collect()
/// });
/// assert!(options.convert_to_llm.is_some());
/// ```
pub type ConvertToLlmFn = Arc<dyn Fn(&[Message]) -> Vec<Message> + Send + Sync>;

/// Decides, after validation, whether a tool call may run. The hook is raced against the run's
/// abort: after `abort()` the call is refused at once, whether or not the hook returns (a hook
/// waiting for a person's approval should still watch [`BeforeToolCall::cancel`]).
pub type BeforeToolCallFn =
    Arc<dyn Fn(BeforeToolCall) -> BoxFuture<'static, ToolCallDecision> + Send + Sync>;

/// Runs each allowed tool call in place of the plain call of its tool: an "around" seam for a
/// runtime that records or replays calls (oxpi-durable journals each call keyed by its id and
/// returns the recorded result on replay instead of running the tool again). It gets the call
/// as a [`ToolInvocation`] and returns its result, usually by calling
/// [`ToolInvocation::run`] at most once. Everything around it stays the agent's:
/// `before_tool_call`, `after_tool_call`, events, timing, abort (raced against it as against a
/// tool).
pub type ExecuteToolFn = Arc<
    dyn Fn(ToolInvocation) -> BoxFuture<'static, Result<AgentToolResult, ToolCallFailure>>
        + Send
        + Sync,
>;

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
    /// The run's context: its messages (the assistant message included) and tools.
    pub context: AgentContext,
    /// Cancelled when the run is aborted.
    pub cancel: CancellationToken,
}

/// Sees (and may change, field by field: [`AfterToolCallResult`]) each executed tool call's
/// result; not called for refused calls (unknown tool, invalid arguments, blocked). Raced
/// against the run's abort like [`BeforeToolCallFn`]: after `abort()` the call ends as aborted
/// at once.
pub type AfterToolCallFn =
    Arc<dyn Fn(AfterToolCall) -> BoxFuture<'static, Option<AfterToolCallResult>> + Send + Sync>;

/// The answer of a [`BeforeToolCallFn`] (pi's `BeforeToolCallResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCallDecision {
    /// Run it.
    Allow,
    /// Do not run it; the model gets an error result with this reason.
    Block {
        /// Sent to the model; empty means pi's `Tool execution was blocked`.
        reason: String,
        /// The blocked result asks the run to stop after the batch (see
        /// [`AgentToolResult::terminate`]).
        terminate: bool,
    },
}

impl ToolCallDecision {
    /// Blocks the call with this reason.
    pub fn block(reason: impl Into<String>) -> Self {
        Self::Block {
            reason: reason.into(),
            terminate: false,
        }
    }

    /// Blocks the call with this reason and asks the run to stop after the batch.
    pub fn block_and_terminate(reason: impl Into<String>) -> Self {
        Self::Block {
            reason: reason.into(),
            terminate: true,
        }
    }
}

/// What an [`AfterToolCallFn`] sees (pi's `AfterToolCallContext`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AfterToolCall {
    /// The assistant message that asked for the call.
    pub assistant_message: AssistantMessage,
    /// The call.
    pub tool_call: ToolCall,
    /// The validated arguments the tool got.
    pub args: serde_json::Map<String, serde_json::Value>,
    /// Its result, as the tool returned it.
    pub result: AgentToolResult,
    /// Whether it is an error.
    pub is_error: bool,
    /// The run's context: its messages and tools.
    pub context: AgentContext,
    /// Cancelled when the run is aborted.
    pub cancel: CancellationToken,
}

/// What an [`AfterToolCallFn`] changes (pi's `AfterToolCallResult`), field by field: a field
/// left `None` keeps the tool's value, except `structured_content`, which is dropped when
/// `content` is replaced without it (it may no longer match).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AfterToolCallResult {
    /// New content for the model.
    pub content: Option<Vec<UserContent>>,
    /// New details.
    pub details: Option<Value>,
    /// Whether the result is an error.
    pub is_error: Option<bool>,
    /// New usage.
    pub usage: Option<Usage>,
    /// Whether the result asks the run to stop after the batch.
    pub terminate: Option<bool>,
    /// New structured content.
    pub structured_content: Option<Value>,
}

impl AfterToolCallResult {
    /// Changes nothing (yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the content (and drops the structured content unless it is replaced too).
    pub fn with_content(mut self, content: Vec<UserContent>) -> Self {
        self.content = Some(content);
        self
    }

    /// Replaces the details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Makes the result an error, or not.
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = Some(is_error);
        self
    }

    /// Replaces the usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets whether the result asks the run to stop after the batch.
    pub fn with_terminate(mut self, terminate: bool) -> Self {
        self.terminate = Some(terminate);
        self
    }

    /// Replaces the structured content.
    pub fn with_structured_content(mut self, structured_content: Value) -> Self {
        self.structured_content = Some(structured_content);
        self
    }

    /// The outcome with these changes applied (pi's merge).
    pub fn apply(self, mut outcome: ToolOutcome) -> ToolOutcome {
        let result = &mut outcome.result;
        match (self.structured_content, self.content.is_some()) {
            (Some(structured), _) => result.structured_content = Some(structured),
            (None, true) => result.structured_content = None,
            (None, false) => {}
        }
        if let Some(content) = self.content {
            result.content = content;
        }
        if let Some(details) = self.details {
            result.details = Some(details);
        }
        if let Some(usage) = self.usage {
            result.usage = Some(usage);
        }
        if let Some(terminate) = self.terminate {
            result.terminate = terminate;
        }
        if let Some(is_error) = self.is_error {
            outcome.is_error = is_error;
        }
        outcome
    }
}

/// A tool call's result, whether it is an error, and how long the tool ran (pi's
/// `AgentToolCallOutcome`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolOutcome {
    /// The result.
    pub result: AgentToolResult,
    /// Whether it is an error.
    pub is_error: bool,
    /// Milliseconds the tool ran; `None` when it did not run (refused).
    pub duration_ms: Option<u64>,
}

impl ToolOutcome {
    /// `result`, an error when `is_error`.
    pub fn new(result: AgentToolResult, is_error: bool) -> Self {
        Self {
            result,
            is_error,
            duration_ms: None,
        }
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
