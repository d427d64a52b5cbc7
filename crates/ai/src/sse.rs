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

/// A line of the stream was not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid UTF-8 in the event stream at byte {offset}: {bytes:?}")]
pub struct SseError {
    /// Byte offset of the line in the stream.
    pub offset: u64,
    /// The start of the offending line (at most 64 bytes).
    pub bytes: Vec<u8>,
}

/// Incremental decoder. Feed it chunks; it appends complete events to a collection.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    line_start: u64,
    offset: u64,
    after_cr: bool,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    id: String,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `chunk`, pushing every event it completes onto `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut impl Extend<SseEvent>) -> Result<(), SseError> {
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        if !self.started {
            // A BOM may only stand at the very start, and may be split across chunks.
            self.line.extend_from_slice(chunk);
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return Ok(());
            }
            self.started = true;
            let buffered = std::mem::take(&mut self.line);
            let skip = if buffered.starts_with(BOM) {
                BOM.len()
            } else {
                0
            };
            self.offset = skip as u64;
            self.line_start = self.offset;
            return self.feed_bytes(&buffered[skip..], out);
        }
        self.feed_bytes(chunk, out)
    }

    fn feed_bytes(
        &mut self,
        chunk: &[u8],
        out: &mut impl Extend<SseEvent>,
    ) -> Result<(), SseError> {
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            // A CR ended the last chunk: an LF right after it belongs to the same line end.
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
                self.offset += 1;
                self.line_start = self.offset;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            let mut used = end + 1;
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => used += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.offset += used as u64;
            if self.line.is_empty() {
                // The whole line is in this chunk: read it in place.
                self.finish_line(&rest[..end], out)?;
            } else {
                // The line began in an earlier chunk; its buffer keeps its capacity.
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&rest[..end]);
                let finished = self.finish_line(&line, out);
                line.clear();
                self.line = line;
                finished?;
            }
            self.line_start = self.offset;
            rest = &rest[used..];
        }
        self.line.extend_from_slice(rest);
        self.offset += rest.len() as u64;
        Ok(())
    }

    fn finish_line(&mut self, raw: &[u8], out: &mut impl Extend<SseEvent>) -> Result<(), SseError> {
        if raw.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        let line = std::str::from_utf8(raw).map_err(|_| SseError {
            offset: self.line_start,
            bytes: raw.iter().copied().take(64).collect(),
        })?;
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
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
        Ok(())
    }

    fn dispatch(&mut self, out: &mut impl Extend<SseEvent>) {
        if !self.has_data {
            self.event.clear();
            return;
        }
        self.has_data = false;
        let event = if self.event.is_empty() {
            Cow::Borrowed("message")
        } else {
            match KNOWN_EVENT_NAMES.iter().find(|name| **name == self.event) {
                Some(name) => Cow::Borrowed(*name),
                None => Cow::Owned(self.event.clone()),
            }
        };
        self.event.clear();
        out.extend(Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.id.clone(),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in(chunks: &[&[u8]]) -> Result<Vec<SseEvent>, SseError> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.feed(chunk, &mut out)?;
        }
        Ok(out)
    }

    fn ev(event: &str, data: &str, id: &str) -> SseEvent {
        SseEvent {
            event: event.to_string().into(),
            data: data.into(),
            id: id.into(),
        }
    }

    #[test]
    fn every_split_gives_the_same_events() {
        let stream: &[u8] =
            b"\xEF\xBB\xBFdata: one\r\n\r\n: note\revent: two\rdata:x\rdata: y\r\rid: 7\ndata\nretry: 5\nfield-only\n\ndata: tail-without-blank-line";
        let whole = decode_in(&[stream]).unwrap();
        assert_eq!(
            whole,
            vec![
                ev("message", "one", ""),
                ev("two", "x\ny", ""),
                ev("message", "", "7")
            ]
        );
        for size in 1..stream.len() {
            let chunks: Vec<&[u8]> = stream.chunks(size).collect();
            assert_eq!(decode_in(&chunks).unwrap(), whole, "chunks of {size}");
        }
    }

    #[test]
    fn blank_lines_without_data_dispatch_nothing() {
        assert_eq!(decode_in(&[b"event: x\n\n\n\n"]).unwrap(), vec![]);
    }

    #[test]
    fn invalid_utf8_is_an_error_naming_the_line() {
        let err = decode_in(&[b"data: ok\n\n", b"data: \xff\xfe\n\n"]).unwrap_err();
        assert_eq!(err.offset, 10);
        assert_eq!(err.bytes, b"data: \xff\xfe".to_vec());
    }

    #[test]
    fn a_multibyte_character_split_across_chunks_is_fine() {
        let text = "data: 漢字\n\n".as_bytes();
        let (a, b) = text.split_at(8);
        assert_eq!(decode_in(&[a, b]).unwrap(), vec![ev("message", "漢字", "")]);
    }
}
