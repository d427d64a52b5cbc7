//! Server-sent events, read in linear time.
//!
//! [`SseDecoder`] turns body bytes into events as the WHATWG `EventSource` parser does (and as
//! `eventsource-stream`, which reqwest-eventsource uses, does): lines end in `\r\n`, `\n` or
//! `\r`; `data` lines are joined with `\n`; an empty line dispatches; comments (`:`) are
//! skipped; `id` persists across events; an event without data is not dispatched; an
//! unfinished event at the end of the body is dropped.
//!
//! Unlike `eventsource-stream` 0.2, which copies the rest of its buffer after every line (work
//! proportional to the network read size for each line, so a 400 KB read of 10-byte deltas
//! costs gigabytes of copying), each byte here is scanned once and the consumed prefix is
//! dropped only when it is more than half of the buffer.
//!
//! [`SseSource`] reads a `reqwest::Response` through the decoder. It yields the same
//! `reqwest_eventsource::Event` values the providers have always matched on.

use std::time::Duration;

pub use eventsource_stream::Event as MessageEvent;
use reqwest_eventsource::Event;

/// Why reading an event stream failed.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    /// The connection failed mid-body.
    #[error("{0}")]
    Transport(#[from] reqwest::Error),
    /// A line was not valid UTF-8.
    #[error("invalid UTF-8 in the stream: {0}")]
    Utf8(#[from] std::str::Utf8Error),
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Push bytes in, take events out. See the [module docs](self).
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    /// Start of the bytes not yet consumed.
    pos: usize,
    /// Where to resume looking for a line end (`pos..scan` holds none).
    scan: usize,
    bom_checked: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: String,
    retry: Option<Duration>,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends body bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.scan -= self.pos;
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes held that are not part of a returned event yet.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next complete event, if the bytes pushed so far hold one.
    pub fn next_event(&mut self) -> Option<Result<MessageEvent, std::str::Utf8Error>> {
        if !self.bom_checked {
            let rest = &self.buf[self.pos..];
            if rest.len() < BOM.len() && BOM.starts_with(rest) {
                return None;
            }
            if rest.starts_with(BOM) {
                self.pos += BOM.len();
                self.scan = self.scan.max(self.pos);
            }
            self.bom_checked = true;
        }
        loop {
            let found = memchr::memchr2(b'\n', b'\r', &self.buf[self.scan..]);
            let Some(offset) = found else {
                self.scan = self.buf.len();
                return None;
            };
            let end = self.scan + offset;
            let next = if self.buf[end] == b'\r' {
                match self.buf.get(end + 1) {
                    // A `\r` last in the buffer may be the first half of `\r\n`.
                    None => {
                        self.scan = end;
                        return None;
                    }
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                }
            } else {
                end + 1
            };
            let start = self.pos;
            self.pos = next;
            self.scan = next;
            let line = match std::str::from_utf8(&self.buf[start..end]) {
                Ok(line) => line,
                Err(e) => return Some(Err(e)),
            };
            if line.is_empty() {
                if let Some(event) = self.dispatch() {
                    return Some(Ok(event));
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match field {
                "data" => {
                    self.data.push_str(value);
                    self.data.push('\n');
                    self.has_data = true;
                }
                "event" => {
                    self.event.clear();
                    self.event.push_str(value);
                }
                "id" if !value.contains('\0') => {
                    self.last_id.clear();
                    self.last_id.push_str(value);
                }
                "retry" => {
                    if let Ok(ms) = value.parse::<u64>() {
                        self.retry = Some(Duration::from_millis(ms));
                    }
                }
                _ => {}
            }
        }
    }

    fn dispatch(&mut self) -> Option<MessageEvent> {
        let mut event = std::mem::take(&mut self.event);
        let retry = self.retry.take();
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        // A copy of exactly the data's size; the buffer keeps its capacity for the next event.
        let data = self
            .data
            .strip_suffix('\n')
            .unwrap_or(&self.data)
            .to_string();
        self.data.clear();
        if event.is_empty() {
            event.push_str("message");
        }
        Some(MessageEvent {
            event,
            data,
            id: self.last_id.clone(),
            retry,
        })
    }
}

/// An open event stream: the response body read through an [`SseDecoder`].
#[derive(Debug)]
pub struct SseSource {
    response: Option<reqwest::Response>,
    decoder: SseDecoder,
}

impl SseSource {
    /// Reads events from an accepted response.
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            response: Some(response),
            decoder: SseDecoder::new(),
        }
    }

    /// Stops reading; later calls to [`next`](Self::next) return `None`.
    pub fn close(&mut self) {
        self.response = None;
        self.decoder = SseDecoder::new();
    }

    /// The next event; `None` when the body ended or the source was closed. Cancel-safe: a
    /// dropped call loses nothing.
    pub async fn next(&mut self) -> Option<Result<Event, SseError>> {
        loop {
            if let Some(event) = self.decoder.next_event() {
                return Some(match event {
                    Ok(event) => Ok(Event::Message(event)),
                    Err(e) => {
                        self.close();
                        Err(SseError::Utf8(e))
                    }
                });
            }
            let response = self.response.as_mut()?;
            match response.chunk().await {
                Ok(Some(bytes)) => self.decoder.push(&bytes),
                Ok(None) => {
                    self.close();
                    return None;
                }
                Err(e) => {
                    self.close();
                    return Some(Err(SseError::Transport(e)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn events(pieces: &[&[u8]]) -> Vec<(String, String, String)> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for piece in pieces {
            decoder.push(piece);
            while let Some(event) = decoder.next_event() {
                let event = event.unwrap();
                out.push((event.event, event.data, event.id));
            }
        }
        out
    }

    fn one_by_one(bytes: &[u8]) -> Vec<(String, String, String)> {
        let pieces: Vec<&[u8]> = bytes.chunks(1).collect();
        events(&pieces)
    }

    fn e(event: &str, data: &str, id: &str) -> (String, String, String) {
        (event.into(), data.into(), id.into())
    }

    #[test]
    fn fields_comments_and_line_ends() {
        let body = b"\xEF\xBB\xBF: comment\r\nevent: ping\r\ndata: {\"a\":1}\r\n\r\ndata:x\ndata: y\n\nid: 7\rdata:  two spaces\r\rdata\n\nevent: empty\n\n";
        let expected = vec![
            e("ping", "{\"a\":1}", ""),
            e("message", "x\ny", ""),
            e("message", " two spaces", "7"),
            e("message", "", "7"),
        ];
        assert_eq!(events(&[body]), expected);
        assert_eq!(one_by_one(body), expected);
    }

    #[test]
    fn an_unfinished_event_at_the_end_is_dropped() {
        assert_eq!(
            events(&[b"data: a\n\ndata: b\n"]),
            vec![e("message", "a", "")]
        );
        assert_eq!(
            events(&[b"data: a\n\ndata: b"]),
            vec![e("message", "a", "")]
        );
    }

    #[test]
    fn utf8_split_across_pushes_and_invalid_utf8() {
        let body = "data: é漢\n\n".as_bytes();
        assert_eq!(one_by_one(body), vec![e("message", "é漢", "")]);
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: \xFF\n\n");
        assert!(decoder.next_event().unwrap().is_err());
    }

    #[test]
    fn retry_and_nul_ids() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"retry: 1500\nid: a\0b\ndata: x\n\n");
        let event = decoder.next_event().unwrap().unwrap();
        assert_eq!(event.retry, Some(Duration::from_millis(1500)));
        assert_eq!(event.id, "");
    }

    #[test]
    fn the_buffer_does_not_grow_with_the_stream() {
        let mut decoder = SseDecoder::new();
        let event = b"data: {\"choices\":[{\"delta\":{\"content\":\"0123456789\"}}]}\n\n";
        for _ in 0..10_000 {
            decoder.push(event);
            assert!(decoder.next_event().is_some());
        }
        assert!(
            decoder.buf.capacity() < 4 * event.len() + 64,
            "{}",
            decoder.buf.capacity()
        );
        assert_eq!(decoder.buffered(), 0);
    }

    #[test]
    fn a_long_line_in_many_pieces_is_scanned_once() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: ");
        for _ in 0..1000 {
            decoder.push(&[b'x'; 1000]);
            assert!(decoder.next_event().is_none());
            assert_eq!(decoder.scan, decoder.buf.len());
        }
        decoder.push(b"\n\n");
        assert_eq!(decoder.next_event().unwrap().unwrap().data.len(), 1_000_000);
    }
}
