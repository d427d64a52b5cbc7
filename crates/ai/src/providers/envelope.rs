//! [`Envelope`]: reading a stream chunk that repeats the previous chunk except for one string,
//! without parsing the whole chunk again.
//!
//! Streaming APIs send one JSON object per delta, and consecutive objects are usually the same
//! text except for one string: the delta's text or argument fragment, wrapped in an id, a model
//! name, a timestamp, the choice index and so on. An [`Envelope`] keeps the text before and after
//! that string in a chunk that was parsed in full. A later chunk that begins with the same
//! prefix, ends with the same suffix and holds one valid JSON string literal in between has, by
//! JSON's grammar, exactly the same keys and values as the parsed chunk except that one string:
//! the tokens of the prefix are the same bytes, a string literal leaves the tokenizer in the same
//! state whatever its content, and the suffix is the same bytes again. So the provider reads
//! only that string literal and reuses what it already knows about the rest: as it is when it
//! has no escapes, unescaped here when its only escapes are the two-character ones (`\n`,
//! `\"`, …), and by serde_json (which also checks it) otherwise.
//!
//! Any other chunk (a different envelope, an escape that runs into the suffix, an unescaped
//! quote inside the string, bytes that are not a string) does not match, and is parsed in full as before, with
//! the same result and the same error messages. Matching costs a comparison of the prefix and
//! suffix; parsing a chunk costs serde_json's work on every key and value.

use std::borrow::Cow;

use super::text::Text;

/// The text around one string value of a parsed chunk. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The chunk up to and including the string's opening quote.
    prefix: Box<str>,
    /// The chunk from the string's closing quote on.
    suffix: Box<str>,
}

impl Envelope {
    /// The envelope of `value` in `data`, where `value` is a string that serde_json borrowed
    /// from `data` while parsing it (so it had no escapes and sits between two quotes).
    /// `None` when `value` does not point into `data` like that.
    ///
    /// Chunks with this envelope have the same keys and values except this string; what the
    /// caller keeps about the chunk must therefore not depend on the string's value (pick a
    /// field the chunk type keeps as plain text, not a tag or an enum like `type` or
    /// `finish_reason`).
    pub fn around(data: &str, value: &str) -> Option<Envelope> {
        let start = (value.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
        let end = start.checked_add(value.len())?;
        let bytes = data.as_bytes();
        let opening = start.checked_sub(1)?;
        if end >= bytes.len() || bytes[opening] != b'"' || bytes[end] != b'"' {
            return None;
        }
        // The offsets came from pointers; make sure they name exactly `value`'s bytes.
        if data.get(start..end)? != value {
            return None;
        }
        Some(Envelope {
            prefix: data[..start].into(),
            suffix: data[end..].into(),
        })
    }

    /// The string at the envelope's place in `data`, when `data` has this envelope and a
    /// valid JSON string literal between the prefix and the suffix; `None` otherwise.
    pub fn string_in<'d>(&self, data: &'d str) -> Option<Text<'d>> {
        let body_end = data.len().checked_sub(self.suffix.len())?;
        if body_end < self.prefix.len()
            || !data.starts_with(&*self.prefix)
            || !data.ends_with(&*self.suffix)
        {
            return None;
        }
        let body = data.get(self.prefix.len()..body_end)?;
        // Characters a JSON string may hold as they are (RFC 8259, section 7): the string is
        // then its own value. Anything else (escapes, or what makes the literal invalid) is
        // left to serde_json.
        if body.bytes().all(|b| PLAIN[usize::from(b)]) {
            return Some(Text(Cow::Borrowed(body)));
        }
        if let Some(text) = unescape_short(body) {
            return Some(Text(Cow::Owned(text)));
        }
        // From the prefix's closing quote to the suffix's opening one (both ASCII).
        let literal = data.get(self.prefix.len() - 1..body_end + 1)?;
        serde_json::from_str(literal).ok()
    }
}

/// The bytes a JSON string literal holds as they are: all but control characters, `"` and `\`
/// (a table lookup per byte, fewer instructions than the three comparisons).
static PLAIN: [bool; 256] = {
    let mut plain = [true; 256];
    let mut byte = 0;
    while byte < 0x20 {
        plain[byte] = false;
        byte += 1;
    }
    plain[b'"' as usize] = false;
    plain[b'\\' as usize] = false;
    plain
};

/// The value of a JSON string literal whose characters between the quotes are `body`, when
/// its only escapes are the two-character ones (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`,
/// `\t`) and it has no control character or bare quote: such a literal is valid, and this is
/// what serde_json makes of it. `None` for anything else (`\u` escapes, invalid literals),
/// which is left to serde_json.
fn unescape_short(body: &str) -> Option<String> {
    let bytes = body.as_bytes();
    let mut out = String::with_capacity(body.len());
    let (mut start, mut at) = (0, 0);
    while let Some(&byte) = bytes.get(at) {
        if byte == b'\\' {
            let unescaped = match bytes.get(at + 1)? {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                _ => return None,
            };
            // `start` and `at` are at ASCII bytes, so on character boundaries.
            out.push_str(body.get(start..at)?);
            out.push(unescaped);
            at += 2;
            start = at;
        } else if byte < 0x20 || byte == b'"' {
            return None;
        } else {
            at += 1;
        }
    }
    out.push_str(body.get(start..)?);
    Some(out)
}

/// The last two envelopes learned from fully parsed chunks, each with what the provider keeps
/// about its chunk (its "skeleton": everything but the varying string). Two, so that a stream
/// alternating between two kinds of chunk (reasoning and text, two tool calls) keeps reading
/// both through their envelopes.
///
/// Learning copies the envelope and the skeleton. Where envelopes never repeat (a server that
/// pads every chunk differently) that would only add copies, so the cache learns less and less
/// often while learnable chunks keep missing: at the 1st, 2nd, 4th, 8th, … such miss in a row.
/// Chunks with nothing to learn (a fragment with escapes, an empty or final chunk) do not count.
/// Until it has an envelope, it learns from every chunk that has one.
#[derive(Debug)]
pub struct EnvelopeCache<S> {
    /// Most recently used first.
    entries: Vec<(Envelope, S)>,
    /// Learnable chunks parsed in full since the last hit.
    misses: u64,
    /// Chunks read through an envelope.
    hits: u64,
}

/// How many envelopes a cache keeps.
const ENTRIES: usize = 2;

impl<S> Default for EnvelopeCache<S> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            misses: 0,
            hits: 0,
        }
    }
}

impl<S> EnvelopeCache<S> {
    /// The varying string of `data`, when `data` has one of the cached envelopes. The skeleton
    /// that goes with it is then [`skeleton`](Self::skeleton).
    pub fn fragment<'d>(&mut self, data: &'d str) -> Option<Text<'d>> {
        self.fragment_if(data, |_| true)
    }

    /// [`fragment`](Self::fragment), trying only the envelopes whose skeleton is `wanted`.
    pub fn fragment_if<'d>(
        &mut self,
        data: &'d str,
        wanted: impl Fn(&S) -> bool,
    ) -> Option<Text<'d>> {
        let (position, fragment) =
            self.entries
                .iter()
                .enumerate()
                .find_map(|(position, (envelope, skeleton))| {
                    if !wanted(skeleton) {
                        return None;
                    }
                    Some((position, envelope.string_in(data)?))
                })?;
        if position > 0 {
            // (Not for the first entry: rotating one element still moves it twice.)
            self.entries[..=position].rotate_right(1);
        }
        self.misses = 0;
        self.hits += 1;
        Some(fragment)
    }

    /// The skeleton of the envelope [`fragment`](Self::fragment) last found.
    pub fn skeleton(&self) -> Option<&S> {
        self.entries.first().map(|(_, skeleton)| skeleton)
    }

    /// Call after parsing a chunk in full, with what could be learned from it (`candidate`, found
    /// without copying anything; `None` when the chunk has nothing to learn). `learn` turns the
    /// candidate into an envelope and skeleton, and is called only when the cache is learning
    /// (see the type's docs).
    pub fn parsed<C>(
        &mut self,
        candidate: Option<C>,
        learn: impl FnOnce(C) -> Option<(Envelope, S)>,
    ) {
        let Some(candidate) = candidate else {
            return;
        };
        if !self.entries.is_empty() {
            self.misses = self.misses.saturating_add(1);
        }
        if self.misses <= 2 || self.misses.is_power_of_two() {
            if let Some(learned) = learn(candidate) {
                self.entries.truncate(ENTRIES - 1);
                self.entries.insert(0, learned);
            }
        }
    }

    /// How many chunks were read through an envelope so far.
    pub fn hits(&self) -> u64 {
        self.hits
    }
}

#[cfg(test)]
mod tests {
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
}
