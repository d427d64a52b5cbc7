//! The bridge between oxpi-agent-core's run loop and a Restate handler: the loop runs in a task
//! of its own (as every `Agent` run does), and its two seams — the stream function and
//! [`ExecuteToolFn`](oxpi_agent_core::ExecuteToolFn) — send each model turn and each tool call
//! to the handler as a [`Step`]. The handler makes it a journaled `ctx.run` step (see
//! [`crate::object`]) and sends the journaled result back. On a replay the journal answers and
//! nothing is requested or executed again.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use oxpi_agent_core::oxpi_ai::{
    AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream, Context, FailureKind,
    Model, StopReason, StreamOptions,
};
use oxpi_agent_core::{
    AgentOptions, AgentToolResult, StreamFn, ToolCallDecision, ToolCallFailure, ToolError,
    ToolExecution, ToolInvocation,
};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

/// One journaled unit of a run, asked for by the agent's loop.
pub(crate) enum Step {
    /// A model turn: the request the loop built; the reply is the turn's final message.
    Model(Box<ModelRequest>),
    /// A call that waits for a person's approval (after `before_tool_call` allowed it).
    Approval {
        call: oxpi_agent_core::oxpi_ai::ToolCall,
        reply: oneshot::Sender<ToolCallDecision>,
    },
    /// An allowed tool call.
    Tool {
        invocation: ToolInvocation,
        reply: oneshot::Sender<ToolStep>,
    },
}

/// A model turn's request, and where its final message goes.
pub(crate) struct ModelRequest {
    pub(crate) model: Model,
    pub(crate) context: Context,
    pub(crate) options: StreamOptions,
    pub(crate) reply: oneshot::Sender<AssistantMessage>,
}

/// A tool call's journaled outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub(crate) enum ToolStep {
    /// The tool returned a result.
    Done {
        /// The result.
        result: AgentToolResult,
    },
    /// The tool failed (or its outcome is unknown): an error result with this text.
    Failed {
        /// Sent to the model.
        message: String,
        /// The error's details.
        #[serde(default)]
        details: Option<serde_json::Value>,
    },
}

impl ToolStep {
    pub(crate) fn from_result(result: Result<AgentToolResult, ToolCallFailure>) -> Self {
        match result {
            Ok(result) => Self::Done { result },
            Err(ToolCallFailure::Tool(e)) => Self::Failed {
                message: e.message,
                details: e.details,
            },
            Err(other) => Self::Failed {
                message: other.to_string(),
                details: None,
            },
        }
    }

    fn into_result(self) -> Result<AgentToolResult, ToolCallFailure> {
        match self {
            Self::Done { result } => Ok(result),
            Self::Failed { message, details } => {
                let mut error = ToolError::new(message);
                error.details = details;
                Err(ToolCallFailure::Tool(error))
            }
        }
    }
}

/// The text of a call that was started but not finished when its process died, and whose tool
/// is not safe to repeat.
pub const OUTCOME_UNKNOWN: &str = "Tool call outcome unknown: the process running it stopped before it finished, and the tool is not safe to repeat, so it was not run again. Check whether its effect happened before relying on it.";

/// The agent options of a durable run: `options` with its stream function and tool execution
/// routed through `steps`. Tool calls run one at a time, so the journal's order is the calls'
/// order on every replay.
/// Decides which tool calls wait for a person's approval.
pub type NeedsApprovalFn = Arc<dyn Fn(&oxpi_agent_core::oxpi_ai::ToolCall) -> bool + Send + Sync>;

/// The text of a call a person denied without a reason.
pub const DENIED_TEXT: &str = "Tool call was denied";

pub(crate) fn durable_options(
    mut options: AgentOptions,
    steps: mpsc::UnboundedSender<Step>,
    needs_approval: Option<NeedsApprovalFn>,
) -> AgentOptions {
    if let Some(needs_approval) = needs_approval {
        let before = options.before_tool_call.take();
        let steps = steps.clone();
        options.before_tool_call = Some(Arc::new(move |seen| {
            let (before, steps) = (before.clone(), steps.clone());
            let asks = needs_approval(&seen.tool_call);
            let call = seen.tool_call.clone();
            async move {
                if let Some(before) = before {
                    let decision = before(seen).await;
                    if decision != ToolCallDecision::Allow {
                        return decision;
                    }
                }
                if !asks {
                    return ToolCallDecision::Allow;
                }
                let (reply, answer) = oneshot::channel();
                if steps.send(Step::Approval { call, reply }).is_err() {
                    return ToolCallDecision::block("The durable run's handler stopped");
                }
                answer.await.unwrap_or_else(|_| {
                    ToolCallDecision::block("The durable run's handler stopped")
                })
            }
            .boxed()
        }));
    }
    let model_steps = steps.clone();
    options.stream_fn = Some(Arc::new(
        move |model: &Model, context: &Context, options: StreamOptions| {
            model_turn(&model_steps, model, context, options)
        },
    ));
    options.execute_tool = Some(Arc::new(move |invocation| tool_call(&steps, invocation)));
    options.tool_execution = ToolExecution::Sequential;
    options
}

/// The stream of one model turn: asks the handler for the turn's journaled final message and
/// yields it as `start` and `done` (or `error`). No deltas: the journal keeps final messages.
fn model_turn(
    steps: &mpsc::UnboundedSender<Step>,
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessageEventStream {
    let (sink, stream) = AssistantMessageEventStream::channel(None);
    let (reply, answer) = oneshot::channel();
    let sent = steps.send(Step::Model(Box::new(ModelRequest {
        model: model.clone(),
        context: context.clone(),
        options,
        reply,
    })));
    let fallback = model.clone();
    tokio::spawn(async move {
        let message = match sent {
            Ok(()) => answer.await.ok(),
            Err(_) => None,
        }
        .unwrap_or_else(|| {
            let mut m = AssistantMessage::empty(&fallback.api, &fallback.provider, &fallback.id);
            m.stop_reason = StopReason::Aborted;
            m.error_message = Some("The durable run's handler stopped".to_string());
            m.failure_kind = Some(FailureKind::Aborted);
            m
        });
        sink.send(AssistantMessageEvent::Start {
            partial: Box::new(message.clone()),
        })
        .await;
        let event = match message.stop_reason {
            StopReason::Error | StopReason::Aborted => AssistantMessageEvent::Error {
                reason: message.stop_reason,
                error: Box::new(message),
            },
            reason => AssistantMessageEvent::Done {
                reason,
                message: Box::new(message),
            },
        };
        sink.send(event).await;
    });
    stream
}

/// A tool call, asked of the handler (which journals it keyed by the call id).
fn tool_call(
    steps: &mpsc::UnboundedSender<Step>,
    invocation: ToolInvocation,
) -> BoxFuture<'static, Result<AgentToolResult, ToolCallFailure>> {
    let (reply, answer) = oneshot::channel();
    let sent = steps.send(Step::Tool { invocation, reply });
    async move {
        let stopped = || ToolStep::Failed {
            message: "The durable run's handler stopped before the call finished".into(),
            details: None,
        };
        let step = match sent {
            Ok(()) => answer.await.unwrap_or_else(|_| stopped()),
            Err(_) => stopped(),
        };
        step.into_result()
    }
    .boxed()
}

/// The stream function to call for real requests: the user's, or oxpi-ai's built-in providers.
pub(crate) fn inner_stream_fn(options: &AgentOptions) -> StreamFn {
    options
        .stream_fn
        .clone()
        .unwrap_or_else(|| Arc::new(oxpi_agent_core::oxpi_ai::stream))
}
