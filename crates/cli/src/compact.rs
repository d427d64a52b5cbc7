//! Manual compaction (`compact` in RPC mode): oxpi-session prepares the cut, the session's
//! model writes the summary, the `compaction` entry is appended and the agent continues from
//! the compacted context.
//!
//! The summary prompt here is oxpi's own, short one; pi's prompt is being added to
//! oxpi-session, and this file is where it will be used.

use std::sync::Arc;

use oxpi_ai::{Context, Message, StopReason, StreamOptions};
use oxpi_session::{CompactionRecord, CompactionSettings};
use serde_json::{json, Value};

use crate::runtime::Runtime;

/// Why compacting failed.
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

const SUMMARY_INSTRUCTIONS: &str = "Write a summary of the conversation above for whoever continues \
this work: the goal, what was done (files read, changed, commands run and their outcome), decisions \
and their reasons, and what is left to do. Be concrete (paths, names, numbers); do not invent.";

/// The conversation to summarize as one user message.
fn summary_request(messages: &[Value], previous: Option<&str>, custom: Option<&str>) -> String {
    let mut text = String::new();
    if let Some(previous) = previous {
        text.push_str("<previous-summary>\n");
        text.push_str(previous);
        text.push_str("\n</previous-summary>\n\n");
    }
    text.push_str("<conversation>\n");
    for message in messages {
        text.push_str(&message.to_string());
        text.push('\n');
    }
    text.push_str("</conversation>\n\n");
    text.push_str(SUMMARY_INSTRUCTIONS);
    if let Some(custom) = custom.filter(|c| !c.trim().is_empty()) {
        text.push_str("\n\nAlso: ");
        text.push_str(custom);
    }
    text
}

/// Compacts the bound session; returns pi's `CompactionResult` JSON.
pub(crate) async fn compact(
    runtime: &Arc<Runtime>,
    custom_instructions: Option<&str>,
) -> Result<Value, CompactFailure> {
    let settings = CompactionSettings::default();
    let preparation = runtime
        .with_session(|s| oxpi_session::prepare_compaction(s, &settings))
        .flatten()
        .ok_or(CompactFailure::Nothing)?;
    let mut messages = preparation.messages_to_summarize.clone();
    messages.extend(preparation.turn_prefix_messages.iter().cloned());
    let request = summary_request(
        &messages,
        preparation.previous_summary.as_deref(),
        custom_instructions,
    );
    let model = runtime.agent.model();
    let mut options = StreamOptions::default();
    options.api_key = runtime.key_for(&model.provider);
    let context = Context {
        system_prompt: Some("You summarize coding sessions.".to_string()),
        messages: Arc::new(vec![Message::user(request)]),
        tools: Vec::new(),
    };
    let reply = oxpi_ai::complete(&model, &context, options).await;
    if matches!(reply.stop_reason, StopReason::Error | StopReason::Aborted) {
        return Err(CompactFailure::Summary(
            reply
                .error_message
                .unwrap_or_else(|| "the summary request failed".into()),
        ));
    }
    let summary = reply.text().trim().to_string();
    if summary.is_empty() {
        return Err(CompactFailure::Summary("the model wrote no summary".into()));
    }
    let usage = serde_json::to_value(reply.usage).unwrap_or(Value::Null);
    let record = CompactionRecord::new(
        summary.clone(),
        Some(preparation.first_kept_entry_id.clone()),
        preparation.tokens_before,
    )
    .usage(usage.clone());
    let context = runtime
        .with_session(|s| {
            s.append_compaction(record)
                .map(|_| s.build_session_context().messages)
        })
        .ok_or_else(|| CompactFailure::Session("no session is bound".into()))?
        .map_err(|e| CompactFailure::Session(e.to_string()))?;
    let estimated: u64 = context.iter().map(oxpi_session::estimate_tokens).sum();
    let history = oxpi_session::to_llm_messages(&context)
        .map_err(|e| CompactFailure::Session(e.to_string()))?;
    runtime
        .agent
        .replace_messages(history)
        .map_err(|e| CompactFailure::Session(e.to_string()))?;
    Ok(json!({
        "summary": summary,
        "firstKeptEntryId": preparation.first_kept_entry_id,
        "tokensBefore": preparation.tokens_before,
        "estimatedTokensAfter": estimated,
        "usage": usage,
        "details": {},
    }))
}
