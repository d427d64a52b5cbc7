//! [`Agent`]: state, prompts, steering, subscriptions and abort. The run itself is in
//! [`crate::run_loop`].

use std::collections::{BTreeSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use futures::future::BoxFuture;
use futures::FutureExt;
use oxpi_ai::{
    AssistantMessage, AssistantMessageEventStream, Context, Message, Model, PartialMessage,
    ProviderRegistry, ReasoningLevel, StreamOptions, Tool, UserMessage,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::event::AgentEvent;
use crate::hooks::{
    AfterToolCall, AfterToolCallFn, BeforeToolCall, BeforeToolCallFn, ConvertToLlmFn, GetApiKeyFn,
    QueueMode, ShouldStopAfterTurnFn, StreamFn, ToolCallDecision, ToolExecution, ToolOutcome,
    TransformContextFn,
};
use crate::tool::AgentToolHandle;

/// Default limit on model requests per run.
pub const DEFAULT_MAX_TURNS: usize = 200;

/// How an agent starts: model, prompt, tools, history, hooks.
///
/// Start from [`AgentOptions::new`] and set the rest with the `with_*` methods, one per field
/// (the struct is `#[non_exhaustive]`, so new options do not break callers); the fields stay
/// public to read or to change.
///
/// ```
/// use oxpi_agent_core::{Agent, AgentOptions, ToolCallDecision, ToolExecution};
/// use oxpi_ai::{ReasoningLevel, StreamOptions};
///
/// let model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
/// let options = AgentOptions::new(model)
///     .with_system_prompt("Be brief.")
///     .with_thinking_level(ReasoningLevel::Low)
///     .with_max_turns(20)
///     .with_tool_execution(ToolExecution::Sequential)
///     .with_stream_options(StreamOptions::default().with_max_retries(0))
///     .with_before_tool_call(|call| async move {
///         if call.tool_call.name == "bash" {
///             ToolCallDecision::Block { reason: "no shell here".into() }
///         } else {
///             ToolCallDecision::Allow
///         }
///     });
/// let agent = Agent::new(options);
/// assert!(agent.messages().is_empty());
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct AgentOptions {
    /// The model.
    pub model: Model,
    /// System prompt.
    pub system_prompt: Option<String>,
    /// Reasoning level for reasoning models.
    pub thinking_level: Option<ReasoningLevel>,
    /// Tools.
    pub tools: Vec<AgentToolHandle>,
    /// Initial history.
    pub messages: Vec<Message>,
    /// Template for each request's options (key, temperature, timeouts…); `cancel` is replaced.
    pub stream_options: StreamOptions,
    /// How requests are made; `None` uses oxpi-ai's built-in providers.
    pub stream_fn: Option<StreamFn>,
    /// Parallel (default) or sequential tool execution.
    pub tool_execution: ToolExecution,
    /// Most model requests in one run.
    pub max_turns: usize,
    /// See [`TransformContextFn`].
    pub transform_context: Option<TransformContextFn>,
    /// See [`ConvertToLlmFn`].
    pub convert_to_llm: Option<ConvertToLlmFn>,
    /// See [`BeforeToolCallFn`].
    pub before_tool_call: Option<BeforeToolCallFn>,
    /// See [`AfterToolCallFn`].
    pub after_tool_call: Option<AfterToolCallFn>,
    /// Sent with every request as [`StreamOptions::session_id`] (prompt caching, routing).
    pub session_id: Option<String>,
    /// See [`GetApiKeyFn`].
    pub get_api_key: Option<GetApiKeyFn>,
    /// See [`ShouldStopAfterTurnFn`].
    pub should_stop_after_turn: Option<ShouldStopAfterTurnFn>,
    /// How steering messages are taken (default one at a time, as pi).
    pub steering_mode: QueueMode,
    /// How follow-up messages are taken (default one at a time, as pi).
    pub follow_up_mode: QueueMode,
}

impl std::fmt::Debug for AgentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentOptions")
            .field("model", &self.model.id)
            .field("tools", &self.tools)
            .field("messages", &self.messages.len())
            .field("max_turns", &self.max_turns)
            .finish_non_exhaustive()
    }
}

impl AgentOptions {
    /// Options with this model and everything else default.
    pub fn new(model: Model) -> Self {
        Self {
            model,
            system_prompt: None,
            thinking_level: None,
            tools: Vec::new(),
            messages: Vec::new(),
            stream_options: StreamOptions::default(),
            stream_fn: None,
            tool_execution: ToolExecution::Parallel,
            max_turns: DEFAULT_MAX_TURNS,
            transform_context: None,
            convert_to_llm: None,
            before_tool_call: None,
            after_tool_call: None,
            session_id: None,
            get_api_key: None,
            should_stop_after_turn: None,
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
        }
    }

    /// Replaces the [`model`](Self::model).
    pub fn with_model(mut self, model: Model) -> Self {
        self.model = model;
        self
    }

    /// Sets the [`thinking_level`](Self::thinking_level) for reasoning models.
    pub fn with_thinking_level(mut self, level: ReasoningLevel) -> Self {
        self.thinking_level = Some(level);
        self
    }

    /// Sets the initial history, [`messages`](Self::messages), replacing any set before.
    pub fn with_messages(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        self.messages = messages.into_iter().collect();
        self
    }

    /// Makes requests with `stream_fn` instead of oxpi-ai's built-in providers (see
    /// [`StreamFn`]).
    pub fn with_stream_fn<F>(mut self, stream_fn: F) -> Self
    where
        F: Fn(&Model, &Context, StreamOptions) -> AssistantMessageEventStream
            + Send
            + Sync
            + 'static,
    {
        self.stream_fn = Some(Arc::new(stream_fn));
        self
    }

    /// Rewrites the history before each request (see [`TransformContextFn`]).
    pub fn with_transform_context<F, Fut>(mut self, transform: F) -> Self
    where
        F: Fn(Arc<Vec<Message>>, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Arc<Vec<Message>>> + Send + 'static,
    {
        self.transform_context = Some(Arc::new(move |messages, cancel| {
            transform(messages, cancel).boxed()
        }));
        self
    }

    /// Converts the history to the messages sent to the model (see [`ConvertToLlmFn`]).
    pub fn with_convert_to_llm<F>(mut self, convert: F) -> Self
    where
        F: Fn(&[Message]) -> Vec<Message> + Send + Sync + 'static,
    {
        self.convert_to_llm = Some(Arc::new(convert));
        self
    }

    /// Decides whether each validated tool call may run (see [`BeforeToolCallFn`]).
    pub fn with_before_tool_call<F, Fut>(mut self, before: F) -> Self
    where
        F: Fn(BeforeToolCall) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ToolCallDecision> + Send + 'static,
    {
        self.before_tool_call = Some(Arc::new(move |call| before(call).boxed()));
        self
    }

    /// Sees, and may replace, each tool call's result (see [`AfterToolCallFn`]).
    pub fn with_after_tool_call<F, Fut>(mut self, after: F) -> Self
    where
        F: Fn(AfterToolCall) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Option<ToolOutcome>> + Send + 'static,
    {
        self.after_tool_call = Some(Arc::new(move |call| after(call).boxed()));
        self
    }

    /// Sets the session id sent with every request.
    pub fn with_session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Asks `get_api_key(provider)` for the key before each request (see [`GetApiKeyFn`]).
    ///
    /// ```
    /// use oxpi_agent_core::AgentOptions;
    /// let model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
    /// let options = AgentOptions::new(model).with_get_api_key(|_provider| async {
    ///     Ok(Some(oxpi_ai::ApiKey::new("token-from-the-vault")))
    /// });
    /// assert!(options.get_api_key.is_some());
    /// ```
    pub fn with_get_api_key<F, Fut>(mut self, get_api_key: F) -> Self
    where
        F: Fn(&str) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Option<oxpi_ai::ApiKey>, String>> + Send + 'static,
    {
        self.get_api_key = Some(Arc::new(move |provider| get_api_key(provider).boxed()));
        self
    }

    /// Ends the run after a turn when `should_stop(summary)` says so (see
    /// [`ShouldStopAfterTurnFn`]).
    pub fn with_should_stop_after_turn<F, Fut>(mut self, should_stop: F) -> Self
    where
        F: Fn(crate::hooks::TurnSummary) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = bool> + Send + 'static,
    {
        self.should_stop_after_turn = Some(Arc::new(move |turn| should_stop(turn).boxed()));
        self
    }

    /// Sets how steering messages are taken.
    pub fn with_steering_mode(mut self, mode: QueueMode) -> Self {
        self.steering_mode = mode;
        self
    }

    /// Sets how follow-up messages are taken.
    pub fn with_follow_up_mode(mut self, mode: QueueMode) -> Self {
        self.follow_up_mode = mode;
        self
    }

    /// Sets the system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Adds a tool.
    pub fn with_tool(mut self, tool: AgentToolHandle) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds tools (e.g. every tool of an MCP server, or `oxpi_tools::coding_tools`).
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = AgentToolHandle>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Sets the request options template.
    pub fn with_stream_options(mut self, options: StreamOptions) -> Self {
        self.stream_options = options;
        self
    }

    /// Makes requests through `registry` (e.g. one holding the faux provider): sets
    /// [`stream_fn`](Self::stream_fn) to `registry.stream`.
    pub fn with_registry(mut self, registry: ProviderRegistry) -> Self {
        self.stream_fn = Some(Arc::new(move |model, context, options| {
            registry.stream(model, context, options)
        }));
        self
    }

    /// Sets the tool execution mode.
    pub fn with_tool_execution(mut self, mode: ToolExecution) -> Self {
        self.tool_execution = mode;
        self
    }

    /// Sets the turn limit.
    pub fn with_max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = max_turns;
        self
    }
}

/// Misuse of the agent (run failures are in the history and [`Agent::error_message`], not here).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// A run is in progress.
    #[error("Agent is already processing a prompt. Use steer() or follow_up() to queue messages, or wait_for_idle().")]
    Busy,
    /// `continue_` with an empty history.
    #[error("No messages to continue from")]
    NoMessages,
    /// `continue_` when the last message is from the assistant.
    #[error("Cannot continue from message role: assistant")]
    CannotContinueFromAssistant,
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

pub(crate) struct State {
    pub(crate) system_prompt: Option<String>,
    pub(crate) model: Model,
    pub(crate) thinking_level: Option<ReasoningLevel>,
    pub(crate) tools: Vec<AgentToolHandle>,
    pub(crate) tool_definitions: Vec<Tool>,
    pub(crate) messages: Arc<Vec<Message>>,
    pub(crate) is_streaming: bool,
    pub(crate) streaming_message: PartialMessage,
    pub(crate) pending_tool_calls: BTreeSet<String>,
    pub(crate) error_message: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) steering_mode: QueueMode,
    pub(crate) follow_up_mode: QueueMode,
}

type SyncListener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;
type AsyncListener = Arc<dyn Fn(Arc<AgentEvent>) -> BoxFuture<'static, ()> + Send + Sync>;

#[derive(Clone)]
enum Listener {
    Sync(SyncListener),
    Async(AsyncListener),
}

pub(crate) struct Inner {
    pub(crate) state: Mutex<State>,
    pub(crate) stream_options: StreamOptions,
    pub(crate) stream_fn: StreamFn,
    pub(crate) tool_execution: ToolExecution,
    pub(crate) max_turns: usize,
    pub(crate) transform_context: Option<TransformContextFn>,
    pub(crate) convert_to_llm: Option<ConvertToLlmFn>,
    pub(crate) before_tool_call: Option<BeforeToolCallFn>,
    pub(crate) after_tool_call: Option<AfterToolCallFn>,
    pub(crate) get_api_key: Option<GetApiKeyFn>,
    pub(crate) should_stop_after_turn: Option<ShouldStopAfterTurnFn>,
    listeners: Mutex<Vec<(u64, Listener)>>,
    next_listener: AtomicU64,
    pub(crate) steering: Mutex<VecDeque<Message>>,
    pub(crate) follow_ups: Mutex<VecDeque<Message>>,
    run_lock: Arc<tokio::sync::Mutex<()>>,
    pub(crate) cancel: Mutex<CancellationToken>,
    idle: watch::Sender<bool>,
}

/// Locks a mutex, carrying on with the data if a panic poisoned it (state stays plain data).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Inner {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Sends an event to every listener, in subscription order, awaiting each.
    pub(crate) async fn emit(&self, event: AgentEvent) {
        let listeners: Vec<Listener> = lock(&self.listeners)
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        if listeners.is_empty() {
            return;
        }
        let event = Arc::new(event);
        for listener in listeners {
            let outcome = match listener {
                Listener::Sync(f) => std::panic::catch_unwind(AssertUnwindSafe(|| f(&event))),
                Listener::Async(f) => AssertUnwindSafe(f(event.clone())).catch_unwind().await,
            };
            if outcome.is_err() {
                tracing::error!("an agent event listener panicked; the run goes on");
            }
        }
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
        let tool_definitions = options
            .tools
            .iter()
            .map(|t| t.definition().clone())
            .collect();
        let stream_fn: StreamFn = options
            .stream_fn
            .unwrap_or_else(|| Arc::new(oxpi_ai::stream));
        let (idle, _) = watch::channel(true);
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    system_prompt: options.system_prompt,
                    model: options.model,
                    thinking_level: options.thinking_level,
                    tools: options.tools,
                    tool_definitions,
                    messages: Arc::new(options.messages),
                    is_streaming: false,
                    streaming_message: PartialMessage::new(),
                    pending_tool_calls: BTreeSet::new(),
                    error_message: None,
                    session_id: options.session_id,
                    steering_mode: options.steering_mode,
                    follow_up_mode: options.follow_up_mode,
                }),
                stream_options: options.stream_options,
                stream_fn,
                tool_execution: options.tool_execution,
                max_turns: options.max_turns,
                transform_context: options.transform_context,
                convert_to_llm: options.convert_to_llm,
                before_tool_call: options.before_tool_call,
                after_tool_call: options.after_tool_call,
                get_api_key: options.get_api_key,
                should_stop_after_turn: options.should_stop_after_turn,
                listeners: Mutex::new(Vec::new()),
                next_listener: AtomicU64::new(0),
                steering: Mutex::new(VecDeque::new()),
                follow_ups: Mutex::new(VecDeque::new()),
                run_lock: Arc::new(tokio::sync::Mutex::new(())),
                cancel: Mutex::new(CancellationToken::new()),
                idle,
            }),
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
        self.inner.state().streaming_message.message().cloned()
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

    /// Appends `input` and runs until the model stops. Failures of the run (provider errors,
    /// abort, max turns) end up in the history and [`error_message`](Self::error_message).
    pub async fn prompt(&self, input: impl Into<PromptInput>) -> Result<(), AgentError> {
        let PromptInput::Messages(messages) = input.into();
        self.run(messages).await
    }

    /// Runs from the current history (e.g. after an error, or after appending tool results).
    pub async fn continue_(&self) -> Result<(), AgentError> {
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
    async fn run(&self, new_messages: Vec<Message>) -> Result<(), AgentError> {
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
                crate::run_loop::repair_pairing(&self.inner);
                self.inner.state().error_message = Some(text.clone());
                self.inner
                    .emit(AgentEvent::AgentEnd {
                        messages: Vec::new(),
                        error_message: Some(text),
                    })
                    .await;
            }
        }
        Ok(())
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
            state.streaming_message = PartialMessage::new();
            state.pending_tool_calls.clear();
        }
        // Release the run lock before announcing idleness, so a waiter can start a new run.
        self.run_guard.take();
        self.inner.idle.send_replace(true);
    }
}
