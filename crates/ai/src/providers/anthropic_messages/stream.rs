//! Messages stream events → reply events, through [`ReplyBuilder`].
//!
//! Blocks map one to one: `text` → text, `thinking` → thinking (its `signature_delta` kept as the
//! thinking signature), `redacted_thinking` → a thinking block with `redacted: true`, the text
//! [`REDACTED_THINKING`] and the opaque data as its signature, `tool_use` → a tool call whose
//! `input_json_delta` fragments are the raw arguments. Server-tool blocks (`server_tool_use`,
//! `web_search_tool_result`, …) and unknown block or delta types (`citations_delta`) are skipped.
//!
//! The reply is complete at `message_stop`, or when the body ends cleanly after `message_delta`
//! brought the stop reason; a body that ends earlier is an error.
//!
//! Stop reasons: `end_turn`, `stop_sequence` and `pause_turn` → `stop` (a paused server-tool
//! turn is complete as far as the caller is concerned; resubmitting the conversation continues
//! it, as in pi); `max_tokens` and `model_context_window_exceeded` → `length`; `tool_use` →
//! `toolUse`; `refusal` and `sensitive` → `error` saying so; anything else → `stop`.

use super::wire::{DeltaText, MessageShell, StartBlock, StreamEvent, WireUsage};
use crate::failure::Failure;
use crate::reply::{Held, HeldBatch, ReplyBuilder};
use crate::types::content::ThinkingContent;
use crate::types::message::StopReason;
use crate::types::model::Model;
use crate::types::usage::Usage;

/// The thinking text of a `redacted_thinking` block (its content is encrypted).
pub const REDACTED_THINKING: &str = "[Reasoning redacted]";

pub use crate::providers::transport::Flow;

#[derive(Debug)]
enum Kind {
    Text,
    Thinking,
    Redacted,
    ToolUse {
        input: serde_json::Value,
        had_delta: bool,
    },
    Skipped,
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Thinking => "thinking",
            Self::Redacted => "redacted_thinking",
            Self::ToolUse { .. } => "tool_use",
            Self::Skipped => "skipped",
        }
    }
}

#[derive(Debug)]
struct Open {
    index: u64,
    kind: Kind,
}

/// Applies stream events to a reply and, at the end, produces the final message.
#[derive(Debug)]
pub struct EventProcessor {
    out: ReplyBuilder,
    model: Model,
    open: Option<Open>,
    usage: WireUsage,
    stop_reason: Option<String>,
    complete: bool,
    /// An OAuth reply's tools: the names Claude Code's names map back to.
    tool_names: Option<Vec<String>>,
}

impl EventProcessor {
    /// A processor for a reply from `model`.
    pub fn new(out: ReplyBuilder, model: &Model) -> Self {
        Self {
            out,
            model: model.clone(),
            open: None,
            usage: WireUsage::default(),
            stop_reason: None,
            complete: false,
            tool_names: None,
        }
    }

    /// Maps the reply's tool names back to these (an OAuth request sent Claude Code's names).
    pub(crate) fn with_tool_names(mut self, tool_names: Option<Vec<String>>) -> Self {
        self.tool_names = tool_names;
        self
    }

    /// Applies one event. A mid-stream `error` event or an impossible sequence is `Err`.
    pub async fn process(&mut self, event: StreamEvent) -> Result<Flow, Failure> {
        self.out.start().await;
        match event {
            StreamEvent::MessageStart { message } => self.message_start(message),
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.block_start(index, content_block).await,
            StreamEvent::ContentBlockDelta { index, delta } => self
                .delta(index, delta.into_delta_text())
                .await
                .map_err(Failure::parse)?,
            StreamEvent::ContentBlockStop { index } => self.block_stop(index).await,
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason.filter(|r| !r.is_empty()) {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = usage {
                    self.merge_usage(usage);
                }
            }
            StreamEvent::MessageStop => {
                self.complete = true;
                return Ok(Flow::Complete);
            }
            StreamEvent::Ping | StreamEvent::Other => {}
            StreamEvent::Error { error } => {
                let message = error.message.filter(|m| !m.is_empty());
                let transient = matches!(
                    error.kind.as_deref(),
                    Some("overloaded_error" | "api_error" | "rate_limit_error")
                );
                return Err(Failure::in_stream(
                    match (error.kind, message) {
                        (Some(kind), Some(message)) => format!("{kind}: {message}"),
                        (None, Some(message)) => message,
                        (Some(kind), None) => kind,
                        (None, None) => "the server sent an error event without details".into(),
                    },
                    transient,
                ));
            }
        }
        Ok(Flow::Continue)
    }

    fn message_start(&mut self, message: MessageShell) {
        if let Some(id) = message.id.filter(|id| !id.is_empty()) {
            self.out.set_response_id(id);
        }
        if let Some(usage) = message.usage {
            self.usage = WireUsage::default();
            self.merge_usage(usage);
        }
    }

    fn merge_usage(&mut self, new: WireUsage) {
        let u = &mut self.usage;
        u.input_tokens = new.input_tokens.or(u.input_tokens);
        u.output_tokens = new.output_tokens.or(u.output_tokens);
        u.cache_creation_input_tokens = new
            .cache_creation_input_tokens
            .or(u.cache_creation_input_tokens);
        u.cache_read_input_tokens = new.cache_read_input_tokens.or(u.cache_read_input_tokens);
    }

    async fn block_start(&mut self, index: u64, block: StartBlock) {
        // A block that was never stopped ends here.
        self.close().await;
        let kind = match block {
            StartBlock::Text { text } => {
                self.out.text(&text).await;
                Kind::Text
            }
            // Opened at once: a block may hold only a signature (thinking display omitted).
            StartBlock::Thinking {
                thinking,
                signature,
            } => {
                let initial = ThinkingContent {
                    thinking,
                    thinking_signature: signature.filter(|s| !s.is_empty()),
                    redacted: None,
                };
                self.out.thinking_start_with(initial).await;
                Kind::Thinking
            }
            StartBlock::RedactedThinking { data } => {
                let initial = ThinkingContent {
                    thinking: REDACTED_THINKING.to_string(),
                    thinking_signature: Some(data),
                    redacted: Some(true),
                };
                self.out.thinking_start_with(initial).await;
                Kind::Redacted
            }
            StartBlock::ToolUse { id, name, input } => {
                let name = match &self.tool_names {
                    Some(tools) => super::claude_code::from_claude_code_name(&name, tools),
                    None => name,
                };
                self.out.tool_call_start(id, name).await;
                Kind::ToolUse {
                    input,
                    had_delta: false,
                }
            }
            StartBlock::Other => Kind::Skipped,
        };
        self.open = Some(Open { index, kind });
    }

    /// Applies a `content_block_delta` read by [`BlockDeltaReader`](super::reader::BlockDeltaReader) (the common event,
    /// read without building a [`StreamEvent`]).
    pub async fn process_block_delta(
        &mut self,
        index: u64,
        delta: DeltaText<'_>,
    ) -> Result<Flow, Failure> {
        if !self.out.is_started() {
            self.out.start().await;
        }
        self.delta(index, delta).await.map_err(Failure::parse)?;
        Ok(Flow::Continue)
    }

    /// What [`process_block_delta`](Self::process_block_delta) does with a text, thinking or
    /// tool-input delta of the open block when that needs no waiting: `true` when it applied
    /// it; `false` when it applied nothing (any other delta, a full batch), and then
    /// `process_block_delta` takes the event.
    pub fn process_block_delta_now(&mut self, index: u64, delta: DeltaText<'_>) -> bool {
        match self.out.held_batch() {
            Some(batch) => self.process_block_delta_into(&mut batch.lock(), index, delta),
            None => false,
        }
    }

    /// The sink's batch, for a run of
    /// [`process_block_delta_into`](Self::process_block_delta_into) under one lock.
    pub fn held_batch(&self) -> Option<HeldBatch> {
        self.out.held_batch()
    }

    /// [`process_block_delta_now`](Self::process_block_delta_now) into a batch
    /// [`held_batch`](Self::held_batch) lent.
    #[inline]
    pub fn process_block_delta_into(
        &mut self,
        held: &mut Held<'_>,
        index: u64,
        delta: DeltaText<'_>,
    ) -> bool {
        let Some(open) = self.open.as_mut().filter(|o| o.index == index) else {
            return false;
        };
        match (&mut open.kind, delta) {
            (Kind::Text, DeltaText::Text(text)) => self.out.text_into(held, text).is_ok(),
            (Kind::Thinking, DeltaText::Thinking(thinking)) => {
                self.out.thinking_into(held, thinking).is_ok()
            }
            (Kind::ToolUse { had_delta, .. }, DeltaText::InputJson(partial_json)) => {
                let applied = self.out.tool_call_delta_into(held, partial_json).is_ok();
                *had_delta |= applied;
                applied
            }
            _ => false,
        }
    }

    async fn delta(&mut self, index: u64, delta: DeltaText<'_>) -> Result<(), String> {
        let Some(open) = self.open.as_mut().filter(|o| o.index == index) else {
            return Err(format!(
                "a content_block_delta arrived for block {index}, which is not open"
            ));
        };
        match (&mut open.kind, delta) {
            (_, DeltaText::Other) | (Kind::Skipped, _) => {}
            (Kind::Text, DeltaText::Text(text)) => self.out.text(text).await,
            (Kind::Thinking, DeltaText::Thinking(thinking)) => self.out.thinking(thinking).await,
            (Kind::Thinking, DeltaText::Signature(signature)) => {
                if !signature.is_empty() {
                    self.out.thinking_signature(signature);
                }
            }
            (Kind::ToolUse { had_delta, .. }, DeltaText::InputJson(partial_json)) => {
                *had_delta = true;
                self.out.tool_call_delta(partial_json).await;
            }
            (kind, other) => {
                return Err(format!(
                    "a {} arrived for block {index}, a {} block",
                    other.name(),
                    kind.name()
                ))
            }
        }
        Ok(())
    }

    async fn block_stop(&mut self, index: u64) {
        if self.open.as_ref().is_some_and(|o| o.index == index) {
            self.close().await;
        }
    }

    /// Ends the open block: a tool call whose input came whole in `content_block_start` gets it
    /// now.
    async fn close(&mut self) {
        let Some(open) = self.open.take() else { return };
        if let Kind::ToolUse {
            input,
            had_delta: false,
        } = &open.kind
        {
            if input.as_object().is_some_and(|o| !o.is_empty()) {
                self.out.tool_call_delta(&input.to_string()).await;
            }
        }
        self.out.close_open().await;
    }

    fn usage(&self) -> Usage {
        let u = self.usage;
        let mut usage = Usage {
            input: u.input_tokens.unwrap_or(0),
            output: u.output_tokens.unwrap_or(0),
            cache_read: u.cache_read_input_tokens.unwrap_or(0),
            cache_write: u.cache_creation_input_tokens.unwrap_or(0),
            ..Usage::default()
        };
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
        self.model.calculate_cost(&mut usage);
        usage
    }

    /// Ends the reply after `message_stop` or the end of the body. A body that ends before
    /// `message_stop` is an error, unless `message_delta` already brought the stop reason: then
    /// every block and the final usage have arrived, and only the empty `message_stop` is missing
    /// (one recorded stream ends without the blank line that would dispatch it).
    pub async fn finish(mut self) {
        if !self.complete && self.stop_reason.is_none() {
            return self
                .fail(Failure::incomplete(
                    "The stream ended before message_stop: the response is incomplete",
                ))
                .await;
        }
        self.close().await;
        let usage = self.usage();
        self.out.set_usage(usage);
        let reason = self.stop_reason.clone();
        let stop = match reason.as_deref() {
            None | Some("end_turn" | "stop_sequence" | "pause_turn") => StopReason::Stop,
            Some("max_tokens" | "model_context_window_exceeded") => StopReason::Length,
            Some("tool_use") => StopReason::ToolUse,
            Some("refusal") => {
                return self
                    .out
                    .fail_sending(Failure::provider(
                        "The model refused to answer (stop_reason: refusal)",
                    ))
                    .await
            }
            Some("sensitive") => {
                return self
                    .out
                    .fail_sending(Failure::provider(
                        "The provider stopped the reply: its content was flagged (stop_reason: sensitive)",
                    ))
                    .await
            }
            Some(other) => {
                tracing::debug!("unknown Anthropic stop_reason {other:?} treated as stop");
                StopReason::Stop
            }
        };
        self.out.finish_sending(stop).await
    }

    /// Ends the reply with an error (or abort), keeping what arrived.
    pub async fn fail(mut self, failure: Failure) {
        self.close().await;
        let usage = self.usage();
        self.out.set_usage(usage);
        self.out.fail_sending(failure).await
    }
}
