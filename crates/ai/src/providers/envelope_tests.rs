//! Tests of [`Envelope`] and [`EnvelopeCache`] (`crate::providers::envelope`).

use super::*;

fn envelope(data: &str, value: &str) -> Envelope {
    let at = data.find(&format!("\"{value}\"")).unwrap() + 1;
    Envelope::around(data, &data[at..at + value.len()]).unwrap()
}

#[test]
fn a_chunk_with_the_same_envelope_yields_its_string_borrowed_or_unescaped() {
    let template = r#"{"id":"c1","delta":{"content":"hello"},"n":1}"#;
    let envelope = envelope(template, "hello");
    for (data, expected) in [
        (r#"{"id":"c1","delta":{"content":"world"},"n":1}"#, "world"),
        (r#"{"id":"c1","delta":{"content":""},"n":1}"#, ""),
        (
            r#"{"id":"c1","delta":{"content":"a\"b\\"},"n":1}"#,
            "a\"b\\",
        ),
        (r#"{"id":"c1","delta":{"content":"\u00e9\n"},"n":1}"#, "é\n"),
        (r#"{"id":"c1","delta":{"content":"ünï"},"n":1}"#, "ünï"),
    ] {
        assert_eq!(
            envelope.string_in(data),
            Some(Text(Cow::Borrowed(expected))),
            "{data}"
        );
    }
    let borrowed = envelope
        .string_in(r#"{"id":"c1","delta":{"content":"xyz"},"n":1}"#)
        .unwrap();
    assert!(matches!(borrowed.0, Cow::Borrowed(_)));
}

#[test]
fn short_escapes_are_read_as_serde_json_reads_them() {
    for body in [
        r#"a\"b"#,
        r#"\\\/\b\f\n\r\t"#,
        r#"é\n漢"#,
        r#"\u00e9"#,
        r#"a\"#,
        r#"a\q"#,
        "a\nb",
        r#"a"b"#,
        "",
    ] {
        let serde: Option<String> = serde_json::from_str(&format!("\"{body}\"")).ok();
        match unescape_short(body) {
            Some(text) => assert_eq!(Some(text), serde, "{body}"),
            // Left to serde_json: a `\u` escape or an invalid literal.
            None => assert!(body.contains("\\u") || serde.is_none(), "{body}"),
        }
    }
    assert_eq!(unescape_short(r#"x\"y\n"#).as_deref(), Some("x\"y\n"));
}

#[test]
fn anything_that_would_parse_differently_does_not_match() {
    let template = r#"{"id":"c1","delta":{"content":"hello"},"n":1}"#;
    let envelope = envelope(template, "hello");
    for data in [
        // Another envelope.
        r#"{"id":"c2","delta":{"content":"hello"},"n":1}"#,
        r#"{"id":"c1","delta":{"content":"hello"},"n":2}"#,
        r#"{"id":"c1","delta":{"content":"hello"},"n":1} "#,
        // The same envelope around something that is not one string literal.
        r#"{"id":"c1","delta":{"content":"a","x":"b"},"n":1}"#,
        r#"{"id":"c1","delta":{"content":"a\"},"n":1}"#,
        r#"{"id":"c1","delta":{"content":"a\q"},"n":1}"#,
        "{\"id\":\"c1\",\"delta\":{\"content\":\"a\nb\"},\"n\":1}",
        r#"{"id":"c1","delta":{"content":"\ud800"},"n":1}"#,
        // Shorter than prefix and suffix together, where they overlap.
        r#"{"id":"c1","delta":{"content":"},"n":1}"#,
        "",
    ] {
        assert_eq!(envelope.string_in(data), None, "{data}");
    }
}

#[test]
fn around_needs_a_string_borrowed_from_the_data_between_quotes() {
    let data = r#"{"a":"xy","b":"xy"}"#;
    assert_eq!(Envelope::around(data, "xy"), None, "not inside data");
    assert_eq!(Envelope::around(data, &data[7..8]), None, "no quote before");
    assert_eq!(Envelope::around(data, &data[6..7]), None, "no quote after");
    let second = Envelope::around(data, &data[15..17]).unwrap();
    assert_eq!(
        second.string_in(r#"{"a":"xy","b":"zz"}"#),
        Some(Text(Cow::Borrowed("zz")))
    );
    assert_eq!(second.string_in(r#"{"a":"zz","b":"xy"}"#), None);
}

#[test]
fn the_cache_learns_less_often_while_envelopes_keep_missing() {
    let mut cache = EnvelopeCache::<u32>::default();
    let mut learned = Vec::new();
    for n in 0..20u32 {
        // Every chunk has a new envelope, so none is read through the cached one.
        let data = format!(r#"{{"pad":"{n}","text":"abc"}}"#);
        assert_eq!(cache.fragment(&data), None);
        cache.parsed(Some(n), |n| {
            learned.push(n);
            Some((envelope(&data, "abc"), n))
        });
    }
    assert_eq!(learned, [0, 1, 2, 4, 8, 16]);
    assert_eq!(cache.skeleton(), Some(&16));
    // A hit starts learning on every miss again.
    assert_eq!(
        cache.fragment(r#"{"pad":"16","text":"xyz"}"#),
        Some(Text(Cow::Borrowed("xyz")))
    );
    assert_eq!(cache.hits(), 1);
    // A chunk with nothing to learn takes no turn.
    cache.parsed(None::<u32>, |_| unreachable!());
    cache.parsed(Some(99), |n| {
        Some((envelope(r#"{"pad":"a","text":"b"}"#, "b"), n))
    });
    assert_eq!(cache.skeleton(), Some(&99));
}

#[test]
fn chunks_alternating_between_two_envelopes_are_both_read_through_them() {
    let mut cache = EnvelopeCache::<&str>::default();
    let a = |text: &str| format!(r#"{{"reasoning":"{text}"}}"#);
    let b = |text: &str| format!(r#"{{"content":"{text}"}}"#);
    for (data, skeleton) in [(a("r0"), "a"), (b("c0"), "b")] {
        assert_eq!(cache.fragment(&data), None);
        cache.parsed(Some(skeleton), |skeleton| {
            Some((
                envelope(&data, &data[data.len() - 4..data.len() - 2]),
                skeleton,
            ))
        });
    }
    for n in 1..5 {
        for (data, skeleton) in [(a(&format!("r{n}")), "a"), (b(&format!("c{n}")), "b")] {
            assert!(cache.fragment(&data).is_some(), "{data}");
            assert_eq!(cache.skeleton(), Some(&skeleton));
        }
    }
    assert_eq!(cache.hits(), 8);
    // A third envelope replaces the one used least recently (`a`).
    let c = r#"{"other":"x1"}"#;
    assert_eq!(cache.fragment(c), None);
    cache.parsed(Some("c"), |skeleton| Some((envelope(c, "x1"), skeleton)));
    assert!(cache.fragment(&b("c9")).is_some());
    assert_eq!(cache.fragment(&a("r9")), None);
}

/// What the stream's decoder and [`EnvelopeCache::fragment`] make of `input`: the event's
/// fragment and how many bytes the event took, when `input` begins with one event named
/// `name`.
fn read_then_matched(
    cache: &mut EnvelopeCache<&'static str>,
    name: &str,
    input: &[u8],
) -> Option<(Text<'static>, usize)> {
    let mut decoder = crate::sse::SseDecoder::new();
    let mut rest = input;
    let event = decoder.next_event(&mut rest).ok()??;
    if event.event != name {
        return None;
    }
    let text = cache.fragment(event.trimmed_data())?;
    Some((
        Text(Cow::Owned(text.0.into_owned())),
        input.len() - rest.len(),
    ))
}

#[test]
fn events_read_in_place_are_what_reading_them_then_their_data_gives() {
    let name = "content_block_delta";
    let data = |fragment: &str| {
        format!(
            r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"input_json_delta","partial_json":"{fragment}"}}}}"#
        )
    };
    let event = |fragment: &str| format!("event: {name}\ndata: {}\n\n", data(fragment));
    let learned = data("first");
    let learn = |cache: &mut EnvelopeCache<&'static str>| {
        cache.parsed(Some("delta"), |skeleton| {
            let at = learned.find("first").unwrap();
            Some((Envelope::around(&learned, &learned[at..at + 5])?, skeleton))
        });
    };
    let mut in_events = EnvelopeCache::in_events(name);
    learn(&mut in_events);
    let mut chunks = EnvelopeCache::default();
    learn(&mut chunks);

    let fragments = [
        "plain",
        "",
        "ten bytes!",
        "a longer fragment than eight bytes, and longer than sixty-four bytes in all of it",
        r#"\"quoted\" \\ \/ \b\f\n\r\t"#,
        r#"\u00e9 and \ud83d\ude00"#,
        "ünïcödé 漢字 😀",
        r#"ends with a backslash \\"#,
        r#"\\\""#,
    ];
    let mut next = String::new();
    let mut cases: Vec<Vec<u8>> = Vec::new();
    for fragment in fragments {
        let whole = event(fragment);
        // The event alone, followed by another, and cut short at every length.
        next.clone_from(&whole);
        next.push_str(&event("next"));
        cases.push(whole.clone().into_bytes());
        cases.push(next.clone().into_bytes());
        for cut in 0..whole.len() {
            cases.push(whole.as_bytes()[..cut].to_vec());
        }
    }
    for odd in [
        // Not one string literal, or not this envelope, or not the common shape.
        event("a\"b"),
        event(r#"a\q"#),
        event("a\u{1}b"),
        event("tab\there"),
        event(r#"\ud800"#),
        format!("event: {name}\ndata: {}\r\n\r\n", data("crlf")),
        format!("event: {name}\ndata:  {}\n\n", data("two spaces")),
        format!("event: {name}\ndata: {} \n\n", data("trailing space")),
        format!("event: {name}\ndata: {}\ndata: x\n\n", data("two lines")),
        format!("event: {name}\nid: 7\ndata: {}\n\n", data("an id")),
        format!("event: ping\ndata: {}\n\n", data("another name")),
        format!("data: {}\n\n", data("no name")),
        event("x").replace(r#""index":1"#, r#""index":2"#),
        event("x").replace("}}\n\n", "},\"n\":1}\n\n"),
    ] {
        cases.push(odd.into_bytes());
    }

    let mut read_in_place = 0;
    for input in &cases {
        let expected = read_then_matched(&mut chunks, name, input);
        // (The stream's text: its bytes up to where they stop being UTF-8.)
        let text = match std::str::from_utf8(input) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&input[..e.valid_up_to()]).unwrap(),
        };
        // (`None`: left to the ordinary path, which may still read it, in another shape.)
        if let Some((text, _, len)) = in_events.fragment_at(text) {
            read_in_place += 1;
            assert_eq!(
                Some((text.0.as_ref(), len)),
                expected.as_ref().map(|(t, l)| (t.0.as_ref(), *l)),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }
    // Every whole event of the common shape with a valid literal was read in place, and
    // nothing else.
    assert_eq!(read_in_place, 2 * fragments.len());
    // A cache not made for events reads none in place.
    assert!(chunks.fragment_at(&event("x")).is_none());
}

#[test]
fn an_envelope_learned_from_several_data_lines_is_not_matched_in_events() {
    // Data joined from two `data:` lines holds an LF between tokens; one line holding the same
    // text would be two lines, read differently, so such an envelope reads no event in place.
    let learned = "{\"type\":\"content_block_delta\",\"index\":0,\n\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}";
    let mut cache = EnvelopeCache::in_events("content_block_delta");
    cache.parsed(Some("delta"), |skeleton| {
        let at = learned.find("hi").unwrap();
        Some((Envelope::around(learned, &learned[at..at + 2])?, skeleton))
    });
    let event = format!(
        "event: content_block_delta\ndata: {}\n\n",
        learned.replace("hi", "X")
    );
    assert!(cache.fragment_at(&event).is_none());
    // Its data still reads through the envelope.
    assert!(cache.fragment(&learned.replace("hi", "X")).is_some());
}

#[test]
fn an_event_cut_short_is_told_from_another_event() {
    let data = r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"learned"}}"#;
    let mut cache = EnvelopeCache::in_events("content_block_delta");
    cache.parsed(Some(()), |skeleton| {
        let at = data.find("learned").unwrap();
        Some((Envelope::around(data, &data[at..at + 7])?, skeleton))
    });
    let event = format!(
        "event: content_block_delta\ndata: {}\n\n",
        data.replace("learned", r#"a \"long\" fragment"#)
    );
    assert!(cache.fragment_at(&event).is_some());
    for cut in 1..event.len() {
        assert!(cache.cut_short_at_if(&event[..cut], |_| true), "{cut}");
    }
    for other in [
        "event: ping\ndata: {}\n\n".to_string(),
        event.replace("\"index\":1", "\"index\":2"),
        event.replace("fragment", "frag\u{1}ment"),
        event.clone(),
        String::new(),
    ] {
        assert!(!cache.cut_short_at_if(&other, |_| true), "{other:?}");
    }
}
