//! The consumer side of a stream: [`AssistantMessageEventStream`] yields events and keeps the
//! partial message up to date at O(delta) per event.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll};

use futures::future::BoxFuture;
use futures::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::DropGuard;

use crate::event::AssistantMessageEvent;
use crate::partial_json::PartialJson;
use crate::reply::EventSink;
use crate::types::content::AssistantContent;
use crate::types::message::{AssistantMessage, StopReason};

/// Events of one assistant reply. Ends after exactly one `done` or `error` event.
///
/// A stream from [`crate::stream()`] or a [`crate::ProviderRegistry`] runs its request as it is
/// polled, in the polling task (no task is spawned, so events reach the consumer without a
/// wake-up on another thread). Dropping it cancels the request. [`partial`](Self::partial) shows
/// the message built so far, and parses a streaming tool call's arguments incrementally (only
/// the new bytes since the last call are parsed). The stream folds each event into that
/// message once, as it yields it; [`shared_partial`](Self::shared_partial) lets another thread
/// read the same fold (the agent's `streaming_message` is it), so nothing builds it twice.
pub struct AssistantMessageEventStream {
    rx: mpsc::Receiver<Vec<AssistantMessageEvent>>,
    /// Events received in a batch and not yet yielded.
    received: std::vec::IntoIter<AssistantMessageEvent>,
    partial: SharedPartial,
    finished: bool,
    _cancel_on_drop: Option<DropGuard>,
    /// The provider's request, run from `poll_next` until it has sent its last event.
    work: Option<BoxFuture<'static, ()>>,
}

/// The message a stream has built so far, updated from events at O(delta) per event.
///
/// Tool calls still streaming have empty `arguments`; [`partial_arguments`](Self::partial_arguments)
/// parses their raw text incrementally on demand.
#[derive(Debug, Clone, Default)]
pub struct PartialMessage {
    message: Option<AssistantMessage>,
    raw_arguments: RawArguments,
}

impl std::fmt::Debug for AssistantMessageEventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssistantMessageEventStream")
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

/// Channel capacity, in batches, of [`AssistantMessageEventStream::channel`], whose sink sends
/// batches of one event.
const CHANNEL_CAPACITY: usize = 256;

/// Channel capacity, in batches, of a stream the registry drives: its provider hands events
/// over in batches of up to 256 (see `EventSink::deferring`) and runs only while the stream is
/// polled, so two batches keep it busy without holding more of the reply in memory.
const DRIVEN_CHANNEL_CAPACITY: usize = 2;

impl AssistantMessageEventStream {
    /// A connected (sink, stream) pair. A provider writes to the sink; `guard` (if any) is
    /// dropped with the stream, cancelling the provider's work.
    pub fn channel(guard: Option<DropGuard>) -> (EventSink, Self) {
        Self::with_capacity(guard, CHANNEL_CAPACITY)
    }

    /// The (sink, stream) pair for a request the stream itself drives (see [`Self::drive`]).
    pub(crate) fn driven_channel(guard: Option<DropGuard>) -> (EventSink, Self) {
        Self::with_capacity(guard, DRIVEN_CHANNEL_CAPACITY)
    }

    fn with_capacity(guard: Option<DropGuard>, capacity: usize) -> (EventSink, Self) {
        let (tx, rx) = mpsc::channel(capacity);
        let stream = Self {
            rx,
            received: Vec::new().into_iter(),
            partial: SharedPartial::default(),
            finished: false,
            _cancel_on_drop: guard,
            work: None,
        };
        (EventSink::new(tx), stream)
    }

    /// Runs `work` (which sends this stream's events) from this stream's polls.
    pub(crate) fn drive(&mut self, work: BoxFuture<'static, ()>) {
        self.work = Some(work);
    }

    /// The message as built so far, locked while the view lives (drop it before polling the
    /// stream again): [`PartialView::message`] (`None` before `start`; tool calls still
    /// streaming have empty `arguments`) and [`PartialView::partial_arguments`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use futures::StreamExt;
    /// use oxpi_ai::faux::{FauxProvider, FauxReply};
    /// use oxpi_ai::{Context, ProviderRegistry, StreamOptions};
    ///
    /// let faux = FauxProvider::new();
    /// faux.push(FauxReply::text("Hello"));
    /// let mut registry = ProviderRegistry::new();
    /// registry.register(faux.clone());
    /// let mut events = registry.stream(&faux.model(), &Context::default(), StreamOptions::default());
    /// while events.next().await.is_some() {}
    /// assert_eq!(events.partial().message().map(|m| m.text()), Some("Hello".to_string()));
    /// # });
    /// ```
    pub fn partial(&self) -> PartialView<'_> {
        self.partial.view()
    }

    /// A handle on this stream's partial message for another thread (a UI, the agent's
    /// `streaming_message`): it sees every event this stream has yielded, folded once.
    pub fn shared_partial(&self) -> SharedPartial {
        self.partial.clone()
    }

    /// Awaits the end and returns the final message (also for `error`/`aborted`).
    pub async fn result(mut self) -> AssistantMessage {
        use futures::StreamExt;
        let mut last = None;
        while let Some(event) = self.next().await {
            if let AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } = event
            {
                last = Some(*message);
            }
        }
        last.unwrap_or_else(|| {
            let mut m = self
                .partial
                .lock()
                .take()
                .unwrap_or_else(|| AssistantMessage::empty("unknown", "unknown", "unknown"));
            m.stop_reason = StopReason::Error;
            m.error_message = Some("stream ended without a terminal event".into());
            m.failure_kind = Some(crate::failure::FailureKind::Other);
            m
        })
    }
}

/// A stream's [`PartialMessage`], shared (see [`AssistantMessageEventStream::shared_partial`]):
/// cheap to clone, read-only for its holders. While it is shared, the stream takes its lock
/// once per event to fold the event in.
#[derive(Debug, Clone, Default)]
pub struct SharedPartial(Arc<Mutex<PartialMessage>>);

/// A read view of a shared partial message, locked while it lives: do not hold it across a
/// poll of its stream (the stream needs the lock to fold the next event).
#[derive(Debug)]
pub struct PartialView<'a>(MutexGuard<'a, PartialMessage>);

impl PartialView<'_> {
    /// The message so far; `None` before `start`.
    pub fn message(&self) -> Option<&AssistantMessage> {
        self.0.message()
    }

    /// The arguments parsed so far of the tool call at `content_index`, while it streams (see
    /// [`PartialMessage::partial_arguments`]).
    pub fn partial_arguments(&mut self, content_index: usize) -> Option<&serde_json::Value> {
        self.0.partial_arguments(content_index)
    }
}

impl SharedPartial {
    /// Locks it (a panic elsewhere while it was locked does not make it unreadable).
    fn lock(&self) -> MutexGuard<'_, PartialMessage> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A read view, locked while it lives.
    pub fn view(&self) -> PartialView<'_> {
        PartialView(self.lock())
    }

    /// A copy of the message so far; `None` before `start`.
    pub fn message(&self) -> Option<AssistantMessage> {
        self.lock().message().cloned()
    }

    /// Folds one event in; without a lock while no other handle exists (a stream nobody
    /// shares pays nothing for being shareable).
    fn apply(&mut self, event: &AssistantMessageEvent) {
        match Arc::get_mut(&mut self.0) {
            Some(only) => only
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .apply(event),
            None => self.lock().apply(event),
        }
    }
}

impl PartialMessage {
    /// Nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The message so far; `None` before `start`.
    pub fn message(&self) -> Option<&AssistantMessage> {
        self.message.as_ref()
    }

    /// Takes the message out, leaving nothing.
    pub fn take(&mut self) -> Option<AssistantMessage> {
        self.raw_arguments.clear();
        self.message.take()
    }

    /// The arguments parsed so far of the tool call at `content_index`, while it streams.
    ///
    /// The argument text that arrived since the last call is parsed now (each byte once over
    /// the whole stream) and the value is lent without copying (see
    /// [`PartialJson::snapshot`](crate::partial_json::PartialJson::snapshot)), so a call costs
    /// O(new text) however large the arguments are; clone the value to keep it.
    pub fn partial_arguments(&mut self, content_index: usize) -> Option<&serde_json::Value> {
        let (raw, parser) = self.raw_arguments.get_mut(content_index)?;
        let fed = parser.len();
        if let Some(rest) = raw.get(fed..) {
            parser.push(rest);
        }
        parser.snapshot()
    }

    /// Applies one event.
    pub fn apply(&mut self, event: &AssistantMessageEvent) {
        use AssistantMessageEvent as E;
        match event {
            E::Start { partial } => self.message = Some((**partial).clone()),
            E::TextStart { .. } => self.push_block(AssistantContent::text("")),
            E::ThinkingStart { .. } => self.push_block(AssistantContent::thinking("")),
            E::ToolcallStart {
                content_index,
                id,
                name,
                ..
            } => {
                self.push_block(AssistantContent::ToolCall(crate::ToolCall::new(
                    id.clone(),
                    name.clone(),
                    Default::default(),
                )));
                self.raw_arguments
                    .insert(*content_index, (String::new(), PartialJson::new()));
            }
            E::TextDelta {
                content_index,
                delta,
            } => {
                if let Some(AssistantContent::Text(t)) = self.block(*content_index) {
                    t.text.push_str(delta);
                }
            }
            E::ThinkingDelta {
                content_index,
                delta,
            } => {
                if let Some(AssistantContent::Thinking(t)) = self.block(*content_index) {
                    t.thinking.push_str(delta);
                }
            }
            E::ToolcallDelta {
                content_index,
                delta,
            } => {
                if let Some((raw, _)) = self.raw_arguments.get_mut(*content_index) {
                    raw.push_str(delta);
                }
            }
            E::ToolcallEnd {
                content_index,
                tool_call,
            } => {
                // The copy of a large call reuses the raw text's buffer (see `spare_buffer`).
                let spare = self.raw_arguments.remove(content_index).unwrap_or_default();
                if let Some(block) = self.block(*content_index) {
                    *block = AssistantContent::ToolCall(crate::spare_buffer::clone_tool_call(
                        tool_call, spare,
                    ));
                }
            }
            E::TextEnd { .. } | E::ThinkingEnd { .. } => {}
            E::Done { message, .. } | E::Error { error: message, .. } => {
                self.raw_arguments.clear();
                match &mut self.message {
                    // The content streamed here is the final content as a rule: it is
                    // compared, not copied again (a large tool call is megabytes).
                    Some(partial) if partial.content == message.content => {
                        let content = std::mem::take(&mut partial.content);
                        *partial = with_content(message, content);
                    }
                    partial => *partial = Some((**message).clone()),
                }
            }
        }
    }

    fn push_block(&mut self, block: AssistantContent) {
        if let Some(p) = &mut self.message {
            p.content.push(block);
        }
    }

    fn block(&mut self, index: usize) -> Option<&mut AssistantContent> {
        self.message.as_mut()?.content.get_mut(index)
    }
}

/// `message` with `content` instead of its own, copying every other field.
fn with_content(message: &AssistantMessage, content: Vec<AssistantContent>) -> AssistantMessage {
    // Every field named, so a new one cannot be left out.
    let AssistantMessage {
        content: _,
        api,
        provider,
        model,
        response_model,
        response_id,
        provider_thinking_level,
        thinking_level,
        diagnostics,
        usage,
        stop_reason,
        deferred,
        error_message,
        raw_stop_reason,
        end_turn,
        failure_kind,
        timestamp,
        duration_ms,
    } = message;
    AssistantMessage {
        content,
        api: api.clone(),
        provider: provider.clone(),
        model: model.clone(),
        response_model: response_model.clone(),
        response_id: response_id.clone(),
        provider_thinking_level: provider_thinking_level.clone(),
        thinking_level: *thinking_level,
        diagnostics: diagnostics.clone(),
        usage: *usage,
        stop_reason: *stop_reason,
        deferred: deferred.clone(),
        error_message: error_message.clone(),
        raw_stop_reason: raw_stop_reason.clone(),
        end_turn: *end_turn,
        failure_kind: *failure_kind,
        timestamp: *timestamp,
        duration_ms: *duration_ms,
    }
}

impl Stream for AssistantMessageEventStream {
    type Item = AssistantMessageEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        if self.finished {
            return Poll::Ready(None);
        }
        loop {
            if let Some(event) = self.received.next() {
                self.partial.apply(&event);
                if event.is_terminal() {
                    self.finished = true;
                    self.received = Vec::new().into_iter();
                }
                return Poll::Ready(Some(event));
            }
            if let Some(work) = self.work.as_mut() {
                if work.as_mut().poll(cx).is_ready() {
                    self.work = None;
                }
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(batch)) => self.received = batch.into_iter(),
                Poll::Ready(None) => {
                    self.finished = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// The raw argument text (and its incremental parser) of each open tool call, by content
/// index. A reply rarely has more than a few calls open, so a short list searched from the end
/// (the newest call gets the deltas) is cheaper per delta than hashing.
#[derive(Debug, Clone, Default)]
struct RawArguments(Vec<(usize, String, PartialJson)>);

impl RawArguments {
    fn insert(&mut self, content_index: usize, raw: (String, PartialJson)) {
        self.remove(&content_index);
        self.0.push((content_index, raw.0, raw.1));
    }

    fn get_mut(&mut self, content_index: usize) -> Option<(&mut String, &mut PartialJson)> {
        self.0
            .iter_mut()
            .rev()
            .find(|(index, ..)| *index == content_index)
            .map(|(_, raw, parser)| (raw, parser))
    }

    /// Removes the call at `content_index` (`insert` keeps one entry per index), returning its
    /// raw text.
    fn remove(&mut self, content_index: &usize) -> Option<String> {
        let at = self
            .0
            .iter()
            .position(|(index, ..)| index == content_index)?;
        Some(self.0.remove(at).1)
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::message::StopReason;

    /// A partial message fed `start`, one text block of two deltas and `done` with `last`.
    fn streamed_then(last: AssistantMessage) -> Option<AssistantMessage> {
        let mut partial = PartialMessage::new();
        let start = AssistantMessage::empty("api", "provider", "model");
        for event in [
            AssistantMessageEvent::Start {
                partial: Box::new(start),
            },
            AssistantMessageEvent::TextStart { content_index: 0 },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "Hello, ".into(),
            },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "world".into(),
            },
            AssistantMessageEvent::Done {
                reason: last.stop_reason,
                message: Box::new(last),
            },
        ] {
            partial.apply(&event);
        }
        partial.take()
    }

    #[test]
    fn after_done_the_partial_message_is_the_final_message() {
        let mut last = AssistantMessage::empty("api", "provider", "model-2025");
        last.content = vec![AssistantContent::text("Hello, world")];
        last.stop_reason = StopReason::Length;
        last.usage.output = 7;
        last.response_id = Some("resp_1".into());
        last.timestamp = 42;
        last.duration_ms = Some(9);
        // The same content as streamed (kept, the rest copied), and other content (copied).
        assert_eq!(streamed_then(last.clone()), Some(last.clone()));
        last.content = vec![AssistantContent::text("Hello, world!")];
        assert_eq!(streamed_then(last.clone()), Some(last));
    }
}
