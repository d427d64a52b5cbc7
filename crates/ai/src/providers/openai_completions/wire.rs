//! Chat Completions wire types: the request body (serialized) and stream chunks (parsed
//! leniently: unknown fields are ignored, missing ones default).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::providers::text::Text;

/// The request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// Model id.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Value>,
    /// Always true.
    pub stream: bool,
    /// `{"include_usage": true}` where supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<Value>,
    /// Output limit (OpenAI's newer name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    /// Output limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Function tools (`Some(vec![])` is sent as `[]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// z.ai: stream tool-call arguments (`zaiToolStream`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_stream: Option<bool>,
    /// `low` / `medium` / `high`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// OpenRouter's and Ant Ling's `{effort}`, Together's `{enabled}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Value>,
    /// Qwen's thinking switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_thinking: Option<bool>,
    /// Qwen's chat-template switches, or the model's `chatTemplateKwargs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_template_kwargs: Option<Value>,
    /// Baseten's `chatTemplateArgs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_template_args: Option<Value>,
    /// DeepSeek's and z.ai's `{type}` object, or a level string (`string-thinking`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Value>,
    /// `false` to opt out of storage (OpenAI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// Prompt cache key: the session id (see [`super::convert::build_request`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// `24h` for long cache retention where supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_retention: Option<&'static str>,
    /// `"auto"`, `"none"`, `"required"` or `{"type": "function", "function": {"name": …}}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    /// A JSON schema the reply must match (`compat.toolChoiceAsJsonSchema`: a forced tool call),
    /// written with each object's required properties first (see `schema_order`), so a
    /// grammar built from it asks for a call's `name` before its `arguments`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::schema_order::serialize_option"
    )]
    pub response_format: Option<Value>,
    /// OpenRouter's provider routing (`compat.openRouterRouting`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
}

/// One `data:` chunk of the stream, borrowing its strings from the event text where they
/// have no escapes (one chunk is parsed per delta, so this is the hot path of a stream).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ChatChunk<'a> {
    /// Response id.
    #[serde(borrow)]
    pub id: Option<Text<'a>>,
    /// The first choice (the only one oxpi asks for); further choices are skipped unparsed.
    #[serde(borrow, default, rename = "choices", deserialize_with = "first_choice")]
    pub choice: Option<ChunkChoice<'a>>,
    /// Usage, usually in the last chunk (boxed, like every rare field, to keep the chunk small:
    /// it is moved through every layer of the parser).
    pub usage: Option<Box<ChunkUsage>>,
    /// An error object some servers send mid-stream.
    pub error: Option<Box<Value>>,
}

/// A choice of a chunk.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ChunkChoice<'a> {
    /// The delta.
    #[serde(borrow, default)]
    pub delta: ChunkDelta<'a>,
    /// Set on the last content chunk; an empty string counts as absent.
    #[serde(default, deserialize_with = "finish_reason")]
    pub finish_reason: Option<FinishReason>,
    /// OpenRouter's `native_finish_reason` (the upstream model's own reason) says the output
    /// limit was hit (`length`, `max_tokens`, `max_output_tokens`, `MAX_TOKENS`), even where
    /// `finish_reason` says `tool_calls`: the reply, and its last call, was cut.
    #[serde(
        default,
        rename = "native_finish_reason",
        deserialize_with = "native_hit_limit"
    )]
    pub native_hit_limit: bool,
    /// Some servers put usage on the choice.
    pub usage: Option<Box<ChunkUsage>>,
}

/// What a chunk adds.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ChunkDelta<'a> {
    /// Text.
    #[serde(borrow)]
    pub content: Option<Text<'a>>,
    /// Reasoning (DeepSeek, llama.cpp, vLLM).
    #[serde(borrow)]
    pub reasoning_content: Option<Text<'a>>,
    /// Reasoning (OpenRouter, Ollama).
    #[serde(borrow)]
    pub reasoning: Option<Text<'a>>,
    /// Reasoning (some gateways).
    #[serde(borrow)]
    pub reasoning_text: Option<Text<'a>>,
    /// OpenRouter's structured reasoning (text, summaries, encrypted), kept for replay.
    pub reasoning_details: Option<Box<Value>>,
    /// Tool-call fragments.
    #[serde(borrow)]
    pub tool_calls: Option<ToolCallDeltas<'a>>,
}

/// The `tool_calls` of a delta: nearly always one, which is then kept without a heap
/// allocation (one per chunk saved). Built by the deserializer or from a `Vec`, one fragment
/// is always `One` (the derived equality tells `One(x)` from `Many(vec![x])`).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallDeltas<'a> {
    /// The usual case.
    One(ToolCallDelta<'a>),
    /// None, or more than one.
    Many(Vec<ToolCallDelta<'a>>),
}

impl<'a> ToolCallDeltas<'a> {
    /// The first fragment.
    pub fn first_mut(&mut self) -> Option<&mut ToolCallDelta<'a>> {
        match self {
            ToolCallDeltas::One(call) => Some(call),
            ToolCallDeltas::Many(calls) => calls.first_mut(),
        }
    }

    /// The same fragments, borrowing their strings from these.
    pub fn borrowed(&self) -> ToolCallDeltas<'_> {
        match self {
            ToolCallDeltas::One(call) => ToolCallDeltas::One(call.borrowed()),
            ToolCallDeltas::Many(calls) => {
                ToolCallDeltas::Many(calls.iter().map(ToolCallDelta::borrowed).collect())
            }
        }
    }

    /// The fragments, in order, to change.
    pub fn as_mut_slice(&mut self) -> &mut [ToolCallDelta<'a>] {
        match self {
            ToolCallDeltas::One(call) => std::slice::from_mut(call),
            ToolCallDeltas::Many(calls) => calls,
        }
    }

    /// The fragments, in order.
    pub fn as_slice(&self) -> &[ToolCallDelta<'a>] {
        match self {
            ToolCallDeltas::One(call) => std::slice::from_ref(call),
            ToolCallDeltas::Many(calls) => calls,
        }
    }
}

impl<'a> From<Vec<ToolCallDelta<'a>>> for ToolCallDeltas<'a> {
    fn from(mut calls: Vec<ToolCallDelta<'a>>) -> Self {
        match calls.pop() {
            Some(call) if calls.is_empty() => ToolCallDeltas::One(call),
            Some(call) => {
                calls.push(call);
                ToolCallDeltas::Many(calls)
            }
            None => ToolCallDeltas::Many(calls),
        }
    }
}

impl<'a> IntoIterator for ToolCallDeltas<'a> {
    type Item = ToolCallDelta<'a>;
    type IntoIter = std::iter::Chain<
        std::option::IntoIter<ToolCallDelta<'a>>,
        std::vec::IntoIter<ToolCallDelta<'a>>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        match self {
            ToolCallDeltas::One(call) => Some(call).into_iter().chain(Vec::new()),
            ToolCallDeltas::Many(calls) => None.into_iter().chain(calls),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ToolCallDeltas<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DeltasVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for DeltasVisitor<'a> {
            type Value = ToolCallDeltas<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let Some(first) = seq.next_element::<ToolCallDelta<'a>>()? else {
                    return Ok(ToolCallDeltas::Many(Vec::new()));
                };
                let Some(second) = seq.next_element::<ToolCallDelta<'a>>()? else {
                    return Ok(ToolCallDeltas::One(first));
                };
                let mut calls = vec![first, second];
                while let Some(call) = seq.next_element()? {
                    calls.push(call);
                }
                Ok(ToolCallDeltas::Many(calls))
            }
        }
        deserializer.deserialize_seq(DeltasVisitor(PhantomData))
    }
}

/// A tool-call fragment.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ToolCallDelta<'a> {
    /// Which call it belongs to.
    pub index: Option<u64>,
    /// Call id (first fragment).
    #[serde(borrow)]
    pub id: Option<Text<'a>>,
    /// Name and argument text.
    #[serde(borrow)]
    pub function: Option<FunctionDelta<'a>>,
}

/// The function part of a tool-call fragment.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct FunctionDelta<'a> {
    /// Tool name (first fragment).
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    /// Argument text; some servers send an object instead of a string.
    #[serde(borrow)]
    pub arguments: Option<ArgumentsDelta<'a>>,
}

/// Why the model stopped (`finish_reason`), as far as oxpi tells the values apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// `stop`, and any value oxpi does not know.
    Stop,
    /// `length`: the output limit was reached.
    Length,
    /// `tool_calls`, or the older `function_call`.
    ToolCalls,
    /// `content_filter`: the provider withheld the rest.
    ContentFilter,
}

fn finish_reason<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<FinishReason>, D::Error> {
    let text = Option::<Text<'de>>::deserialize(deserializer)?;
    Ok(text.and_then(|text| match text.as_str() {
        "" => None,
        "length" => Some(FinishReason::Length),
        "tool_calls" | "function_call" => Some(FinishReason::ToolCalls),
        "content_filter" => Some(FinishReason::ContentFilter),
        _ => Some(FinishReason::Stop),
    }))
}

fn native_hit_limit<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    let text = Option::<Text<'de>>::deserialize(deserializer)?;
    Ok(text.is_some_and(|text| {
        matches!(
            text.as_str(),
            "length" | "max_tokens" | "max_output_tokens" | "MAX_TOKENS"
        )
    }))
}

/// The `arguments` of a tool-call fragment: text (the standard), or a JSON value some servers
/// send whole instead.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgumentsDelta<'a> {
    /// A piece of the argument text.
    Text(Cow<'a, str>),
    /// A whole JSON value (an object, usually).
    Json(Value),
}

impl<'de: 'a, 'a> Deserialize<'de> for ArgumentsDelta<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ArgumentsVisitor;
        impl<'de> Visitor<'de> for ArgumentsVisitor {
            type Value = ArgumentsDelta<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("argument text or a JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ArgumentsDelta::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ArgumentsDelta::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(ArgumentsDelta::Text(Cow::Owned(v)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(ArgumentsDelta::Json(Value::Bool(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(ArgumentsDelta::Json(Value::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(ArgumentsDelta::Json(Value::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(ArgumentsDelta::Json(Value::from(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(ArgumentsDelta::Json)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(ArgumentsDelta::Json)
            }
        }
        deserializer.deserialize_any(ArgumentsVisitor)
    }
}

/// Keeps the first element of the `choices` array and skips the rest without building them.
fn first_choice<'de: 'a, 'a, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ChunkChoice<'a>>, D::Error> {
    struct FirstVisitor<'a>(PhantomData<&'a ()>);
    impl<'de: 'a, 'a> Visitor<'de> for FirstVisitor<'a> {
        type Value = Option<ChunkChoice<'a>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of choices")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let first = seq.next_element::<ChunkChoice<'a>>()?;
            while seq.next_element::<de::IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }
    deserializer.deserialize_any(FirstVisitor(PhantomData))
}

impl ToolCallDelta<'_> {
    /// The same fragment, borrowing its strings from this one.
    pub fn borrowed(&self) -> ToolCallDelta<'_> {
        ToolCallDelta {
            index: self.index,
            id: self.id.as_ref().map(Text::borrowed),
            function: self.function.as_ref().map(|function| FunctionDelta {
                name: function.name.as_ref().map(Text::borrowed),
                arguments: function
                    .arguments
                    .as_ref()
                    .map(|arguments| match arguments {
                        ArgumentsDelta::Text(text) => ArgumentsDelta::Text(Cow::Borrowed(text)),
                        ArgumentsDelta::Json(value) => ArgumentsDelta::Json(value.clone()),
                    }),
            }),
        }
    }

    /// The same fragment with every string owned.
    pub fn into_static(self) -> ToolCallDelta<'static> {
        ToolCallDelta {
            index: self.index,
            id: self.id.map(Text::into_static),
            function: self.function.map(|function| FunctionDelta {
                name: function.name.map(Text::into_static),
                arguments: function.arguments.map(|arguments| match arguments {
                    ArgumentsDelta::Text(text) => {
                        ArgumentsDelta::Text(Cow::Owned(text.into_owned()))
                    }
                    ArgumentsDelta::Json(value) => ArgumentsDelta::Json(value),
                }),
            }),
        }
    }
}

impl ChatChunk<'_> {
    /// The same chunk, borrowing its strings from this one.
    pub fn borrowed(&self) -> ChatChunk<'_> {
        ChatChunk {
            id: self.id.as_ref().map(Text::borrowed),
            choice: self.choice.as_ref().map(|choice| ChunkChoice {
                delta: ChunkDelta {
                    content: choice.delta.content.as_ref().map(Text::borrowed),
                    reasoning_content: choice.delta.reasoning_content.as_ref().map(Text::borrowed),
                    reasoning: choice.delta.reasoning.as_ref().map(Text::borrowed),
                    reasoning_text: choice.delta.reasoning_text.as_ref().map(Text::borrowed),
                    reasoning_details: choice.delta.reasoning_details.clone(),
                    tool_calls: choice
                        .delta
                        .tool_calls
                        .as_ref()
                        .map(ToolCallDeltas::borrowed),
                },
                finish_reason: choice.finish_reason,
                native_hit_limit: choice.native_hit_limit,
                usage: choice.usage.clone(),
            }),
            usage: self.usage.clone(),
            error: self.error.clone(),
        }
    }

    /// The same chunk with every string owned.
    pub fn into_static(self) -> ChatChunk<'static> {
        ChatChunk {
            id: self.id.map(Text::into_static),
            choice: self.choice.map(|choice| ChunkChoice {
                delta: ChunkDelta {
                    content: choice.delta.content.map(Text::into_static),
                    reasoning_content: choice.delta.reasoning_content.map(Text::into_static),
                    reasoning: choice.delta.reasoning.map(Text::into_static),
                    reasoning_text: choice.delta.reasoning_text.map(Text::into_static),
                    reasoning_details: choice.delta.reasoning_details,
                    tool_calls: choice.delta.tool_calls.map(|calls| {
                        calls
                            .into_iter()
                            .map(ToolCallDelta::into_static)
                            .collect::<Vec<_>>()
                            .into()
                    }),
                },
                finish_reason: choice.finish_reason,
                native_hit_limit: choice.native_hit_limit,
                usage: choice.usage,
            }),
            usage: self.usage,
            error: self.error,
        }
    }
}

/// Token usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ChunkUsage {
    /// Input tokens, cached included.
    pub prompt_tokens: u64,
    /// Output tokens, reasoning included.
    pub completion_tokens: u64,
    /// Input details.
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// Input token details.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PromptTokensDetails {
    /// Tokens read from the prompt cache.
    pub cached_tokens: u64,
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
