//! Gemini stream objects → events, through [`ReplyBuilder`].
//!
//! Each `data:` line is a whole `GenerateContentResponse` carrying new parts of the first
//! candidate. Text parts become text, `thought: true` parts thinking, and a `functionCall` a
//! complete tool call (start, one delta with the JSON arguments, end). A part's
//! `thoughtSignature` is kept on the block it came with (text, thinking or tool call) so it can
//! be replayed; a part that carries one gets a block of its own, as Google asks that signed parts
//! are never merged with others. The last `finishReason` decides how the reply ends, at the end
//! of the body: a stream may report `STOP` and then go on (code execution).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::wire::{FunctionCall, GenerateContentResponse, Part, UsageMetadata};
use crate::failure::Failure;
use crate::reply::ReplyBuilder;
use crate::types::content::AssistantContent;
use crate::types::message::StopReason;
use crate::types::model::Model;
use crate::types::usage::Usage;

/// Prefix of the tool-call ids made up for calls Gemini sent without one.
pub const GENERATED_ID_PREFIX: &str = "gemini_call_";

/// A fresh, process-unique tool-call id (`gemini_call_` and hex digits).
pub fn generate_call_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.write_u64(n);
    format!("{GENERATED_ID_PREFIX}{:016x}{n:x}", hasher.finish())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
}

/// Turns parsed stream objects into events and, at the end, the final message.
#[derive(Debug)]
pub struct ResponseProcessor {
    out: ReplyBuilder,
    model: Model,
    open: Option<Open>,
    call_ids: HashSet<String>,
    finish_reason: Option<String>,
    finish_message: Option<String>,
    usage: Option<UsageMetadata>,
}

impl ResponseProcessor {
    /// A processor for a reply from `model`.
    pub fn new(out: ReplyBuilder, model: &Model) -> Self {
        Self {
            out,
            model: model.clone(),
            open: None,
            call_ids: HashSet::new(),
            finish_reason: None,
            finish_message: None,
            usage: None,
        }
    }

    /// Applies one stream object. An `error` object or a blocked prompt is returned as
    /// `Err`.
    pub async fn process(&mut self, chunk: GenerateContentResponse) -> Result<(), Failure> {
        self.out.start().await;
        if let Some(error) = chunk.error {
            let transient = error
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .is_some_and(crate::failure::is_retryable_status);
            return Err(Failure::in_stream(
                format!("Gemini sent an error: {}", error_text(&error)),
                transient,
            ));
        }
        if let Some(id) = chunk.response_id.filter(|id| !id.is_empty()) {
            if self.out.message().response_id.is_none() {
                self.out.set_response_id(id);
            }
        }
        if let Some(usage) = chunk.usage_metadata {
            self.usage = Some(usage);
        }
        if let Some(feedback) = chunk.prompt_feedback {
            if let Some(reason) = feedback.block_reason.filter(|r| !r.is_empty()) {
                let note = feedback
                    .block_reason_message
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                return Err(Failure::provider(format!(
                    "Gemini blocked the prompt: {reason}{note}"
                )));
            }
        }
        let Some(candidate) = chunk.candidates.into_iter().next() else {
            return Ok(());
        };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            self.part(part).await;
        }
        if let Some(reason) = candidate.finish_reason.filter(|r| !r.is_empty()) {
            self.finish_reason = Some(reason);
            self.finish_message = candidate.finish_message.filter(|m| !m.is_empty());
        }
        Ok(())
    }

    async fn part(&mut self, part: Part) {
        let signature = part.thought_signature.filter(|s| !s.is_empty());
        if let Some(call) = part.function_call {
            self.function_call(call, signature).await;
            return;
        }
        let thought = part.thought == Some(true);
        let text = match part.text {
            Some(text) => text,
            // A part of a kind not modelled here (executableCode, …), or a bare signature.
            None if signature.is_some() => String::new(),
            None => return,
        };
        let kind = if thought { Open::Thinking } else { Open::Text };
        if text.is_empty() {
            // An empty part that only carries a signature closes the block it follows.
            if let Some(signature) = signature {
                if self.open == Some(kind) && !self.has_signature(kind) {
                    self.sign(kind, signature);
                } else {
                    tracing::debug!("Gemini signature without a {kind:?} block to attach to");
                }
                self.close().await;
            }
            return;
        }
        if signature.is_some() || self.open != Some(kind) {
            self.close().await;
        }
        match kind {
            Open::Thinking => self.out.thinking(&text).await,
            Open::Text => self.out.text(&text).await,
        }
        self.open = Some(kind);
        if let Some(signature) = signature {
            self.sign(kind, signature);
            self.close().await;
        }
    }

    fn has_signature(&self, kind: Open) -> bool {
        match (kind, self.out.message().content.last()) {
            (Open::Text, Some(AssistantContent::Text(t))) => t.text_signature.is_some(),
            (Open::Thinking, Some(AssistantContent::Thinking(t))) => t.thinking_signature.is_some(),
            _ => true,
        }
    }

    fn sign(&mut self, kind: Open, signature: String) {
        match kind {
            Open::Text => self.out.text_signature(signature),
            Open::Thinking => self.out.thinking_signature(signature),
        }
    }

    async fn close(&mut self) {
        self.out.close_open().await;
        self.open = None;
    }

    async fn function_call(&mut self, call: FunctionCall, signature: Option<String>) {
        self.close().await;
        let id = call
            .id
            .filter(|id| !id.is_empty() && !self.call_ids.contains(id))
            .unwrap_or_else(generate_call_id);
        self.call_ids.insert(id.clone());
        self.out.tool_call_start(id, call.name).await;
        let arguments = match call.args {
            None | Some(Value::Null) => "{}".to_string(),
            Some(args) => args.to_string(),
        };
        self.out.tool_call_delta(&arguments).await;
        if let Some(open) = self.out.open_tool_call_mut() {
            open.thought_signature = signature;
        }
        self.close().await;
    }

    fn usage(&self) -> Usage {
        let Some(raw) = self.usage else {
            return Usage::default();
        };
        let cached = raw.cached_content_token_count;
        let input = raw.prompt_token_count.saturating_sub(cached);
        let output = raw.candidates_token_count + raw.thoughts_token_count;
        // Gemini's own total also counts tool-use prompt tokens (code execution), which no part
        // above holds; the sum is only a fallback for a server that leaves it out.
        let total_tokens = match raw.total_token_count {
            0 => input + output + cached,
            total => total,
        };
        let mut usage = Usage {
            input,
            output,
            cache_read: cached,
            cache_write: 0,
            total_tokens,
            ..Usage::default()
        };
        self.model.calculate_cost(&mut usage);
        usage
    }

    /// Ends the reply at the end of the body. No `finishReason` → error; `STOP` → `stop`
    /// (`toolUse` when the reply has tool calls); `MAX_TOKENS` → `length`; any other reason
    /// (`SAFETY`, `RECITATION`, `MALFORMED_FUNCTION_CALL`, …) → error naming it.
    pub async fn finish(mut self) {
        let usage = self.usage();
        self.out.set_usage(usage);
        let has_calls = self.out.message().tool_calls().next().is_some();
        let stop = match self.finish_reason.as_deref() {
            None => {
                return self
                    .out
                    .fail_sending(Failure::incomplete(
                        "The stream ended without a finishReason: the response is incomplete",
                    ))
                    .await
            }
            Some("STOP") if has_calls => StopReason::ToolUse,
            Some("STOP") => StopReason::Stop,
            Some("MAX_TOKENS") => StopReason::Length,
            Some(other) => {
                let note = self
                    .finish_message
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                let text = format!("Gemini stopped the reply: {other}{note}");
                return self.out.fail_sending(Failure::provider(text)).await;
            }
        };
        self.out.finish_sending(stop).await
    }

    /// Ends the reply with an error (or abort), keeping what arrived.
    pub async fn fail(mut self, failure: Failure) {
        let usage = self.usage();
        self.out.set_usage(usage);
        self.out.fail_sending(failure).await
    }
}

/// `403 PERMISSION_DENIED: message` from a Google error object.
fn error_text(error: &Value) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| error.as_str().map(str::to_string))
        .unwrap_or_else(|| error.to_string());
    let code = error.get("code").and_then(Value::as_u64);
    let status = error.get("status").and_then(Value::as_str);
    match (code, status) {
        (Some(code), Some(status)) => format!("{code} {status}: {message}"),
        (Some(code), None) => format!("{code} {message}"),
        (None, Some(status)) => format!("{status}: {message}"),
        (None, None) => message,
    }
}
