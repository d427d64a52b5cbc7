//! Options for one streaming request ([`StreamOptions`], pi's `SimpleStreamOptions`), the
//! secret API key type, and the request hooks ([`PayloadHook`], [`ResponseHook`]).
//!
//! Knobs carry pi-ai 0.73.1's names in snake_case: `cache_retention`, `session_id`,
//! `tool_choice`, `on_payload`, `on_response`, `metadata`, `timeout`, `max_retries`,
//! `max_retry_delay`, `service_tier`, `reasoning_summary`, `thinking_budgets`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::types::model::Model;
use crate::types::thinking::{clamp_thinking_level, ThinkingLevel};

/// An API key. `Debug` and `Display` never show it; use [`ApiKey::expose`] where it is sent.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for ApiKey {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for ApiKey {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

/// How much the model should reason, for models that support it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningLevel {
    /// Minimal reasoning.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high, where supported.
    Xhigh,
    /// The most the model does, where supported.
    Max,
}

impl ReasoningLevel {
    /// The lowercase name (`low`, `medium`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
            Self::Max => "max",
        }
    }

    /// The reasoning level of a thinking level; `None` for `off`.
    pub fn from_thinking_level(level: ThinkingLevel) -> Option<Self> {
        match level {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => Some(Self::Minimal),
            ThinkingLevel::Low => Some(Self::Low),
            ThinkingLevel::Medium => Some(Self::Medium),
            ThinkingLevel::High => Some(Self::High),
            ThinkingLevel::Xhigh => Some(Self::Xhigh),
            ThinkingLevel::Max => Some(Self::Max),
        }
    }

    /// The level `model` is asked for (pi's `clampThinkingLevel`, as its OpenAI providers use
    /// it): this level if the model takes it, else the nearest one above, else below; `None`
    /// when that is `off`. `xhigh_by_compat` (a server's `supportsXhigh`) counts `xhigh` as
    /// taken.
    pub fn clamped_for(self, model: &Model, xhigh_by_compat: bool) -> Option<Self> {
        if self == Self::Xhigh && xhigh_by_compat && model.reasoning {
            return Some(self);
        }
        Self::from_thinking_level(clamp_thinking_level(model, self.into()))
    }
}

/// A thinking level where a reasoning level is taken (`off` is none), so
/// `AgentOptions::with_thinking_level` takes the same [`ThinkingLevel`] as
/// `SimpleStreamOptions::with_thinking_level`.
impl From<ThinkingLevel> for Option<ReasoningLevel> {
    fn from(level: ThinkingLevel) -> Self {
        ReasoningLevel::from_thinking_level(level)
    }
}

impl From<ReasoningLevel> for ThinkingLevel {
    fn from(level: ReasoningLevel) -> Self {
        match level {
            ReasoningLevel::Minimal => Self::Minimal,
            ReasoningLevel::Low => Self::Low,
            ReasoningLevel::Medium => Self::Medium,
            ReasoningLevel::High => Self::High,
            ReasoningLevel::Xhigh => Self::Xhigh,
            ReasoningLevel::Max => Self::Max,
        }
    }
}

/// Options for one request. `Default` gives: no key (the provider's env var is used), 2 retries,
/// 60 s cap on a retry wait, 120 s to get response headers, 300 s idle gap allowed between events,
/// no overall deadline, short prompt caching, no hooks.
///
/// Build it from `Default` with the `with_*` methods, one per field (the struct is
/// `#[non_exhaustive]`, so new knobs do not break callers); the fields stay public to read or
/// to change on a template.
///
/// ```
/// use std::time::Duration;
/// use oxpi_ai::{CacheRetention, StreamOptions, ToolChoice};
///
/// let options = StreamOptions::default()
///     .with_api_key("sk-test")
///     .with_max_tokens(4_096)
///     .with_timeout(Duration::from_secs(30))
///     .with_session_id("session-42")
///     .with_cache_retention(CacheRetention::Long)
///     .with_tool_choice(ToolChoice::tool("read"))
///     .with_on_payload(|mut body, _model| async move {
///         body["user"] = "team-a".into();
///         Ok(Some(body))
///     });
/// assert_eq!(options.max_tokens, Some(4_096));
/// assert_eq!(options.session_id.as_deref(), Some("session-42"));
/// assert!(options.on_payload.is_some());
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Output token limit. `None` uses the model's, fitted into the context window less the
    /// input (pi 1.6's `streamSimple` default, see [`StreamOptions::resolved_max_tokens_in`]); a
    /// model without a limit (`max_tokens: 0`) leaves it to the server.
    pub max_tokens: Option<u64>,
    /// API key; when `None` the provider reads its usual environment variable.
    pub api_key: Option<ApiKey>,
    /// Extra HTTP headers.
    pub headers: BTreeMap<String, String>,
    /// Cancels the request; the stream then ends with `aborted`.
    pub cancel: CancellationToken,
    /// Longest wait for the response headers of one attempt (pi's `timeoutMs`).
    pub timeout: Duration,
    /// Longest gap between two stream events before the stream is treated as stalled.
    pub idle_timeout: Duration,
    /// Retries after 429, 5xx or a connection error before the first event.
    pub max_retries: u32,
    /// First backoff delay; doubled on each retry.
    pub retry_base_delay: Duration,
    /// Longest single retry wait; a longer `Retry-After` fails the request instead.
    pub max_retry_delay: Duration,
    /// Reasoning effort for reasoning models.
    pub reasoning: Option<ReasoningLevel>,
    /// Longest time the whole request may take, from the first attempt (retries and their
    /// waits included) to the stream's last event; the reply then ends with an error. `None`
    /// (the default) sets no bound: a slow but live stream may go on for as long as it sends
    /// something within `idle_timeout` (keep-alive comments such as `: ping` count), as pi's.
    pub deadline: Option<Duration>,
    /// How long the provider should keep the prompt cached. `None` means [`CacheRetention::Short`],
    /// or `Long` when the environment variable `PI_CACHE_RETENTION` is `long` (as pi).
    pub cache_retention: Option<CacheRetention>,
    /// Identifies the conversation for providers with session-based caching or routing: OpenAI's
    /// `prompt_cache_key`, the `session_id` / `x-client-request-id` headers of the Responses API.
    pub session_id: Option<String>,
    /// Whether, and which, tool the model must call.
    pub tool_choice: Option<ToolChoice>,
    /// Sees the JSON body of every request after conversion, before it is sent, and may replace it.
    pub on_payload: Option<PayloadHook>,
    /// Sees the status and headers of every HTTP response (rate-limit headers, request ids).
    pub on_response: Option<ResponseHook>,
    /// Request metadata; each provider takes the fields it knows (Anthropic: `user_id`).
    pub metadata: BTreeMap<String, Value>,
    /// OpenAI Responses processing tier; the cost of the reply is scaled by its price multiplier.
    pub service_tier: Option<ServiceTier>,
    /// OpenAI Responses reasoning summary (`auto` when reasoning is on and this is `None`).
    pub reasoning_summary: Option<ReasoningSummary>,
    /// Thinking token budgets per level, for budget-based providers (Anthropic, Gemini 2.5).
    pub thinking_budgets: ThinkingBudgets,
    /// Who the request says it comes from: the `User-Agent` and the attribution headers (pi's
    /// `identity`; `None`: a detailed oxpi `User-Agent`, no attribution).
    pub identity: Option<crate::identity::ClientIdentity>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            temperature: None,
            max_tokens: None,
            api_key: None,
            headers: BTreeMap::new(),
            cancel: CancellationToken::new(),
            timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(300),
            max_retries: 2,
            retry_base_delay: Duration::from_millis(500),
            max_retry_delay: Duration::from_secs(60),
            reasoning: None,
            deadline: None,
            cache_retention: None,
            session_id: None,
            tool_choice: None,
            on_payload: None,
            on_response: None,
            metadata: BTreeMap::new(),
            service_tier: None,
            reasoning_summary: None,
            thinking_budgets: ThinkingBudgets::default(),
            identity: None,
        }
    }
}

impl StreamOptions {
    /// Sets the [`identity`](Self::identity) the request is sent under.
    pub fn with_identity(mut self, identity: crate::identity::ClientIdentity) -> Self {
        self.identity = Some(identity);
        self
    }

    /// Sets the sampling [`temperature`](Self::temperature).
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the output token limit, [`max_tokens`](Self::max_tokens).
    pub fn with_max_tokens(mut self, max_tokens: u64) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the [`api_key`](Self::api_key), used instead of the provider's environment variable.
    pub fn with_api_key(mut self, api_key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    /// Sets the extra HTTP [`headers`](Self::headers), replacing any set before.
    pub fn with_headers<K, V>(mut self, headers: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        self.headers = headers
            .into_iter()
            .map(|(name, value)| (name.into(), value.into()))
            .collect();
        self
    }

    /// Sets the token that [`cancel`](Self::cancel)s the request.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sets the longest wait for the response headers of one attempt, [`timeout`](Self::timeout).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the longest gap allowed between two stream events, [`idle_timeout`](Self::idle_timeout).
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// Sets how many times a failed request is retried, [`max_retries`](Self::max_retries).
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Sets the first backoff delay, [`retry_base_delay`](Self::retry_base_delay).
    pub fn with_retry_base_delay(mut self, retry_base_delay: Duration) -> Self {
        self.retry_base_delay = retry_base_delay;
        self
    }

    /// Sets the longest single retry wait, [`max_retry_delay`](Self::max_retry_delay).
    pub fn with_max_retry_delay(mut self, max_retry_delay: Duration) -> Self {
        self.max_retry_delay = max_retry_delay;
        self
    }

    /// Sets the [`reasoning`](Self::reasoning) effort.
    pub fn with_reasoning(mut self, reasoning: ReasoningLevel) -> Self {
        self.reasoning = Some(reasoning);
        self
    }

    /// Sets the longest time the whole request may take, [`deadline`](Self::deadline).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets how long the prompt stays cached, [`cache_retention`](Self::cache_retention).
    pub fn with_cache_retention(mut self, cache_retention: CacheRetention) -> Self {
        self.cache_retention = Some(cache_retention);
        self
    }

    /// Sets the conversation's [`session_id`](Self::session_id) (prompt caching, routing).
    pub fn with_session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Sets whether, and which, tool the model must call, [`tool_choice`](Self::tool_choice).
    pub fn with_tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.tool_choice = Some(tool_choice);
        self
    }

    /// Sets the request [`metadata`](Self::metadata), replacing any set before.
    pub fn with_metadata<K, V>(mut self, metadata: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<Value>,
    {
        self.metadata = metadata
            .into_iter()
            .map(|(key, value)| (key.into(), value.into()))
            .collect();
        self
    }

    /// Sets the OpenAI Responses processing tier, [`service_tier`](Self::service_tier).
    pub fn with_service_tier(mut self, service_tier: ServiceTier) -> Self {
        self.service_tier = Some(service_tier);
        self
    }

    /// Sets the OpenAI Responses [`reasoning_summary`](Self::reasoning_summary) detail.
    pub fn with_reasoning_summary(mut self, reasoning_summary: ReasoningSummary) -> Self {
        self.reasoning_summary = Some(reasoning_summary);
        self
    }

    /// Sets the [`thinking_budgets`](Self::thinking_budgets) per level.
    pub fn with_thinking_budgets(mut self, thinking_budgets: ThinkingBudgets) -> Self {
        self.thinking_budgets = thinking_budgets;
        self
    }

    /// Sets [`on_payload`](Self::on_payload) from an async closure. Return `Ok(None)` to send the
    /// body unchanged, `Ok(Some(body))` to send another, `Err(text)` to fail the request with
    /// that text (nothing is sent).
    pub fn with_on_payload<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(Value, &Model) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Option<Value>, String>> + Send + 'static,
    {
        self.on_payload = Some(PayloadHook(Arc::new(move |body, model| {
            hook(body, model).boxed()
        })));
        self
    }

    /// Sets [`on_response`](Self::on_response) from an async closure.
    pub fn with_on_response<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(ProviderResponse, &Model) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.on_response = Some(ResponseHook(Arc::new(move |response, model| {
            hook(response, model).boxed()
        })));
        self
    }

    /// The cache retention in effect (see [`cache_retention`](Self::cache_retention)).
    pub fn resolved_cache_retention(&self) -> CacheRetention {
        CacheRetention::resolve(
            self.cache_retention,
            std::env::var("PI_CACHE_RETENTION").ok().as_deref(),
        )
    }
}

/// How long a provider keeps the prompt prefix cached (pi's `CacheRetention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheRetention {
    /// No cache markers or keys are sent.
    None,
    /// The provider's default (Anthropic: 5 minutes; OpenAI: in memory).
    Short,
    /// Longer where the provider offers it (Anthropic: 1 hour; OpenAI: `24h`).
    Long,
}

impl CacheRetention {
    /// `requested`, else `Long` when `env` (the value of `PI_CACHE_RETENTION`) is `long`, else
    /// `Short`.
    ///
    /// ```
    /// use oxpi_ai::CacheRetention;
    /// assert_eq!(CacheRetention::resolve(None, None), CacheRetention::Short);
    /// assert_eq!(CacheRetention::resolve(None, Some("long")), CacheRetention::Long);
    /// assert_eq!(CacheRetention::resolve(Some(CacheRetention::None), Some("long")), CacheRetention::None);
    /// ```
    pub fn resolve(requested: Option<Self>, env: Option<&str>) -> Self {
        match (requested, env) {
            (Some(retention), _) => retention,
            (None, Some("long")) => Self::Long,
            (None, _) => Self::Short,
        }
    }
}

/// Whether the model must call a tool (pi's `toolChoice`, one name for every API).
///
/// | oxpi | Anthropic | OpenAI | Gemini |
/// | --- | --- | --- | --- |
/// | `Auto` | `{"type":"auto"}` | `"auto"` | `AUTO` |
/// | `None` | `{"type":"none"}` | `"none"` | `NONE` |
/// | `Required` | `{"type":"any"}` | `"required"` | `ANY` |
/// | `Tool(name)` | `{"type":"tool","name":…}` | `{"type":"function",…}` | `ANY` + `allowedFunctionNames` |
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call (Anthropic's and Gemini's `any`, OpenAI's `required`).
    Required,
    /// A call to this tool.
    Tool(String),
}

impl ToolChoice {
    /// A call to the named tool.
    pub fn tool(name: impl Into<String>) -> Self {
        Self::Tool(name.into())
    }
}

/// An HTTP response as [`ResponseHook`] sees it (pi's `ProviderResponse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderResponse {
    /// HTTP status code.
    pub status: u16,
    /// Headers, lowercase names; a repeated header's values are joined with `, `.
    pub headers: BTreeMap<String, String>,
}

type PayloadFn =
    dyn Fn(Value, &Model) -> BoxFuture<'static, Result<Option<Value>, String>> + Send + Sync;
type ResponseFn = dyn Fn(ProviderResponse, &Model) -> BoxFuture<'static, ()> + Send + Sync;

/// pi's `onPayload`: called with each request body; see [`StreamOptions::with_on_payload`].
#[derive(Clone)]
pub struct PayloadHook(pub Arc<PayloadFn>);

impl fmt::Debug for PayloadHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PayloadHook")
    }
}

/// pi's `onResponse`: called with the status and headers of each HTTP response (every attempt,
/// also a failed one that is retried); see [`StreamOptions::with_on_response`].
#[derive(Clone)]
pub struct ResponseHook(pub Arc<ResponseFn>);

impl fmt::Debug for ResponseHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResponseHook")
    }
}

/// OpenAI's processing tier (`service_tier`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServiceTier {
    /// The project's setting.
    Auto,
    /// Standard.
    Default,
    /// Cheaper, slower (half price).
    Flex,
    /// Scale tier.
    Scale,
    /// Faster, dearer (twice the price; 2.5 times for gpt-5.5, as pi).
    Priority,
}

impl ServiceTier {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Default => "default",
            Self::Flex => "flex",
            Self::Scale => "scale",
            Self::Priority => "priority",
        }
    }

    /// A tier from its wire name; `None` for an unknown one.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "auto" => Some(Self::Auto),
            "default" => Some(Self::Default),
            "flex" => Some(Self::Flex),
            "scale" => Some(Self::Scale),
            "priority" => Some(Self::Priority),
            _ => None,
        }
    }

    /// What the tier does to the model's list price, as pi counts it: flex 0.5, priority 2
    /// (2.5 for `gpt-5.5`), others 1.
    ///
    /// ```
    /// use oxpi_ai::ServiceTier;
    /// assert_eq!(ServiceTier::Flex.price_multiplier("gpt-5"), 0.5);
    /// assert_eq!(ServiceTier::Priority.price_multiplier("gpt-5"), 2.0);
    /// ```
    pub fn price_multiplier(self, model_id: &str) -> f64 {
        match self {
            Self::Flex => 0.5,
            Self::Priority if model_id == "gpt-5.5" => 2.5,
            Self::Priority => 2.0,
            Self::Auto | Self::Default | Self::Scale => 1.0,
        }
    }
}

/// OpenAI Responses reasoning summary detail (`reasoning.summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningSummary {
    /// The model's choice.
    Auto,
    /// Longer summaries.
    Detailed,
    /// Shorter summaries.
    Concise,
}

/// Thinking token budgets per level (pi's `ThinkingBudgets`); unset levels keep pi's defaults
/// (minimal 1,024, low 2,048, medium 8,192, high 16,384). `xhigh` uses the `high` budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ThinkingBudgets {
    /// Budget for `minimal`.
    pub minimal: Option<u64>,
    /// Budget for `low`.
    pub low: Option<u64>,
    /// Budget for `medium`.
    pub medium: Option<u64>,
    /// Budget for `high` (and `xhigh`).
    pub high: Option<u64>,
}

impl ThinkingBudgets {
    /// No budget set: pi's defaults for every level.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the budget for `minimal`.
    pub fn with_minimal(mut self, tokens: u64) -> Self {
        self.minimal = Some(tokens);
        self
    }

    /// Sets the budget for `low`.
    pub fn with_low(mut self, tokens: u64) -> Self {
        self.low = Some(tokens);
        self
    }

    /// Sets the budget for `medium`.
    pub fn with_medium(mut self, tokens: u64) -> Self {
        self.medium = Some(tokens);
        self
    }

    /// Sets the budget for `high` (and `xhigh`, `max`).
    pub fn with_high(mut self, tokens: u64) -> Self {
        self.high = Some(tokens);
        self
    }

    /// The budget for `level`: the one set here, else pi's default.
    ///
    /// ```
    /// use oxpi_ai::{ReasoningLevel, ThinkingBudgets};
    /// let budgets = ThinkingBudgets::new().with_high(20_000);
    /// assert_eq!(budgets.budget(ReasoningLevel::Xhigh), 20_000);
    /// assert_eq!(budgets.budget(ReasoningLevel::Low), 2_048);
    /// ```
    pub fn budget(&self, level: ReasoningLevel) -> u64 {
        match level {
            ReasoningLevel::Minimal => self.minimal.unwrap_or(1024),
            ReasoningLevel::Low => self.low.unwrap_or(2048),
            ReasoningLevel::Medium => self.medium.unwrap_or(8192),
            ReasoningLevel::High | ReasoningLevel::Xhigh | ReasoningLevel::Max => {
                self.high.unwrap_or(16_384)
            }
        }
    }
}

/// Fewest tokens left for the answer when thinking shares `max_tokens` (pi's `minOutputTokens`).
pub const MIN_OUTPUT_TOKENS: u64 = 1024;

/// pi's `adjustMaxTokensForThinking`: `(max_tokens, thinking budget)` for a budget-based
/// provider. The budget is added to `base_max_tokens`, capped by the model's limit; when the
/// cap leaves no room above the budget, the budget shrinks to leave [`MIN_OUTPUT_TOKENS`].
///
/// ```
/// use oxpi_ai::options::adjust_max_tokens_for_thinking;
/// use oxpi_ai::{ReasoningLevel, ThinkingBudgets};
/// let budgets = ThinkingBudgets::default();
/// // 32,000 + 16,384 capped at the model's 64,000:
/// assert_eq!(adjust_max_tokens_for_thinking(32_000, 64_000, ReasoningLevel::High, &budgets), (48_384, 16_384));
/// // A model limit of 8,192 with a medium budget of 8,192 leaves 1,024 for the answer:
/// assert_eq!(adjust_max_tokens_for_thinking(4_096, 8_192, ReasoningLevel::Medium, &budgets), (8_192, 7_168));
/// ```
pub fn adjust_max_tokens_for_thinking(
    base_max_tokens: u64,
    model_max_tokens: u64,
    level: ReasoningLevel,
    budgets: &ThinkingBudgets,
) -> (u64, u64) {
    let mut budget = budgets.budget(level);
    let max_tokens = base_max_tokens.saturating_add(budget).min(model_max_tokens);
    if max_tokens <= budget {
        budget = max_tokens.saturating_sub(MIN_OUTPUT_TOKENS);
    }
    (max_tokens, budget)
}
