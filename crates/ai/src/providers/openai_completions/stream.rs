//! Chat Completions stream chunks → events, through [`ReplyBuilder`].

use std::collections::HashSet;

use serde_json::Value;

use super::compat::OpenAiCompat;
use super::reader::{ChunkReader, Fragment, Read, Target};
use super::text_tool_calls::{parse_text_tool_calls, TextPart, TextToolCallDetector};
use super::wire::{ArgumentsDelta, ChatChunk, ChunkUsage, FinishReason, Text};
use crate::diagnostics::quote_chunk;
use crate::failure::Failure;
use crate::reply::{Held, ReplyBuilder};
use crate::types::content::{AssistantContent, ThinkingContent};
use crate::types::message::StopReason;
use crate::types::model::Model;
use crate::types::usage::Usage;

/// Turns parsed chunks into events and, at the end, the final message.
#[derive(Debug)]
pub struct ChunkProcessor {
    out: ReplyBuilder,
    model: Model,
    tool_names: Vec<String>,
    text_calls: Option<TextToolCallDetector>,
    current_tool: Option<u64>,
    finished_tools: HashSet<u64>,
    finish_reason: Option<FinishReason>,
    usage: Option<ChunkUsage>,
    /// OpenRouter's `reasoning_details` so far, merged as pi merges them.
    details: Vec<Value>,
    /// The thinking block that carries them (as its signature, written at the end).
    details_block: Option<usize>,
    /// The field thinking that arrived as `reasoning` is replayed in.
    replay_reasoning_as: Option<String>,
    /// Name each thinking block's reasoning field in its signature (pi's Chat Completions
    /// replay key; not for Mistral, whose thinking pi keeps unsigned).
    sign_reasoning: bool,
}

impl ChunkProcessor {
    /// A processor for a reply from `model` to a request that offered `tool_names`.
    pub fn new(
        out: ReplyBuilder,
        model: &Model,
        compat: &OpenAiCompat,
        tool_names: Vec<String>,
    ) -> Self {
        Self {
            out,
            model: model.clone(),
            tool_names,
            text_calls: compat
                .tool_calls_in_text
                .then(TextToolCallDetector::default),
            current_tool: None,
            finished_tools: HashSet::new(),
            finish_reason: None,
            usage: None,
            details: Vec::new(),
            details_block: None,
            replay_reasoning_as: compat.replay_reasoning_as.clone(),
            sign_reasoning: true,
        }
    }

    /// Leaves thinking blocks unsigned (Mistral's stream read through this processor).
    pub fn without_reasoning_signatures(mut self) -> Self {
        self.sign_reasoning = false;
        self
    }

    /// True once a finish_reason arrived.
    pub fn has_finish_reason(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Applies one chunk, taking the texts it uses out of it (the chunk is borrowed rather than
    /// moved: it is large, and a delta is small). An error chunk or an impossible fragment is
    /// returned as `Err`.
    pub async fn process(&mut self, chunk: &mut ChatChunk<'_>) -> Result<(), Failure> {
        self.out.start().await;
        if let Some(error) = &chunk.error {
            // OpenRouter and others put the upstream's status in `code`.
            let transient = error
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .is_some_and(crate::failure::is_retryable_status);
            return Err(Failure::in_stream(
                format!("the server sent an error: {}", error_text(error)),
                transient,
            ));
        }
        self.response_id(chunk.id.take());
        if let Some(usage) = &chunk.usage {
            self.usage = Some(**usage);
        }
        let Some(choice) = chunk.choice.as_mut() else {
            return Ok(());
        };
        if let Some(usage) = &choice.usage {
            self.usage = Some(**usage);
        }
        let delta = &mut choice.delta;
        // The first non-empty reasoning field (some servers send the same text in two); its
        // name is the thinking block's signature, the field it is replayed in.
        let fields = [
            ("reasoning_content", delta.reasoning_content.take()),
            ("reasoning", delta.reasoning.take()),
            ("reasoning_text", delta.reasoning_text.take()),
        ];
        let reasoning = fields
            .into_iter()
            .find_map(|(field, text)| Some((field, text.filter(|t| !t.as_str().is_empty())?)));
        if let Some((field, thinking)) = reasoning {
            self.out.thinking(thinking.0).await;
            let index = self.out.message().content.len().saturating_sub(1);
            let fresh = matches!(
                self.out.message().content.get(index),
                Some(AssistantContent::Thinking(t)) if t.thinking_signature.is_none()
            );
            if fresh && self.sign_reasoning && self.details_block != Some(index) {
                let field = match (&self.replay_reasoning_as, field) {
                    (Some(alias), "reasoning") => alias.clone(),
                    _ => field.to_string(),
                };
                self.out.replace_thinking_signature(index, Some(field));
            }
        }
        if let Some(details) = delta.reasoning_details.take() {
            self.reasoning_details(*details).await;
        }
        if let Some(text) = delta.content.take() {
            self.content(text).await;
        }
        let calls = match delta.tool_calls.as_mut() {
            Some(calls) => calls.as_mut_slice(),
            None => &mut [],
        };
        for (position, call) in calls.iter_mut().enumerate() {
            let index = call.index.unwrap_or(position as u64);
            let (name, arguments) = match call.function.as_mut() {
                Some(function) => (function.name.take(), function.arguments.take()),
                None => (None, None),
            };
            let new_id = call.id.take().filter(|id| !id.as_str().is_empty());
            let open_id = self
                .out
                .open_tool_call_mut()
                .filter(|_| self.current_tool == Some(index))
                .map(|tc| tc.id.as_str());
            let continues = match (open_id, &new_id) {
                (Some(_), None) => true,
                (Some(open), Some(new)) => open == new.as_str(),
                (None, _) => false,
            };
            if !continues {
                if self.finished_tools.contains(&index) && new_id.is_none() {
                    return Err(Failure::parse(format!(
                        "a tool-call fragment for index {index} arrived after that call had ended"
                    )));
                }
                if let Some(previous) = self.current_tool.take() {
                    self.finished_tools.insert(previous);
                }
                let id = new_id.map_or_else(generate_call_id, Text::into_owned);
                let name = name.map(Text::into_owned).unwrap_or_default();
                self.out.tool_call_start(id, name).await;
                self.current_tool = Some(index);
            } else if let Some(name) = name.filter(|n| !n.as_str().is_empty()) {
                if let Some(open) = self.out.open_tool_call_mut() {
                    if open.name.is_empty() {
                        open.name = name.into_owned();
                    }
                }
            }
            match arguments {
                Some(ArgumentsDelta::Text(fragment)) => self.out.tool_call_delta(fragment).await,
                Some(ArgumentsDelta::Json(Value::Null)) | None => {}
                Some(ArgumentsDelta::Json(object)) => {
                    self.out.tool_call_delta(object.to_string()).await
                }
            }
        }
        if let Some(reason) = choice.finish_reason {
            // OpenRouter may say `tool_calls` for a reply the upstream model was cut off in.
            self.finish_reason = Some(if choice.native_hit_limit {
                FinishReason::Length
            } else {
                reason
            });
        }
        Ok(())
    }

    /// Applies a chunk that is its fragment and id alone ([`Read::Fragment`]): what
    /// [`process`](Self::process) does with that chunk, without building it. A fragment of
    /// a tool call other than the open one takes the general path.
    pub async fn process_fragment(&mut self, fragment: Fragment<'_>) -> Result<(), Failure> {
        let target = fragment.target();
        if let Target::Arguments { index } = target {
            let continues =
                self.current_tool == Some(index) && self.out.open_tool_call_mut().is_some();
            if !continues {
                return self.process(&mut fragment.into_chunk()).await;
            }
        }
        // Both are done by the first chunk: checked here without a call per fragment.
        if !self.out.is_started() {
            self.out.start().await;
        }
        if self.out.message().response_id.is_none() {
            self.response_id(fragment.id());
        }
        match target {
            Target::Content => self.content(fragment.text).await,
            Target::Arguments { .. } => self.out.tool_call_delta(fragment.text.0).await,
        }
        Ok(())
    }

    /// What [`process_data`](Self::process_data) does with a chunk that is a fragment of the
    /// open text or tool call (the common chunk of a long reply), when that needs no waiting:
    /// `true` when it applied it; `false` when it applied nothing (another chunk, a block to
    /// open, text held for tool-call detection, a full batch), and then `process_data` reads
    /// the chunk again.
    pub fn process_data_now(&mut self, reader: &mut ChunkReader, data: &str) -> bool {
        if !self.out.is_started() {
            return false;
        }
        let Some(fragment) = reader.fragment(data) else {
            return false;
        };
        self.apply_fragment_now(fragment)
    }

    /// [`process_data_now`](Self::process_data_now) for the events `text` begins with (the
    /// stream's text, read by a decoder between events), read in place by
    /// [`ChunkReader::fragment_at`] and applied under one lock of the sink's batch, up to the
    /// first that is not such a fragment: how many bytes they take.
    pub fn process_events_in_place(&mut self, reader: &mut ChunkReader, text: &str) -> usize {
        if !self.out.is_started() {
            return 0;
        }
        let Some(batch) = self.out.held_batch() else {
            return 0;
        };
        let mut held = batch.lock();
        let mut used = 0;
        while let Some((fragment, len)) = reader.fragment_at(&text[used..]) {
            if !self.apply_fragment_into(&mut held, fragment) {
                break;
            }
            used += len;
        }
        used
    }

    fn apply_fragment_now(&mut self, fragment: Fragment<'_>) -> bool {
        match self.out.held_batch() {
            Some(batch) => self.apply_fragment_into(&mut batch.lock(), fragment),
            None => false,
        }
    }

    fn apply_fragment_into(&mut self, held: &mut Held<'_>, fragment: Fragment<'_>) -> bool {
        let id = fragment.id();
        let applied = match fragment.target() {
            Target::Arguments { index } if self.current_tool == Some(index) => {
                self.out.tool_call_delta_into(held, fragment.text.0).is_ok()
            }
            Target::Content if self.text_calls.is_none() => {
                self.out.text_into(held, fragment.text.0).is_ok()
            }
            Target::Arguments { .. } | Target::Content => false,
        };
        if applied && self.out.message().response_id.is_none() {
            self.response_id(id);
        }
        applied
    }

    /// Reads the chunk in `data` with `reader` and applies it: [`process_fragment`]
    /// (Self::process_fragment) for a chunk that is a fragment alone, [`process`](Self::process)
    /// for any other. A chunk that does not parse is a parse failure quoting it.
    pub async fn process_data(
        &mut self,
        reader: &mut ChunkReader,
        data: &str,
    ) -> Result<(), Failure> {
        match reader.read_any(data) {
            Ok(Read::Fragment(fragment)) => self.process_fragment(fragment).await,
            Ok(Read::Chunk(mut chunk)) => self.process(&mut chunk).await,
            Err(e) => Err(Failure::parse(format!(
                "Could not parse a stream chunk ({e}): {}",
                quote_chunk(data)
            ))),
        }
    }

    /// The first non-empty id becomes the reply's response id.
    fn response_id(&mut self, id: Option<Text<'_>>) {
        if let Some(id) = id.filter(|id| !id.as_str().is_empty()) {
            if self.out.message().response_id.is_none() {
                self.out.set_response_id(id.into_owned());
            }
        }
    }

    /// Appends reply text (held for tool-call detection where the model writes calls as text).
    async fn content(&mut self, text: Text<'_>) {
        if text.as_str().is_empty() {
            return;
        }
        match &mut self.text_calls {
            Some(detector) => {
                let now = detector.push(text.as_str());
                self.out.text(now).await;
            }
            None => self.out.text(text.0).await,
        }
    }

    /// Keeps OpenRouter's valid reasoning details (merging consecutive text and summary
    /// pieces) and makes sure a thinking block exists to carry them.
    async fn reasoning_details(&mut self, details: Value) {
        let Value::Array(details) = details else {
            return;
        };
        for detail in details.into_iter().filter(is_reasoning_detail) {
            if self.details_block.is_none() {
                let existing = self
                    .out
                    .message()
                    .content
                    .iter()
                    .position(|c| matches!(c, AssistantContent::Thinking(_)));
                let index = match existing {
                    Some(index) => index,
                    None => {
                        self.out
                            .thinking_start_with(ThinkingContent {
                                thinking: String::new(),
                                thinking_signature: Some(String::new()),
                                redacted: None,
                            })
                            .await
                    }
                };
                self.details_block = Some(index);
            }
            merge_detail(&mut self.details, detail);
        }
    }

    /// Writes the reasoning details into their thinking block's signature (pi: JSON text).
    fn store_details(&mut self) {
        if let (Some(index), false) = (self.details_block, self.details.is_empty()) {
            let json = Value::Array(std::mem::take(&mut self.details)).to_string();
            self.out.replace_thinking_signature(index, Some(json));
        }
    }

    fn usage(&self) -> Usage {
        let Some(raw) = self.usage else {
            return Usage::default();
        };
        let cached = raw
            .prompt_tokens_details
            .map(|d| d.cached_tokens)
            .unwrap_or(0);
        let input = raw.prompt_tokens.saturating_sub(cached);
        let mut usage = Usage {
            input,
            output: raw.completion_tokens,
            cache_read: cached,
            cache_write: 0,
            total_tokens: input + raw.completion_tokens + cached,
            ..Usage::default()
        };
        self.model.calculate_cost(&mut usage);
        usage
    }

    /// Releases text held for tool-call detection: its calls to offered tools as tool calls and
    /// the prose around them as text, or all of it as text when it holds no call. Returns true
    /// when it produced tool calls.
    async fn release_held_text(&mut self) -> bool {
        let Some(detector) = &mut self.text_calls else {
            return false;
        };
        let held = detector.take_held();
        if held.is_empty() {
            return false;
        }
        let names: Vec<&str> = self.tool_names.iter().map(String::as_str).collect();
        let Some(parts) = parse_text_tool_calls(&held, &names) else {
            self.out.text(&held).await;
            return false;
        };
        for part in parts {
            match part {
                TextPart::Text(text) => self.out.text(&text).await,
                TextPart::Call(name, arguments) => {
                    self.out.tool_call_start(generate_call_id(), name).await;
                    self.out
                        .tool_call_delta(&Value::Object(arguments).to_string())
                        .await;
                }
            }
        }
        true
    }

    /// Ends the reply after `[DONE]` or the end of the body. No finish_reason → error.
    pub async fn finish(mut self) {
        let text_calls = self.release_held_text().await;
        self.store_details();
        let usage = self.usage();
        self.out.set_usage(usage);
        let Some(reason) = self.finish_reason else {
            return self
                .out
                .fail_sending(Failure::incomplete(
                    "The stream ended without a finish_reason: the response is incomplete",
                ))
                .await;
        };
        let has_calls = self.out.message().tool_calls().next().is_some();
        let stop = match reason {
            FinishReason::Length => StopReason::Length,
            FinishReason::ToolCalls => StopReason::ToolUse,
            FinishReason::ContentFilter => {
                return self
                    .out
                    .fail_sending(Failure::provider(
                        "The provider stopped the reply: content_filter",
                    ))
                    .await
            }
            FinishReason::Stop if has_calls || text_calls => StopReason::ToolUse,
            FinishReason::Stop => StopReason::Stop,
        };
        self.out.finish_sending(stop).await
    }

    /// Ends the reply with an error (or abort), keeping what arrived.
    pub async fn fail(mut self, failure: Failure) {
        if let Some(detector) = &mut self.text_calls {
            let held = detector.take_held();
            self.out.text(&held).await;
        }
        self.store_details();
        let usage = self.usage();
        self.out.set_usage(usage);
        self.out.fail_sending(failure).await
    }
}

/// pi's `isOpenAIReasoningDetail`: an object with a known `type` and the field it needs, and
/// well-typed `id`, `format`, `index` when present.
pub(crate) fn is_reasoning_detail(detail: &Value) -> bool {
    let Some(object) = detail.as_object() else {
        return false;
    };
    let is = |key: &str, ok: fn(&Value) -> bool| object.get(key).is_none_or(ok);
    let common = is("id", |v| v.is_null() || v.is_string())
        && is("format", Value::is_string)
        && is("index", Value::is_number);
    common
        && match object.get("type").and_then(Value::as_str) {
            Some("reasoning.summary") => object.get("summary").is_some_and(Value::is_string),
            Some("reasoning.encrypted") => object.get("data").is_some_and(Value::is_string),
            Some("reasoning.text") => {
                object.get("text").is_some_and(Value::is_string)
                    && is("signature", |v| v.is_null() || v.is_string())
            }
            _ => false,
        }
}

/// Appends `detail`, merging a text or summary piece into the one before of the same type
/// (pi's `appendOpenAIReasoningDetail`).
fn merge_detail(details: &mut Vec<Value>, detail: Value) {
    let kind = detail.get("type").and_then(Value::as_str).unwrap_or("");
    let field = match kind {
        "reasoning.text" => "text",
        "reasoning.summary" => "summary",
        _ => "",
    };
    let last = details
        .last_mut()
        .filter(|last| !field.is_empty() && last.get("type") == detail.get("type"));
    let (Some(Value::Object(last)), Value::Object(piece)) = (last, &detail) else {
        details.push(detail);
        return;
    };
    let add = piece.get(field).and_then(Value::as_str).unwrap_or("");
    if let Some(Value::String(text)) = last.get_mut(field) {
        text.push_str(add);
    }
    if field == "text" {
        let empty = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.as_str() == Some(""));
        if empty(last.get("signature")) {
            if let Some(signature) = piece.get("signature").filter(|v| !empty(Some(v))) {
                last.insert("signature".into(), signature.clone());
            }
        }
    }
    for key in ["id", "index"] {
        let missing = last.get(key).is_none_or(Value::is_null);
        if let Some(value) = piece.get(key).filter(|_| missing) {
            last.insert(key.into(), value.clone());
        }
    }
    let no_format = last
        .get("format")
        .is_none_or(|v| v.as_str().is_none_or(str::is_empty));
    if let Some(format) = piece.get("format").filter(|_| no_format) {
        last.insert("format".into(), format.clone());
    }
}

fn error_text(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| error.as_str().map(str::to_string))
        .unwrap_or_else(|| error.to_string())
}

/// A fresh tool-call id (`call_` and 24 hex digits) for servers that send none.
pub fn generate_call_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    let a = hasher.finish();
    hasher.write_u64(a);
    let b = hasher.finish();
    format!("call_{a:016x}{:08x}", b as u32)
}
