//! Context → Mistral chat request, as pi's `mistral-conversations` writes it: thinking replayed
//! as `thinking` chunks, tool results as text with a `[tool error] ` prefix, 9-character tool
//! call ids, `reasoning_effort` for reasoning models with a `thinking_level_map` (its `off`
//! entry when no level is asked) and `prompt_mode: "reasoning"` for the other reasoning models,
//! the session id as `prompt_cache_key` unless caching is off.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::wire::ChatRequest;
use crate::options::{CacheRetention, ReasoningLevel, StreamOptions, ToolChoice};
use crate::providers::openai_responses::replay::short_hash;
use crate::providers::shared::result_text_and_images;
use crate::transform::transform_messages;
use crate::types::content::{AssistantContent, UserContent};
use crate::types::context::Context;
use crate::types::message::{Message, ToolResultMessage, UserMessageContent};
use crate::types::model::{InputKind, Model};

/// The length of a Mistral tool-call id.
const TOOL_ID_LENGTH: usize = 9;

/// pi 1.6's Mistral id for `id` at `attempt` (0 first, more after a collision): the id's letters
/// and digits when they are exactly nine, else the first nine of pi's `shortHash` of them.
fn derive_tool_id(id: &str, attempt: usize) -> String {
    let letters: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && letters.len() == TOOL_ID_LENGTH {
        return letters;
    }
    let base = if letters.is_empty() { id } else { &letters };
    let seed = if attempt == 0 {
        base.to_string()
    } else {
        format!("{base}:{attempt}")
    };
    short_hash(&seed)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(TOOL_ID_LENGTH)
        .collect()
}

/// Maps each tool-call id of one request to a distinct Mistral id ([`derive_tool_id`]).
#[derive(Default)]
struct ToolIds {
    ids: HashMap<String, String>,
    owners: HashMap<String, String>,
}

impl ToolIds {
    fn map(&mut self, id: &str) -> String {
        if let Some(known) = self.ids.get(id) {
            return known.clone();
        }
        // Bounded: each attempt seeds a different hash; the limit only guards against a loop.
        let mut candidate = derive_tool_id(id, 0);
        for attempt in 1..=1000 {
            match self.owners.get(&candidate) {
                Some(owner) if owner != id => candidate = derive_tool_id(id, attempt),
                _ => break,
            }
        }
        self.ids.insert(id.to_string(), candidate.clone());
        self.owners.insert(candidate.clone(), id.to_string());
        candidate
    }
}

/// `reasoning_effort` and `prompt_mode` as pi 1.6 chooses them: the level clamped to what the
/// model takes; with a `thinking_level_map`, the level's entry (`high` when it has none) or the
/// `off` entry without a level; without a map, `prompt_mode: "reasoning"` when a level is asked.
fn reasoning_fields(
    model: &Model,
    level: Option<ReasoningLevel>,
) -> (Option<&'static str>, Option<String>) {
    if !model.reasoning {
        return (None, None);
    }
    let level = level.and_then(|l| l.clamped_for(model, false));
    match &model.thinking_level_map {
        Some(map) => {
            let effort = match level {
                Some(level) => Some(
                    map.get(level.as_str())
                        .cloned()
                        .flatten()
                        .unwrap_or_else(|| "high".to_string()),
                ),
                None => map.get("off").cloned().flatten(),
            };
            (None, effort)
        }
        None => (level.map(|_| "reasoning"), None),
    }
}

/// Whether the session id goes out as `prompt_cache_key` / `x-affinity`: a session id and
/// caching not turned off.
pub fn prompt_caching(options: &StreamOptions) -> Option<&str> {
    options
        .session_id
        .as_deref()
        .filter(|_| options.resolved_cache_retention() != CacheRetention::None)
}

/// Text in place of images a model does not accept.
pub const IMAGE_OMITTED: &str = "(image omitted: model does not support images)";

/// Builds the request body.
pub fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> ChatRequest {
    let images = model.input.contains(&InputKind::Image);
    let mut messages = Vec::with_capacity(context.messages.len() + 1);
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        messages.push(json!({"role": "system", "content": system}));
    }
    let mut ids = ToolIds::default();
    for message in transform_messages(&context.messages, model, |id| ids.map(id)).iter() {
        if let Some(converted) = convert_message(message, images) {
            messages.push(converted);
        }
    }
    let tools = context
        .tools
        .iter()
        .map(|tool| {
            // `strict: false` as pi 1.6 sends it (strict tools are opt-in there).
            json!({"type": "function", "function": {
                "name": tool.name, "description": tool.description, "parameters": tool.parameters,
                "strict": false,
            }})
        })
        .collect();
    let (prompt_mode, reasoning_effort) = reasoning_fields(model, options.reasoning);
    ChatRequest {
        model: model.id.clone(),
        stream: true,
        messages,
        tools,
        temperature: options.temperature,
        max_tokens: options.resolved_max_tokens_in(model, context),
        tool_choice: options.tool_choice.as_ref().map(|choice| match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("any"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        }),
        prompt_mode,
        reasoning_effort,
        prompt_cache_key: prompt_caching(options).map(str::to_string),
    }
}

fn convert_message(message: &Message, images: bool) -> Option<Value> {
    match message {
        // Replayed into the prompt and tools before a provider sees the context
        // (`Context::for_request`).
        Message::System(_) => None,
        Message::Custom(_) => None, // dropped by `Context::for_request`
        Message::User(user) => match &user.content {
            UserMessageContent::Text(text) => Some(json!({"role": "user", "content": text})),
            UserMessageContent::Blocks(blocks) => {
                let parts: Vec<Value> = blocks
                    .iter()
                    .filter_map(|block| match block {
                        UserContent::Text(t) => Some(json!({"type": "text", "text": t.text})),
                        UserContent::Image(img) if images => Some(json!({
                            "type": "image_url",
                            "image_url": format!("data:{};base64,{}", img.mime_type, img.data),
                        })),
                        UserContent::Image(_) => None,
                    })
                    .collect();
                if !parts.is_empty() {
                    Some(json!({"role": "user", "content": parts}))
                } else if blocks.iter().any(|b| matches!(b, UserContent::Image(_))) {
                    Some(json!({"role": "user", "content": IMAGE_OMITTED}))
                } else {
                    None
                }
            }
        },
        Message::Assistant(assistant) => {
            let mut parts = Vec::new();
            let mut calls = Vec::new();
            for block in &assistant.content {
                match block {
                    AssistantContent::Text(t) if !t.text.trim().is_empty() => {
                        parts.push(json!({"type": "text", "text": t.text}));
                    }
                    AssistantContent::Thinking(t) if !t.thinking.trim().is_empty() => {
                        parts.push(json!({"type": "thinking", "thinking": [{"type": "text", "text": t.thinking}]}));
                    }
                    AssistantContent::ToolCall(call) => calls.push(json!({
                        "id": call.id,
                        "type": "function",
                        "index": 0,
                        "function": {
                            "name": call.name,
                            "arguments": Value::Object(call.arguments.clone()).to_string(),
                        },
                    })),
                    AssistantContent::Text(_) | AssistantContent::Thinking(_) => {}
                }
            }
            if parts.is_empty() && calls.is_empty() {
                return None;
            }
            // `prefix: false` and each call's `index: 0`, as pi 1.6's Mistral client sends them.
            let mut out = json!({"role": "assistant", "prefix": false});
            if !parts.is_empty() {
                out["content"] = Value::Array(parts);
            }
            if !calls.is_empty() {
                out["tool_calls"] = Value::Array(calls);
            }
            Some(out)
        }
        Message::ToolResult(result) => Some(tool_result(result, images)),
    }
}

fn tool_result(result: &ToolResultMessage, images: bool) -> Value {
    let (text, has_images) = result_text_and_images(result);
    let mut content = vec![
        json!({"type": "text", "text": tool_result_text(&text, has_images, images, result.is_error)}),
    ];
    if images {
        content.extend(result.content.iter().filter_map(|c| match c {
            UserContent::Image(img) => Some(json!({
                "type": "image_url",
                "image_url": format!("data:{};base64,{}", img.mime_type, img.data),
            })),
            UserContent::Text(_) => None,
        }));
    }
    json!({
        "role": "tool",
        "tool_call_id": result.tool_call_id,
        "name": result.tool_name,
        "content": content,
    })
}

/// pi's text of a tool result: `[tool error] ` before an error, a note for images.
fn tool_result_text(text: &str, has_images: bool, images: bool, is_error: bool) -> String {
    let prefix = if is_error { "[tool error] " } else { "" };
    let text = text.trim();
    if !text.is_empty() {
        let note = if has_images && !images {
            "\n[tool image omitted: model does not support images]"
        } else {
            ""
        };
        return format!("{prefix}{text}{note}");
    }
    match (has_images, images) {
        (true, true) => format!("{prefix}(see attached image)"),
        (true, false) => format!("{prefix}{IMAGE_OMITTED}"),
        (false, _) => format!("{prefix}(no tool output)"),
    }
}
