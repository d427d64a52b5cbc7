//! Compaction during and after a run, as pi's coding agent does it: before every request the
//! context is checked against `context_window − reserve_tokens` and compacted when over, and
//! each request is built from the session's context (summary and kept messages); after a run
//! that ended in a provider's context-overflow error or an early `length` stop, the failed
//! reply is left out of the context (a `context_edit`), the session compacted and the turn
//! retried once; the prompt stays in the session file throughout (pi #7086).

use std::sync::{Arc, Mutex, Weak};

use futures::FutureExt;
use oxpi_agent_core::{AgentContext, AgentOptions, RequestContext, RequestUpdate};
use oxpi_ai::Model;
use tokio_util::sync::CancellationToken;

use crate::bind::{lock, Shared};
use crate::compaction::CompactionSettings;
use crate::compaction::{context_tokens, prepare_compaction, should_compact, CompactError};
use crate::llm::to_llm_messages;
use crate::summary::{record_of, SummarizeError, Summarizer};

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactionReason {
    /// The context passed `context_window − reserve_tokens` (pi's `"threshold"`).
    Threshold,
    /// The provider said the context overflowed, or stopped early at `length` (pi's
    /// `"overflow"`).
    Overflow,
    /// The application asked ([`SessionBinding::compact`](crate::SessionBinding::compact),
    /// pi's `"manual"`).
    Manual,
    /// No compaction: the session's context could not be given to a request or to the idle
    /// agent (it holds a message oxpi-ai cannot hold), so the agent went on with its own
    /// history; the outcome's `error` says which message and why. pi has no such case (its
    /// agent is built from the session).
    ContextUnusable,
}

/// One compaction a bound session attempted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactionOutcome {
    /// Why.
    pub reason: CompactionReason,
    /// The context's tokens when it was decided.
    pub context_tokens: u64,
    /// The `compaction` entry appended, `None` when it failed.
    pub entry_id: Option<String>,
    /// Why it failed (or why a recovery gave up).
    pub error: Option<String>,
    /// Whether the failed turn is retried after it.
    pub will_retry: bool,
}

/// Automatic compaction for an agent bound to a session: [`install`](Self::install) it in
/// the agent's options, then bind with [`bind_agent_with`](crate::bind_agent_with) and run
/// prompts through [`SessionBinding::prompt`](crate::SessionBinding::prompt).
///
/// ```no_run
/// # async fn demo(session: oxpi_session::SessionManager) -> Result<(), Box<dyn std::error::Error>> {
/// use oxpi_agent_core::{Agent, AgentOptions};
/// use oxpi_session::{bind_agent_with, AutoCompaction, ModelSummarizer};
///
/// let model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
/// let auto = AutoCompaction::new(&model, ModelSummarizer::new(model.clone()));
/// let agent = Agent::new(auto.install(AgentOptions::new(model)));
/// let binding = bind_agent_with(&agent, session, &auto)?;
/// binding.prompt(&agent, "go on").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct AutoCompaction {
    /// When to compact and how much to keep.
    pub settings: CompactionSettings,
    /// The model's context window, in tokens (0: unknown, never compacted for).
    pub context_window: u64,
    /// The output limit a `length` stop is measured against (the model's `max_tokens`): a
    /// reply that stopped at `length` with fewer output tokens was cut by the context.
    pub max_output_tokens: u64,
    summarizer: Arc<dyn Summarizer>,
    slot: Arc<Mutex<Weak<Mutex<Shared>>>>,
}

impl std::fmt::Debug for AutoCompaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoCompaction")
            .field("settings", &self.settings)
            .field("context_window", &self.context_window)
            .field("max_output_tokens", &self.max_output_tokens)
            .finish_non_exhaustive()
    }
}

impl AutoCompaction {
    /// Compaction for `model`'s window with pi's default settings, summaries by `summarizer`.
    pub fn new(model: &Model, summarizer: impl Summarizer + 'static) -> Self {
        Self {
            settings: CompactionSettings::default(),
            context_window: model.context_window,
            max_output_tokens: model.max_tokens,
            summarizer: Arc::new(summarizer),
            slot: Arc::new(Mutex::new(Weak::new())),
        }
    }

    /// Sets when to compact and how much to keep.
    pub fn with_settings(mut self, settings: CompactionSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Sets the context window (tokens).
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = tokens;
        self
    }

    /// Sets the output limit a `length` stop is measured against.
    pub fn with_max_output_tokens(mut self, tokens: u64) -> Self {
        self.max_output_tokens = tokens;
        self
    }

    /// `options` with a `prepare_request` hook that compacts before a request when the
    /// context is over the threshold and builds every request from the session's context
    /// (an earlier `prepare_request` hook then sees that context, and its update wins). The
    /// hook does nothing until a session is bound with
    /// [`bind_agent_with`](crate::bind_agent_with), nor when an append to the session failed
    /// (the file would not hold the whole conversation).
    pub fn install(&self, mut options: AgentOptions) -> AgentOptions {
        let auto = self.clone();
        let previous = options.prepare_request.take();
        options.prepare_request = Some(Arc::new(move |request, cancel| {
            let auto = auto.clone();
            let previous = previous.clone();
            async move {
                let ours = auto.before_request(&request, cancel.clone()).await;
                let Some(previous) = previous else {
                    return ours;
                };
                let mut seen = request;
                if let Some(context) = ours.as_ref().and_then(|u| u.context.clone()) {
                    seen.context = context;
                }
                match previous(seen, cancel).await {
                    Some(theirs) if theirs.context.is_some() || ours.is_none() => Some(theirs),
                    Some(mut theirs) => {
                        theirs.context = ours.and_then(|u| u.context);
                        Some(theirs)
                    }
                    None => ours,
                }
            }
            .boxed()
        }));
        options
    }

    pub(crate) fn attach(&self, shared: &Arc<Mutex<Shared>>) {
        *self
            .slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::downgrade(shared);
    }

    fn shared(&self) -> Option<Arc<Mutex<Shared>>> {
        self.slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .upgrade()
    }

    pub(crate) fn summarizer(&self) -> &dyn Summarizer {
        &*self.summarizer
    }

    /// Whether the bound session's context is over the threshold.
    pub(crate) fn over_threshold(&self, shared: &Mutex<Shared>) -> Option<u64> {
        // An unknown window (0) is never crossed (pi: `contextWindow <= 0` never compacts).
        if self.context_window == 0 {
            return None;
        }
        let tokens = context_tokens(&lock(shared).session);
        should_compact(tokens, self.context_window, &self.settings).then_some(tokens)
    }

    async fn before_request(
        &self,
        request: &RequestContext,
        cancel: CancellationToken,
    ) -> Option<RequestUpdate> {
        let shared = self.shared()?;
        if lock(&shared).append_failed() {
            return None;
        }
        if let Some(tokens) = self.over_threshold(&shared) {
            self.compact(&shared, CompactionReason::Threshold, tokens, false, cancel)
                .await;
        }
        let messages = {
            let shared = lock(&shared);
            to_llm_messages(&shared.session.build_session_context().messages)
        };
        match messages {
            Ok(messages) => Some(
                RequestUpdate::new()
                    .with_context(AgentContext::new(messages, request.context.tools.clone())),
            ),
            Err(e) => {
                let mut shared = lock(&shared);
                let tokens = context_tokens(&shared.session);
                shared.record(CompactionOutcome {
                    reason: CompactionReason::ContextUnusable,
                    context_tokens: tokens,
                    entry_id: None,
                    error: Some(format!("the request keeps the agent's context: {e}")),
                    will_retry: false,
                });
                None
            }
        }
    }

    /// Compacts the bound session with this summarizer and records the outcome.
    pub(crate) async fn compact(
        &self,
        shared: &Mutex<Shared>,
        reason: CompactionReason,
        context_tokens: u64,
        will_retry: bool,
        cancel: CancellationToken,
    ) -> CompactionOutcome {
        let result = compact_shared(shared, &self.settings, self.summarizer(), cancel).await;
        let (entry_id, error) = match result {
            Ok(Some(id)) => (Some(id), None),
            Ok(None) => (None, Some("nothing to compact".to_string())),
            Err(e) => (None, Some(compact_error_text(&e))),
        };
        let outcome = CompactionOutcome {
            reason,
            context_tokens,
            will_retry: will_retry && entry_id.is_some(),
            entry_id,
            error,
        };
        lock(shared).record(outcome.clone());
        outcome
    }
}

/// The text of a failed compaction, the summarizer's reason included.
pub(crate) fn compact_error_text(e: &CompactError<SummarizeError>) -> String {
    match e {
        CompactError::Summarize(inner) => format!("{e}: {inner}"),
        CompactError::Session(_) => e.to_string(),
    }
}

/// Prepares under the lock, summarizes without it, appends under it.
pub(crate) async fn compact_shared(
    shared: &Mutex<Shared>,
    settings: &CompactionSettings,
    summarizer: &dyn Summarizer,
    cancel: CancellationToken,
) -> Result<Option<String>, CompactError<SummarizeError>> {
    let (preparation, leaf) = {
        let shared = lock(shared);
        (
            prepare_compaction(&shared.session, settings),
            shared.session.leaf_id().map(str::to_string),
        )
    };
    let Some(preparation) = preparation else {
        return Ok(None);
    };
    let summary = summarizer
        .summarize(preparation.clone(), cancel)
        .await
        .map_err(CompactError::Summarize)?;
    let mut shared = lock(shared);
    if shared.session.leaf_id().map(str::to_string) != leaf {
        return Err(CompactError::Summarize(SummarizeError::Other(
            "the session changed while the summary was made; nothing was appended".into(),
        )));
    }
    shared
        .session
        .append_compaction(record_of(summary, &preparation))
        .map(Some)
        .map_err(CompactError::Session)
}
