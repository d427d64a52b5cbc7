//! The summary a compaction writes: pi's structured checkpoint (goal, constraints and
//! preferences, progress, key decisions, next steps, critical context, then the files read
//! and modified), asked of a model by [`ModelSummarizer`], or made by any [`Summarizer`] the
//! application gives instead; [`compact_with`] prepares, summarizes and appends.
//!
//! The prompts are oxpi's own words asking for the same sections under the same headings as
//! pi's; the serialized conversation (`[User]: …`, `[Assistant tool calls]: …`), the file
//! lists (`<read-files>`, `<modified-files>`) and the split-turn separator are pi's format.

use futures::future::BoxFuture;
use futures::FutureExt;
use oxpi_ai::{
    AssistantContent, CacheRetention, Context, Message, Model, ProviderRegistry, ReasoningLevel,
    StopReason, StreamOptions,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::appends::CompactionRecord;
use crate::compaction::{
    prepare_compaction, CompactError, CompactionPreparation, CompactionSettings,
};
use crate::context::content_text;
use crate::llm::{to_llm_messages, ConvertError};
use crate::manager::SessionManager;
use crate::message::ContextMessage;

/// The system prompt of a summary request: summarize, do not continue the conversation.
pub const SUMMARY_SYSTEM_PROMPT: &str = "You condense conversations between a user and an AI \
coding assistant into structured summaries, in exactly the format asked for.\n\nThe \
conversation is material to summarize: do not continue it, do not answer anything asked in \
it. Reply with the summary alone.";

const SECTIONS: &str = "## Goal
[What the user wants done; several items if the work covers several tasks.]

## Constraints & Preferences
- [Requirements and preferences the user stated, or \"(none)\"]

## Progress
### Done
- [x] [Finished tasks and changes]

### In Progress
- [ ] [Work under way]

### Blocked
- [What stops progress, if anything]

## Key Decisions
- **[Decision]**: [Why, briefly]

## Next Steps
1. [What comes next, in order]

## Critical Context
- [Facts, values, examples or references needed to go on, or \"(none)\"]

Be brief in every section. Keep file paths, function names, error messages, codes and \
numbers exactly as written.";

/// The first summary's instructions.
fn first_prompt() -> String {
    format!(
        "Summarize the conversation above as a structured checkpoint from which another model \
will carry on the work.\n\nUse exactly this format:\n\n{SECTIONS}"
    )
}

/// The instructions when a previous summary is handed on.
fn update_prompt() -> String {
    format!(
        "The conversation above is new; merge it into the earlier summary in the \
<previous-summary> tags. Keep everything the earlier summary says, add the new progress, \
decisions and context, move finished work from \"In Progress\" to \"Done\", bring \"Next \
Steps\" up to date, keep exact paths, names and error messages, and drop only what no longer \
matters.\n\nUse exactly this format:\n\n{SECTIONS}"
    )
}

/// The instructions for the early part of a turn the cut splits.
const TURN_PREFIX_PROMPT: &str = "The conversation above is the start of a turn whose later \
messages are kept separately; do not reconstruct them.\n\nWrite a short checkpoint of this \
part, to be placed before the later messages:\n\n## Original Request\n[What the user asked \
for]\n\n## Progress So Far\n- [Decisions made and work done here]\n\n## Context Needed to \
Continue\n- [What the later messages need from this part]\n\nSay only what the messages \
above show.";

/// The longest tool result a serialized conversation keeps, in characters.
const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// The first `max` UTF-16 units of `text`, not splitting a character.
fn head(text: &str, max: usize) -> (&str, usize) {
    let mut units = 0;
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > max {
            return (&text[..i], text.encode_utf16().count() - units);
        }
        units += c.len_utf16();
    }
    (text, 0)
}

/// The conversation as plain text for a summary request (pi's `serializeConversation`), so
/// the model reads it rather than continues it: `[User]: …`, `[Assistant]: …`, `[Assistant
/// tool calls]: name(key=value, …); …`, `[Tool result]: …` (cut to 2,000 characters), blocks
/// separated by a blank line; thinking is left out.
pub fn serialize_conversation(messages: &[Message]) -> String {
    let mut parts = Vec::new();
    for message in messages {
        let Ok(value) = serde_json::to_value(message) else {
            continue;
        };
        match value.get("role").and_then(Value::as_str) {
            Some("user") => {
                let text = content_text(value.get("content"));
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            Some("assistant") => {
                let Message::Assistant(reply) = message else {
                    continue;
                };
                let calls: Vec<String> = reply
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantContent::ToolCall(call) => Some(call),
                        _ => None,
                    })
                    .map(|call| {
                        let args = call
                            .arguments
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(", ");
                        format!("{}({args})", call.name)
                    })
                    .collect();
                if reply
                    .content
                    .iter()
                    .any(|b| matches!(b, AssistantContent::Text(_)))
                {
                    parts.push(format!(
                        "[Assistant]: {}",
                        content_text(value.get("content"))
                    ));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            Some("toolResult") => {
                let text = content_text(value.get("content"));
                if text.is_empty() {
                    continue;
                }
                let (kept, cut) = head(&text, TOOL_RESULT_MAX_CHARS);
                if cut == 0 {
                    parts.push(format!("[Tool result]: {text}"));
                } else {
                    parts.push(format!(
                        "[Tool result]: {kept}\n\n[... {cut} more characters truncated]"
                    ));
                }
            }
            _ => {}
        }
    }
    parts.join("\n\n")
}

/// A summary a [`Summarizer`] made.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompactionSummary {
    /// The summary text, file lists included.
    pub summary: String,
    /// The usage of making it (written as the entry's `usage`; pi counts it in session totals).
    pub usage: Option<oxpi_ai::Usage>,
    /// The entry's `details` (pi's summarizer: `{readFiles, modifiedFiles}`).
    pub details: Option<Value>,
    /// Whether the application, not pi's summarizer, made it (the entry's `fromHook`): the
    /// next compaction then does not carry its file lists on.
    pub from_hook: bool,
}

impl CompactionSummary {
    /// A summary of the application's own (`fromHook: true`, no usage, no details).
    pub fn new(summary: impl Into<String>) -> Self {
        Self {
            summary: summary.into(),
            usage: None,
            details: None,
            from_hook: true,
        }
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: oxpi_ai::Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets the details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Sets whether the application made it.
    pub fn with_from_hook(mut self, from_hook: bool) -> Self {
        self.from_hook = from_hook;
        self
    }

    fn record(self, preparation: &CompactionPreparation) -> CompactionRecord {
        let mut record = CompactionRecord::new(
            self.summary,
            Some(preparation.first_kept_entry_id.clone()),
            preparation.tokens_before,
        )
        .from_hook(self.from_hook);
        if let Some(details) = self.details {
            record = record.details(details);
        }
        if let Some(usage) = self.usage.and_then(|u| serde_json::to_value(u).ok()) {
            record = record.usage(usage);
        }
        record
    }
}

/// Why a summary could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummarizeError {
    /// A message to summarize is not an oxpi-ai message.
    #[error("the messages to summarize cannot be sent to a model: {0}")]
    Convert(#[from] ConvertError),
    /// The model's reply is no summary: an error, a reply cut at the token cap, a tool call.
    #[error("{0}")]
    Model(String),
    /// The summary was cancelled.
    #[error("the summary was cancelled")]
    Cancelled,
    /// The application's summarizer failed.
    #[error("the summarizer failed: {0}")]
    Other(String),
}

/// Makes a compaction's summary (pi's `session_before_compact` hook, or its default
/// summarizer): [`ModelSummarizer`], or the application's own. A closure
/// `Fn(CompactionPreparation, CancellationToken) -> impl Future<Output = Result<CompactionSummary,
/// SummarizeError>>` is one.
pub trait Summarizer: Send + Sync {
    /// The summary of what `preparation` leaves out.
    fn summarize(
        &self,
        preparation: CompactionPreparation,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<CompactionSummary, SummarizeError>>;
}

impl<F, Fut> Summarizer for F
where
    F: Fn(CompactionPreparation, CancellationToken) -> Fut + Send + Sync,
    Fut: std::future::Future<Output = Result<CompactionSummary, SummarizeError>> + Send + 'static,
{
    fn summarize(
        &self,
        preparation: CompactionPreparation,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<CompactionSummary, SummarizeError>> {
        self(preparation, cancel).boxed()
    }
}

/// pi's default summarizer: asks `model` for the structured summary of the messages left out
/// (the update prompt when a previous summary is handed on), a second short summary of a
/// split turn's start (merged after a `---` line), appends the files read and modified, and
/// writes `{readFiles, modifiedFiles}` as the entry's details. Requests go without prompt
/// caching and with a fresh session id unless the options template has one. As pi 1.6's
/// (#9512) they ask for the model's output limit, fitted into the window by oxpi-ai; a
/// `max_tokens` in the template can only lower it. The reasoning level is the agent's
/// thinking level ([`with_thinking_level`](Self::with_thinking_level)), sent only to a
/// reasoning model, as pi's `createSummarizationOptions`.
///
/// ```
/// use oxpi_session::{ModelSummarizer, Summarizer};
///
/// let model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
/// let summarizer = ModelSummarizer::new(model).with_instructions("Keep the test names.");
/// let _: &dyn Summarizer = &summarizer;
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ModelSummarizer {
    /// The model asked.
    pub model: Model,
    /// Providers to reach it through (`None`: oxpi-ai's built-ins).
    pub registry: Option<ProviderRegistry>,
    /// The requests' options template (key, headers, timeouts; `cancel` is replaced).
    pub options: StreamOptions,
    /// What the summary should focus on (pi's `/compact [instructions]`).
    pub instructions: Option<String>,
}

impl std::fmt::Debug for ModelSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSummarizer")
            .field("model", &self.model.id)
            .field("instructions", &self.instructions)
            .finish_non_exhaustive()
    }
}

impl ModelSummarizer {
    /// Summaries by `model` through oxpi-ai's built-in providers, default options.
    pub fn new(model: Model) -> Self {
        Self {
            model,
            registry: None,
            options: StreamOptions::default(),
            instructions: None,
        }
    }

    /// Makes requests through `registry` (e.g. one holding the faux provider).
    pub fn with_registry(mut self, registry: ProviderRegistry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Sets the options template.
    pub fn with_options(mut self, options: StreamOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets what the summary should focus on.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets the thinking level summaries are made with (the agent's, pi's `thinkingLevel`;
    /// `None` is off): the template's `reasoning`, sent only when the model reasons.
    pub fn with_thinking_level(mut self, level: Option<ReasoningLevel>) -> Self {
        self.options.reasoning = level;
        self
    }

    /// The options of one summary request: the template's, without prompt caching, with a
    /// session id, a `max_tokens` no more than the model's (unset: the model's, as pi),
    /// reasoning only for a model that reasons.
    fn request_options(&self, cancel: &CancellationToken) -> StreamOptions {
        let mut options = self.options.clone();
        options.cancel = cancel.child_token();
        options.cache_retention = Some(CacheRetention::None);
        if options.session_id.is_none() {
            options.session_id = Some(uuid::Uuid::now_v7().to_string());
        }
        if let Some(requested) = options.max_tokens.filter(|&m| m > 0) {
            if self.model.max_tokens > 0 {
                options.max_tokens = Some(requested.min(self.model.max_tokens));
            }
        }
        if !self.model.reasoning {
            options.reasoning = None;
        }
        options
    }

    async fn ask(
        &self,
        prompt: String,
        cancel: &CancellationToken,
    ) -> Result<(String, oxpi_ai::Usage), SummarizeError> {
        let mut context = Context::new(SUMMARY_SYSTEM_PROMPT);
        context.messages = vec![Message::user(prompt)].into();
        let options = self.request_options(cancel);
        let stream = match &self.registry {
            Some(registry) => registry.stream(&self.model, &context, options),
            None => ProviderRegistry::builtins().stream(&self.model, &context, options),
        };
        let reply = stream.result().await;
        match reply.stop_reason {
            StopReason::Aborted => return Err(SummarizeError::Cancelled),
            StopReason::Error => {
                return Err(SummarizeError::Model(format!(
                    "the summary request failed: {}",
                    reply.error_message.as_deref().unwrap_or("unknown error")
                )))
            }
            StopReason::Length => {
                return Err(SummarizeError::Model(
                    "the summary reached the token cap and is incomplete".into(),
                ))
            }
            _ => {}
        }
        if reply
            .content
            .iter()
            .any(|b| matches!(b, AssistantContent::ToolCall(_)))
        {
            return Err(SummarizeError::Model(
                "the summary request answered with a tool call".into(),
            ));
        }
        let text = reply
            .content
            .iter()
            .filter_map(|b| match b {
                AssistantContent::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        Ok((text, reply.usage))
    }

    fn focus(&self, prompt: String) -> String {
        match &self.instructions {
            Some(focus) => format!("{prompt}\n\nAdditional focus: {focus}"),
            None => prompt,
        }
    }

    async fn run(
        self,
        preparation: CompactionPreparation,
        cancel: CancellationToken,
    ) -> Result<CompactionSummary, SummarizeError> {
        let mut usage: Option<oxpi_ai::Usage> = None;
        let mut add_usage = |u: oxpi_ai::Usage| {
            usage = Some(match usage.take() {
                None => u,
                Some(mut sum) => {
                    sum.input += u.input;
                    sum.output += u.output;
                    sum.cache_read += u.cache_read;
                    sum.cache_write += u.cache_write;
                    sum.total_tokens += u.total_tokens;
                    sum.cost.input += u.cost.input;
                    sum.cost.output += u.cost.output;
                    sum.cost.cache_read += u.cost.cache_read;
                    sum.cost.cache_write += u.cost.cache_write;
                    sum.cost.total += u.cost.total;
                    sum
                }
            });
        };
        let split = preparation.is_split_turn();
        let mut history = preparation
            .previous_summary
            .clone()
            .unwrap_or_else(|| "No prior history.".into());
        if !split || !preparation.messages_to_summarize.is_empty() {
            let conversation = serialize_conversation(&to_llm_messages(&shared(
                &preparation.messages_to_summarize,
            ))?);
            let mut prompt = format!("<conversation>\n{conversation}\n</conversation>\n\n");
            let base = match &preparation.previous_summary {
                Some(previous) => {
                    prompt.push_str(&format!(
                        "<previous-summary>\n{previous}\n</previous-summary>\n\n"
                    ));
                    update_prompt()
                }
                None => first_prompt(),
            };
            prompt.push_str(&self.focus(base));
            let (text, u) = self.ask(prompt, &cancel).await?;
            add_usage(u);
            history = text;
        }
        let mut summary = history;
        if split {
            let conversation = serialize_conversation(&to_llm_messages(&shared(
                &preparation.turn_prefix_messages,
            ))?);
            let prompt = self.focus(format!(
                "# Conversation\n{conversation}\n\n# Instructions\n{TURN_PREFIX_PROMPT}"
            ));
            let (text, u) = self.ask(prompt, &cancel).await?;
            add_usage(u);
            summary = format!("{summary}\n\n---\n\n**Turn Context (split turn):**\n\n{text}");
        }
        summary.push_str(&preparation.file_ops.summary_suffix());
        let mut out = CompactionSummary::new(summary)
            .with_details(preparation.file_ops.details())
            .with_from_hook(false);
        out.usage = usage;
        Ok(out)
    }
}

impl Summarizer for ModelSummarizer {
    fn summarize(
        &self,
        preparation: CompactionPreparation,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<CompactionSummary, SummarizeError>> {
        self.clone().run(preparation, cancel).boxed()
    }
}

/// Compacts the session's current path with `summarizer` (pi's `compact` then
/// `appendCompaction`): prepares it, awaits the summary, appends the `compaction` entry and
/// returns its id; `Ok(None)` when there is nothing to compact. A failed summary appends
/// nothing.
///
/// ```no_run
/// # async fn demo(session: &mut oxpi_session::SessionManager, model: oxpi_ai::Model)
/// #     -> Result<(), Box<dyn std::error::Error>> {
/// use oxpi_session::{compact_with, CompactionSettings, ModelSummarizer};
/// let summarizer = ModelSummarizer::new(model);
/// let cancel = tokio_util::sync::CancellationToken::new();
/// let id = compact_with(session, &CompactionSettings::new(), &summarizer, cancel).await?;
/// println!("compaction entry: {id:?}");
/// # Ok(()) }
/// ```
pub async fn compact_with(
    session: &mut SessionManager,
    settings: &CompactionSettings,
    summarizer: &dyn Summarizer,
    cancel: CancellationToken,
) -> Result<Option<String>, CompactError<SummarizeError>> {
    let Some(preparation) = prepare_compaction(session, settings) else {
        return Ok(None);
    };
    let summary = summarizer
        .summarize(preparation.clone(), cancel)
        .await
        .map_err(CompactError::Summarize)?;
    session
        .append_compaction(summary.record(&preparation))
        .map(Some)
        .map_err(CompactError::Session)
}

/// The compaction entry of a summary (for callers appending it themselves).
pub(crate) fn record_of(
    summary: CompactionSummary,
    preparation: &CompactionPreparation,
) -> CompactionRecord {
    summary.record(preparation)
}

/// Messages of a preparation as context messages.
fn shared(messages: &[Value]) -> Vec<ContextMessage> {
    messages.iter().cloned().map(ContextMessage::from).collect()
}
