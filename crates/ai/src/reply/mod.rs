//! The provider side of a stream: [`ReplyBuilder`] turns provider fragments into events and the
//! final message, so every provider emits the same event grammar (blocks open and close in order,
//! exactly one terminal event).

mod deltas;
mod sink;

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::{Map, Value};

pub(crate) use sink::delivering;
pub use sink::EventSink;
pub(crate) use sink::{Held, HeldBatch};

use crate::event::AssistantMessageEvent;
use crate::failure::Failure;
use crate::options::ApiKey;
use crate::secret::redact;
use crate::types::content::{AssistantContent, TextContent, ThinkingContent, ToolCall};
use crate::types::message::{AssistantMessage, StopReason};
use crate::types::model::Model;
use crate::types::usage::Usage;

#[derive(Debug)]
enum OpenBlock {
    Text(usize),
    Thinking(usize),
    ToolCall { index: usize, raw: String },
}

/// Builds one assistant reply from provider fragments and emits the matching events.
///
/// Text and thinking deltas go to the open block of their kind (opening one if needed); a tool
/// call opens with [`tool_call_start`](Self::tool_call_start) and takes raw argument fragments.
/// Starting a block closes the open one. [`finish`](Self::finish) and [`fail`](Self::fail) close
/// everything and send the one terminal event.
#[derive(Debug)]
pub struct ReplyBuilder {
    message: AssistantMessage,
    sink: EventSink,
    open: Option<OpenBlock>,
    started: bool,
    /// The request's API key, removed from the error text by [`fail`](Self::fail).
    secret: Option<ApiKey>,
    /// The call part (before a `|`) of every tool-call id of this reply so far.
    call_ids: HashSet<String>,
    /// Set when the stream broke the order of blocks (tool-call input while no call was open):
    /// [`finish`](Self::finish) then fails with this text instead of losing that input.
    out_of_order: Option<String>,
}

impl ReplyBuilder {
    /// A builder for a reply from `model`.
    pub fn new(model: &Model, sink: EventSink) -> Self {
        let mut message = AssistantMessage::empty(&model.api, &model.provider, &model.id);
        // Every partial says `pending` (pi 1.6); `finish` and `fail` set the final reason.
        message.stop_reason = StopReason::Pending;
        Self {
            message,
            sink,
            open: None,
            started: false,
            secret: None,
            out_of_order: None,
            call_ids: HashSet::new(),
        }
    }

    /// The API key of the request: [`fail`](Self::fail) removes it (and a cut-off start of it)
    /// from the error text, whatever the provider quotes there (an error event, an unparsable
    /// chunk, an HTTP error body). See [`redact`].
    pub fn set_secret(&mut self, key: Option<ApiKey>) {
        self.secret = key;
    }

    /// The message so far (tool calls in progress have empty arguments).
    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }

    /// True once any content block was opened.
    pub fn has_content(&self) -> bool {
        !self.message.content.is_empty()
    }

    /// Replaces the signature of the thinking block at content `index` (no event; ignored when
    /// that block is not thinking). For signatures known only at the end of a reply.
    pub fn replace_thinking_signature(&mut self, index: usize, signature: Option<String>) {
        if let Some(AssistantContent::Thinking(t)) = self.message.content.get_mut(index) {
            t.thinking_signature = signature;
        }
    }

    /// Sets the provider's response id.
    pub fn set_response_id(&mut self, id: impl Into<String>) {
        self.message.response_id = Some(id.into());
    }

    /// Sets the provider-specific thinking level the request asked for (Anthropic's managed
    /// effort), so the next request can replay it.
    pub fn set_provider_thinking_level(&mut self, level: Option<String>) {
        self.message.provider_thinking_level = level;
    }

    /// Replaces the usage; cost is computed by the caller (see [`Model::calculate_cost`]).
    pub fn set_usage(&mut self, usage: Usage) {
        self.message.usage = usage;
    }

    /// True once [`start`](Self::start) has sent the `start` event.
    pub(crate) fn is_started(&self) -> bool {
        self.started
    }

    /// Sends `start` once.
    pub async fn start(&mut self) {
        if !self.started {
            self.started = true;
            let partial = self.message.clone();
            self.sink
                .send(AssistantMessageEvent::Start {
                    partial: Box::new(partial),
                })
                .await;
        }
    }

    /// Appends text, opening a text block if the open block is not text. An owned `delta`
    /// becomes the event's text without a copy.
    pub async fn text(&mut self, delta: impl Into<Cow<'_, str>>) {
        let Err(delta) = self.text_now(delta.into()) else {
            return;
        };
        self.start().await;
        let index = match self.open {
            Some(OpenBlock::Text(i)) => i,
            _ => {
                self.close_open().await;
                let i = self.message.content.len();
                self.message
                    .content
                    .push(AssistantContent::Text(TextContent::default()));
                self.open = Some(OpenBlock::Text(i));
                self.sink
                    .send(AssistantMessageEvent::TextStart { content_index: i })
                    .await;
                i
            }
        };
        if let Some(AssistantContent::Text(t)) = self.message.content.get_mut(index) {
            t.text.push_str(&delta);
        }
        self.sink
            .send(AssistantMessageEvent::TextDelta {
                content_index: index,
                delta: delta.into(),
            })
            .await;
    }

    /// Appends reasoning, opening a thinking block if needed. An owned `delta` becomes the
    /// event's text without a copy.
    pub async fn thinking(&mut self, delta: impl Into<Cow<'_, str>>) {
        let Err(delta) = self.thinking_now(delta.into()) else {
            return;
        };
        self.start().await;
        let index = match self.open {
            Some(OpenBlock::Thinking(i)) => i,
            _ => {
                self.close_open().await;
                let i = self.message.content.len();
                self.message
                    .content
                    .push(AssistantContent::Thinking(ThinkingContent::default()));
                self.open = Some(OpenBlock::Thinking(i));
                self.sink
                    .send(AssistantMessageEvent::ThinkingStart { content_index: i })
                    .await;
                i
            }
        };
        if let Some(AssistantContent::Thinking(t)) = self.message.content.get_mut(index) {
            t.thinking.push_str(&delta);
        }
        self.sink
            .send(AssistantMessageEvent::ThinkingDelta {
                content_index: index,
                delta: delta.into(),
            })
            .await;
    }

    /// Sets the signature of the open thinking block (or of the last one).
    pub fn thinking_signature(&mut self, signature: impl Into<String>) {
        let signature = signature.into();
        if let Some(AssistantContent::Thinking(t)) = self
            .message
            .content
            .iter_mut()
            .rev()
            .find(|c| matches!(c, AssistantContent::Thinking(_)))
        {
            t.thinking_signature
                .get_or_insert_with(String::new)
                .push_str(&signature);
        }
    }

    /// Opens a thinking block holding `initial` (closing the open block) and returns its content
    /// index: sends `thinking_start`, then a `thinking_delta` with `initial.thinking` if it is not
    /// empty. Later [`thinking`](Self::thinking) deltas append to it. For blocks that must exist
    /// before (or without) any reasoning text: a signature-only block, a redacted block.
    pub async fn thinking_start_with(&mut self, initial: ThinkingContent) -> usize {
        self.start().await;
        self.close_open().await;
        let index = self.message.content.len();
        let text = initial.thinking.clone();
        self.message
            .content
            .push(AssistantContent::Thinking(initial));
        self.open = Some(OpenBlock::Thinking(index));
        self.sink
            .send(AssistantMessageEvent::ThinkingStart {
                content_index: index,
            })
            .await;
        if !text.is_empty() {
            self.sink
                .send(AssistantMessageEvent::ThinkingDelta {
                    content_index: index,
                    delta: text.into(),
                })
                .await;
        }
        index
    }

    /// Sets the signature of the last text block, replacing any earlier one (Gemini sends a
    /// `thoughtSignature` on text parts that must be replayed with that text). Ignored when the
    /// reply has no text block.
    pub fn text_signature(&mut self, signature: impl Into<String>) {
        if let Some(AssistantContent::Text(t)) = self
            .message
            .content
            .iter_mut()
            .rev()
            .find(|c| matches!(c, AssistantContent::Text(_)))
        {
            t.text_signature = Some(signature.into());
        }
    }

    /// Opens a tool call and returns its content index.
    pub async fn tool_call_start(
        &mut self,
        id: impl Into<String>,
        name: impl Into<String>,
    ) -> usize {
        self.start().await;
        self.close_open().await;
        let (id, name) = (id.into(), name.into());
        let index = self.message.content.len();
        self.message
            .content
            .push(AssistantContent::ToolCall(ToolCall::new(
                id.clone(),
                name.clone(),
                Map::new(),
            )));
        self.open = Some(OpenBlock::ToolCall {
            index,
            raw: String::new(),
        });
        self.sink
            .send(AssistantMessageEvent::ToolcallStart {
                content_index: index,
                id,
                name,
            })
            .await;
        index
    }

    /// Content index of the open tool call, if a tool call is open.
    pub fn open_tool_call(&self) -> Option<usize> {
        match self.open {
            Some(OpenBlock::ToolCall { index, .. }) => Some(index),
            _ => None,
        }
    }

    /// Mutable access to the open tool call (to fill in a late id or name).
    pub fn open_tool_call_mut(&mut self) -> Option<&mut ToolCall> {
        let index = self.open_tool_call()?;
        match self.message.content.get_mut(index) {
            Some(AssistantContent::ToolCall(tc)) => Some(tc),
            _ => None,
        }
    }

    /// Appends raw argument text to the open tool call. Input while no tool call is open (a
    /// call that was never started, or one closed by a text block in between) cannot be placed:
    /// it is not dropped silently, the reply then ends with an error saying so
    /// ([`finish`](Self::finish) fails).
    pub async fn tool_call_delta(&mut self, delta: impl Into<Cow<'_, str>>) {
        let Err(delta) = self.tool_call_delta_now(delta.into()) else {
            return;
        };
        let Some(OpenBlock::ToolCall { index, raw }) = &mut self.open else {
            self.out_of_order.get_or_insert_with(|| {
                format!(
                    "The stream sent tool-call input while no tool call was open, so it cannot be placed: {}",
                    crate::diagnostics::quote_chunk(&delta)
                )
            });
            return;
        };
        raw.push_str(&delta);
        let content_index = *index;
        self.sink
            .send(AssistantMessageEvent::ToolcallDelta {
                content_index,
                delta: delta.into(),
            })
            .await;
    }

    /// Closes the open block, sending its `*_end` event.
    pub async fn close_open(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        let event = match open {
            OpenBlock::Text(i) => match self.message.content.get(i) {
                Some(AssistantContent::Text(t)) => AssistantMessageEvent::TextEnd {
                    content_index: i,
                    content: t.text.clone(),
                },
                _ => return,
            },
            OpenBlock::Thinking(i) => match self.message.content.get(i) {
                Some(AssistantContent::Thinking(t)) => AssistantMessageEvent::ThinkingEnd {
                    content_index: i,
                    content: t.thinking.clone(),
                },
                _ => return,
            },
            OpenBlock::ToolCall { index, raw } => {
                let Some(AssistantContent::ToolCall(tc)) = self.message.content.get_mut(index)
                else {
                    return;
                };
                make_unique(&mut tc.id, &mut self.call_ids);
                match parse_arguments(&raw) {
                    Ok(arguments) => tc.arguments = arguments,
                    Err(error) => tc.arguments_error = Some(error),
                }
                // The event's copy of a large call writes its content into the raw text's
                // buffer, already in memory (see `spare_buffer`).
                AssistantMessageEvent::ToolcallEnd {
                    content_index: index,
                    tool_call: Box::new(crate::spare_buffer::clone_tool_call(tc, raw)),
                }
            }
        };
        self.sink.send(event).await;
    }

    /// Closes open blocks and sends `done` with `reason` (`stop`, `length` or `toolUse`).
    /// Returns the final message. If tool-call input arrived while no call was open (see
    /// [`tool_call_delta`](Self::tool_call_delta)), it sends `error` saying so instead.
    pub async fn finish(mut self, reason: StopReason) -> AssistantMessage {
        let terminal = self.settle(Ok(reason)).await;
        let message = self.message.clone();
        self.send_terminal(terminal).await;
        message
    }

    /// Closes open blocks (partial content is kept) and sends `error` with the failure's stop
    /// reason (`aborted` for [`FailureKind::Aborted`](crate::FailureKind::Aborted), else
    /// `error`), its text as `error_message` (the key given to [`set_secret`](Self::set_secret)
    /// redacted) and its kind as `failure_kind`. Returns the final message.
    pub async fn fail(mut self, failure: Failure) -> AssistantMessage {
        let terminal = self.settle(Err(failure)).await;
        let message = self.message.clone();
        self.send_terminal(terminal).await;
        message
    }

    /// [`finish`](Self::finish) for a caller that does not need the message back: the
    /// terminal event takes it without a copy (a copy of a reply holding a large tool call is
    /// megabytes of fresh memory).
    pub(crate) async fn finish_sending(mut self, reason: StopReason) {
        let terminal = self.settle(Ok(reason)).await;
        self.send_terminal(terminal).await;
    }

    /// [`fail`](Self::fail) for a caller that does not need the message back, as
    /// [`finish_sending`](Self::finish_sending).
    pub(crate) async fn fail_sending(mut self, failure: Failure) {
        let terminal = self.settle(Err(failure)).await;
        self.send_terminal(terminal).await;
    }

    /// Closes open blocks and sets the message's stop reason (and, for a failure, its error
    /// message and kind): the reason, and whether the reply failed. Tool-call input that
    /// could not be placed fails a reply that would have finished.
    async fn settle(&mut self, outcome: Result<StopReason, Failure>) -> (StopReason, bool) {
        let outcome = match (outcome, self.out_of_order.take()) {
            (Ok(_), Some(text)) => Err(Failure::parse(text)),
            (outcome, _) => outcome,
        };
        self.start().await;
        self.close_open().await;
        let (reason, failed) = match outcome {
            Ok(reason) => (reason, false),
            Err(failure) => {
                let reason = failure.stop_reason();
                self.message.error_message = Some(redact(failure.text, self.secret.as_ref()));
                self.message.failure_kind = Some(failure.kind);
                (reason, true)
            }
        };
        self.message.stop_reason = reason;
        (reason, failed)
    }

    /// Sends the terminal event [`settle`](Self::settle) decided, holding the message.
    async fn send_terminal(self, (reason, failed): (StopReason, bool)) {
        let message = Box::new(self.message);
        let terminal = if failed {
            AssistantMessageEvent::Error {
                reason,
                error: message,
            }
        } else {
            AssistantMessageEvent::Done { reason, message }
        };
        self.sink.send(terminal).await;
    }
}

/// Gives `id` a call part no earlier call of the reply has (servers that number calls per
/// choice send `call_0` twice): `_2`, `_3`, … appended to the part before a `|` (a Responses
/// id is `call_id|item_id`, and the call id is what pairs a result), so each call gets exactly
/// one result.
fn make_unique(id: &mut String, taken: &mut HashSet<String>) {
    let (call, item) = match id.split_once('|') {
        Some((call, item)) => (call.to_string(), Some(item.to_string())),
        None => (id.clone(), None),
    };
    if taken.insert(call.clone()) {
        return;
    }
    let Some(unique) = (2u64..)
        .map(|n| format!("{call}_{n}"))
        .find(|candidate| !taken.contains(candidate))
    else {
        return;
    };
    taken.insert(unique.clone());
    *id = match item {
        Some(item) => format!("{unique}|{item}"),
        None => unique,
    };
}

/// Parses complete tool-call arguments. Empty or blank text, and JSON `null` (Groq's arguments
/// for a tool whose schema has no properties), mean no arguments (`{}`); anything else must be a
/// JSON object. The error quotes what was received (cut to 2,000 characters).
pub fn parse_arguments(raw: &str) -> Result<Map<String, Value>, String> {
    if raw.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => Err(format!(
            "Tool call arguments must be a JSON object, got: {}",
            quote(&other.to_string())
        )),
        Err(e) => Err(format!(
            "Tool call arguments are not valid JSON ({e}): {}",
            quote(raw)
        )),
    }
}

fn quote(text: &str) -> String {
    const MAX: usize = 2000;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}… ({} bytes in all)", text.len())
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::stream::AssistantMessageEventStream;

    /// Deltas applied at once fill the sink's batch; at a full batch the delta is handed back
    /// unchanged and `tool_call_delta` sends it, waiting for the consumer. Nothing is lost or
    /// reordered on either path.
    #[tokio::test]
    async fn deltas_applied_at_once_stop_at_a_full_batch_and_none_is_lost() {
        let (sink, stream) = AssistantMessageEventStream::channel(None);
        let consumer = tokio::spawn(stream.collect::<Vec<_>>());
        let deferring = sink.deferring();
        let model = Model::openai_compatible("http://127.0.0.1:9/v1", "m");
        let mut out = ReplyBuilder::new(&model, deferring.clone());
        out.tool_call_start("call_1", "write").await;
        let fragments: Vec<String> = (0..1000).map(|i| format!("{i},")).collect();
        let mut handed_back = 0;
        for fragment in &fragments {
            if let Err(delta) = out.tool_call_delta_now(Cow::Borrowed(fragment)) {
                assert_eq!(delta, fragment.as_str());
                handed_back += 1;
                out.tool_call_delta(delta).await;
            }
        }
        let raw = match &out.open {
            Some(OpenBlock::ToolCall { raw, .. }) => raw.clone(),
            other => panic!("open block {other:?}"),
        };
        assert_eq!(raw, fragments.concat());
        out.finish(StopReason::ToolUse).await;
        deferring.flush().await;
        deferring.flush_terminal().await;
        drop((deferring, sink));
        let events = consumer.await.expect("consumer");
        let deltas: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                AssistantMessageEvent::ToolcallDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            deltas,
            fragments.iter().map(String::as_str).collect::<Vec<_>>()
        );
        assert!(handed_back >= 3, "{handed_back} handed back");
    }
}
