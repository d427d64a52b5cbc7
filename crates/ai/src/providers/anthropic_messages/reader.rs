//! [`BlockDeltaReader`]: `content_block_delta` events read as [`BlockDeltaData`], through the
//! [`Envelope`] of the last one when an event repeats it around a new fragment.

use std::borrow::Cow;

use super::wire::{BlockDeltaData, DeltaKind, DeltaText, FlatDelta};
use crate::providers::envelope::{Envelope, EnvelopeCache};
use crate::providers::text::Text;

/// Reads the `content_block_delta` events of one stream, in order. See
/// `crate::providers::envelope`.
#[derive(Debug)]
pub struct BlockDeltaReader {
    cache: EnvelopeCache<Skeleton>,
}

impl Default for BlockDeltaReader {
    fn default() -> Self {
        Self {
            cache: EnvelopeCache::in_events("content_block_delta"),
        }
    }
}

/// A delta event apart from its fragment: the block index and the delta type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Skeleton {
    /// The block's index.
    index: u64,
    /// The delta's type.
    kind: DeltaKind,
}

impl BlockDeltaReader {
    /// A reader for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The data of a `content_block_delta` event as [`BlockDeltaData::parse`] reads it: `None`
    /// when it does not read that way (the caller then parses it as a
    /// [`StreamEvent`](super::wire::StreamEvent)).
    pub fn read<'d>(&mut self, data: &'d str) -> Option<BlockDeltaData<'d>> {
        if let Some(fragment) = self.cache.fragment(data) {
            let skeleton = *self.cache.skeleton()?;
            return Some(skeleton.fill(fragment));
        }
        self.parse(data)
    }

    /// What [`read`](Self::read) returns, as the block's index and the delta's text (what
    /// the stream applies): an event read through its envelope is not built into a
    /// [`BlockDeltaData`] first, nor its delta type compared by name.
    pub fn read_text<'d>(&mut self, data: &'d str) -> Option<(u64, DeltaText<'d>)> {
        if let Some(read) = self.fragment_text(data) {
            return Some(read);
        }
        self.parse(data)
            .map(|event| (event.index, event.delta.into_delta_text()))
    }

    /// Parses `data` in full, learning its envelope when the cache is learning.
    /// [`read_text`](Self::read_text) when `data` repeats a learned envelope; `None`, having
    /// parsed and learned nothing, otherwise.
    pub fn fragment_text<'d>(&mut self, data: &'d str) -> Option<(u64, DeltaText<'d>)> {
        let fragment = self.cache.fragment(data)?;
        let skeleton = *self.cache.skeleton()?;
        Some((skeleton.index, DeltaText::new(skeleton.kind, fragment.0)))
    }

    /// [`fragment_text`](Self::fragment_text) for the `content_block_delta` event `input`
    /// begins with (the stream's text, read by a decoder between events), with the event's
    /// length; `None` when it is not an event of a learned envelope in the common shape.
    #[inline]
    pub fn event_text<'s, 'd: 's>(
        &'s mut self,
        input: &'d str,
    ) -> Option<(u64, DeltaText<'s>, usize)> {
        let (fragment, skeleton, len) = self.cache.fragment_at(input)?;
        Some((
            skeleton.index,
            DeltaText::new(skeleton.kind, fragment.0),
            len,
        ))
    }

    /// Whether `input` begins with a `content_block_delta` event of a learned envelope cut
    /// before its end (the text was too short for it).
    pub fn cut_short(&self, input: &str) -> bool {
        self.cache.cut_short_at_if(input, |_| true)
    }

    fn parse<'d>(&mut self, data: &'d str) -> Option<BlockDeltaData<'d>> {
        let event = BlockDeltaData::parse(data)?;
        self.cache
            .parsed(Skeleton::candidate(&event), |(skeleton, value)| {
                Some((Envelope::around(data, value)?, skeleton))
            });
        Some(event)
    }

    /// How many events were read through their envelope instead of parsed in full.
    pub fn repeats(&self) -> u64 {
        self.cache.hits()
    }
}

impl Skeleton {
    /// The fragment an envelope could be learned around: the field of the delta's type, when
    /// it is the delta's only field, not empty, and borrowed from the event (no escapes).
    fn candidate<'d>(event: &BlockDeltaData<'d>) -> Option<(Skeleton, &'d str)> {
        let delta = &event.delta;
        let kind = DeltaKind::from_name(delta.kind.as_str())?;
        let Some(Text(Cow::Borrowed(value))) = delta.field(kind) else {
            return None;
        };
        let only_field = DeltaKind::ALL
            .into_iter()
            .all(|other| other == kind || delta.field(other).is_none());
        (only_field && !value.is_empty()).then_some((
            Skeleton {
                index: event.index,
                kind,
            },
            *value,
        ))
    }

    /// The event with `fragment` as its delta's field.
    fn fill(self, fragment: Text<'_>) -> BlockDeltaData<'_> {
        BlockDeltaData {
            kind: Text(Cow::Borrowed("content_block_delta")),
            index: self.index,
            delta: FlatDelta::new(self.kind, fragment),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_repeating_the_last_envelope_are_read_through_it_and_equal_the_parse() {
        let deltas = [
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":":1"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":", \"b\": 2"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"}"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"hi"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"!"},"extra":0}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":1}}"#,
        ];
        let mut reader = BlockDeltaReader::new();
        for data in deltas {
            assert_eq!(reader.read(data), BlockDeltaData::parse(data), "{data}");
        }
        assert_eq!(reader.repeats(), 2);
        // The same events as index and text, through the envelope and not.
        let mut reader = BlockDeltaReader::new();
        for data in deltas {
            let expected =
                BlockDeltaData::parse(data).map(|e| (e.index, e.delta.into_delta_text()));
            assert_eq!(reader.read_text(data), expected, "{data}");
        }
        assert_eq!(reader.repeats(), 2);
    }
}
