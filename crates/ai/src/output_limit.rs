//! Limits every API shares (pi 1.6's `simple-options` and `openai-prompt-cache`): the output
//! token limit fitted into the context window less the input, and the prompt cache key cut to
//! the 64 characters OpenAI takes.
//!
//! pi 1.6 no longer caps the default output limit at 32,000 tokens: a request asks for the
//! caller's limit or the model's, clamped to what the window leaves after the input (estimated
//! from the last reply's usage and the messages after it, else at 3.5 characters a token) and a
//! safety margin (4,096 tokens, or 15% of the input while that still leaves 32,768).
//!
//! ```
//! use oxpi_ai::output_limit::{clamp_max_tokens_to_context, clamp_prompt_cache_key};
//! use oxpi_ai::{Message, Model};
//! let mut model = Model::openai_compatible("http://127.0.0.1:8080/v1", "m");
//! model.context_window = 200_000;
//! let messages = vec![Message::user("x".repeat(35_000))]; // about 10,000 tokens
//! // 200,000 - 10,000 - 4,096 (15% of 10,000 is less than the fixed margin)
//! assert_eq!(clamp_max_tokens_to_context(&model, &messages, 1_000_000), 185_904);
//! assert_eq!(clamp_max_tokens_to_context(&model, &messages, 8_000), 8_000);
//! assert_eq!(clamp_prompt_cache_key(&"k".repeat(70)).len(), 64);
//! // A small window (a local model's 4,096): pi's fixed 4,096-token margin would leave 1 token;
//! // oxpi keeps only 15% of the input free there.
//! model.context_window = 4_096;
//! let short = vec![Message::user("x".repeat(3_500))]; // 1,000 tokens
//! assert_eq!(clamp_max_tokens_to_context(&model, &short, 1_024), 1_024);
//! assert_eq!(clamp_max_tokens_to_context(&model, &short, 4_096), 4_096 - 1_000 - 150);
//! ```

use crate::options::StreamOptions;
use crate::types::content::{AssistantContent, UserContent};
use crate::types::context::Context;
use crate::types::message::{Message, StopReason, UserMessageContent};
use crate::types::model::Model;
use crate::types::usage::Usage;

/// Tokens always kept free of the window beside the estimated input.
const CONTEXT_SAFETY_TOKENS: u64 = 4_096;
/// The share of the input kept free too (a gateway may count the input higher).
const CONTEXT_SAFETY_RATIO: f64 = 0.15;
/// The ratio margin is kept only while it leaves at least this much output; else the output is
/// capped at this size with the fixed margin alone.
const MIN_OUTPUT_WITH_RATIO_MARGIN: u64 = 32_768;
/// Below this much room, pi's fixed margin is dropped for the ratio alone (an oxpi difference:
/// small windows, see `clamp_to_window`).
const SMALL_WINDOW_FLOOR: u64 = 1_024;
/// Characters counted as one token.
const CHARS_PER_TOKEN: f64 = 3.5;
/// Characters counted for one image.
const ESTIMATED_IMAGE_CHARS: usize = 4_800;
/// Most characters of an OpenAI `prompt_cache_key`.
pub const PROMPT_CACHE_KEY_MAX_CHARS: usize = 64;

/// `key` cut to [`PROMPT_CACHE_KEY_MAX_CHARS`] characters (pi's `clampOpenAIPromptCacheKey`).
pub fn clamp_prompt_cache_key(key: &str) -> String {
    key.chars().take(PROMPT_CACHE_KEY_MAX_CHARS).collect()
}

/// `max_tokens` fitted into `model`'s context window after the estimated input of `messages`
/// (pi 1.6's `clampMaxTokensToContext`); at least 1. A model without a window (0) keeps it.
pub fn clamp_max_tokens_to_context(model: &Model, messages: &[Message], max_tokens: u64) -> u64 {
    clamp_to_window(model, estimate_context_tokens(messages), max_tokens)
}

/// `max_tokens` fitted into `model`'s window after `input` estimated tokens.
fn clamp_to_window(model: &Model, input: u64, max_tokens: u64) -> u64 {
    if model.context_window == 0 {
        return max_tokens.max(1);
    }
    let window = model.context_window as i64;
    let input = input.min(i64::MAX as u64) as i64;
    let ratio = (input as f64 * CONTEXT_SAFETY_RATIO).ceil() as i64;
    let margin = (CONTEXT_SAFETY_TOKENS as i64).max(ratio);
    let mut room = window - input - margin;
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN as i64 {
        room = (MIN_OUTPUT_WITH_RATIO_MARGIN as i64)
            .min(window - input - CONTEXT_SAFETY_TOKENS as i64);
    }
    if room < SMALL_WINDOW_FLOOR as i64 {
        // pi keeps 4,096 tokens free whatever the window: a 4,096-token window (a local model)
        // would get 1 output token. oxpi then keeps only the input's 15% free.
        room = room.max(window - input - ratio);
    }
    max_tokens.min(room.max(1) as u64)
}

/// The input tokens of `messages` as pi 1.6 estimates them (`estimateContextTokens`): the
/// context size the last successful reply reported, plus the messages after it; without one,
/// every message at 3.5 characters (UTF-16 units, as JavaScript counts) a token.
pub fn estimate_context_tokens(messages: &[Message]) -> u64 {
    estimate_with_leading(0, messages)
}

/// [`estimate_context_tokens`] of `messages` after a leading system message of `leading`
/// tokens (what pi's `normalizeContext` makes of a context's `systemPrompt` and `tools`): it
/// counts only while no reply's usage covers it.
fn estimate_with_leading(leading: u64, messages: &[Message]) -> u64 {
    let mut latest_prefix = i64::MIN;
    let mut last_usage: Option<(usize, u64)> = None;
    for (index, message) in messages.iter().enumerate() {
        if let Message::Assistant(assistant) = message {
            let tokens = context_tokens(&assistant.usage);
            if assistant.timestamp >= latest_prefix
                && !matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                )
                && tokens > 0
            {
                last_usage = Some((index, tokens));
            }
        }
        latest_prefix = latest_prefix.max(timestamp(message));
    }
    match last_usage {
        Some((index, tokens)) => messages
            .iter()
            .skip(index + 1)
            .fold(tokens, |sum, m| sum.saturating_add(message_tokens(m))),
        None => messages
            .iter()
            .fold(leading, |sum, m| sum.saturating_add(message_tokens(m))),
    }
}

impl StreamOptions {
    /// The output limit a request for `context` asks for (pi 1.6's `streamSimple`):
    /// [`max_tokens`](Self::max_tokens) when set (and not 0), else the model's, fitted by
    /// [`clamp_max_tokens_to_context`] with the system prompt and the tools counted as pi's
    /// leading system message; `None` when neither is set.
    pub fn resolved_max_tokens_in(&self, model: &Model, context: &Context) -> Option<u64> {
        let requested = self
            .max_tokens
            .filter(|m| *m > 0)
            .or((model.max_tokens > 0).then_some(model.max_tokens))?;
        let prompt = context
            .system_prompt
            .as_deref()
            .map_or(0, |p| tokens_of_chars(js_len(p)));
        let tools = (!context.tools.is_empty())
            .then(|| serde_json::to_string(&context.tools).ok())
            .flatten();
        let leading = prompt + tools_tokens(tools);
        Some(clamp_to_window(
            model,
            estimate_with_leading(leading, &context.messages),
            requested,
        ))
    }
}

fn context_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens > 0 {
        return usage.total_tokens;
    }
    usage
        .input
        .saturating_add(usage.output)
        .saturating_add(usage.cache_read)
        .saturating_add(usage.cache_write)
}

fn timestamp(message: &Message) -> i64 {
    match message {
        Message::System(m) => m.timestamp,
        Message::User(m) => m.timestamp,
        Message::Assistant(m) => m.timestamp,
        Message::ToolResult(m) => m.timestamp,
        Message::Custom(m) => m.timestamp(),
    }
}

fn js_len(text: &str) -> usize {
    text.encode_utf16().count()
}

fn tokens_of_chars(chars: usize) -> u64 {
    (chars as f64 / CHARS_PER_TOKEN).ceil() as u64
}

fn content_chars(content: &[UserContent]) -> usize {
    content
        .iter()
        .map(|block| match block {
            UserContent::Text(t) => js_len(&t.text),
            UserContent::Image(_) => ESTIMATED_IMAGE_CHARS,
        })
        .sum()
}

fn tools_tokens(json: Option<String>) -> u64 {
    json.map_or(0, |json| tokens_of_chars(js_len(&json)))
}

fn message_tokens(message: &Message) -> u64 {
    match message {
        Message::System(system) => {
            let added = system
                .tools_added
                .as_ref()
                .filter(|t| !t.is_empty())
                .and_then(|t| serde_json::to_string(t).ok());
            let removed = system
                .tools_removed
                .as_ref()
                .filter(|t| !t.is_empty())
                .and_then(|t| serde_json::to_string(t).ok());
            tokens_of_chars(js_len(&system.prompt_text()))
                + tools_tokens(added)
                + tools_tokens(removed)
        }
        Message::User(user) => tokens_of_chars(match &user.content {
            UserMessageContent::Text(text) => js_len(text),
            UserMessageContent::Blocks(blocks) => content_chars(blocks),
        }),
        Message::ToolResult(result) => tokens_of_chars(content_chars(&result.content)),
        Message::Custom(_) => 0, // never sent (`Context::for_request`)
        Message::Assistant(assistant) => tokens_of_chars(
            assistant
                .content
                .iter()
                .map(|block| match block {
                    AssistantContent::Text(t) => js_len(&t.text),
                    AssistantContent::Thinking(t) => js_len(&t.thinking),
                    AssistantContent::ToolCall(call) => {
                        let arguments = serde_json::Value::Object(call.arguments.clone());
                        js_len(&call.name) + js_len(&arguments.to_string())
                    }
                })
                .sum(),
        ),
    }
}
