//! Manual compaction (`compact` in RPC mode): oxpi-session prepares the cut, its
//! [`ModelSummarizer`] (pi's structured summary, the split turn's short summary, the file lists
//! and `{readFiles, modifiedFiles}` details) asks the session's model, the `compaction` entry
//! is appended and the agent continues from the compacted context. [`Compacting`] counts the
//! compactions in flight, manual and automatic, for RPC `get_state.isCompacting`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use oxpi_ai::StreamOptions;
use oxpi_session::{
    CompactionPreparation, CompactionRecord, CompactionSettings, CompactionSummary,
    ModelSummarizer, SummarizeError, Summarizer,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::runtime::Runtime;

/// Why compacting failed (pi's texts).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompactFailure {
    /// Nothing before the kept messages.
    #[error("Nothing to compact (session too small)")]
    Nothing,
    /// The model did not write a summary.
    #[error("Compaction failed: {0}")]
    Summary(String),
    /// The session could not be changed.
    #[error("Compaction failed: {0}")]
    Session(String),
}

/// How many compactions are in flight (pi's `isCompacting`): a manual one from start to end,
/// an automatic one while its summary is made.
#[derive(Debug, Clone, Default)]
pub(crate) struct Compacting(Arc<AtomicUsize>);

impl Compacting {
    /// True while a compaction is in flight.
    pub(crate) fn is_compacting(&self) -> bool {
        self.0.load(Ordering::SeqCst) > 0
    }

    /// Counts one compaction until the guard is dropped.
    pub(crate) fn start(&self) -> CompactingGuard {
        self.0.fetch_add(1, Ordering::SeqCst);
        CompactingGuard(self.0.clone())
    }
}

/// One compaction in flight; dropping it (also with a cancelled future) ends it.
#[derive(Debug)]
pub(crate) struct CompactingGuard(Arc<AtomicUsize>);

impl Drop for CompactingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A summarizer whose summaries count as compactions in flight (automatic compaction's).
pub(crate) struct CountedSummarizer<S> {
    inner: S,
    compacting: Compacting,
}

impl<S> CountedSummarizer<S> {
    /// `inner`, counted in `compacting`.
    pub(crate) fn new(inner: S, compacting: Compacting) -> Self {
        Self { inner, compacting }
    }
}

type SummaryFuture =
    Pin<Box<dyn Future<Output = Result<CompactionSummary, SummarizeError>> + Send>>;

impl<S: Summarizer> Summarizer for CountedSummarizer<S> {
    fn summarize(
        &self,
        preparation: CompactionPreparation,
        cancel: CancellationToken,
    ) -> SummaryFuture {
        let guard = self.compacting.start();
        let work = self.inner.summarize(preparation, cancel);
        Box::pin(async move {
            let _guard = guard;
            work.await
        })
    }
}

/// Compacts the bound session; returns pi's `CompactionResult` JSON. `cancel` stops the
/// summary request (nothing is appended then). Counts as compacting until it returns.
pub(crate) async fn compact(
    runtime: &Arc<Runtime>,
    custom_instructions: Option<&str>,
    cancel: CancellationToken,
) -> Result<Value, CompactFailure> {
    let _compacting = runtime.compacting.start();
    let settings = CompactionSettings::default();
    let preparation = runtime
        .with_session(|s| oxpi_session::prepare_compaction(s, &settings))
        .flatten()
        .ok_or(CompactFailure::Nothing)?;
    let summarizer = summarizer(runtime, custom_instructions);
    let summary = summarizer
        .summarize(preparation.clone(), cancel)
        .await
        .map_err(|e| CompactFailure::Summary(e.to_string()))?;
    let usage = summary
        .usage
        .as_ref()
        .and_then(|u| serde_json::to_value(u).ok());
    let mut record = CompactionRecord::new(
        summary.summary.clone(),
        Some(preparation.first_kept_entry_id.clone()),
        preparation.tokens_before,
    )
    .from_hook(summary.from_hook);
    if let Some(details) = &summary.details {
        record = record.details(details.clone());
    }
    if let Some(usage) = &usage {
        record = record.usage(usage.clone());
    }
    let context = runtime
        .with_session(|s| {
            s.append_compaction(record)
                .map(|_| s.build_session_context().messages)
        })
        .ok_or_else(|| CompactFailure::Session("no session is bound".into()))?
        .map_err(|e| CompactFailure::Session(e.to_string()))?;
    let estimated: u64 = context
        .iter()
        .map(|m| oxpi_session::estimate_tokens(m))
        .sum();
    let history = oxpi_session::to_llm_messages(&context)
        .map_err(|e| CompactFailure::Session(e.to_string()))?;
    runtime
        .agent
        .replace_messages(history)
        .map_err(|e| CompactFailure::Session(e.to_string()))?;
    Ok(json!({
        "summary": summary.summary,
        "firstKeptEntryId": preparation.first_kept_entry_id,
        "tokensBefore": preparation.tokens_before,
        "estimatedTokensAfter": estimated,
        "usage": usage,
        "details": summary.details.unwrap_or_else(|| json!({})),
    }))
}

/// pi's summarizer over the agent's model and key (used by `compact` and auto-compaction).
pub(crate) fn summarizer(runtime: &Runtime, custom_instructions: Option<&str>) -> ModelSummarizer {
    let model = runtime.agent.model();
    let mut options = StreamOptions::default();
    options.api_key = runtime.key_for(&model.provider);
    let mut summarizer = runtime.summarizer(&model, options);
    if let Some(custom) = custom_instructions.filter(|c| !c.trim().is_empty()) {
        summarizer = summarizer.with_instructions(custom);
    }
    summarizer
}
