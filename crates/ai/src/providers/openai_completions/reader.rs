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
#[derive(Debug)]
pub struct ChunkReader {
    cache: EnvelopeCache<Skeleton>,
}

impl Default for ChunkReader {
    fn default() -> Self {
        Self {
            // Chat Completions chunks are the data of unnamed (`message`) events.
            cache: EnvelopeCache::in_events("message"),
        }
    }
}

/// A chunk apart from its one varying string.
#[derive(Debug)]
struct Skeleton {
    /// The chunk, with its strings owned; `slot` is replaced by the new fragment.
    chunk: ChatChunk<'static>,
    slot: Slot,
    /// Set when the chunk holds nothing but its fragment (and an id): see [`Target`].
    target: Option<Target>,
}

/// Where the fragment of a chunk that holds nothing else goes: such a chunk can be applied
/// without building it (see [`ChunkReader::read_any`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The text of the reply (`choices[0].delta.content`, no other field of the delta set).
    Content,
    /// The arguments of the tool call at `index` (the chunk's one tool-call fragment, with no
    /// id or name and no other field of the delta set).
    Arguments {
        /// The fragment's `index` (0 when absent).
        index: u64,
    },
}

/// A chunk as [`ChunkReader::read_any`] reads it.
///
/// (Returned and matched at once, never stored: boxing the chunk would cost an allocation per
/// built chunk for nothing.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Read<'s> {
    /// A chunk that repeats a learned envelope and holds nothing but its fragment and id.
    Fragment(Fragment<'s>),
    /// Any other chunk.
    Chunk(ChatChunk<'s>),
}

/// A chunk that is its fragment, an id and nothing else (see [`Read::Fragment`]).
#[derive(Debug)]
pub struct Fragment<'s> {
    skeleton: &'s Skeleton,
    /// The fragment.
    pub text: Text<'s>,
}

impl<'s> Fragment<'s> {
    /// Where the fragment goes.
    pub fn target(&self) -> Target {
        // Fragments are only made from skeletons with a target.
        self.skeleton.target.unwrap_or(Target::Content)
    }

    /// The chunk's id.
    pub fn id(&self) -> Option<Text<'s>> {
        self.skeleton.chunk.id.as_ref().map(Text::borrowed)
    }

    /// The whole chunk, as [`ChunkReader::read`] returns it.
    pub fn into_chunk(self) -> ChatChunk<'s> {
        self.skeleton.fill(self.text)
    }
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
        self.parse(data)
    }

    /// Like [`read`](Self::read), but a chunk that repeats a learned envelope and holds
    /// nothing but its fragment is handed out as that fragment, without building the chunk
    /// (most chunks of a stream: one per delta).
    pub fn read_any<'s, 'd: 's>(&'s mut self, data: &'d str) -> serde_json::Result<Read<'s>> {
        if let Some(text) = self.cache.fragment(data) {
            let Some(skeleton) = self.cache.skeleton() else {
                // Not reached: a fragment is only found with a skeleton.
                return serde_json::from_str(data).map(Read::Chunk);
            };
            return Ok(match skeleton.target {
                Some(_) => Read::Fragment(Fragment { skeleton, text }),
                None => Read::Chunk(skeleton.fill(text)),
            });
        }
        self.parse(data).map(Read::Chunk)
    }

    /// The chunk in `data` when it repeats a learned envelope that holds nothing but its
    /// fragment (what [`read_any`](Self::read_any) returns as [`Read::Fragment`]); `None`,
    /// having parsed and learned nothing, for any other chunk.
    pub fn fragment<'s, 'd: 's>(&'s mut self, data: &'d str) -> Option<Fragment<'s>> {
        let text = self
            .cache
            .fragment_if(data, |skeleton| skeleton.target.is_some())?;
        let skeleton = self.cache.skeleton()?;
        Some(Fragment { skeleton, text })
    }

    /// [`fragment`](Self::fragment) for the event `input` begins with (the stream's text,
    /// read by a decoder between events), with the event's length; `None` when it is not an
    /// event of such an envelope in the common shape.
    pub fn fragment_at<'s, 'd: 's>(&'s mut self, input: &'d str) -> Option<(Fragment<'s>, usize)> {
        let (text, skeleton, len) = self
            .cache
            .fragment_at_if(input, |skeleton| skeleton.target.is_some())?;
        Some((Fragment { skeleton, text }, len))
    }

    /// Whether `input` begins with a chunk's event of such an envelope cut before its end (the
    /// text was too short for it).
    pub fn cut_short(&self, input: &str) -> bool {
        self.cache
            .cut_short_at_if(input, |skeleton| skeleton.target.is_some())
    }

    /// Parses `data` in full, learning its envelope when the cache is learning.
    fn parse<'s, 'd: 's>(&'s mut self, data: &'d str) -> serde_json::Result<ChatChunk<'s>> {
        let chunk: ChatChunk<'d> = serde_json::from_str(data)?;
        self.cache
            .parsed(Skeleton::candidate(&chunk), |(slot, value)| {
                let envelope = Envelope::around(data, value)?;
                let chunk = chunk.clone().into_static();
                let target = Skeleton::target(&chunk, slot);
                Some((
                    envelope,
                    Skeleton {
                        chunk,
                        slot,
                        target,
                    },
                ))
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

    /// The target of a chunk whose `slot` holds its only content: no error, usage, finish
    /// reason, reasoning of any kind, and for arguments no text and one tool-call fragment
    /// without id or name (empty strings count as absent, as [`ChunkProcessor::process`]
    /// skips them). Applying such a chunk sets the response id and appends the fragment.
    ///
    /// [`ChunkProcessor::process`]: super::stream::ChunkProcessor::process
    fn target(chunk: &ChatChunk<'_>, slot: Slot) -> Option<Target> {
        fn blank(text: &Option<Text<'_>>) -> bool {
            text.as_ref().is_none_or(|text| text.as_str().is_empty())
        }
        let choice = chunk.choice.as_ref()?;
        let delta = &choice.delta;
        let plain = chunk.error.is_none()
            && chunk.usage.is_none()
            && choice.usage.is_none()
            && choice.finish_reason.is_none()
            && !choice.native_hit_limit
            && blank(&delta.reasoning_content)
            && blank(&delta.reasoning)
            && blank(&delta.reasoning_text)
            && delta.reasoning_details.is_none();
        if !plain {
            return None;
        }
        match slot {
            Slot::Content => delta.tool_calls.is_none().then_some(Target::Content),
            Slot::Arguments => {
                let [call] = delta.tool_calls.as_ref()?.as_slice() else {
                    return None;
                };
                let function = call.function.as_ref()?;
                (blank(&delta.content) && blank(&call.id) && blank(&function.name)).then_some(
                    Target::Arguments {
                        index: call.index.unwrap_or(0),
                    },
                )
            }
            Slot::ReasoningContent | Slot::Reasoning => None,
        }
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

    #[test]
    fn only_chunks_that_are_their_fragment_alone_are_handed_out_as_fragments() {
        let text = |t: &str| {
            format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{{"content":"{t}"}}}}]}}"#)
        };
        let args = |i: u8, t: &str| {
            format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":{i},"function":{{"arguments":"{t}"}}}}]}}}}]}}"#
            )
        };
        let finish = |t: &str| {
            format!(r#"{{"choices":[{{"delta":{{"content":"{t}"}},"finish_reason":"stop"}}]}}"#)
        };
        let mut reader = ChunkReader::new();
        let mut kinds = Vec::new();
        for data in [
            text("a"),
            text("b"),
            text(r#"c\"d"#),
            args(2, "x"),
            args(2, "y"),
            finish("e"),
            finish("f"),
        ] {
            let read = reader.read_any(&data).unwrap();
            kinds.push(match read {
                Read::Fragment(fragment) => {
                    let target = fragment.target();
                    let id = fragment.id().map(Text::into_owned);
                    let text = fragment.text.as_str().to_string();
                    let expected: ChatChunk<'_> = serde_json::from_str(&data).unwrap();
                    assert_eq!(fragment.into_chunk(), expected);
                    format!("{target:?} {id:?} {text}")
                }
                Read::Chunk(_) => "chunk".to_string(),
            });
        }
        assert_eq!(
            kinds,
            [
                "chunk",
                r#"Content Some("c") b"#,
                r#"Content Some("c") c"d"#,
                "chunk",
                "Arguments { index: 2 } None y",
                "chunk",
                // A finish reason is more than the fragment: the chunk is built.
                "chunk",
            ]
        );
    }
}
