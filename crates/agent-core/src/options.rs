//! [`AgentOptions`]: how an agent starts (model, prompt, tools, history, hooks), one builder
//! per field.

use std::sync::Arc;

use futures::FutureExt;
use oxpi_ai::{
    AssistantMessageEventStream, Context, Message, Model, ProviderRegistry, ReasoningLevel,
    StreamOptions, ToolChoice,
};

use crate::hooks::{
    AfterToolCall, AfterToolCallFn, AfterToolCallResult, BeforeToolCall, BeforeToolCallFn,
    ConvertToLlmFn, ExecuteToolFn, GetApiKeyFn, QueueMode, StreamFn, ToolCallDecision,
    TransformContextFn,
};
use crate::retry::RetryPolicy;
use crate::tool::{AgentToolHandle, ToolExecution};
use crate::turn_hooks::{
    FinishTurnFn, PrepareNextTurnFn, PrepareNextTurnWithContextFn, PrepareRequestFn,
    RequestContext, RequestUpdate, TurnAction, TurnContext, TurnUpdate,
};
use tokio_util::sync::CancellationToken;

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
///             ToolCallDecision::block("no shell here")
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
    /// See [`ExecuteToolFn`]; `None` runs each tool directly.
    pub execute_tool: Option<ExecuteToolFn>,
    /// Sent with every request as [`StreamOptions::session_id`] (prompt caching, routing).
    pub session_id: Option<String>,
    /// See [`GetApiKeyFn`].
    pub get_api_key: Option<GetApiKeyFn>,
    /// See [`FinishTurnFn`].
    pub finish_turn: Option<FinishTurnFn>,
    /// See [`PrepareRequestFn`].
    pub prepare_request: Option<PrepareRequestFn>,
    /// See [`PrepareNextTurnFn`].
    pub prepare_next_turn: Option<PrepareNextTurnFn>,
    /// See [`PrepareNextTurnWithContextFn`] (called instead of `prepare_next_turn` when set).
    pub prepare_next_turn_with_context: Option<PrepareNextTurnWithContextFn>,
    /// Retries a failed turn before its tools ran (see [`RetryPolicy`]); `None` (the default,
    /// as pi-agent-core) never retries a turn.
    pub retry: Option<RetryPolicy>,
    /// How steering messages are taken (default one at a time, as pi).
    pub steering_mode: QueueMode,
    /// How follow-up messages are taken (default one at a time, as pi).
    pub follow_up_mode: QueueMode,
    /// The tool choice of a request whose context ends with a user message (a prompt, a
    /// steering or a follow-up message), when [`stream_options`](Self::stream_options) sets
    /// none; later requests of the run choose freely. oxpi's, not pi's: `Some(Required)` makes
    /// a small model's first reply to each message a tool call (the `small` prompt profile of
    /// the command sets it); `None` (the default) is pi's behaviour.
    pub tool_choice_after_user: Option<ToolChoice>,
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
            execute_tool: None,
            session_id: None,
            get_api_key: None,
            finish_turn: None,
            prepare_request: None,
            prepare_next_turn: None,
            prepare_next_turn_with_context: None,
            retry: None,
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            tool_choice_after_user: None,
        }
    }

    /// Replaces the [`model`](Self::model).
    pub fn with_model(mut self, model: Model) -> Self {
        self.model = model;
        self
    }

    /// Sets the [`thinking_level`](Self::thinking_level) for reasoning models.
    /// Takes a [`ReasoningLevel`] or, as `SimpleStreamOptions::with_thinking_level` does, a
    /// [`ThinkingLevel`](oxpi_ai::ThinkingLevel) (`Off` sets none).
    pub fn with_thinking_level(mut self, level: impl Into<Option<ReasoningLevel>>) -> Self {
        self.thinking_level = level.into();
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

    /// Sees, and may change field by field, each executed tool call's result (see
    /// [`AfterToolCallFn`]).
    pub fn with_after_tool_call<F, Fut>(mut self, after: F) -> Self
    where
        F: Fn(AfterToolCall) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Option<AfterToolCallResult>> + Send + 'static,
    {
        self.after_tool_call = Some(Arc::new(move |call| after(call).boxed()));
        self
    }

    /// Runs each allowed tool call through `execute` (see [`ExecuteToolFn`]).
    ///
    /// ```
    /// use oxpi_agent_core::AgentOptions;
    /// use futures::FutureExt;
    /// let model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
    /// // Log each call, then run it as usual.
    /// let options = AgentOptions::new(model).with_execute_tool(|call| {
    ///     eprintln!("running {} ({})", call.tool.name(), call.tool_call_id);
    ///     call.run().boxed()
    /// });
    /// assert!(options.execute_tool.is_some());
    /// ```
    pub fn with_execute_tool<F>(mut self, execute: F) -> Self
    where
        F: Fn(
                crate::tool::ToolInvocation,
            ) -> futures::future::BoxFuture<
                'static,
                Result<crate::tool::AgentToolResult, crate::tool::ToolCallFailure>,
            > + Send
            + Sync
            + 'static,
    {
        self.execute_tool = Some(Arc::new(execute));
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

    /// Decides after every turn whether the run ends or makes another request (see
    /// [`FinishTurnFn`]).
    ///
    /// ```
    /// use oxpi_agent_core::{AgentOptions, TurnAction};
    /// let model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
    /// // End the run once the history is long, even if the model still calls tools.
    /// let options = AgentOptions::new(model).with_finish_turn(|turn, _cancel| async move {
    ///     (turn.context.messages.len() > 200).then_some(TurnAction::End)
    /// });
    /// assert!(options.finish_turn.is_some());
    /// ```
    pub fn with_finish_turn<F, Fut>(mut self, finish_turn: F) -> Self
    where
        F: Fn(TurnContext, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Option<TurnAction>> + Send + 'static,
    {
        self.finish_turn = Some(Arc::new(move |turn, cancel| {
            finish_turn(turn, cancel).boxed()
        }));
        self
    }

    /// Sees every request before it is made and may replace its context, model or reasoning
    /// level for the rest of the run (see [`PrepareRequestFn`]).
    pub fn with_prepare_request<F, Fut>(mut self, prepare: F) -> Self
    where
        F: Fn(RequestContext, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Option<RequestUpdate>> + Send + 'static,
    {
        self.prepare_request = Some(Arc::new(move |request, cancel| {
            prepare(request, cancel).boxed()
        }));
        self
    }

    /// Prepares each turn after the first (see [`PrepareNextTurnFn`]).
    pub fn with_prepare_next_turn<F, Fut>(mut self, prepare: F) -> Self
    where
        F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Option<TurnUpdate>> + Send + 'static,
    {
        self.prepare_next_turn = Some(Arc::new(move |cancel| prepare(cancel).boxed()));
        self
    }

    /// Prepares each turn after the first, seeing the turn before (see
    /// [`PrepareNextTurnWithContextFn`]).
    pub fn with_prepare_next_turn_with_context<F, Fut>(mut self, prepare: F) -> Self
    where
        F: Fn(TurnContext, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Option<TurnUpdate>> + Send + 'static,
    {
        self.prepare_next_turn_with_context =
            Some(Arc::new(move |turn, cancel| prepare(turn, cancel).boxed()));
        self
    }

    /// Retries failed turns under `policy` (see [`RetryPolicy`]).
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
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

    /// Sends every request under `identity` (pi's `identity`: the `User-Agent` and provider
    /// attribution headers), over the template's own: the fields `identity` sets win. pi's agent
    /// attributes requests to pi by default; oxpi's attributes them to no one until the
    /// application names itself (`docs/differences-from-pi.md`).
    ///
    /// ```
    /// use oxpi_agent_core::AgentOptions;
    /// use oxpi_ai::identity::{ClientAttribution, ClientIdentity, UserAgentMode};
    /// use oxpi_ai::{Model, StreamOptions};
    ///
    /// let template = StreamOptions::default()
    ///     .with_identity(ClientIdentity::default().with_user_agent(UserAgentMode::Short));
    /// let options = AgentOptions::new(Model::openai_compatible("http://127.0.0.1:8080/v1", "m"))
    ///     .with_stream_options(template)
    ///     .with_identity(ClientIdentity::default().with_attribution(ClientAttribution::new("acme", "https://acme.example")));
    /// let identity = options.stream_options.identity.expect("set");
    /// assert_eq!(identity.user_agent, Some(UserAgentMode::Short), "kept from the template");
    /// assert_eq!(identity.attribution_headers("openrouter", "https://openrouter.ai/api/v1").len(), 2);
    /// ```
    pub fn with_identity(mut self, identity: oxpi_ai::identity::ClientIdentity) -> Self {
        let base = self.stream_options.identity.take().unwrap_or_default();
        self.stream_options.identity = Some(base.merge(&identity));
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

    /// Sets the [`tool_choice_after_user`](Self::tool_choice_after_user).
    ///
    /// ```
    /// # use oxpi_agent_core::{AgentOptions, oxpi_ai::{Model, ToolChoice}};
    /// let options = AgentOptions::new(Model::openai_compatible("http://127.0.0.1:8080/v1", "m"))
    ///     .with_tool_choice_after_user(ToolChoice::Required);
    /// assert_eq!(options.tool_choice_after_user, Some(ToolChoice::Required));
    /// ```
    pub fn with_tool_choice_after_user(mut self, choice: ToolChoice) -> Self {
        self.tool_choice_after_user = Some(choice);
        self
    }
}
