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
use crate::json_text::{plain_run, short_escape, PLAIN};

/// The text around one string value of a parsed chunk. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The chunk up to and including the string's opening quote.
    prefix: Box<str>,
    /// The chunk from the string's closing quote on.
    suffix: Box<str>,
    /// The same envelope as the bytes of a whole server-sent event, when its cache reads
    /// events in place ([`EnvelopeCache::in_events`]).
    event: Option<EventBytes>,
}

/// An [`Envelope`] as the bytes of a server-sent event whose data is the chunk, in the shape
/// [`crate::sse::SseDecoder::peek_simple`] reads: input beginning with `head`, a string
/// literal's characters and `tail` (which begins with the closing quote) is one event of the
/// cache's name whose data is the envelope around that literal, since neither the prefix nor
/// the suffix holds a CR or LF (`in_event` makes no event bytes of an envelope learned from data
/// of several lines) and the literal's characters cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EventBytes {
    /// The event's head (see [`crate::sse::simple_event_head`]) and the prefix.
    head: Box<[u8]>,
    /// The suffix and the end of the event.
    tail: Box<[u8]>,
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
            event: None,
        })
    }

    /// This envelope, also matching whole events that begin with `head` (see [`EventBytes`]);
    /// unchanged when its prefix or suffix holds a line end (data learned from an event of
    /// several `data:` lines, joined by LF: one line with it would be read differently).
    fn in_event(mut self, head: &str) -> Envelope {
        let line_end = |text: &str| text.bytes().any(|b| b == b'\n' || b == b'\r');
        if line_end(&self.prefix) || line_end(&self.suffix) {
            return self;
        }
        let mut tail = self.suffix.as_bytes().to_vec();
        tail.extend_from_slice(crate::sse::SIMPLE_EVENT_END);
        self.event = Some(EventBytes {
            head: [head.as_bytes(), self.prefix.as_bytes()].concat().into(),
            tail: tail.into(),
        });
        self
    }

    /// Where the string of the event `input` begins with lies, when `input` begins with a
    /// whole event of this envelope (see [`EventBytes`]) read by a decoder between events: the
    /// literal's characters' range, whether they hold escapes, and the event's length. `None`
    /// otherwise, and always when the envelope was not learned for events.
    #[inline]
    fn literal_at(&self, input: &str) -> Option<Literal> {
        let event = self.event.as_ref()?;
        let rest = input.as_bytes().strip_prefix(&*event.head)?;
        let (end, escaped) = literal_end(rest)?;
        if !rest[end..].starts_with(&event.tail) {
            return None;
        }
        let start = event.head.len();
        Some(Literal {
            start,
            end: start + end,
            escaped,
            len: start + end + event.tail.len(),
        })
    }

    /// Whether `input` is the start of an event of this envelope cut before its end (what a
    /// window of text shorter than the event looks like), as opposed to another event.
    fn cut_short(&self, input: &str) -> bool {
        let Some(event) = &self.event else {
            return false;
        };
        let bytes = input.as_bytes();
        if bytes.len() < event.head.len() {
            return !bytes.is_empty() && event.head.starts_with(bytes);
        }
        let Some(rest) = bytes.strip_prefix(&*event.head) else {
            return false;
        };
        match literal_end(rest) {
            Some((end, _)) => {
                let after = &rest[end..];
                after.len() < event.tail.len() && event.tail.starts_with(after)
            }
            None => runs_off(rest),
        }
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

/// A string literal found in an event by [`Envelope::literal_at`].
#[derive(Debug, Clone, Copy)]
struct Literal {
    /// Where its characters start in the event (after the opening quote).
    start: usize,
    /// Where they end (at the closing quote).
    end: usize,
    /// Whether they hold a backslash.
    escaped: bool,
    /// The event's length.
    len: usize,
}

impl Literal {
    /// The literal's value: borrowed from `input` when it has no escapes, unescaped into
    /// `scratch` when its escapes are short ones, parsed by serde_json otherwise; `None` when
    /// it is not a valid literal.
    #[inline]
    fn value<'d>(self, input: &'d str, scratch: &'d mut String) -> Option<Text<'d>> {
        // (On character boundaries: the head ends with a quote, and `end` is at one.)
        let body = input.get(self.start..self.end)?;
        if !self.escaped {
            return Some(Text(Cow::Borrowed(body)));
        }
        if unescape_short_into(body, scratch).is_some() {
            return Some(Text(Cow::Borrowed(scratch.as_str())));
        }
        // From the head's closing quote to the tail's opening one.
        let literal = input.get(self.start - 1..self.end + 1)?;
        serde_json::from_str(literal).ok()
    }
}

/// Where the string literal whose characters `rest` begins with ends (the index of its closing
/// quote), and whether it has escapes; `None` when `rest` has a control character first, or
/// ends before the quote. An escape is passed over as two bytes, whatever they are, so the
/// quote found is the literal's end whenever the literal is valid (the caller checks that).
#[inline]
fn literal_end(rest: &[u8]) -> Option<(usize, bool)> {
    let mut escaped = false;
    let mut at = 0;
    loop {
        at += plain_run(rest.get(at..)?);
        let byte = *rest.get(at)?;
        if byte == b'"' {
            return Some((at, escaped));
        } else if byte == b'\\' {
            escaped = true;
            at += 2;
        } else {
            return None;
        }
    }
}

/// Whether the string literal whose characters `rest` begins with is cut by the end of `rest`
/// (no closing quote, no control character before the end).
fn runs_off(rest: &[u8]) -> bool {
    let mut at = 0;
    while let Some(&byte) = rest.get(at) {
        match byte {
            b'\\' => at += 2,
            b'"' => return false,
            byte if byte < 0x20 => return false,
            _ => at += 1,
        }
    }
    true
}

/// The value of a JSON string literal whose characters between the quotes are `body`, when
/// its only escapes are the two-character ones (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`,
/// `\t`) and it has no control character or bare quote: such a literal is valid, and this is
/// what serde_json makes of it. `None` for anything else (`\u` escapes, invalid literals),
/// which is left to serde_json.
fn unescape_short(body: &str) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    unescape_short_into(body, &mut out)?;
    Some(out)
}

/// [`unescape_short`] into `out` (cleared first).
fn unescape_short_into(body: &str, out: &mut String) -> Option<()> {
    let bytes = body.as_bytes();
    out.clear();
    let (mut start, mut at) = (0, 0);
    while let Some(&byte) = bytes.get(at) {
        if byte == b'\\' {
            let unescaped = short_escape(*bytes.get(at + 1)?)?;
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
    Some(())
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
    /// The head of the events whose data the chunks are, when envelopes are also matched
    /// against whole events ([`in_events`](Self::in_events)).
    event_head: Option<Box<str>>,
    /// Where a fragment with escapes read from an event is unescaped.
    scratch: String,
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
            event_head: None,
            scratch: String::new(),
            misses: 0,
            hits: 0,
        }
    }
}

impl<S> EnvelopeCache<S> {
    /// A cache for chunks that are the data of server-sent events named `event`: besides
    /// chunks, it reads whole events in place from the stream's bytes
    /// ([`fragment_at_if`](Self::fragment_at_if)), where the server writes them in the common
    /// shape.
    pub fn in_events(event: &str) -> Self {
        Self {
            event_head: Some(crate::sse::simple_event_head(event).into()),
            ..Self::default()
        }
    }

    /// [`fragment_at_if`](Self::fragment_at_if) trying every envelope.
    pub fn fragment_at<'s, 'd: 's>(
        &'s mut self,
        input: &'d str,
    ) -> Option<(Text<'s>, &'s S, usize)> {
        self.fragment_at_if(input, |_| true)
    }

    /// Whether `input` begins with an event of one of the cached envelopes whose skeleton is
    /// `wanted`, cut before its end (see [`fragment_at_if`](Self::fragment_at_if)): the text
    /// was too short for it.
    pub fn cut_short_at_if(&self, input: &str, wanted: impl Fn(&S) -> bool) -> bool {
        self.entries
            .iter()
            .any(|(envelope, skeleton)| wanted(skeleton) && envelope.cut_short(input))
    }

    /// [`fragment_if`](Self::fragment_if) for the event `input` begins with (the stream's text,
    /// read by a decoder between events), with the skeleton and the event's length: what
    /// reading that event and calling `fragment_if` with its data would give. `None` when the
    /// cache was not made [`in_events`](Self::in_events) or the event is not one of a cached
    /// envelope in the common shape (then read the event and try its data).
    #[inline]
    pub fn fragment_at_if<'s, 'd: 's>(
        &'s mut self,
        input: &'d str,
        wanted: impl Fn(&S) -> bool,
    ) -> Option<(Text<'s>, &'s S, usize)> {
        let Self {
            entries,
            scratch,
            misses,
            hits,
            ..
        } = self;
        let (position, literal) =
            entries
                .iter()
                .enumerate()
                .find_map(|(position, (envelope, skeleton))| {
                    if !wanted(skeleton) {
                        return None;
                    }
                    Some((position, envelope.literal_at(input)?))
                })?;
        let text = literal.value(input, scratch)?;
        record_hit(entries, misses, hits, position);
        Some((text, &entries.first()?.1, literal.len))
    }

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
        self.hit(position);
        Some(fragment)
    }

    /// Records a hit on the entry at `position`, which becomes the first.
    fn hit(&mut self, position: usize) {
        record_hit(
            &mut self.entries,
            &mut self.misses,
            &mut self.hits,
            position,
        );
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
            if let Some((envelope, skeleton)) = learn(candidate) {
                let envelope = match &self.event_head {
                    Some(head) => envelope.in_event(head),
                    None => envelope,
                };
                self.entries.truncate(ENTRIES - 1);
                self.entries.insert(0, (envelope, skeleton));
            }
        }
    }

    /// How many chunks were read through an envelope so far.
    pub fn hits(&self) -> u64 {
        self.hits
    }
}

/// A hit on the cache entry at `position` (which becomes the first), on the fields of an
/// [`EnvelopeCache`] (so a caller holding a borrow of its scratch buffer can record it too).
fn record_hit<T>(entries: &mut [T], misses: &mut u64, hits: &mut u64, position: usize) {
    if position > 0 {
        // (Not for the first entry: rotating one element still moves it twice.)
        entries[..=position].rotate_right(1);
    }
    *misses = 0;
    *hits += 1;
}

#[cfg(test)]
#[path = "envelope_tests.rs"]
mod tests;
