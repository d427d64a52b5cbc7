//! Context → Chat Completions request.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use super::compat::{MaxTokensField, OpenAiCompat, ThinkingFormat};
use super::wire::ChatRequest;
use crate::options::StreamOptions;
use crate::types::content::{AssistantContent, UserContent};
use crate::types::context::Context;
use crate::types::message::{Message, StopReason, ToolResultMessage, UserMessageContent};
use crate::types::model::{InputKind, Model};

/// Builds the request body for `context` on `model`.
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    compat: &OpenAiCompat,
) -> ChatRequest {
    let max_tokens = options.max_tokens;
    let (max_completion_tokens, max_tokens) = match compat.max_tokens_field {
        MaxTokensField::MaxCompletionTokens => (max_tokens, None),
        MaxTokensField::MaxTokens => (None, max_tokens),
    };
    let reasoning = options.reasoning.filter(|_| model.reasoning);
    ChatRequest {
        model: model.id.clone(),
        messages: convert_messages(model, context, compat),
        stream: true,
        stream_options: compat
            .supports_usage_in_streaming
            .then(|| json!({"include_usage": true})),
        max_completion_tokens,
        max_tokens,
        temperature: options.temperature,
        tools: context
            .tools
            .iter()
            .map(|tool| {
                let mut function = json!({
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                });
                if compat.strict_tools {
                    function["strict"] = Value::Bool(true);
                }
                json!({"type": "function", "function": function})
            })
            .collect(),
        reasoning_effort: reasoning
            .filter(|_| compat.thinking_format == ThinkingFormat::Openai)
            .map(|r| r.as_str().to_string()),
        reasoning: reasoning
            .filter(|_| compat.thinking_format == ThinkingFormat::Openrouter)
            .map(|r| json!({"effort": r.as_str()})),
        store: compat.supports_store.then_some(false),
    }
}

/// Converts the system prompt and messages. Assistant turns that failed or were aborted are
/// skipped (with their tool results); a tool call without a result gets a synthetic error result
/// so the request stays valid.
pub fn convert_messages(model: &Model, context: &Context, compat: &OpenAiCompat) -> Vec<Value> {
    let images = model.input.contains(&InputKind::Image);
    let mut out = Vec::with_capacity(context.messages.len() + 1);
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        let role = if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        out.push(json!({"role": role, "content": system}));
    }
    let ids = IdMap::new(compat.requires_mistral_tool_ids);
    let mut skipped_calls: HashSet<&str> = HashSet::new();
    let mut open_calls: Vec<(String, String)> = Vec::new();
    let mut last_was_tool = false;

    for message in context.messages.iter() {
        if !matches!(message, Message::ToolResult(_)) {
            close_open_calls(&mut out, &mut open_calls, compat, &ids);
        }
        match message {
            Message::User(user) => {
                if last_was_tool && compat.requires_assistant_after_tool_result {
                    out.push(json!({"role": "assistant", "content": "I have processed the tool results."}));
                }
                let content = match &user.content {
                    UserMessageContent::Text(text) => Value::String(text.clone()),
                    UserMessageContent::Blocks(blocks) => Value::Array(user_parts(blocks, images)),
                };
                out.push(json!({"role": "user", "content": content}));
                last_was_tool = false;
            }
            Message::Assistant(assistant) => {
                if matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) {
                    skipped_calls.extend(assistant.tool_calls().map(|c| c.id.as_str()));
                    continue;
                }
                let same_model =
                    assistant.provider == model.provider && assistant.model == model.id;
                let mut text = String::new();
                let mut tool_calls = Vec::new();
                for block in &assistant.content {
                    match block {
                        AssistantContent::Text(t) => text.push_str(&t.text),
                        AssistantContent::Thinking(t) => {
                            let replay_as_text = compat.requires_thinking_as_text || !same_model;
                            if replay_as_text
                                && t.redacted != Some(true)
                                && !t.thinking.trim().is_empty()
                            {
                                text.push_str(&t.thinking);
                                text.push_str("\n\n");
                            }
                        }
                        AssistantContent::ToolCall(call) => {
                            open_calls.push((call.id.clone(), call.name.clone()));
                            tool_calls.push(json!({
                                "id": ids.map(&call.id),
                                "type": "function",
                                "function": {
                                    "name": call.name,
                                    "arguments": Value::Object(call.arguments.clone()).to_string(),
                                },
                            }));
                        }
                    }
                }
                if text.is_empty() && tool_calls.is_empty() {
                    continue;
                }
                let mut entry = json!({"role": "assistant"});
                if !text.is_empty() {
                    entry["content"] = Value::String(text);
                }
                if !tool_calls.is_empty() {
                    entry["tool_calls"] = Value::Array(tool_calls);
                }
                out.push(entry);
                last_was_tool = false;
            }
            Message::ToolResult(result) => {
                if skipped_calls.contains(result.tool_call_id.as_str()) {
                    continue;
                }
                open_calls.retain(|(id, _)| id != &result.tool_call_id);
                out.push(tool_message(result, compat, &ids));
                let image_parts: Vec<Value> = result
                    .content
                    .iter()
                    .filter(|c| matches!(c, UserContent::Image(_)))
                    .flat_map(|c| user_parts(std::slice::from_ref(c), images))
                    .collect();
                if images && !image_parts.is_empty() {
                    let mut parts = vec![
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    ];
                    parts.extend(image_parts);
                    out.push(json!({"role": "user", "content": parts}));
                    last_was_tool = false;
                } else {
                    last_was_tool = true;
                }
            }
        }
    }
    close_open_calls(&mut out, &mut open_calls, compat, &ids);
    out
}

fn close_open_calls(
    out: &mut Vec<Value>,
    open: &mut Vec<(String, String)>,
    compat: &OpenAiCompat,
    ids: &IdMap,
) {
    for (id, name) in open.drain(..) {
        let synthetic = ToolResultMessage {
            tool_call_id: id,
            tool_name: name,
            content: vec![UserContent::text("No result provided")],
            details: None,
            is_error: true,
            timestamp: 0,
        };
        out.push(tool_message(&synthetic, compat, ids));
    }
}

fn tool_message(result: &ToolResultMessage, compat: &OpenAiCompat, ids: &IdMap) -> Value {
    let text = result.text_content();
    let has_images = result
        .content
        .iter()
        .any(|c| matches!(c, UserContent::Image(_)));
    let content = match (text.is_empty(), has_images) {
        (true, true) => "(see attached image)".to_string(),
        (true, false) => "(no output)".to_string(),
        (false, _) => text,
    };
    let mut entry = json!({
        "role": "tool",
        "tool_call_id": ids.map(&result.tool_call_id),
        "content": content,
    });
    if compat.requires_tool_result_name {
        entry["name"] = Value::String(result.tool_name.clone());
    }
    entry
}

fn user_parts(blocks: &[UserContent], images: bool) -> Vec<Value> {
    blocks
        .iter()
        .map(|block| match block {
            UserContent::Text(t) => json!({"type": "text", "text": t.text}),
            UserContent::Image(img) if images => json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{};base64,{}", img.mime_type, img.data)},
            }),
            UserContent::Image(_) => json!({"type": "text", "text": "(image omitted: this model does not accept images)"}),
        })
        .collect()
}

/// Rewrites tool-call ids where a server restricts them (Mistral: 9 alphanumerics), the same way
/// in calls and results.
struct IdMap {
    mistral: bool,
    cache: std::cell::RefCell<HashMap<String, String>>,
}

impl IdMap {
    fn new(mistral: bool) -> Self {
        Self {
            mistral,
            cache: Default::default(),
        }
    }

    fn map(&self, id: &str) -> String {
        if !self.mistral {
            return id.to_string();
        }
        let valid = id.len() == 9 && id.chars().all(|c| c.is_ascii_alphanumeric());
        if valid {
            return id.to_string();
        }
        let mut cache = self.cache.borrow_mut();
        let next = cache.len();
        cache
            .entry(id.to_string())
            .or_insert_with(|| {
                let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
                for byte in id.bytes() {
                    hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
                }
                hash = hash.wrapping_add(next as u64);
                const ALPHABET: &[u8] =
                    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
                (0..9)
                    .map(|i| ALPHABET[((hash >> (i * 6)) % ALPHABET.len() as u64) as usize] as char)
                    .collect()
            })
            .clone()
    }
}
