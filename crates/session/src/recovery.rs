//! Runs of a bound agent that recover from a full context (pi's `_checkCompaction` after a
//! run): a provider's context-overflow error or an early `length` stop leaves the failed
//! reply out of the context, compacts and retries the turn once; a reply that succeeded over
//! the window, or a context over the threshold, compacts without a retry. The prompt is in
//! the session file before the first request and stays there (pi #7086).

use oxpi_agent_core::{Agent, AgentError, PromptInput, RunOutcome};
use oxpi_ai::{is_context_overflow, Message, StopReason};
use tokio_util::sync::CancellationToken;

use crate::auto::{compact_shared, CompactionOutcome, CompactionReason};
use crate::bind::{lock, RunError, SessionBinding};
use crate::compaction::{context_tokens, CompactError, CompactionSettings};
use crate::llm::to_llm_messages;
use crate::summary::{SummarizeError, Summarizer};

/// `Ok` when the run happened, however it ended (a failed run is what recovery looks at; the
/// final outcome is read after it); the error when the agent refused to run.
fn ran(result: Result<RunOutcome, AgentError>) -> Result<(), AgentError> {
    match result {
        Err(e) if !e.is_run_failure() => Err(e),
        _ => Ok(()),
    }
}

/// What the last reply of a run asks of recovery.
enum Verdict {
    /// Leave it out, compact, retry the turn.
    Retry,
    /// Compact, keep it (it succeeded, but over the window).
    Compact,
    /// Nothing beyond the threshold check.
    None,
}

impl SessionBinding {
    /// Runs `input` on `agent` (bound to this session), then recovers as pi does: on a
    /// context-overflow error or an early `length` stop, one compact-and-retry of the turn;
    /// after a reply over the window or a context over the threshold, a compaction. Without
    /// [`AutoCompaction`](crate::AutoCompaction) (bound with [`crate::bind_agent`]) it is
    /// `agent.prompt(input)`. What each compaction did is in
    /// [`take_compactions`](Self::take_compactions). A message of the run that could not be
    /// appended to the session makes it end with [`RunError::Append`] (the run itself went on).
    /// Returns the outcome after recovery, as [`Agent::prompt`] does (a failure that recovery
    /// repaired is not an error).
    pub async fn prompt(
        &self,
        agent: &Agent,
        input: impl Into<PromptInput>,
    ) -> Result<RunOutcome, RunError> {
        ran(agent.prompt(input).await)?;
        let gave_up = self.recover(agent).await?;
        self.outcome(agent, gave_up)
    }

    /// `agent.continue_()` with the same recovery as [`prompt`](Self::prompt).
    pub async fn continue_(&self, agent: &Agent) -> Result<RunOutcome, RunError> {
        ran(agent.continue_().await)?;
        let gave_up = self.recover(agent).await?;
        self.outcome(agent, gave_up)
    }

    /// The outcome after recovery: a failed append, else the failed reply recovery left out
    /// and could not replace, else the agent's last outcome.
    fn outcome(&self, agent: &Agent, gave_up: Option<AgentError>) -> Result<RunOutcome, RunError> {
        self.check_appends()?;
        match gave_up {
            Some(error) => Err(error.into()),
            None => Ok(agent.last_outcome()?),
        }
    }

    /// Compacts the session now with `summarizer` (pi's `/compact` and RPC `compact`) and
    /// gives the idle `agent` the compacted context; `Ok(None)` when there is nothing to
    /// compact. The agent must be idle (a running agent's history cannot be replaced: the
    /// compaction is appended and [`CompactError::Summarize`] with
    /// [`SummarizeError::Other`] says so).
    pub async fn compact(
        &self,
        agent: &Agent,
        settings: &CompactionSettings,
        summarizer: &dyn Summarizer,
        cancel: CancellationToken,
    ) -> Result<Option<String>, CompactError<SummarizeError>> {
        let tokens = context_tokens(&lock(&self.shared).session);
        let result = compact_shared(&self.shared, settings, summarizer, cancel).await;
        let outcome = CompactionOutcome {
            reason: CompactionReason::Manual,
            context_tokens: tokens,
            entry_id: result.as_ref().ok().cloned().flatten(),
            error: result.as_ref().err().map(crate::auto::compact_error_text),
            will_retry: false,
        };
        lock(&self.shared).record(outcome);
        let id = result?;
        if id.is_some() {
            self.give_context(agent)
                .map_err(|e| CompactError::Summarize(SummarizeError::Other(e)))?;
        }
        Ok(id)
    }

    /// Replaces the idle agent's history with the session's context.
    fn give_context(&self, agent: &Agent) -> Result<(), String> {
        let messages = {
            let shared = lock(&self.shared);
            to_llm_messages(&shared.session.build_session_context().messages)
        }
        .map_err(|e| e.to_string())?;
        agent.replace_messages(messages).map_err(|e| e.to_string())
    }

    fn verdict(&self, reply: &oxpi_ai::AssistantMessage) -> Verdict {
        let Some(auto) = &self.auto else {
            return Verdict::None;
        };
        let explicit = reply.stop_reason == StopReason::Error && is_context_overflow(reply, None);
        let length = reply.stop_reason == StopReason::Length
            && auto.max_output_tokens > 0
            && reply.usage.output < auto.max_output_tokens;
        if explicit || length {
            Verdict::Retry
        } else if auto.context_window > 0 && is_context_overflow(reply, Some(auto.context_window)) {
            Verdict::Compact
        } else {
            Verdict::None
        }
    }

    /// Leaves the failed reply, the session's leaf, out of the context.
    fn omit_failed_reply(&self) -> Result<(), String> {
        let mut shared = lock(&self.shared);
        let leaf = shared
            .session
            .leaf_entry()
            .filter(|e| e.message_role() == Some("assistant"))
            .and_then(|e| e.id())
            .map(str::to_string)
            .ok_or("the failed reply is not the session's last entry")?;
        shared
            .session
            .append_context_edit(&leaf, None)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Records why a recovery gave up.
    fn give_up(&self, error: String) {
        self.record_failure(CompactionReason::Overflow, error);
    }

    /// Records a failure that appended no compaction.
    fn record_failure(&self, reason: CompactionReason, error: String) {
        let mut shared = lock(&self.shared);
        let tokens = context_tokens(&shared.session);
        shared.record(CompactionOutcome {
            reason,
            context_tokens: tokens,
            entry_id: None,
            error: Some(error),
            will_retry: false,
        });
    }

    /// Recovers after a run; `Some` when the failed reply was left out of the context and no
    /// retry replaced it (the error says what the reply was and why the retry did not happen).
    async fn recover(&self, agent: &Agent) -> Result<Option<AgentError>, AgentError> {
        let Some(auto) = self.auto.clone() else {
            return Ok(None);
        };
        if lock(&self.shared).append_failed() {
            return Ok(None);
        }
        let mut retried = false;
        let mut gave_up = None;
        loop {
            let last = agent.messages().last().cloned();
            let Some(Message::Assistant(reply)) = last else {
                break;
            };
            let cancel = CancellationToken::new();
            let tokens = context_tokens(&lock(&self.shared).session);
            match self.verdict(&reply) {
                Verdict::Retry if retried => {
                    self.give_up(
                        "context overflow recovery failed after one compact-and-retry".into(),
                    );
                    break;
                }
                Verdict::Retry => {
                    retried = true;
                    if let Err(e) = self.omit_failed_reply() {
                        self.give_up(format!("context overflow recovery failed: {e}"));
                        break;
                    }
                    let outcome = auto
                        .compact(
                            &self.shared,
                            CompactionReason::Overflow,
                            tokens,
                            true,
                            cancel,
                        )
                        .await;
                    if outcome.entry_id.is_none() {
                        let why = outcome.error.unwrap_or_else(|| "nothing to compact".into());
                        gave_up = Some(left_out(&reply, &why));
                        break;
                    }
                    if let Err(e) = self.give_context(agent) {
                        let why = format!("the retry could not start: {e}");
                        self.give_up(why.clone());
                        gave_up = Some(left_out(&reply, &why));
                        break;
                    }
                    // `continue_` refuses an empty history or one ending in a reply; the run
                    // would then fail with an error that says nothing about the overflow.
                    if matches!(agent.messages().last(), None | Some(Message::Assistant(_))) {
                        let why = "the retry could not start: the compacted context is empty or \
                                   ends in a reply";
                        self.give_up(why.into());
                        gave_up = Some(left_out(&reply, why));
                        break;
                    }
                    ran(agent.continue_().await)?;
                }
                Verdict::Compact => {
                    auto.compact(
                        &self.shared,
                        CompactionReason::Overflow,
                        tokens,
                        false,
                        cancel,
                    )
                    .await;
                    break;
                }
                Verdict::None => {
                    if let Some(tokens) = auto.over_threshold(&self.shared) {
                        auto.compact(
                            &self.shared,
                            CompactionReason::Threshold,
                            tokens,
                            false,
                            cancel,
                        )
                        .await;
                    }
                    break;
                }
            }
        }
        // The agent is idle: its history becomes the session's context, compacted during the
        // run or after it, so the next prompt starts from it.
        if let Err(e) = self.give_context(agent) {
            self.record_failure(
                CompactionReason::ContextUnusable,
                format!("the agent keeps its history: {e}"),
            );
        }
        Ok(gave_up)
    }
}

/// The error of a run whose failed `reply` recovery left out of the context and could not
/// retry (`why`): the reply's own error, or that it stopped at the output limit.
fn left_out(reply: &oxpi_ai::AssistantMessage, why: &str) -> AgentError {
    let what = match (&reply.error_message, reply.stop_reason) {
        (Some(error), _) => error.clone(),
        (None, StopReason::Length) => {
            "the reply stopped at the context window and was left out of the context".into()
        }
        (None, _) => "the reply was left out of the context".into(),
    };
    AgentError::Run {
        error_message: format!("{what}; context overflow recovery failed: {why}"),
        stop_reason: Some(reply.stop_reason),
    }
}
