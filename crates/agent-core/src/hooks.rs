//! Hook types: how an application shapes each request and each tool call.

use std::sync::Arc;

use futures::future::BoxFuture;
use oxpi_ai::{AssistantMessageEventStream, Context, Message, Model, StreamOptions, ToolCall};
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

/// Decides, after validation, whether a tool call may run.
pub type BeforeToolCallFn =
    Arc<dyn Fn(ToolCall) -> BoxFuture<'static, ToolCallDecision> + Send + Sync>;

/// Sees (and may replace) each tool call's result.
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
#[derive(Debug, Clone, PartialEq)]
pub struct AfterToolCall {
    /// The call.
    pub tool_call: ToolCall,
    /// Its result.
    pub result: AgentToolResult,
    /// Whether it is an error.
    pub is_error: bool,
}

/// A tool call's result and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The result.
    pub result: AgentToolResult,
    /// Whether it is an error.
    pub is_error: bool,
}

/// How a batch of tool calls runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolExecution {
    /// All at once; results are still recorded in call order.
    #[default]
    Parallel,
    /// One after another, in call order.
    Sequential,
}
