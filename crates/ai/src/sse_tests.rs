//! Tests of the server-sent events decoder (`crate::sse`).

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

/// Decodes `chunks` as the transport does: each event read in place where
/// [`SseDecoder::peek_simple`] takes it, else by `next_event`. Returns each event's name and
/// trimmed data, how many were read in place, and the error, if any.
fn decode_peeking(chunks: &[&[u8]]) -> (Vec<(String, String)>, usize, Option<SseError>) {
    let mut decoder = SseDecoder::new();
    let (mut out, mut peeked) = (Vec::new(), 0);
    for chunk in chunks {
        let mut input: &[u8] = chunk;
        loop {
            if let Some(simple) = decoder.peek_simple(input) {
                out.push((simple.event.to_string(), simple.data.to_string()));
                decoder.skip(simple.len);
                input = &input[simple.len..];
                peeked += 1;
                continue;
            }
            match decoder.next_event(&mut input) {
                Ok(Some(event)) => {
                    out.push((event.event.to_string(), event.trimmed_data().to_string()))
                }
                Ok(None) => break,
                Err(e) => return (out, peeked, Some(e)),
            }
        }
    }
    (out, peeked, None)
}

#[test]
fn events_read_in_place_are_the_events_next_event_reads() {
    let stream: &[u8] = b"data: one\n\nevent: content_block_delta\ndata: {\"a\":1}\n\n\
        event: custom\ndata: x\n\ndata: two\r\n\r\n: note\ndata:  spaced \n\n\
        event: ping\ndata: a\ndata: b\n\nid: 7\ndata: after-id\n\ndata: \n\n\
        event: ping\n\ndata: three\n\nevent: message_stop\ndata: {}\n\ndata: \xff\n\n";
    let plain = {
        let mut decoder = SseDecoder::new();
        let mut input = stream;
        let mut out = Vec::new();
        let error = loop {
            match decoder.next_event(&mut input) {
                Ok(Some(e)) => out.push((e.event.to_string(), e.trimmed_data().to_string())),
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        };
        (out, error)
    };
    assert_eq!(plain.0.len(), 10, "{:?}", plain.0);
    assert!(plain.1.is_some(), "the last line is not UTF-8");
    for size in 1..=stream.len() {
        let chunks: Vec<&[u8]> = stream.chunks(size).collect();
        let (events, peeked, error) = decode_peeking(&chunks);
        assert_eq!((&events, &error), (&plain.0, &plain.1), "chunks of {size}");
        if size == stream.len() {
            // In place: content_block_delta, the empty data, message_stop. Not: one (the
            // first bytes may be a BOM), custom (an unknown name), two (CRLF), spaced (read
            // with the comment before it), a+b (two data lines), after-id (an id line),
            // three (read with the lines of the data-less ping before it).
            assert_eq!(peeked, 3, "{events:?}");
        }
    }
}

#[test]
fn trimmed_data_is_trim() {
    for data in [
        "",
        " ",
        "{}",
        " {} ",
        "{\n",
        "\u{a0}x",
        "x\u{2003}",
        "\t[DONE]",
        "é",
        "a b",
    ] {
        let event = ev("message", data, "");
        assert_eq!(event.trimmed_data(), data.trim(), "{data:?}");
    }
}

#[test]
fn the_last_event_line_names_the_event_known_or_not() {
    let stream: &[u8] = b"event: ping\nevent: custom\ndata: a\n\nevent: custom\nevent: ping\ndata: b\n\nevent: ping\n\ndata: c\n\nevent:\ndata: d\n\n";
    assert_eq!(
        decode_in(&[stream]).unwrap(),
        vec![
            ev("custom", "a", ""),
            ev("ping", "b", ""),
            ev("message", "c", ""),
            ev("message", "d", "")
        ]
    );
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

#[test]
fn a_recycled_event_lends_its_buffer_to_the_next_one() {
    let mut decoder = SseDecoder::new();
    let mut input: &[u8] = b"data: first\n\ndata: second\n\ndata: thi";
    let first = decoder.next_event(&mut input).unwrap().unwrap();
    let buffer = first.data.as_ptr();
    decoder.recycle(first);
    let second = decoder.next_event(&mut input).unwrap().unwrap();
    assert_eq!(second.data, "second");
    assert_eq!(second.data.as_ptr(), buffer);
    // The third event has begun: a late recycle leaves it alone (its first bytes stay).
    assert_eq!(decoder.next_event(&mut input).unwrap(), None);
    decoder.recycle(second);
    let mut rest: &[u8] = b"rd\n\n";
    let third = decoder.next_event(&mut rest).unwrap().unwrap();
    assert_eq!(third.data, "third");
}
