//! Reading an open streaming response: server-sent events one at a time through the
//! linear-time decoder in [`crate::sse`], or raw bytes, honouring cancellation, the idle timer
//! (the longest time without a byte) and the deadline.

use bytes::{Buf, Bytes};
use tokio::time::Instant;

use super::open::deadline_text;
use crate::diagnostics::error_chain;
use crate::failure::{Failure, FailureKind};
use crate::options::StreamOptions;
use crate::sse::{SimpleEvent, SseDecoder, SseEvent};

/// An open event stream: the response body, decoded as it arrives by [`SseDecoder`], one
/// event at a time.
#[derive(Debug)]
pub struct SseSource {
    response: Option<reqwest::Response>,
    decoder: SseDecoder,
    /// What is left of the last network read.
    unread: Bytes,
    /// When the whole request must be over ([`StreamOptions::deadline`]).
    deadline: Option<Instant>,
    /// How many bytes [`text_at_event_start`](Self::text_at_event_start) checks at once.
    window: usize,
}

/// The range of [`SseSource`]'s window: what checking it costs when no event is read in place
/// is small, and a large window is checked once per network read.
const MIN_WINDOW: usize = 256;
const MAX_WINDOW: usize = 1 << 20;

impl SseSource {
    /// Reads `response`, which must be over by `deadline`.
    pub(super) fn new(response: reqwest::Response, deadline: Option<Instant>) -> Self {
        Self {
            response: Some(response),
            decoder: SseDecoder::new(),
            unread: Bytes::new(),
            deadline,
            window: 4096,
        }
    }

    /// Hands back an event the caller is done with (see [`SseDecoder::recycle`]).
    pub fn recycle(&mut self, event: SseEvent) {
        self.decoder.recycle(event);
    }

    /// Stops reading and drops the connection.
    pub fn close(&mut self) {
        self.response = None;
        self.unread = Bytes::new();
    }

    /// The next event of the bytes already read, in place, when it has the common shape (see
    /// [`SseDecoder::peek_simple`]); [`consume`](Self::consume) it once used, or leave it to
    /// [`next_buffered`](Self::next_buffered).
    pub(crate) fn peek_simple(&self) -> Option<SimpleEvent<'_>> {
        self.decoder.peek_simple(&self.unread)
    }

    /// The start of the bytes already read as text, when an event begins with them (see
    /// [`SseDecoder::between_events`]): a decoder may read events in place from it, then
    /// [`consume_in_place`](Self::consume_in_place) them. It is the UTF-8 prefix of the next
    /// [`window`](Self::window) bytes: one check for many events. `None` when no event begins
    /// there or the text is empty.
    pub(crate) fn text_at_event_start(&self) -> Option<&str> {
        if self.unread.is_empty() || !self.decoder.between_events() {
            return None;
        }
        let bytes = &self.unread[..self.unread.len().min(self.window)];
        let text = match simdutf8::compat::from_utf8(bytes) {
            Ok(text) => text,
            // (A character cut at the window's or the read's end, or invalid bytes: the text
            // up to them; the ordinary reading reports invalid ones.)
            Err(e) => simdutf8::basic::from_utf8(&bytes[..e.valid_up_to()]).ok()?,
        };
        (!text.is_empty()).then_some(text)
    }

    /// Passes over `used` bytes of the `checked` that
    /// [`text_at_event_start`](Self::text_at_event_start) returned, read in place. The window
    /// follows what is read in place: it doubles when most of the text was used, and shrinks to
    /// twice what was used otherwise, so a stream whose deltas are rarely read in place is not
    /// checked far ahead again and again.
    pub(crate) fn consume_in_place(&mut self, used: usize, checked: usize) {
        self.window = if used * 2 >= checked {
            (checked * 2).clamp(MIN_WINDOW, MAX_WINDOW)
        } else {
            (used * 2).clamp(MIN_WINDOW, MAX_WINDOW)
        };
        if used > 0 {
            self.consume(used);
        }
    }

    /// Passes over an event read in place (`len`, its length): the one
    /// [`peek_simple`](Self::peek_simple) returned.
    pub(crate) fn consume(&mut self, len: usize) {
        self.unread.advance(len);
        self.decoder.skip(len);
    }

    /// The next event of the bytes already read, without waiting: what [`next_sse`] returns
    /// first. `None` when those bytes complete no event (they are then kept by the decoder,
    /// and [`next_sse`] reads on). Most events of a stream come from a network read that held
    /// several, so the caller gets them without making and polling `next_sse`'s future.
    pub fn next_buffered(&mut self) -> Option<SseStep> {
        if self.unread.is_empty() {
            return None;
        }
        let mut input: &[u8] = &self.unread;
        let decoded = self.decoder.next_event(&mut input);
        let consumed = self.unread.len() - input.len();
        self.unread.advance(consumed);
        match decoded {
            Ok(Some(event)) => Some(SseStep::Message(event)),
            Ok(None) => None,
            Err(e) => {
                self.close();
                Some(SseStep::Failed(Failure::parse(format!(
                    "The stream was interrupted: {e}"
                ))))
            }
        }
    }
}

/// One step of reading an open event stream.
#[derive(Debug)]
pub enum SseStep {
    /// An event.
    Message(SseEvent),
    /// The body ended.
    Ended,
    /// The stream failed, stalled or was cancelled; the source is closed.
    Failed(Failure),
}

/// Waits for the next event, honouring cancellation, the idle timeout (the longest time without
/// a single byte, so a large event arriving slowly is not a stall) and the request's deadline.
pub async fn next_sse(source: &mut SseSource, options: &StreamOptions) -> SseStep {
    loop {
        if let Some(step) = source.next_buffered() {
            return step;
        }
        let deadline = source.deadline;
        let Some(response) = source.response.as_mut() else {
            return SseStep::Ended;
        };
        match read_chunk(response, deadline, options).await {
            Chunk::Bytes(bytes) => source.unread = bytes,
            Chunk::Ended => source.response = None,
            Chunk::Failed(failure) => {
                source.close();
                return SseStep::Failed(failure);
            }
        }
    }
}

#[cfg(feature = "bedrock")]
/// An open streaming body read as bytes (see [`open_byte_stream`]).
#[derive(Debug)]
pub struct ByteSource {
    response: Option<reqwest::Response>,
    deadline: Option<Instant>,
}

#[cfg(feature = "bedrock")]
impl ByteSource {
    /// Reads `response`, which must be over by `deadline`.
    pub(super) fn new(response: reqwest::Response, deadline: Option<Instant>) -> Self {
        Self {
            response: Some(response),
            deadline,
        }
    }

    /// Stops reading and drops the connection.
    pub fn close(&mut self) {
        self.response = None;
    }
}

#[cfg(feature = "bedrock")]
/// One step of reading a [`ByteSource`].
#[derive(Debug)]
pub enum ByteStep {
    /// The next bytes of the body.
    Bytes(Bytes),
    /// The body ended.
    Ended,
    /// The stream failed, stalled or was cancelled; the source is closed.
    Failed(Failure),
}

#[cfg(feature = "bedrock")]
/// Waits for the next bytes, honouring cancellation, the idle timeout and the deadline, as
/// [`next_sse`] does.
pub async fn next_bytes(source: &mut ByteSource, options: &StreamOptions) -> ByteStep {
    let deadline = source.deadline;
    let Some(response) = source.response.as_mut() else {
        return ByteStep::Ended;
    };
    let step = match read_chunk(response, deadline, options).await {
        Chunk::Bytes(bytes) => return ByteStep::Bytes(bytes),
        Chunk::Ended => ByteStep::Ended,
        Chunk::Failed(failure) => ByteStep::Failed(failure),
    };
    source.close();
    step
}

enum Chunk {
    Bytes(Bytes),
    Ended,
    Failed(Failure),
}

async fn read_chunk(
    response: &mut reqwest::Response,
    deadline: Option<Instant>,
    options: &StreamOptions,
) -> Chunk {
    let past_deadline = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    let chunk = tokio::select! {
        biased;
        _ = options.cancel.cancelled() => return Chunk::Failed(Failure::aborted()),
        () = past_deadline => {
            return Chunk::Failed(Failure::new(
                FailureKind::Deadline,
                deadline_text(options.deadline.unwrap_or_default()),
            ));
        }
        chunk = tokio::time::timeout(options.idle_timeout, response.chunk()) => chunk,
    };
    match chunk {
        Err(_) => Chunk::Failed(Failure::new(
            FailureKind::Stall,
            format!(
                "The stream stalled: no data for {:.1}s (idle_timeout)",
                options.idle_timeout.as_secs_f64()
            ),
        )),
        Ok(Err(e)) => Chunk::Failed(Failure::new(
            FailureKind::Connection,
            format!("The stream was interrupted: {}", error_chain(&e)),
        )),
        Ok(Ok(None)) => Chunk::Ended,
        Ok(Ok(Some(bytes))) => Chunk::Bytes(bytes),
    }
}
