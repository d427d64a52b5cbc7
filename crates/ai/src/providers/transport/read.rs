//! Reading an open streaming response: server-sent events one at a time through the
//! linear-time decoder in [`crate::sse`], or raw bytes, honouring cancellation, the idle timer
//! (the longest time without a byte) and the deadline.

use bytes::{Buf, Bytes};
use tokio::time::Instant;

use super::open::deadline_text;
use super::InPlace;
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

/// The window after a decoder `read` in place from `checked` bytes of text. It follows what is
/// read in place: twice the text when most of it was used, or when the text (cut by the window,
/// `cut_by_window`) ended inside an event the decoder would have read, so events longer than
/// the window soon fit; twice what was used otherwise, so a stream whose events are rarely read
/// in place is not checked far ahead again and again (each check costs the window).
fn next_window(read: InPlace, checked: usize, cut_by_window: bool) -> usize {
    let grow = read.used * 2 >= checked || (read.cut_short && cut_by_window);
    let window = if grow { checked * 2 } else { read.used * 2 };
    window.clamp(MIN_WINDOW, MAX_WINDOW)
}

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
        let text = match simdutf8::basic::from_utf8(bytes) {
            Ok(text) => text,
            // (A character cut at the window's or the read's end, or invalid bytes: the text
            // up to them; the ordinary reading reports invalid ones.)
            Err(_) => {
                let valid = simdutf8::compat::from_utf8(bytes)
                    .err()
                    .map_or(bytes.len(), |e| e.valid_up_to());
                simdutf8::basic::from_utf8(&bytes[..valid]).ok()?
            }
        };
        (!text.is_empty()).then_some(text)
    }

    /// Passes over what a decoder `read` in place of the `checked` bytes
    /// [`text_at_event_start`](Self::text_at_event_start) returned, and sets the next window
    /// (see [`next_window`]).
    pub(crate) fn consume_in_place(&mut self, read: InPlace, checked: usize) {
        let cut_by_window = checked < self.unread.len();
        self.window = next_window(read, checked, cut_by_window);
        if read.used > 0 {
            self.consume(read.used);
        }
    }

    /// Passes over `len` bytes of events read in place: the one
    /// [`peek_simple`](Self::peek_simple) returned, or those a decoder read from
    /// [`text_at_event_start`](Self::text_at_event_start).
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
        // Every byte of the last read is used (a line it left unfinished was copied into the
        // decoder): let go of it before waiting, so hyper can read the next bytes into the same
        // buffer instead of a new one (an empty `Bytes` still holds the buffer it was cut from,
        // and a new buffer of a fast stream is fresh memory, paid for page by page).
        source.unread = Bytes::new();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read(used: usize, cut_short: bool) -> InPlace {
        InPlace { used, cut_short }
    }

    #[test]
    fn the_window_follows_what_is_read_in_place() {
        // Most of the text used: it doubles, up to the largest window.
        assert_eq!(next_window(read(4000, false), 4096, true), 8192);
        assert_eq!(
            next_window(read(MAX_WINDOW, false), MAX_WINDOW, true),
            MAX_WINDOW
        );
        // Little used: twice what was, down to the smallest window.
        assert_eq!(next_window(read(1000, false), 65_536, true), 2000);
        assert_eq!(next_window(read(0, false), 65_536, true), MIN_WINDOW);
        // An event the window cut short: it doubles, however little was used.
        assert_eq!(next_window(read(0, true), 256, true), 512);
        assert_eq!(next_window(read(100, true), 4096, true), 8192);
        // Cut short by the end of the read, not the window: a larger window would not help.
        assert_eq!(next_window(read(0, true), 256, false), MIN_WINDOW);
    }

    #[test]
    fn events_longer_than_the_smallest_window_soon_fit_in_it() {
        // A stream whose first try read nothing, then events of 5,000 bytes, each cut short by
        // the window until it holds one: a few events, not the whole stream.
        let event = 5_000;
        let mut window = next_window(read(0, false), 4096, true);
        let mut tries = 0;
        while window < event {
            window = next_window(read(0, true), window, true);
            tries += 1;
        }
        assert_eq!(window, 8192);
        assert_eq!(tries, 5);
    }
}
