//! [`Agent`]: prompts, steering, subscriptions and abort. How it starts is in
//! [`crate::options`], what it holds in [`crate::inner`], the run itself in [`crate::run_loop`].

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use futures::FutureExt;
use oxpi_ai::{
    AssistantMessage, Message, Model, ReasoningLevel, SharedPartial, StopReason, UserMessage,
};
use tokio_util::sync::CancellationToken;

use crate::event::AgentEvent;
use crate::hooks::QueueMode;
use crate::inner::{lock, Inner, Listener};
use crate::options::AgentOptions;
use crate::retry::RetryPolicy;
use crate::tool::AgentToolHandle;
use crate::tool_run::RunToolCallOptions;
use crate::turn_hooks::AgentContext;

/// Why [`Agent::prompt`] or [`Agent::continue_`] did not end well: misuse of the agent, or a run
/// that ended early ([`AgentError::Run`]). A failed run is still in the history, as in pi: its
/// last assistant message carries the error, and [`Agent::error_message`] says it too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The run ended early: a provider error (connection refused, no API key, HTTP status),
    /// an abort, the turn limit, or a hook that panicked. The text is
    /// [`Agent::error_message`]'s.
    #[error("{error_message}")]
    Run {
        /// Why the run stopped (pi's `errorMessage`).
        error_message: String,
        /// The stop reason of the run's last assistant message (`error`, `aborted`; `toolUse`
        /// when the turn limit stopped it), if the run has one.
        stop_reason: Option<StopReason>,
    },
    /// A run is in progress.
    #[error("Agent is already processing a prompt. Use steer() or follow_up() to queue messages, or wait_for_idle().")]
    Busy,
    /// [`crate::extract`] got no valid answer (the text says why).
    #[error("Extraction failed: {0}")]
    Extract(String),
    /// `reset` while a run is in progress (pi's text).
    #[error("Agent is already processing. Wait for completion before resetting.")]
    BusyResetting,
    /// `continue_` with an empty history.
    #[error("No messages to continue from")]
    NoMessages,
    /// `continue_` when the last message is from the assistant.
    #[error("Cannot continue from message role: assistant")]
    CannotContinueFromAssistant,
}

impl AgentError {
    /// True for [`AgentError::Run`]: the run happened and failed, its failure is in the
    /// history (as opposed to a prompt that was refused and changed nothing).
    pub fn is_run_failure(&self) -> bool {
        matches!(self, Self::Run { .. })
    }
}

/// What a run that ended well produced: its last assistant message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunOutcome {
    /// The last assistant message of the run (its stop reason is `stop`, `length` or `toolUse`).
    pub message: AssistantMessage,
}

impl RunOutcome {
    /// The final reply's text blocks, joined (thinking and tool calls left out).
    pub fn text(&self) -> String {
        self.message.text()
    }

    /// The final reply's stop reason.
    pub fn stop_reason(&self) -> StopReason {
        self.message.stop_reason
    }
}

/// What to prompt with.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptInput {
    /// Messages appended as they are.
    Messages(Vec<Message>),
}

/// A user message of one text block, as pi's `Agent.prompt(text)` writes it.
fn prompt_message(text: String) -> Message {
    Message::User(UserMessage {
        content: oxpi_ai::UserMessageContent::Blocks(vec![oxpi_ai::UserContent::text(text)]),
        timestamp: oxpi_ai::now_millis(),
    })
}

impl From<&str> for PromptInput {
    fn from(text: &str) -> Self {
        Self::Messages(vec![prompt_message(text.to_string())])
    }
}

impl From<String> for PromptInput {
    fn from(text: String) -> Self {
        Self::Messages(vec![prompt_message(text)])
    }
}

impl From<Message> for PromptInput {
    fn from(m: Message) -> Self {
        Self::Messages(vec![m])
    }
}

impl From<UserMessage> for PromptInput {
    fn from(m: UserMessage) -> Self {
        Self::Messages(vec![Message::User(m)])
    }
}

impl From<Vec<Message>> for PromptInput {
    fn from(m: Vec<Message>) -> Self {
        Self::Messages(m)
    }
}

/// An agent: one conversation, its tools, and the loop that drives the model until it is done.
///
/// `Agent` is a cheap handle: clone it to call [`abort`](Self::abort) or [`steer`](Self::steer)
/// from another task while [`prompt`](Self::prompt) runs.
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.inner.state();
        f.debug_struct("Agent")
            .field("model", &state.model.id)
            .field("messages", &state.messages.len())
            .field("is_streaming", &state.is_streaming)
            .finish_non_exhaustive()
    }
}

/// Unsubscribes its listener when dropped.
#[must_use = "the listener is removed when this is dropped"]
pub struct Subscription {
    agent: Weak<Inner>,
    id: u64,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(inner) = self.agent.upgrade() {
            lock(&inner.listeners).retain(|(id, _)| *id != self.id);
        }
    }
}

impl Agent {
    /// An idle agent.
    pub fn new(options: AgentOptions) -> Self {
        Self {
            inner: Arc::new(Inner::new(options)),
        }
    }

    /// The conversation (shared; holding it while a run appends costs that run one copy).
    pub fn messages(&self) -> Arc<Vec<Message>> {
        self.inner.state().messages.clone()
    }

    /// True while a run is in progress.
    pub fn is_streaming(&self) -> bool {
        self.inner.state().is_streaming
    }

    /// The assistant message being streamed, if any (a copy, made on demand).
    pub fn streaming_message(&self) -> Option<AssistantMessage> {
        // The state's lock is released before the stream's is taken.
        let shared = self.inner.state().streaming_message.clone();
        shared.message()
    }

    /// Ids of tool calls running now.
    pub fn pending_tool_calls(&self) -> Vec<String> {
        self.inner
            .state()
            .pending_tool_calls
            .iter()
            .cloned()
            .collect()
    }

    /// Why the last run stopped early, if it did.
    pub fn error_message(&self) -> Option<String> {
        self.inner.state().error_message.clone()
    }

    /// The model.
    pub fn model(&self) -> Model {
        self.inner.state().model.clone()
    }

    /// Calls `f` with the model, without copying it (for a caller that only reads or compares
    /// it). The agent's state is locked while `f` runs: `f` must not call back into the agent.
    ///
    /// ```
    /// # use oxpi_agent_core::{Agent, AgentOptions};
    /// # use oxpi_ai::Model;
    /// let model = Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
    /// let agent = Agent::new(AgentOptions::new(model.clone()));
    /// assert!(agent.with_model(|m| *m == model));
    /// ```
    pub fn with_model<R>(&self, f: impl FnOnce(&Model) -> R) -> R {
        f(&self.inner.state().model)
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> Option<String> {
        self.inner.state().system_prompt.clone()
    }

    /// Changes the model for the next request.
    pub fn set_model(&self, model: Model) {
        self.inner.state().model = model;
    }

    /// Changes the system prompt for the next request.
    pub fn set_system_prompt(&self, prompt: Option<String>) {
        self.inner.state().system_prompt = prompt;
    }

    /// Changes the reasoning level for the next request.
    pub fn set_thinking_level(&self, level: Option<ReasoningLevel>) {
        self.inner.state().thinking_level = level;
    }

    /// Replaces the tools for the next request.
    pub fn set_tools(&self, tools: Vec<AgentToolHandle>) {
        let mut state = self.inner.state();
        state.tool_definitions = tools.iter().map(|t| t.definition().clone()).collect();
        state.tools = tools;
    }

    /// Replaces the history. Fails while a run is in progress.
    pub fn replace_messages(&self, messages: Vec<Message>) -> Result<(), AgentError> {
        let mut state = self.inner.state();
        if state.is_streaming {
            return Err(AgentError::Busy);
        }
        state.messages = Arc::new(messages);
        Ok(())
    }

    /// Calls `listener` for every event, in subscription order. Dropping the returned
    /// [`Subscription`] removes it.
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> Subscription {
        self.add_listener(Listener::Sync(Arc::new(listener)))
    }

    /// Like [`subscribe`](Self::subscribe), with an async listener that the run awaits before
    /// going on.
    pub fn subscribe_async<F, Fut>(&self, listener: F) -> Subscription
    where
        F: Fn(Arc<AgentEvent>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.add_listener(Listener::Async(Arc::new(move |e| listener(e).boxed())))
    }

    fn add_listener(&self, listener: Listener) -> Subscription {
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner.listeners).push((id, listener));
        Subscription {
            agent: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// Queues a message delivered after the current tool batch (or before the next request).
    pub fn steer(&self, message: impl Into<Message>) {
        lock(&self.inner.steering).push_back(message.into());
    }

    /// Queues a message delivered when the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<Message>) {
        lock(&self.inner.follow_ups).push_back(message.into());
    }

    /// Removes every queued steering message.
    pub fn clear_steering_queue(&self) {
        lock(&self.inner.steering).clear();
    }

    /// Removes every queued follow-up message.
    pub fn clear_follow_up_queue(&self) {
        lock(&self.inner.follow_ups).clear();
    }

    /// Removes every queued steering and follow-up message.
    pub fn clear_all_queues(&self) {
        self.clear_steering_queue();
        self.clear_follow_up_queue();
    }

    /// What the next drain of the queues would take, without taking it (pi's
    /// `peekQueuedMessages`): the steering queue's selection (the oldest message, or all in
    /// [`QueueMode::All`]) when it holds any, else the follow-up queue's.
    pub fn peek_queued_messages(&self) -> Vec<Message> {
        let (steering_mode, follow_up_mode) = {
            let state = self.inner.state();
            (state.steering_mode, state.follow_up_mode)
        };
        let peek = |queue: &std::sync::Mutex<std::collections::VecDeque<Message>>, mode| {
            let queue = lock(queue);
            match mode {
                QueueMode::All => queue.iter().cloned().collect::<Vec<_>>(),
                QueueMode::OneAtATime => queue.front().cloned().into_iter().collect(),
            }
        };
        let steering = peek(&self.inner.steering, steering_mode);
        if steering.is_empty() {
            peek(&self.inner.follow_ups, follow_up_mode)
        } else {
            steering
        }
    }

    /// Empties the history, both queues and the last error (pi's `reset`). Refused while a run
    /// is in progress.
    pub fn reset(&self) -> Result<(), AgentError> {
        {
            let mut state = self.inner.state();
            if state.is_streaming {
                return Err(AgentError::BusyResetting);
            }
            state.messages = Arc::new(Vec::new());
            state.error_message = None;
            state.streaming_message = SharedPartial::default();
            state.pending_tool_calls.clear();
        }
        self.clear_all_queues();
        Ok(())
    }

    /// Options for [`run_tool_call`](crate::run_tool_call) with this agent's tools, hooks and
    /// history as context, and `assistant_message` as the calls' origin: a tool holding a clone
    /// of the agent can run other tools through the same validation and hooks.
    pub fn tool_call_options(&self, assistant_message: AssistantMessage) -> RunToolCallOptions {
        let (tools, messages) = {
            let state = self.inner.state();
            (state.tools.clone(), state.messages.clone())
        };
        let cancel = lock(&self.inner.cancel).child_token();
        RunToolCallOptions::new(tools.clone(), assistant_message)
            .with_context(AgentContext::new(messages, tools))
            .with_cancel(cancel)
            .with_before_tool_call(self.inner.before_tool_call.clone())
            .with_after_tool_call(self.inner.after_tool_call.clone())
            .with_execute_tool(self.inner.execute_tool.clone())
    }

    /// True when a steering or follow-up message is waiting.
    pub fn has_queued_messages(&self) -> bool {
        !lock(&self.inner.steering).is_empty() || !lock(&self.inner.follow_ups).is_empty()
    }

    /// How steering messages are taken.
    pub fn steering_mode(&self) -> QueueMode {
        self.inner.state().steering_mode
    }

    /// Changes how steering messages are taken (from the next time the queue is read).
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.inner.state().steering_mode = mode;
    }

    /// How follow-up messages are taken.
    pub fn follow_up_mode(&self) -> QueueMode {
        self.inner.state().follow_up_mode
    }

    /// Changes how follow-up messages are taken.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.inner.state().follow_up_mode = mode;
    }

    /// The retry policy of failed turns (`None`: a failed turn is final).
    pub fn retry_policy(&self) -> Option<RetryPolicy> {
        *self.inner.retry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the retry policy (pi's coding agent's `setAutoRetryEnabled`); it applies from the
    /// next failed reply, also within a run in progress.
    pub fn set_retry_policy(&self, policy: Option<RetryPolicy>) {
        *self.inner.retry.lock().unwrap_or_else(|e| e.into_inner()) = policy;
    }

    /// Cancels the retry wait in progress, if any (pi's `abortRetry`): the failed reply stays
    /// as the turn's last message and `auto_retry_end` says "Retry cancelled". Returns whether a
    /// wait was cancelled.
    pub fn abort_retry(&self) -> bool {
        let wait = self
            .inner
            .retry_wait
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        wait.map(|token| token.cancel()).is_some()
    }

    /// The session id sent with each request.
    pub fn session_id(&self) -> Option<String> {
        self.inner.state().session_id.clone()
    }

    /// Changes the session id for the next request.
    pub fn set_session_id(&self, session_id: Option<String>) {
        self.inner.state().session_id = session_id;
    }

    /// Cancels the run in progress: the stream ends as `aborted`, running tools are cancelled,
    /// and every tool call still gets a result. Does nothing when idle.
    pub fn abort(&self) {
        lock(&self.inner.cancel).cancel();
    }

    /// Waits until no run is in progress.
    pub async fn wait_for_idle(&self) {
        let mut idle = self.inner.idle.subscribe();
        let _ = idle.wait_for(|idle| *idle).await;
    }

    /// Appends `input` and runs until the model stops; returns the final assistant message.
    ///
    /// A run that ends early (provider error such as connection refused or a missing API key,
    /// abort, max turns) returns [`AgentError::Run`] — and, as in pi, its failure is also in the
    /// history and [`error_message`](Self::error_message). `agent.prompt(..).await?` therefore
    /// stops a program at the first failed run.
    pub async fn prompt(&self, input: impl Into<PromptInput>) -> Result<RunOutcome, AgentError> {
        let PromptInput::Messages(messages) = input.into();
        self.run(messages).await
    }

    /// Runs from the current history (e.g. after an error, or after appending tool results).
    /// Returns as [`prompt`](Self::prompt) does.
    pub async fn continue_(&self) -> Result<RunOutcome, AgentError> {
        if self.is_streaming() {
            return Err(AgentError::Busy);
        }
        match self.inner.state().messages.last() {
            None => return Err(AgentError::NoMessages),
            Some(Message::Assistant(_)) => return Err(AgentError::CannotContinueFromAssistant),
            Some(_) => {}
        }
        self.run(Vec::new()).await
    }

    /// Runs in a task of its own, so the history stays consistent even if the caller drops the
    /// returned future; the future resolves when the run ends.
    async fn run(&self, new_messages: Vec<Message>) -> Result<RunOutcome, AgentError> {
        let Ok(run_guard) = self.inner.run_lock.clone().try_lock_owned() else {
            return Err(AgentError::Busy);
        };
        let cancel = CancellationToken::new();
        *lock(&self.inner.cancel) = cancel.clone();
        {
            let mut state = self.inner.state();
            state.is_streaming = true;
            state.error_message = None;
        }
        self.inner.idle.send_replace(false);
        let inner = self.inner.clone();
        let task = tokio::spawn(async move {
            let _idle_on_exit = IdleOnDrop {
                inner: inner.clone(),
                run_guard: Some(run_guard),
            };
            crate::run_loop::run(&inner, new_messages, cancel).await;
        });
        if let Err(e) = task.await {
            if e.is_panic() {
                // A bug in the loop itself: keep the history consistent and tell listeners.
                let text = format!(
                    "The agent run panicked: {}",
                    oxpi_ai::registry::panic_text(&*e.into_panic())
                );
                crate::tool_calls::repair_pairing(&self.inner);
                self.inner.state().error_message = Some(text.clone());
                self.inner
                    .emit(AgentEvent::AgentEnd {
                        messages: Vec::new(),
                        error_message: Some(text),
                    })
                    .await;
            }
        }
        self.last_outcome()
    }

    /// The outcome of the last run, read from the state as [`prompt`](Self::prompt) returns it:
    /// [`AgentError::Run`] when [`error_message`](Self::error_message) is set, else the last
    /// assistant message of the history ([`AgentError::NoMessages`] when there is none).
    pub fn last_outcome(&self) -> Result<RunOutcome, AgentError> {
        let state = self.inner.state();
        let last = state.messages.iter().rev().find_map(|m| match m {
            Message::Assistant(a) => Some(a),
            _ => None,
        });
        if let Some(error_message) = &state.error_message {
            return Err(AgentError::Run {
                error_message: error_message.clone(),
                stop_reason: last.map(|a| a.stop_reason),
            });
        }
        match last {
            Some(message) => Ok(RunOutcome {
                message: message.clone(),
            }),
            None => Err(AgentError::NoMessages),
        }
    }
}

/// Marks the agent idle when a run ends, however it ends.
struct IdleOnDrop {
    inner: Arc<Inner>,
    run_guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Drop for IdleOnDrop {
    fn drop(&mut self) {
        {
            let mut state = self.inner.state();
            state.is_streaming = false;
            state.streaming_message = SharedPartial::default();
            state.pending_tool_calls.clear();
        }
        // Release the run lock before announcing idleness, so a waiter can start a new run.
        self.run_guard.take();
        self.inner.idle.send_replace(true);
    }
}
