//! Serialized events → reply events. Each `data:` is one pi event; `[DONE]` and blank data are
//! skipped, as pi skips them. A block's index must be the next one for a `*_start` and the open
//! block for its deltas and end (pi checks the same bounds); the terminal `done`/`error` ends
//! the reply, and a stream that ends without one is incomplete.

use super::wire::Event;
use crate::diagnostics::quote_chunk;
use crate::failure::{Failure, FailureKind};
use crate::providers::transport::{Decoder, EventDecoder, Flow};
use crate::reply::ReplyBuilder;
use crate::sse::SseEvent;
use crate::types::content::ThinkingContent;
use crate::types::message::StopReason;

/// The kind of the open block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Thinking,
    ToolCall,
}

impl Block {
    fn name(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Thinking => "thinking",
            Self::ToolCall => "toolcall",
        }
    }
}

/// How the reply ends once the terminal event has arrived.
enum Terminal {
    Done(StopReason),
    Error(Failure),
}

/// The pi-messages decoder.
pub(crate) struct PiMessagesDecoder {
    out: ReplyBuilder,
    provider: String,
    /// Blocks started so far (the next `*_start` index).
    started: usize,
    /// The open block: its index, kind, and whether a delta arrived for it.
    open: Option<(usize, Block, bool)>,
    terminal: Option<Terminal>,
}

impl PiMessagesDecoder {
    /// A decoder writing to `out`.
    pub(crate) fn new(out: ReplyBuilder, provider: &str) -> Self {
        Self {
            out,
            provider: provider.to_string(),
            started: 0,
            open: None,
            terminal: None,
        }
    }

    fn begin(&mut self, index: usize, block: Block) -> Result<(), Failure> {
        if index != self.started {
            return Err(Failure::parse(format!(
                "Invalid contentIndex {index} in pi-messages {}_start event (expected {})",
                block.name(),
                self.started
            )));
        }
        self.started += 1;
        self.open = Some((index, block, false));
        Ok(())
    }

    /// Checks that `index` is the open block of kind `block`; returns whether it had a delta.
    fn check(
        &mut self,
        index: usize,
        block: Block,
        what: &str,
        delta: bool,
    ) -> Result<bool, Failure> {
        match &mut self.open {
            Some((open, kind, had)) if *open == index && *kind == block => {
                let before = *had;
                *had |= delta;
                Ok(before)
            }
            _ => Err(Failure::parse(format!(
                "Invalid contentIndex {index} in pi-messages {}_{what} event (no open {} block {index})",
                block.name(),
                block.name()
            ))),
        }
    }

    async fn apply(&mut self, event: Event) -> Result<Flow, Failure> {
        match event {
            Event::Start {} => self.out.start().await,
            Event::TextStart { content_index } => self.begin(content_index, Block::Text)?,
            Event::TextDelta {
                content_index,
                delta,
            } => {
                self.check(content_index, Block::Text, "delta", true)?;
                if !delta.is_empty() {
                    self.out.text(delta).await;
                }
            }
            Event::TextEnd {
                content_index,
                content,
                content_signature,
            } => {
                let had = self.check(content_index, Block::Text, "end", false)?;
                if !had && !content.is_empty() {
                    self.out.text(content).await;
                }
                if let Some(signature) = content_signature {
                    self.out.text_signature(signature);
                }
                self.out.close_open().await;
                self.open = None;
            }
            Event::ThinkingStart { content_index } => self.begin(content_index, Block::Thinking)?,
            Event::ThinkingDelta {
                content_index,
                delta,
            } => {
                self.check(content_index, Block::Thinking, "delta", true)?;
                if !delta.is_empty() {
                    self.out.thinking(delta).await;
                }
            }
            Event::ThinkingEnd {
                content_index,
                content,
                content_signature,
                redacted,
            } => {
                let had = self.check(content_index, Block::Thinking, "end", false)?;
                if !had {
                    let initial = ThinkingContent {
                        thinking: content,
                        thinking_signature: None,
                        redacted,
                    };
                    self.out.thinking_start_with(initial).await;
                }
                if let Some(signature) = content_signature {
                    self.out.thinking_signature(signature);
                }
                self.out.close_open().await;
                self.open = None;
            }
            Event::ToolCallStart {
                content_index,
                id,
                tool_name,
            } => {
                self.begin(content_index, Block::ToolCall)?;
                self.out.tool_call_start(id, tool_name).await;
            }
            Event::ToolCallDelta {
                content_index,
                delta,
            } => {
                self.check(content_index, Block::ToolCall, "delta", true)?;
                self.out.tool_call_delta(delta).await;
            }
            Event::ToolCallEnd {
                content_index,
                tool_call,
            } => {
                let had = self.check(content_index, Block::ToolCall, "end", false)?;
                if !had {
                    let arguments = serde_json::Value::Object(tool_call.arguments).to_string();
                    self.out.tool_call_delta(arguments).await;
                }
                self.out.close_open().await;
                self.open = None;
            }
            Event::Done {
                reason,
                usage,
                response_id,
            } => {
                self.end(usage, response_id);
                let reason = match reason {
                    StopReason::Length | StopReason::ToolUse => reason,
                    _ => StopReason::Stop,
                };
                self.terminal = Some(Terminal::Done(reason));
                return Ok(Flow::Complete);
            }
            Event::Error {
                reason,
                usage,
                error_message,
                response_id,
            } => {
                self.end(usage, response_id);
                let failure = if reason == StopReason::Aborted {
                    Failure::aborted()
                } else {
                    Failure::provider(error_message.unwrap_or_else(|| {
                        format!("{} reported an error without a message", self.provider)
                    }))
                };
                self.terminal = Some(Terminal::Error(failure));
                return Ok(Flow::Complete);
            }
        }
        Ok(Flow::Continue)
    }

    /// The usage and response id of the terminal event (the backend's cost kept as sent).
    fn end(&mut self, usage: Option<crate::types::usage::Usage>, response_id: Option<String>) {
        if let Some(usage) = usage {
            self.out.set_usage(usage);
        }
        if let Some(id) = response_id {
            self.out.set_response_id(id);
        }
    }
}

impl EventDecoder for PiMessagesDecoder {
    async fn event(&mut self, event: &SseEvent) -> Result<Flow, Failure> {
        let data = event.trimmed_data();
        if data == "[DONE]" {
            return Ok(Flow::Continue);
        }
        let parsed: Event = serde_json::from_str(data).map_err(|e| {
            Failure::parse(format!(
                "Could not parse a pi-messages event ({e}): {}",
                quote_chunk(data)
            ))
        })?;
        self.apply(parsed).await
    }
}

impl Decoder for PiMessagesDecoder {
    async fn finish(self) {
        match self.terminal {
            Some(Terminal::Done(reason)) => self.out.finish_sending(reason).await,
            Some(Terminal::Error(failure)) => self.out.fail_sending(failure).await,
            None => {
                let text = format!("{} stream ended without a terminal event", self.provider);
                self.out
                    .fail_sending(Failure::new(FailureKind::Incomplete, text))
                    .await
            }
        }
    }

    async fn fail(self, failure: Failure) {
        self.out.fail_sending(failure).await
    }
}
