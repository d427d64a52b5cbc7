//! Event-stream messages → reply events. Each message has headers (`:message-type` `event`,
//! `exception` or `error`; `:event-type` / `:exception-type`) and a JSON payload (see
//! [`super::wire`]). Text, reasoning (with its signature) and tool calls stream as they arrive;
//! `messageStop` carries the stop reason and `metadata` the usage, which ends the reply.

use aws_smithy_types::event_stream::{HeaderValue, Message};
use serde::de::DeserializeOwned;

use super::wire::{
    ContentBlockDelta, ContentBlockStart, ContentBlockStop, ExceptionPayload, MessageStop, Metadata,
};
use crate::failure::Failure;
use crate::reply::ReplyBuilder;
use crate::types::message::StopReason;
use crate::types::model::Model;
use crate::types::usage::Usage;

pub use crate::providers::transport::Flow;

/// Turns ConverseStream messages into reply events.
#[derive(Debug)]
pub struct EventProcessor {
    out: ReplyBuilder,
    model: Model,
    stop_reason: Option<String>,
    usage: Option<Usage>,
    /// The block the stream is in, by its `contentBlockIndex`; deltas for any other block are
    /// an error, never dropped or put into the wrong block.
    open: Option<OpenBlock>,
}

/// An open block: its wire index, and whether it is a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OpenBlock {
    index: u64,
    tool: bool,
}

/// The string value of a header.
pub fn header<'a>(message: &'a Message, name: &str) -> Option<&'a str> {
    message
        .headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str()),
            _ => None,
        })
}

/// pi's prefixes for Bedrock's exceptions (also what `is_context_overflow` and retry logic
/// look for).
pub fn exception_text(exception_type: &str, message: &str) -> String {
    let prefix = match exception_type
        .trim_end_matches("Exception")
        .to_ascii_lowercase()
        .as_str()
    {
        "internalserver" => "Internal server error",
        "modelstreamerror" => "Model stream error",
        "validation" => "Validation error",
        "throttling" => "Throttling error",
        "serviceunavailable" => "Service unavailable",
        _ => exception_type,
    };
    format!("{prefix}: {message}")
}

fn parse<T: DeserializeOwned>(event: &str, payload: &[u8]) -> Result<T, String> {
    serde_json::from_slice(payload).map_err(|e| {
        format!(
            "Could not parse a {event} event ({e}): {}",
            crate::diagnostics::quote_chunk(&String::from_utf8_lossy(payload))
        )
    })
}

impl EventProcessor {
    /// A processor for a reply from `model`.
    pub fn new(out: ReplyBuilder, model: &Model) -> Self {
        Self {
            out,
            model: model.clone(),
            stop_reason: None,
            usage: None,
            open: None,
        }
    }

    /// Applies one message; `Err` for an exception, an error message or a payload that does
    /// not parse.
    pub async fn process(&mut self, message: &Message) -> Result<Flow, Failure> {
        let payload = message.payload().as_ref();
        match header(message, ":message-type") {
            Some("event") => {}
            Some("exception") => {
                let kind = header(message, ":exception-type").unwrap_or("exception");
                let body: ExceptionPayload = serde_json::from_slice(payload).unwrap_or_default();
                let text = body
                    .message
                    .or(body.message_capitalised)
                    .unwrap_or_else(|| String::from_utf8_lossy(payload).into_owned());
                let transient = matches!(
                    kind,
                    "throttlingException"
                        | "serviceUnavailableException"
                        | "internalServerException"
                        | "modelStreamErrorException"
                );
                return Err(Failure::in_stream(exception_text(kind, &text), transient));
            }
            other => {
                let code = header(message, ":error-code").unwrap_or(other.unwrap_or("error"));
                let text = header(message, ":error-message").unwrap_or("");
                return Err(Failure::provider(format!("{code}: {text}")));
            }
        }
        self.event(message).await.map_err(Failure::parse)
    }

    /// Applies one event message; `Err` (the text) for a payload that does not parse or an
    /// impossible order.
    async fn event(&mut self, message: &Message) -> Result<Flow, String> {
        let payload = message.payload().as_ref();
        self.out.start().await;
        match header(message, ":event-type").unwrap_or("") {
            "messageStart" => {}
            "contentBlockStart" => {
                let start: ContentBlockStart = parse("contentBlockStart", payload)?;
                if let Some(tool) = start.start.and_then(|s| s.tool_use) {
                    self.out.tool_call_start(tool.tool_use_id, tool.name).await;
                    self.open = Some(OpenBlock {
                        index: start.content_block_index,
                        tool: true,
                    });
                }
            }
            "contentBlockDelta" => {
                let delta: ContentBlockDelta = parse("contentBlockDelta", payload)?;
                self.delta(delta).await?;
            }
            "contentBlockStop" => {
                let stop: ContentBlockStop = parse("contentBlockStop", payload)?;
                match self.open {
                    Some(open) if open.index == stop.content_block_index => {
                        self.open = None;
                        self.out.close_open().await;
                    }
                    // A block that never had a delta (nothing was opened for it).
                    None => {}
                    Some(open) => {
                        return Err(format!(
                            "a contentBlockStop arrived for block {} while block {} is open",
                            stop.content_block_index, open.index
                        ))
                    }
                }
            }
            "messageStop" => {
                let stop: MessageStop = parse("messageStop", payload)?;
                self.stop_reason = Some(stop.stop_reason);
            }
            "metadata" => {
                let metadata: Metadata = parse("metadata", payload)?;
                if let Some(raw) = metadata.usage {
                    let mut usage = Usage {
                        input: raw.input_tokens,
                        output: raw.output_tokens,
                        cache_read: raw.cache_read_input_tokens,
                        cache_write: raw.cache_write_input_tokens,
                        total_tokens: raw
                            .total_tokens
                            .unwrap_or(raw.input_tokens.saturating_add(raw.output_tokens)),
                        ..Usage::default()
                    };
                    self.model.calculate_cost(&mut usage);
                    self.usage = Some(usage);
                    self.out.set_usage(usage);
                }
                if self.stop_reason.is_some() {
                    return Ok(Flow::Complete);
                }
            }
            // Unknown event types are tolerated.
            _ => {}
        }
        Ok(Flow::Continue)
    }

    /// Applies a delta to the block it names: the open one, or a new text or reasoning block
    /// (those have no start event). Input for a tool call that is not the open block, or text
    /// for a tool call's block, is an impossible order: an error.
    async fn delta(&mut self, delta: ContentBlockDelta) -> Result<(), String> {
        let index = delta.content_block_index;
        let delta = delta.delta;
        let is_tool = delta.tool_use.is_some();
        match self.open {
            Some(open) if open.index != index => {
                return Err(format!(
                    "a contentBlockDelta arrived for block {index} while block {} is open",
                    open.index
                ))
            }
            Some(open) if open.tool != is_tool => {
                let (what, block) = if is_tool {
                    ("tool-use input", "not a tool call")
                } else {
                    ("text or reasoning", "a tool call")
                };
                return Err(format!(
                    "{what} arrived for block {index}, which is {block}"
                ));
            }
            Some(_) => {}
            None if is_tool => {
                return Err(format!(
                    "tool-use input arrived for block {index}, which was never started"
                ))
            }
            None => self.open = Some(OpenBlock { index, tool: false }),
        }
        if let Some(text) = delta.text {
            self.out.text(text).await;
        } else if let Some(tool) = delta.tool_use {
            self.out.tool_call_delta(tool.input).await;
        } else if let Some(reasoning) = delta.reasoning_content {
            if let Some(text) = reasoning.text {
                self.out.thinking(text).await;
            }
            if let Some(signature) = reasoning.signature {
                self.out.thinking_signature(signature);
            }
        }
        Ok(())
    }

    /// Ends the reply (the stream is over): `done` with the mapped stop reason, or `error` when
    /// `messageStop` never came or names a stop that is not a success.
    pub async fn finish(self) {
        let reason =
            match self.stop_reason.as_deref() {
                None => return self
                    .out
                    .fail_sending(Failure::incomplete(
                        "The stream ended without a messageStop event: the response is incomplete",
                    ))
                    .await,
                Some("end_turn" | "stop_sequence") => StopReason::Stop,
                Some("max_tokens" | "model_context_window_exceeded") => StopReason::Length,
                Some("tool_use") => StopReason::ToolUse,
                Some(other) => {
                    let text = format!("The provider stopped the reply: {other}");
                    return self.out.fail_sending(Failure::provider(text)).await;
                }
            };
        self.out.finish_sending(reason).await
    }

    /// Ends the reply with an error (partial content is kept).
    pub async fn fail(self, failure: Failure) {
        self.out.fail_sending(failure).await
    }
}
