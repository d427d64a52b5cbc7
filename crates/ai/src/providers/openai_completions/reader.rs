//! [`ChunkReader`]: stream chunks parsed with serde_json, except those that repeat the last
//! parsed chunk's [`Envelope`] around a new text or argument fragment, which are read by
//! their fragment alone.

use std::borrow::Cow;

use super::wire::{ArgumentsDelta, ChatChunk, Text, ToolCallDeltas};
use crate::providers::envelope::{Envelope, EnvelopeCache};

/// Reads the chunks of one stream, in order. See `crate::providers::envelope`.
///
/// The chunks it returns are equal to what `serde_json::from_str` returns for the same text,
/// and a chunk that does not parse gets serde_json's error.
#[derive(Debug, Default)]
pub struct ChunkReader {
    cache: EnvelopeCache<Skeleton>,
}

/// A chunk apart from its one varying string.
#[derive(Debug)]
struct Skeleton {
    /// The chunk, with its strings owned; `slot` is replaced by the new fragment.
    chunk: ChatChunk<'static>,
    slot: Slot,
}

/// Which string of the chunk varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// `choices[0].delta.content`.
    Content,
    /// `choices[0].delta.reasoning_content`.
    ReasoningContent,
    /// `choices[0].delta.reasoning`.
    Reasoning,
    /// `choices[0].delta.tool_calls[0].function.arguments`, of a chunk with one tool call.
    Arguments,
}

impl ChunkReader {
    /// A reader for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The chunk in `data` (an SSE event's data, trimmed).
    pub fn read<'s, 'd: 's>(&'s mut self, data: &'d str) -> serde_json::Result<ChatChunk<'s>> {
        if let Some(fragment) = self.cache.fragment(data) {
            let Some(skeleton) = self.cache.skeleton() else {
                // Not reached: a fragment is only found with a skeleton.
                return serde_json::from_str(data);
            };
            return Ok(skeleton.fill(fragment));
        }
        let chunk: ChatChunk<'d> = serde_json::from_str(data)?;
        self.cache
            .parsed(Skeleton::candidate(&chunk), |(slot, value)| {
                let envelope = Envelope::around(data, value)?;
                let chunk = chunk.clone().into_static();
                Some((envelope, Skeleton { chunk, slot }))
            });
        Ok(chunk)
    }

    /// How many chunks were read through their envelope instead of parsed in full.
    pub fn repeats(&self) -> u64 {
        self.cache.hits()
    }
}

impl Skeleton {
    /// The fragment an envelope could be learned around: the first of the chunk's texts that
    /// serde_json borrowed from the chunk (no escapes) and is not empty, with its slot.
    fn candidate<'d>(chunk: &ChatChunk<'d>) -> Option<(Slot, &'d str)> {
        fn borrowed<'d>(text: &Option<Text<'d>>) -> Option<&'d str> {
            match text {
                Some(Text(Cow::Borrowed(s))) if !s.is_empty() => Some(*s),
                _ => None,
            }
        }
        if chunk.error.is_some() {
            return None;
        }
        let delta = &chunk.choice.as_ref()?.delta;
        let arguments = match delta.tool_calls.as_ref().map(ToolCallDeltas::as_slice) {
            Some([call]) => match call.function.as_ref().and_then(|f| f.arguments.as_ref()) {
                Some(ArgumentsDelta::Text(Cow::Borrowed(s))) if !s.is_empty() => Some(*s),
                _ => None,
            },
            _ => None,
        };
        [
            (Slot::Arguments, arguments),
            (Slot::Content, borrowed(&delta.content)),
            (Slot::ReasoningContent, borrowed(&delta.reasoning_content)),
            (Slot::Reasoning, borrowed(&delta.reasoning)),
        ]
        .into_iter()
        .find_map(|(slot, value)| Some((slot, value?)))
    }

    /// The skeleton, borrowed, with `fragment` in its slot.
    fn fill<'s>(&'s self, fragment: Text<'s>) -> ChatChunk<'s> {
        let mut chunk = self.chunk.borrowed();
        // `learn` only makes skeletons whose slot exists.
        if let Some(delta) = chunk.choice.as_mut().map(|choice| &mut choice.delta) {
            match self.slot {
                Slot::Content => delta.content = Some(fragment),
                Slot::ReasoningContent => delta.reasoning_content = Some(fragment),
                Slot::Reasoning => delta.reasoning = Some(fragment),
                Slot::Arguments => {
                    if let Some(function) = delta
                        .tool_calls
                        .as_mut()
                        .and_then(ToolCallDeltas::first_mut)
                        .and_then(|call| call.function.as_mut())
                    {
                        function.arguments = Some(ArgumentsDelta::Text(fragment.0));
                    }
                }
            }
        }
        chunk
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_repeating_the_last_envelope_is_read_through_it_and_equals_the_parse() {
        let chunks = [
            r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"12"}}]}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"34"}}]}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":",\"b\":1}"}}]}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ];
        let mut reader = ChunkReader::new();
        for data in chunks {
            let expected: ChatChunk<'_> = serde_json::from_str(data).unwrap();
            assert_eq!(reader.read(data).unwrap(), expected, "{data}");
        }
        // Learned from `12`, the first fragment serde_json lends (no escapes); `34` and the
        // escaped fragment after it repeat that envelope.
        assert_eq!(reader.repeats(), 2);
    }
}
