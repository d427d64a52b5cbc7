//! The agent's shared inside, one layer below [`crate::agent`] and [`crate::run_loop`] (which
//! both use it): its state, settings and hooks, listeners and how events reach them, the
//! queues, the run lock.

use std::collections::{BTreeSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use futures::FutureExt;
use oxpi_ai::{Message, Model, ReasoningLevel, SharedPartial, StreamOptions, Tool};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::event::AgentEvent;
use crate::hooks::{
    AfterToolCallFn, BeforeToolCallFn, ConvertToLlmFn, ExecuteToolFn, GetApiKeyFn, QueueMode,
    StreamFn, TransformContextFn,
};
use crate::options::AgentOptions;
use crate::retry::RetryPolicy;
use crate::tool::{AgentToolHandle, ToolExecution};
use crate::turn_hooks::{
    AgentContext, FinishTurnFn, PrepareNextTurnFn, PrepareNextTurnWithContextFn, PrepareRequestFn,
};

/// What the agent holds: the conversation and its settings, behind [`Inner::state`].
pub(crate) struct State {
    pub(crate) system_prompt: Option<String>,
    pub(crate) model: Model,
    pub(crate) thinking_level: Option<ReasoningLevel>,
    pub(crate) tools: Vec<AgentToolHandle>,
    pub(crate) tool_definitions: Vec<Tool>,
    pub(crate) messages: Arc<Vec<Message>>,
    pub(crate) is_streaming: bool,
    pub(crate) streaming_message: SharedPartial,
    pub(crate) pending_tool_calls: BTreeSet<String>,
    pub(crate) error_message: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) steering_mode: QueueMode,
    pub(crate) follow_up_mode: QueueMode,
}

pub(crate) type SyncListener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;
pub(crate) type AsyncListener =
    Arc<dyn Fn(Arc<AgentEvent>) -> BoxFuture<'static, ()> + Send + Sync>;

/// A subscribed listener.
#[derive(Clone)]
pub(crate) enum Listener {
    Sync(SyncListener),
    Async(AsyncListener),
}

/// The agent's shared inside: state, settings and hooks, listeners, queues, the run lock.
pub(crate) struct Inner {
    pub(crate) state: Mutex<State>,
    pub(crate) stream_options: StreamOptions,
    pub(crate) tool_choice_after_user: Option<oxpi_ai::ToolChoice>,
    pub(crate) stream_fn: StreamFn,
    pub(crate) tool_execution: ToolExecution,
    pub(crate) max_turns: usize,
    pub(crate) transform_context: Option<TransformContextFn>,
    pub(crate) convert_to_llm: Option<ConvertToLlmFn>,
    pub(crate) before_tool_call: Option<BeforeToolCallFn>,
    pub(crate) after_tool_call: Option<AfterToolCallFn>,
    pub(crate) execute_tool: Option<ExecuteToolFn>,
    pub(crate) get_api_key: Option<GetApiKeyFn>,
    pub(crate) finish_turn: Option<FinishTurnFn>,
    /// The retry policy; changeable between and during runs ([`crate::Agent::set_retry_policy`]).
    pub(crate) retry: Mutex<Option<RetryPolicy>>,
    /// The token of the retry wait in progress, which [`crate::Agent::abort_retry`] cancels.
    pub(crate) retry_wait: Mutex<Option<CancellationToken>>,
    pub(crate) prepare_request: Option<PrepareRequestFn>,
    pub(crate) prepare_next_turn: Option<PrepareNextTurnFn>,
    pub(crate) prepare_next_turn_with_context: Option<PrepareNextTurnWithContextFn>,
    pub(crate) listeners: Mutex<Vec<(u64, Listener)>>,
    pub(crate) next_listener: AtomicU64,
    pub(crate) steering: Mutex<VecDeque<Message>>,
    pub(crate) follow_ups: Mutex<VecDeque<Message>>,
    pub(crate) run_lock: Arc<tokio::sync::Mutex<()>>,
    pub(crate) cancel: Mutex<CancellationToken>,
    pub(crate) idle: watch::Sender<bool>,
}

/// Locks a mutex, carrying on with the data if a panic poisoned it (state stays plain data).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Inner {
    /// An idle agent's inside, from its options.
    pub(crate) fn new(options: AgentOptions) -> Self {
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
            state: Mutex::new(State {
                system_prompt: options.system_prompt,
                model: options.model,
                thinking_level: options.thinking_level,
                tools: options.tools,
                tool_definitions,
                messages: Arc::new(options.messages),
                is_streaming: false,
                streaming_message: SharedPartial::default(),
                pending_tool_calls: BTreeSet::new(),
                error_message: None,
                session_id: options.session_id,
                steering_mode: options.steering_mode,
                follow_up_mode: options.follow_up_mode,
            }),
            stream_options: options.stream_options,
            tool_choice_after_user: options.tool_choice_after_user,
            stream_fn,
            tool_execution: options.tool_execution,
            max_turns: options.max_turns,
            transform_context: options.transform_context,
            convert_to_llm: options.convert_to_llm,
            before_tool_call: options.before_tool_call,
            after_tool_call: options.after_tool_call,
            execute_tool: options.execute_tool,
            get_api_key: options.get_api_key,
            finish_turn: options.finish_turn,
            retry: Mutex::new(options.retry),
            retry_wait: Mutex::new(None),
            prepare_request: options.prepare_request,
            prepare_next_turn: options.prepare_next_turn,
            prepare_next_turn_with_context: options.prepare_next_turn_with_context,
            listeners: Mutex::new(Vec::new()),
            next_listener: AtomicU64::new(0),
            steering: Mutex::new(VecDeque::new()),
            follow_ups: Mutex::new(VecDeque::new()),
            run_lock: Arc::new(tokio::sync::Mutex::new(())),
            cancel: Mutex::new(CancellationToken::new()),
            idle,
        }
    }

    /// The state, locked.
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

/// What one run holds beside the agent's state: the messages it added, and what hooks replaced
/// for the rest of the run (context, tools, model, reasoning level).
#[derive(Default)]
pub(crate) struct Run {
    pub(crate) added: Vec<Message>,
    /// A context a hook installed; the run's messages go to it as well as to the history.
    pub(crate) messages: Option<Arc<Vec<Message>>>,
    pub(crate) tools: Option<Vec<AgentToolHandle>>,
    pub(crate) model: Option<Model>,
    pub(crate) thinking_level: Option<Option<ReasoningLevel>>,
}

impl Run {
    /// The context the next request is built from.
    pub(crate) fn context(&self, inner: &Inner) -> AgentContext {
        let state = inner.state();
        AgentContext::new(
            self.messages
                .clone()
                .unwrap_or_else(|| state.messages.clone()),
            self.tools.clone().unwrap_or_else(|| state.tools.clone()),
        )
    }

    /// The model the next request goes to.
    pub(crate) fn model(&self, inner: &Inner) -> Model {
        self.model
            .clone()
            .unwrap_or_else(|| inner.state().model.clone())
    }

    /// The reasoning level of the next request.
    pub(crate) fn thinking_level(&self, inner: &Inner) -> Option<ReasoningLevel> {
        self.thinking_level
            .unwrap_or_else(|| inner.state().thinking_level)
    }

    /// Takes a hook's replacements for the rest of the run.
    pub(crate) fn replace(
        &mut self,
        context: Option<AgentContext>,
        model: Option<Model>,
        thinking_level: Option<Option<ReasoningLevel>>,
    ) {
        if let Some(context) = context {
            self.messages = Some(context.messages);
            self.tools = Some(context.tools);
        }
        if model.is_some() {
            self.model = model;
        }
        if thinking_level.is_some() {
            self.thinking_level = thinking_level;
        }
    }
}

/// Appends to the history and emits `message_start` / `message_end`.
pub(crate) async fn append(inner: &Inner, run: &mut Run, message: Message) {
    inner
        .emit(AgentEvent::MessageStart {
            message: message.clone(),
        })
        .await;
    append_silently(inner, run, message.clone());
    inner.emit(AgentEvent::MessageEnd { message }).await;
}

/// Appends to the history (and to this run's messages and context) without events.
pub(crate) fn append_silently(inner: &Inner, run: &mut Run, message: Message) {
    run.added.push(message.clone());
    if let Some(messages) = &mut run.messages {
        Arc::make_mut(messages).push(message.clone());
    }
    Arc::make_mut(&mut inner.state().messages).push(message);
}
