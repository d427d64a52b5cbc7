//! [`BlockDeltaReader`]: `content_block_delta` events read as [`BlockDeltaData`], through the
//! [`Envelope`] of the last one when an event repeats it around a new fragment.

use std::borrow::Cow;

use super::wire::{BlockDeltaData, FlatDelta};
use crate::providers::envelope::{Envelope, EnvelopeCache};
use crate::providers::text::Text;

/// Reads the `content_block_delta` events of one stream, in order. See
/// [`crate::providers::envelope`].
#[derive(Debug, Default)]
pub struct BlockDeltaReader {
    cache: EnvelopeCache<Skeleton>,
}

/// A delta event apart from its fragment: the block index and the delta type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Skeleton {
    index: u64,
    kind: DeltaKind,
}

/// The delta types whose one field is the fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeltaKind {
    Text,
    Thinking,
    Signature,
    InputJson,
}

impl DeltaKind {
    const ALL: [DeltaKind; 4] = [
        DeltaKind::Text,
        DeltaKind::Thinking,
        DeltaKind::Signature,
        DeltaKind::InputJson,
    ];

    /// The delta's `type`.
    fn name(self) -> &'static str {
        match self {
            DeltaKind::Text => "text_delta",
            DeltaKind::Thinking => "thinking_delta",
            DeltaKind::Signature => "signature_delta",
            DeltaKind::InputJson => "input_json_delta",
        }
    }
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
        let event = BlockDeltaData::parse(data)?;
        self.cache.parsed(|| Skeleton::learn(data, &event));
        Some(event)
    }

    /// How many events were read through their envelope instead of parsed in full.
    pub fn repeats(&self) -> u64 {
        self.cache.hits()
    }
}

impl Skeleton {
    /// The envelope of the event's fragment, when the delta has exactly the one field of its
    /// type and that field was borrowed from `data`.
    fn learn<'d>(data: &'d str, event: &BlockDeltaData<'d>) -> Option<(Envelope, Skeleton)> {
        let delta = &event.delta;
        let kind = DeltaKind::ALL
            .into_iter()
            .find(|kind| kind.name() == delta.kind.as_str())?;
        let mut fields = [
            (DeltaKind::Text, &delta.text),
            (DeltaKind::Thinking, &delta.thinking),
            (DeltaKind::Signature, &delta.signature),
            (DeltaKind::InputJson, &delta.partial_json),
        ]
        .into_iter()
        .filter(|(_, field)| field.is_some());
        let value = match (fields.next(), fields.next()) {
            (Some((field_kind, Some(Text(Cow::Borrowed(value))))), None)
                if field_kind == kind && !value.is_empty() =>
            {
                *value
            }
            _ => return None,
        };
        let envelope = Envelope::around(data, value)?;
        Some((
            envelope,
            Skeleton {
                index: event.index,
                kind,
            },
        ))
    }

    /// The event with `fragment` as its delta's field.
    fn fill(self, fragment: Text<'_>) -> BlockDeltaData<'_> {
        let mut delta = FlatDelta {
            kind: Text(Cow::Borrowed(self.kind.name())),
            text: None,
            thinking: None,
            signature: None,
            partial_json: None,
        };
        let field = match self.kind {
            DeltaKind::Text => &mut delta.text,
            DeltaKind::Thinking => &mut delta.thinking,
            DeltaKind::Signature => &mut delta.signature,
            DeltaKind::InputJson => &mut delta.partial_json,
        };
        *field = Some(fragment);
        BlockDeltaData {
            kind: Text(Cow::Borrowed("content_block_delta")),
            index: self.index,
            delta,
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
    }
}
