//! Turn hooks (pi-agent-core 1.6): [`FinishTurnFn`] decides after every turn whether the run
//! ends or goes on, [`PrepareRequestFn`] may replace the context, model and thinking level
//! before every request, and [`PrepareNextTurnFn`] / [`PrepareNextTurnWithContextFn`] prepare
//! the next turn (messages to add, a new context or model).
//!
//! Every turn hook, like `transform_context`, is raced against the run's abort (pi 1.6 awaits
//! them): after `abort()` the hook's future is dropped unfinished, whether or not it watches
//! its token, and the run ends with an `aborted` reply (no request is made).

use std::sync::Arc;

use futures::future::BoxFuture;
use oxpi_ai::{AssistantMessage, Message, Model, ReasoningLevel, ToolResultMessage};
use tokio_util::sync::CancellationToken;

use crate::tool::AgentToolHandle;

/// The context a run's requests are built from, as hooks see it (pi's `AgentContext`): the
/// messages and the tools. Until a hook replaces it, it is the agent's history and tools.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentContext {
    /// The messages the next request is built from (before `transform_context` and
    /// `convert_to_llm`).
    pub messages: Arc<Vec<Message>>,
    /// The tools offered to the model and run for its calls.
    pub tools: Vec<AgentToolHandle>,
}

impl AgentContext {
    /// A context of these messages and tools.
    pub fn new(messages: impl Into<Arc<Vec<Message>>>, tools: Vec<AgentToolHandle>) -> Self {
        Self {
            messages: messages.into(),
            tools,
        }
    }
}

/// A turn that just completed (pi's `AgentTurnContext`), seen by [`FinishTurnFn`] and
/// [`PrepareNextTurnWithContextFn`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TurnContext {
    /// The turn's assistant message (also an `error` or `aborted` one).
    pub message: AssistantMessage,
    /// The turn's tool results, in call order.
    pub tool_results: Vec<ToolResultMessage>,
    /// The run's context after the turn's messages were added.
    pub context: AgentContext,
    /// The messages the run has added so far (a prompt run's include the prompt).
    pub new_messages: Vec<Message>,
}

/// What a [`FinishTurnFn`] decides (pi's `{action: "end" | "continue"}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnAction {
    /// End the run after this turn: no further request, queued messages stay queued.
    End,
    /// Make at least one more request, also when nothing is queued and no tool result asks for
    /// one (then the next turn adds no message). Returning it after every turn never ends.
    Continue,
}

/// Called after every turn — once its assistant message and tool results are in, before
/// `turn_end` — also for `error` and `aborted` turns, whose run ends whatever it returns (pi's
/// `finishTurn`). `None` leaves the run to its usual course. A panic ends the run with an
/// error naming the hook.
pub type FinishTurnFn = Arc<
    dyn Fn(TurnContext, CancellationToken) -> BoxFuture<'static, Option<TurnAction>> + Send + Sync,
>;

/// What a [`PrepareRequestFn`] sees (pi's `PrepareRequestContext`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestContext {
    /// The context the request is about to be built from.
    pub context: AgentContext,
    /// The model it is about to go to.
    pub model: Model,
    /// The reasoning level it is about to ask for (`None` is pi's `"off"`).
    pub thinking_level: Option<ReasoningLevel>,
}

/// What a [`PrepareRequestFn`] changes (pi's `PrepareRequestUpdate`); a field left `None` keeps
/// its value. Changes hold for this request and every later one of the run; the agent's own
/// history and settings ([`Agent::messages`](crate::Agent::messages),
/// [`Agent::model`](crate::Agent::model)) are not changed. Once the context is replaced, the
/// run adds its messages both to that context and to the agent's history.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RequestUpdate {
    /// A new context.
    pub context: Option<AgentContext>,
    /// A new model.
    pub model: Option<Model>,
    /// A new reasoning level: `Some(None)` turns reasoning off.
    pub thinking_level: Option<Option<ReasoningLevel>>,
}

impl RequestUpdate {
    /// Changes nothing (yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the context.
    pub fn with_context(mut self, context: AgentContext) -> Self {
        self.context = Some(context);
        self
    }

    /// Replaces the model.
    pub fn with_model(mut self, model: Model) -> Self {
        self.model = Some(model);
        self
    }

    /// Replaces the reasoning level (`None` turns it off).
    pub fn with_thinking_level(mut self, level: Option<ReasoningLevel>) -> Self {
        self.thinking_level = Some(level);
        self
    }
}

/// Called immediately before every model request of a run, the first included, after the
/// turn's new messages were added (pi's `prepareRequest`): switch models mid-run, trim the
/// context, inject retrieved text. A panic ends the turn with an `error` reply naming the hook,
/// without a request.
pub type PrepareRequestFn = Arc<
    dyn Fn(RequestContext, CancellationToken) -> BoxFuture<'static, Option<RequestUpdate>>
        + Send
        + Sync,
>;

/// What a next-turn hook changes (pi's `AgentLoopTurnUpdate`): `messages` are added at the start
/// of the next turn, before queued steering messages, with their `message_start`/`message_end`;
/// `context`, `model` and `thinking_level` change as with [`RequestUpdate`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TurnUpdate {
    /// Messages to add at the start of the next turn.
    pub messages: Vec<Message>,
    /// A new context.
    pub context: Option<AgentContext>,
    /// A new model.
    pub model: Option<Model>,
    /// A new reasoning level: `Some(None)` turns reasoning off.
    pub thinking_level: Option<Option<ReasoningLevel>>,
}

impl TurnUpdate {
    /// Changes nothing (yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds messages at the start of the next turn.
    pub fn with_messages(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        self.messages.extend(messages);
        self
    }

    /// Replaces the context.
    pub fn with_context(mut self, context: AgentContext) -> Self {
        self.context = Some(context);
        self
    }

    /// Replaces the model.
    pub fn with_model(mut self, model: Model) -> Self {
        self.model = Some(model);
        self
    }

    /// Replaces the reasoning level (`None` turns it off).
    pub fn with_thinking_level(mut self, level: Option<ReasoningLevel>) -> Self {
        self.thinking_level = Some(level);
        self
    }
}

/// Called after `turn_end` when the run will start another turn (tool results want an answer,
/// a message is queued, or [`FinishTurnFn`] said [`TurnAction::Continue`]), just before that
/// turn's `turn_start` (pi's `prepareNextTurn`). Not called before the first turn, after
/// [`TurnAction::End`], or after an `error` or `aborted` turn. A panic ends the run with an
/// error naming the hook.
pub type PrepareNextTurnFn =
    Arc<dyn Fn(CancellationToken) -> BoxFuture<'static, Option<TurnUpdate>> + Send + Sync>;

/// Like [`PrepareNextTurnFn`], seeing the turn that just completed (pi's
/// `prepareNextTurnWithContext`); when both are set, this one is called and the other is not.
pub type PrepareNextTurnWithContextFn = Arc<
    dyn Fn(TurnContext, CancellationToken) -> BoxFuture<'static, Option<TurnUpdate>> + Send + Sync,
>;
