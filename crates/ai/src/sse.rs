//! A server-sent-events decoder that does O(1) work per byte, however the bytes are split and
//! however long an event is.
//!
//! Follows the WHATWG event-stream rules: lines end in CRLF, LF or CR (also split across
//! chunks); a leading BOM is skipped; `:` lines are comments; `event`, `data` (joined with
//! `\n`) and `id` fields; an empty line dispatches the event; unknown fields are ignored; an
//! event left without its empty line at the end of the stream is dropped. A line that is not
//! UTF-8 is an error, never silently replaced.
//!
//! (oxpi used `reqwest-eventsource` first; its parser re-scans the buffered line on every chunk,
//! so one 10 MB event took longer than the idle timeout to decode.)
//!
//! ```
//! use oxpi_ai::sse::{SseDecoder, SseEvent};
//!
//! let mut decoder = SseDecoder::new();
//! let mut events = Vec::new();
//! decoder.feed(b"event: ping\r\ndata: a", &mut events).unwrap();
//! decoder.feed(b"\ndata: b\n\n: comment\n", &mut events).unwrap();
//! assert_eq!(events, vec![SseEvent { event: "ping".into(), data: "a\nb".into(), id: String::new() }]);
//! ```

use std::borrow::Cow;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event` field, `message` when absent (borrowed then: most streams never name their
    /// events, and this saves an allocation per event).
    pub event: Cow<'static, str>,
    /// The `data` lines joined with `\n`.
    pub data: String,
    /// The last `id` seen (it persists across events, as the spec says).
    pub id: String,
}

impl SseEvent {
    /// The data without leading and trailing whitespace (as [`str::trim`]), without looking
    /// at any character when the data begins and ends with a printable ASCII character (a JSON
    /// object does): called once per event, where `trim` costs about 50 instructions.
    pub fn trimmed_data(&self) -> &str {
        trimmed(&self.data)
    }
}

/// `data` without leading and trailing whitespace (see [`SseEvent::trimmed_data`]).
fn trimmed(data: &str) -> &str {
    let bytes = data.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) if first.is_ascii_graphic() && last.is_ascii_graphic() => data,
        _ => data.trim(),
    }
}

/// An event of the most common shape read in place (see [`SseDecoder::peek_simple`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SimpleEvent<'a> {
    /// The event's name (`message` when it has no `event` line).
    pub event: &'static str,
    /// Its data, trimmed as [`SseEvent::trimmed_data`].
    pub data: &'a str,
    /// How many bytes of the input it takes.
    pub len: usize,
}

/// Event names handed out borrowed instead of allocated per event: the default `message` and
/// the names the built-in providers' streams use (Anthropic Messages, OpenAI Responses).
const KNOWN_EVENT_NAMES: [&str; 22] = [
    "message",
    "content_block_delta",
    "content_block_start",
    "content_block_stop",
    "message_start",
    "message_delta",
    "message_stop",
    "ping",
    "error",
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "response.reasoning_summary_text.delta",
    "response.refusal.delta",
    "response.function_call_arguments.done",
    "response.output_item.added",
    "response.output_item.done",
    "response.reasoning_summary_part.added",
    "response.created",
    "response.in_progress",
    "response.completed",
    "response.incomplete",
    "response.failed",
];

/// The bytes that begin an event named `event` in the shape [`SseDecoder::peek_simple`] reads,
/// up to its data: `event: NAME` and LF (none for `message`, the default name), then `data: `.
pub(crate) fn simple_event_head(event: &str) -> String {
    debug_assert!(
        !event.is_empty() && !event.contains(['\n', '\r']),
        "an event name is one non-empty line"
    );
    match event {
        "message" => "data: ".to_owned(),
        name => format!("event: {name}\ndata: "),
    }
}

/// The bytes that end an event in the shape [`SseDecoder::peek_simple`] reads, after its data:
/// the data line's LF and the blank line.
pub(crate) const SIMPLE_EVENT_END: &[u8] = b"\n\n";

/// A line of the stream was not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid UTF-8 in the event stream at byte {offset}: {bytes:?}")]
pub struct SseError {
    /// Byte offset of the line in the stream.
    pub offset: u64,
    /// The start of the offending line (at most 64 bytes).
    pub bytes: Vec<u8>,
}

/// Incremental decoder. Feed it chunks; it appends complete events to a collection
/// ([`feed`](Self::feed)), or hands them out one at a time as it reads
/// ([`next_event`](Self::next_event)).
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    line_start: u64,
    offset: u64,
    after_cr: bool,
    started: bool,
    /// How many bytes of a leading BOM were seen (before `started`).
    bom_seen: usize,
    line_ends: LineEnds,
    event: String,
    /// The event's name when it is one of [`KNOWN_EVENT_NAMES`] (then `event` is empty): taken
    /// as it is, neither copied into `event` nor looked up again when the event is dispatched.
    known_event: Option<&'static str>,
    data: String,
    has_data: bool,
    id: String,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Finds the next CR or LF of the input. Where the CPU has AVX2, memchr's AVX2 searcher is
/// made once per decoder and called directly: `memchr::memchr2` picks its implementation on
/// every call, about 50 instructions per line on top of the search.
#[derive(Debug, Clone, Copy)]
struct LineEnds {
    #[cfg(target_arch = "x86_64")]
    avx2: Option<memchr::arch::x86_64::avx2::memchr::Two>,
}

impl Default for LineEnds {
    fn default() -> Self {
        Self {
            #[cfg(target_arch = "x86_64")]
            avx2: memchr::arch::x86_64::avx2::memchr::Two::new(b'\n', b'\r'),
        }
    }
}

impl LineEnds {
    #[inline]
    fn find(&self, input: &[u8]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = &self.avx2 {
            return avx2.find(input);
        }
        memchr::memchr2(b'\n', b'\r', input)
    }
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `chunk`, pushing every event it completes onto `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut impl Extend<SseEvent>) -> Result<(), SseError> {
        let mut rest = chunk;
        while let Some(event) = self.next_event(&mut rest)? {
            out.extend(Some(event));
        }
        Ok(())
    }

    /// Reads from `input` up to the end of the next complete event and returns it, leaving
    /// the bytes after it in `input`; or reads all of `input` and returns `None` when no event
    /// completes in it. Reading events one at a time keeps one event in memory instead of every
    /// event of a network read.
    ///
    /// ```
    /// use oxpi_ai::sse::SseDecoder;
    ///
    /// let mut decoder = SseDecoder::new();
    /// let mut input: &[u8] = b"data: a\n\ndata: b\n\ndata: c";
    /// assert_eq!(decoder.next_event(&mut input).unwrap().unwrap().data, "a");
    /// assert_eq!(input, b"data: b\n\ndata: c");
    /// assert_eq!(decoder.next_event(&mut input).unwrap().unwrap().data, "b");
    /// assert_eq!(decoder.next_event(&mut input).unwrap(), None);
    /// assert!(input.is_empty());
    /// ```
    pub fn next_event(&mut self, input: &mut &[u8]) -> Result<Option<SseEvent>, SseError> {
        while !self.started {
            // A BOM may only stand at the very start, and may be split across chunks.
            let Some(&byte) = input.first() else {
                return Ok(None);
            };
            if BOM.get(self.bom_seen) == Some(&byte) {
                self.bom_seen += 1;
                *input = &input[1..];
                self.offset += 1;
                if self.bom_seen == BOM.len() {
                    self.started = true;
                    self.line_start = self.offset;
                }
            } else {
                // Not a BOM after all: the bytes taken for one begin the first line.
                self.line.extend_from_slice(&BOM[..self.bom_seen]);
                self.started = true;
            }
        }
        if self.after_cr && !input.is_empty() {
            // A CR ended the last chunk: an LF right after it belongs to the same line end.
            self.after_cr = false;
            if input[0] == b'\n' {
                *input = &input[1..];
                self.offset += 1;
                self.line_start = self.offset;
            }
        }
        loop {
            // The blank line that ends an event follows its last line directly: no search.
            let end = match input.first() {
                Some(b'\n' | b'\r') => 0,
                Some(_) => match self.line_ends.find(input) {
                    Some(end) => end,
                    None => break,
                },
                None => break,
            };
            let rest = *input;
            if let Some(event) = self.data_line_event(rest, end)? {
                *input = &rest[end + 2..];
                return Ok(Some(event));
            }
            let mut used = end + 1;
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => used += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.offset += used as u64;
            let event = if self.line.is_empty() {
                // The whole line is in this chunk: read it in place.
                self.finish_line(&rest[..end])
            } else {
                // The line began in an earlier chunk; its buffer keeps its capacity.
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&rest[..end]);
                let finished = self.finish_line(&line);
                line.clear();
                self.line = line;
                finished
            }?;
            self.line_start = self.offset;
            *input = &rest[used..];
            if event.is_some() {
                return Ok(event);
            }
        }
        self.line.extend_from_slice(input);
        self.offset += input.len() as u64;
        *input = &[];
        Ok(None)
    }

    /// The event `input` begins with, read in place, when this decoder is between events and
    /// the event has the shape nearly every event of a long stream has: an optional
    /// `event: NAME` line naming a known event, one `data: …` line of UTF-8, and the blank
    /// line, all ending in LF and all in `input`. It is what [`next_event`](Self::next_event)
    /// would return, without copying the data; `None` for any other shape (then `next_event`
    /// reads it). Nothing is consumed: [`skip`](Self::skip) the event once it was used.
    pub(crate) fn peek_simple<'a>(&self, input: &'a [u8]) -> Option<SimpleEvent<'a>> {
        if !self.between_events() {
            return None;
        }
        let (event, rest) = match input.strip_prefix(b"event: ") {
            Some(rest) => {
                let end = self.line_ends.find(rest)?;
                let name = KNOWN_EVENT_NAMES
                    .iter()
                    .find(|name| name.as_bytes() == &rest[..end])?;
                (*name, rest.get(end + 1..).filter(|_| rest[end] == b'\n')?)
            }
            None => ("message", input),
        };
        let rest = rest.strip_prefix(b"data: ")?;
        let end = self.line_ends.find(rest)?;
        if rest[end] != b'\n' || rest.get(end + 1) != Some(&b'\n') {
            return None;
        }
        let data = simdutf8::basic::from_utf8(&rest[..end]).ok()?;
        Some(SimpleEvent {
            event,
            data: trimmed(data),
            len: input.len() - rest.len() + end + 2,
        })
    }

    /// True when the next byte of input begins an event: nothing of one was read yet (no
    /// partial line, field or data), past the stream's start. Then input that begins with
    /// [`simple_event_head`]`(name)`, data without CR or LF and [`SIMPLE_EVENT_END`] is one
    /// event named `name` with that data, which [`skip`](Self::skip) may pass over.
    pub(crate) fn between_events(&self) -> bool {
        self.started
            && !self.after_cr
            && self.line.is_empty()
            && !self.has_data
            && self.known_event.is_none()
            && self.event.is_empty()
    }

    /// Passes over `len` bytes of input that hold whole events read with
    /// [`peek_simple`](Self::peek_simple) or read in place after
    /// [`between_events`](Self::between_events).
    pub(crate) fn skip(&mut self, len: usize) {
        self.offset += len as u64;
        self.line_start = self.offset;
    }

    /// Hands back an event the caller is done with, so the next event's data reuses its
    /// buffer instead of allocating one (reading one event at a time, a stream then allocates
    /// its data buffer once). Does nothing once the next event's data has begun, or for a
    /// buffer larger than 64 KiB (not kept around).
    pub fn recycle(&mut self, event: SseEvent) {
        const MAX_KEPT: usize = 64 * 1024;
        if !self.has_data && self.data.capacity() == 0 && event.data.capacity() <= MAX_KEPT {
            self.data = event.data;
            self.data.clear();
        }
    }

    /// The event of the most common shape, read at once: a `data` line ending at `end` (LF)
    /// that begins the event's data, and the blank line (LF) right after it, both in `rest`.
    /// What reading the two lines one at a time gives, with one step instead of two. `None`
    /// (nothing read) for any other shape.
    fn data_line_event(&mut self, rest: &[u8], end: usize) -> Result<Option<SseEvent>, SseError> {
        if !self.line.is_empty()
            || self.has_data
            || rest.get(end) != Some(&b'\n')
            || rest.get(end + 1) != Some(&b'\n')
        {
            return Ok(None);
        }
        let raw = &rest[..end];
        let Some(value) = raw.strip_prefix(b"data:") else {
            return Ok(None);
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        // The field name and the space are ASCII: the value is UTF-8 when the line is.
        let value = simdutf8::basic::from_utf8(value).map_err(|_| SseError {
            offset: self.line_start,
            bytes: raw.iter().copied().take(64).collect(),
        })?;
        self.data.push_str(value);
        self.has_data = true;
        self.offset += end as u64 + 2;
        self.line_start = self.offset;
        Ok(self.dispatch())
    }

    fn finish_line(&mut self, raw: &[u8]) -> Result<Option<SseEvent>, SseError> {
        if raw.is_empty() {
            return Ok(self.dispatch());
        }
        // An `event` line naming a known event (every event of Anthropic's stream has one) is
        // ASCII, so valid: it is taken without the UTF-8 check and the search for the colon.
        if let Some(value) = raw.strip_prefix(b"event:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if let Some(name) = KNOWN_EVENT_NAMES
                .iter()
                .find(|name| name.as_bytes() == value)
            {
                self.event.clear();
                self.known_event = Some(name);
                return Ok(None);
            }
        }
        let line = simdutf8::basic::from_utf8(raw).map_err(|_| SseError {
            offset: self.line_start,
            bytes: raw.iter().copied().take(64).collect(),
        })?;
        if line.starts_with(':') {
            return Ok(None);
        }
        // Nearly every line is a `data` line: its field is read without searching for the colon.
        let (field, value) = match line.strip_prefix("data:") {
            Some(value) => ("data", value),
            None => line.split_once(':').unwrap_or((line, "")),
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => {
                self.known_event = None;
                value.clone_into(&mut self.event);
            }
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => value.clone_into(&mut self.id),
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let known = self.known_event.take();
        if !self.has_data {
            self.event.clear();
            return None;
        }
        self.has_data = false;
        let event = match known {
            Some(name) => Cow::Borrowed(name),
            None if self.event.is_empty() => Cow::Borrowed("message"),
            None => match KNOWN_EVENT_NAMES.iter().find(|name| **name == self.event) {
                Some(name) => Cow::Borrowed(*name),
                None => Cow::Owned(self.event.clone()),
            },
        };
        self.event.clear();
        // Most streams never send an `id`: no call to clone an empty string.
        let id = if self.id.is_empty() {
            String::new()
        } else {
            self.id.clone()
        };
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id,
        })
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
