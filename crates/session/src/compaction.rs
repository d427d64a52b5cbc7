//! Compaction as pi 1.6 prepares it: when the context's tokens pass `context_window −
//! reserve_tokens`, the path before a cut point is summarized and the most recent
//! `keep_recent_tokens` are kept; the cut never falls on a tool result, so a tool call and
//! its result stay together. The summary itself comes from a hook the application gives
//! ([`compact`]); the previous compaction's summary is handed to it.

use serde_json::Value;

use crate::appends::CompactionRecord;
use crate::context::{self, current_system_message};
use crate::entry::{Entry, EntryType};
use crate::file_ops::FileOps;
use crate::manager::SessionManager;
use crate::message::ContextMessage;

/// When to compact and how much to keep (pi's `DEFAULT_COMPACTION_SETTINGS`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactionSettings {
    /// Whether compaction happens at all.
    pub enabled: bool,
    /// Tokens left free in the window for the reply (16,384).
    pub reserve_tokens: u64,
    /// Tokens of the most recent messages kept as they are (20,000).
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

impl CompactionSettings {
    /// pi's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns compaction on or off.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Sets the reserve.
    pub fn reserve_tokens(mut self, tokens: u64) -> Self {
        self.reserve_tokens = tokens;
        self
    }

    /// Sets how many recent tokens are kept.
    pub fn keep_recent_tokens(mut self, tokens: u64) -> Self {
        self.keep_recent_tokens = tokens;
        self
    }
}

/// Whether a context of `context_tokens` in a window of `context_window` should be compacted
/// (pi's `shouldCompact`).
pub fn should_compact(
    context_tokens: u64,
    context_window: u64,
    settings: &CompactionSettings,
) -> bool {
    settings.enabled && context_tokens > context_window.saturating_sub(settings.reserve_tokens)
}

/// A usage's context tokens: its total, or the sum of its parts when the total is 0 (pi's
/// `calculateContextTokens`, on the raw JSON of a message's `usage`).
fn usage_tokens(usage: &Value) -> u64 {
    let field = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    match field("totalTokens") {
        0 => field("input") + field("output") + field("cacheRead") + field("cacheWrite"),
        total => total,
    }
}

/// The context tokens a reply reported, when it is one to trust: an assistant message, not
/// `aborted` or `error`, with non-zero usage.
fn reported_tokens(message: &Value) -> Option<u64> {
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    let stop = message.get("stopReason").and_then(Value::as_str);
    if matches!(stop, Some("aborted" | "error")) {
        return None;
    }
    Some(usage_tokens(message.get("usage")?)).filter(|&t| t > 0)
}

/// The tokens of a projected path (pi's `estimateProjectedContextTokens`): the last trusted
/// reply's reported usage plus an estimate of the messages after it, unless a context edit or
/// a compaction came after that reply (its usage no longer describes the context); otherwise
/// the estimate of every message, the system messages counted once as they combine.
fn projected_context_tokens(path: &[&Entry], projected: &[Projected<'_>]) -> u64 {
    let messages: Vec<(usize, &ContextMessage)> = projected
        .iter()
        .enumerate()
        .flat_map(|(i, (_, m))| m.iter().map(move |m| (i, m)))
        .collect();
    if let Some(last) = messages
        .iter()
        .rposition(|(_, m)| reported_tokens(m).is_some())
    {
        let (entry_index, message) = messages[last];
        let usage_entry = projected[entry_index].0.id();
        let usage_at = path
            .iter()
            .position(|e| e.id().is_some() && e.id() == usage_entry);
        let invalidated_at = path.iter().rposition(|e| {
            matches!(
                e.entry_type(),
                EntryType::ContextEdit | EntryType::Compaction
            )
        });
        let trusted = match (usage_at, invalidated_at) {
            (Some(u), Some(i)) => u > i,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if trusted {
            let trailing: u64 = messages[last + 1..]
                .iter()
                .map(|(_, m)| estimate_tokens(m))
                .sum();
            return reported_tokens(message).unwrap_or(0) + trailing;
        }
    }
    let all: Vec<ContextMessage> = messages.iter().map(|(_, m)| (*m).clone()).collect();
    let system_tokens = current_system_message(&all).map_or(0, |s| estimate_tokens(&s.to_value()));
    system_tokens
        + all
            .iter()
            .filter(|m| m.role() != Some("system"))
            .map(|m| estimate_tokens(m))
            .sum::<u64>()
}

/// The tokens of the context the session's current path gives a request: the last reply's
/// reported usage plus an estimate of what came after it, or an estimate of the whole when
/// no reply since the last compaction or context edit reported usage (pi's
/// `estimateProjectedContextTokens`). Compare it with [`should_compact`].
pub fn context_tokens(session: &SessionManager) -> u64 {
    let path = session.branch_path(None);
    let projected = context::projection(&path);
    projected_context_tokens(&path, &projected)
}

/// The characters JavaScript counts (UTF-16 code units).
fn js_len(text: &str) -> u64 {
    text.encode_utf16().count() as u64
}

/// The characters an image is counted as.
const IMAGE_CHARS: u64 = 4800;

fn content_chars(content: Option<&Value>) -> u64 {
    match content {
        Some(Value::String(s)) => js_len(s),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map_or(0, js_len),
                Some("image") => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

fn str_len(value: Option<&Value>) -> u64 {
    value.and_then(Value::as_str).map_or(0, js_len)
}

/// A message's tokens, estimated as characters / 4 rounded up (pi's `estimateTokens`).
pub fn estimate_tokens(message: &Value) -> u64 {
    let chars = match message.get("role").and_then(Value::as_str).unwrap_or("") {
        "system" => {
            let mut chars = content_chars(message.get("content"));
            if let Some(Value::Object(sections)) = message.get("sections") {
                chars += sections.values().map(|v| str_len(Some(v))).sum::<u64>();
            }
            if let Some(tools) = message.get("toolsAdded") {
                chars += serde_json::to_string(tools).map_or(0, |s| js_len(&s));
            }
            chars
        }
        "user" | "custom" | "toolResult" => content_chars(message.get("content")),
        "assistant" => message
            .get("content")
            .and_then(Value::as_array)
            .map_or(0, |blocks| {
                blocks
                    .iter()
                    .map(|b| match b.get("type").and_then(Value::as_str) {
                        Some("text") => str_len(b.get("text")),
                        Some("thinking") => str_len(b.get("thinking")),
                        Some("toolCall") => {
                            str_len(b.get("name"))
                                + b.get("arguments")
                                    .and_then(|a| serde_json::to_string(a).ok())
                                    .map_or(0, |s| js_len(&s))
                        }
                        _ => 0,
                    })
                    .sum()
            }),
        "bashExecution" => str_len(message.get("command")) + str_len(message.get("output")),
        "branchSummary" | "compactionSummary" => str_len(message.get("summary")),
        _ => 0,
    };
    chars.div_ceil(4)
}

fn is_cut_point(message: &ContextMessage) -> bool {
    matches!(
        message.role(),
        Some(
            "user"
                | "assistant"
                | "bashExecution"
                | "custom"
                | "branchSummary"
                | "compactionSummary"
        )
    )
}

fn is_turn_start(message: &ContextMessage) -> bool {
    matches!(
        message.role(),
        Some("user" | "bashExecution" | "custom" | "branchSummary" | "compactionSummary")
    )
}

type Projected<'a> = (&'a Entry, Vec<ContextMessage>);

fn starts_turn(entry: &Projected<'_>) -> bool {
    entry.0.entry_type() != EntryType::Compaction && entry.1.iter().any(is_turn_start)
}

/// Whether the entries after a cut are a recovery's hidden attempt and nothing else (pi's
/// `isRecoveryOmissionSuffix`): at least one assistant reply a context edit left out, every
/// other entry invisible to the context, no compaction, and no edit that replaces content of
/// an entry still shown. The cut then moves past its entry (the last input sent), so a prompt
/// that alone exceeds the budget is summarized rather than kept to overflow again.
fn only_hidden_attempts_after(suffix: &[Projected<'_>]) -> bool {
    let visible_by_itself = |(entry, _): &Projected<'_>| {
        entry.entry_type() != EntryType::ContextEdit && !context::entry_messages(entry).is_empty()
    };
    let omitted =
        |projected: &Projected<'_>| visible_by_itself(projected) && projected.1.is_empty();
    let omitted_ids: Vec<&str> = suffix
        .iter()
        .filter(|p| omitted(p))
        .filter_map(|(entry, _)| entry.id())
        .collect();
    let replaces_shown = suffix.iter().any(|(entry, _)| {
        entry.entry_type() == EntryType::ContextEdit
            && entry.get("replacement").is_some_and(|r| !r.is_null())
            && !entry
                .str_field("targetId")
                .is_some_and(|target| omitted_ids.contains(&target))
    });
    !replaces_shown
        && suffix.iter().any(|p| {
            p.0.entry_type() == EntryType::Message
                && p.0.message_role() == Some("assistant")
                && omitted(p)
        })
        && suffix.iter().all(|p| {
            p.0.entry_type() != EntryType::Compaction && (!visible_by_itself(p) || omitted(p))
        })
}

/// Where the kept part starts (pi's `findCutPoint` over the projected entries).
struct CutPoint {
    first_kept: usize,
    turn_start: Option<usize>,
}

fn find_cut_point(
    entries: &[Projected<'_>],
    start: usize,
    end: usize,
    keep_recent: u64,
) -> CutPoint {
    let cut_points: Vec<usize> = (start..end)
        .filter(|&i| {
            entries[i].0.entry_type() != EntryType::Compaction
                && entries[i].1.iter().any(is_cut_point)
        })
        .collect();
    let Some(&first) = cut_points.first() else {
        return CutPoint {
            first_kept: start,
            turn_start: None,
        };
    };
    let mut cut = first;
    let mut accumulated = 0;
    let mut exceeded = false;
    for i in (start..end).rev() {
        let tokens: u64 = entries[i].1.iter().map(|m| estimate_tokens(m)).sum();
        if tokens == 0 {
            continue;
        }
        accumulated += tokens;
        if accumulated >= keep_recent {
            exceeded = true;
            // The nearest cut point at or after this entry: a run of tool results larger than
            // the budget keeps the call they answer.
            cut = cut_points
                .iter()
                .copied()
                .find(|&c| c >= i)
                .unwrap_or(cut_points[cut_points.len() - 1]);
            break;
        }
    }
    if exceeded && only_hidden_attempts_after(&entries[cut + 1..end]) {
        cut += 1;
    }
    // Entries that add nothing to the context just before the cut are kept with it.
    while cut > start {
        let previous = &entries[cut - 1];
        if previous.0.entry_type() == EntryType::Compaction || !previous.1.is_empty() {
            break;
        }
        cut -= 1;
    }
    let turn_start = if starts_turn(&entries[cut]) {
        None
    } else {
        (start..=cut).rev().find(|&i| starts_turn(&entries[i]))
    };
    CutPoint {
        first_kept: cut,
        turn_start,
    }
}

/// What a compaction summarizes and keeps (pi's `CompactionPreparation`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompactionPreparation {
    /// The first entry kept as it is.
    pub first_kept_entry_id: String,
    /// The messages to summarize (system messages left out: the compaction carries them).
    pub messages_to_summarize: Vec<Value>,
    /// When the cut falls inside a turn: that turn's messages before the cut.
    pub turn_prefix_messages: Vec<Value>,
    /// The context's estimated tokens before compacting.
    pub tokens_before: u64,
    /// The summary of the previous compaction, to carry on.
    pub previous_summary: Option<String>,
    /// The files read and modified: the previous compaction's lists and the tool calls of
    /// the messages summarized (pi's `fileOps`).
    pub file_ops: FileOps,
}

impl CompactionPreparation {
    /// Whether the cut falls inside a turn (pi's `isSplitTurn`): then
    /// [`turn_prefix_messages`](Self::turn_prefix_messages) holds that turn's start.
    pub fn is_split_turn(&self) -> bool {
        !self.turn_prefix_messages.is_empty()
    }
}

fn conversation(entries: &[Projected<'_>]) -> Vec<Value> {
    entries
        .iter()
        .filter(|(e, _)| e.entry_type() != EntryType::Compaction)
        .flat_map(|(_, m)| {
            m.iter()
                .filter(|m| m.role() != Some("system"))
                .map(|m| m.as_value().clone())
        })
        .collect()
}

/// What compacting the session's current path would summarize and keep; `None` when the leaf
/// is a compaction already or there is nothing to summarize.
pub fn prepare_compaction(
    session: &SessionManager,
    settings: &CompactionSettings,
) -> Option<CompactionPreparation> {
    let path = session.branch_path(None);
    if path
        .last()
        .is_some_and(|e| e.entry_type() == EntryType::Compaction)
    {
        return None;
    }
    let projected = context::projection(&path);
    let previous = projected
        .iter()
        .position(|(e, m)| e.entry_type() == EntryType::Compaction && !m.is_empty());
    let previous_summary = previous
        .and_then(|i| projected[i].0.str_field("summary"))
        .map(str::to_string);
    let start = previous.map_or(0, |i| i + 1);
    let tokens_before = projected_context_tokens(&path, &projected);
    let cut = find_cut_point(
        &projected,
        start,
        projected.len(),
        settings.keep_recent_tokens,
    );
    let first_kept_entry_id = projected.get(cut.first_kept)?.0.id()?.to_string();
    let history_end = cut.turn_start.unwrap_or(cut.first_kept);
    let messages_to_summarize = conversation(&projected[start..history_end.max(start)]);
    let turn_prefix_messages = match cut.turn_start {
        Some(turn) => conversation(&projected[turn..cut.first_kept]),
        None => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return None;
    }
    let mut file_ops = FileOps::new();
    if let Some(i) = previous {
        file_ops.add_previous(projected[i].0);
    }
    for message in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(message);
    }
    Some(CompactionPreparation {
        first_kept_entry_id,
        messages_to_summarize,
        turn_prefix_messages,
        tokens_before,
        previous_summary,
        file_ops,
    })
}

/// Compacts the session's current path: prepares it, asks `summarize` for the summary (the
/// application's summarizer, a model call with pi's prompt or anything else), and appends
/// the `compaction` entry. `Ok(None)` when there is nothing to compact.
pub fn compact<E>(
    session: &mut SessionManager,
    settings: &CompactionSettings,
    summarize: impl FnOnce(&CompactionPreparation) -> Result<String, E>,
) -> Result<Option<String>, CompactError<E>> {
    let Some(preparation) = prepare_compaction(session, settings) else {
        return Ok(None);
    };
    let summary = summarize(&preparation).map_err(CompactError::Summarize)?;
    let record = CompactionRecord::new(
        summary,
        Some(preparation.first_kept_entry_id.clone()),
        preparation.tokens_before,
    );
    session
        .append_compaction(record)
        .map(Some)
        .map_err(CompactError::Session)
}

/// Why [`compact`] failed.
#[derive(Debug, thiserror::Error)]
pub enum CompactError<E> {
    /// The summarizer failed; nothing was appended.
    #[error("the summarizer failed; the session is unchanged")]
    Summarize(E),
    /// The compaction entry could not be appended.
    #[error("the compaction could not be appended: {0}")]
    Session(#[from] crate::error::SessionError),
}
