//! The conversation → Responses input items, as pi 1.6 sends them.
//!
//! Tool-call ids: a call streamed from this API is stored as `{call_id}|{item_id}` (pi-ai's
//! convention), so one [`ToolCall::id`](crate::ToolCall) pairs with its result and still carries
//! the `fc_…` item id that replayed reasoning refers to. On the way out the call id goes to
//! `call_id` (function call and its output), the item id to the function call's `id`.
//!
//! Which ids change (pi's rule): a turn of this very model keeps its ids as they are; another
//! model's ids are cleaned ([`foreign_tool_id`]), and only where the provider keeps Responses
//! item ids (`compat.keepsResponsesItemIds`) does the `|item` part survive, as `fc_` and a hash
//! when the turn came from another provider or API. The item id is sent unless the turn is from
//! another model of this provider and API, or does not start with `fc_`.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use super::compat::ResponsesCompat;
use super::convert::responses_tools;
use super::replay::short_hash;
use crate::providers::shared::system_message;
use crate::transform::{is_same_model, transform_messages};
use crate::types::content::{AssistantContent, UserContent};
use crate::types::context::Context;
use crate::types::message::{AssistantMessage, Message, ToolResultMessage, UserMessageContent};
use crate::types::model::{InputKind, Model};

/// Splits a stored tool-call id into the call id and the item id (`call_…|fc_…`).
pub fn split_tool_id(id: &str) -> (&str, Option<&str>) {
    match id.split_once('|') {
        Some((call, item)) => (call, Some(item)),
        None => (id, None),
    }
}

/// pi's id cleaning: characters outside `[A-Za-z0-9_-]` become `_`, at most 64 characters, no
/// trailing `_`.
fn clean_id_part(part: &str) -> String {
    let cleaned: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    cleaned.trim_end_matches('_').to_string()
}

/// The id of a tool call from another model, for `model`: cleaned whole, or (where the provider
/// keeps item ids and the id has one) `{call}|{item}` with both parts cleaned, the item id
/// being `fc_` and a hash of it when the call came from another provider or API.
pub fn foreign_tool_id(id: &str, model: &Model, source: &AssistantMessage, keeps: bool) -> String {
    let (call, item) = split_tool_id(id);
    let Some(item) = item.filter(|_| keeps) else {
        return clean_id_part(id);
    };
    let other_api = source.provider != model.provider || source.api != model.api;
    let mut item = if other_api {
        let hashed = format!("fc_{}", short_hash(item));
        hashed.chars().take(64).collect()
    } else {
        clean_id_part(item)
    };
    if !item.starts_with("fc_") {
        item = clean_id_part(&format!("fc_{item}"));
    }
    format!("{}|{item}", clean_id_part(call))
}

/// Converts the system prompt, the tools (where they are declared in the input) and the
/// messages to input items, after the cross-provider transform ([`transform_messages`]).
pub fn convert_input(model: &Model, context: &Context, compat: &ResponsesCompat) -> Vec<Value> {
    let mut out = Vec::with_capacity(context.messages.len() + 2);
    if compat.declares_tools_in_input() && !context.tools.is_empty() {
        out.push(json!({
            "type": "additional_tools",
            "role": "developer",
            "tools": responses_tools(&context.tools, compat),
        }));
    }
    out.extend(system_message(
        model,
        context.system_prompt.as_deref(),
        compat.supports_developer_role,
    ));
    // Ids of this model's own calls, which keep their form; the source of every other id.
    let mut own: HashSet<&str> = HashSet::new();
    let mut sources: Vec<(&str, &AssistantMessage)> = Vec::new();
    for message in context.messages.iter() {
        if let Message::Assistant(assistant) = message {
            let same = is_same_model(assistant, model);
            for call in assistant.tool_calls() {
                if same {
                    own.insert(call.id.as_str());
                } else {
                    sources.push((call.id.as_str(), assistant));
                }
            }
        }
    }
    let normalize = |id: &str| -> String {
        if own.contains(id) {
            return id.to_string();
        }
        match sources.iter().find(|(call, _)| *call == id) {
            Some((_, source)) => {
                foreign_tool_id(id, model, source, compat.keeps_responses_item_ids)
            }
            None => id.to_string(),
        }
    };
    let images = model.input.contains(&InputKind::Image);
    for (index, message) in transform_messages(&context.messages, model, normalize)
        .into_iter()
        .enumerate()
    {
        match &message {
            // Replayed into the prompt and tools before a provider sees the context
            // (`Context::for_request`).
            Message::System(_) => {}
            Message::Custom(_) => {} // dropped by `Context::for_request`
            Message::User(user) => {
                let parts = match &user.content {
                    UserMessageContent::Text(text) => {
                        vec![json!({"type": "input_text", "text": text})]
                    }
                    UserMessageContent::Blocks(blocks) => user_parts(blocks, images),
                };
                if !parts.is_empty() {
                    out.push(json!({"role": "user", "content": parts}));
                }
            }
            Message::Assistant(assistant) => assistant_items(assistant, model, index, &mut out),
            Message::ToolResult(result) => out.push(tool_result_item(result, images)),
        }
    }
    out
}

fn assistant_items(
    assistant: &AssistantMessage,
    model: &Model,
    index: usize,
    out: &mut Vec<Value>,
) {
    let same_api = assistant.provider == model.provider && assistant.api == model.api;
    let other_model = same_api && assistant.model != model.id;
    let mut text_index = 0;
    // Once a reasoning item of the turn cannot be replayed, later function calls are sent
    // without their item id: the API checks that an `fc_…` item follows its reasoning item.
    let mut reasoning_missing = false;
    for block in &assistant.content {
        match block {
            AssistantContent::Thinking(thinking) => {
                match thinking
                    .thinking_signature
                    .as_deref()
                    .and_then(reasoning_item)
                {
                    Some(item) => out.push(item),
                    None => reasoning_missing = true,
                }
            }
            AssistantContent::Text(text) => {
                out.push(super::replay::text_item(text, index, text_index));
                text_index += 1;
            }
            AssistantContent::ToolCall(call) => {
                let (call_id, item_id) = split_tool_id(&call.id);
                let mut item = json!({"type": "function_call"});
                if let Some(item_id) =
                    item_id.filter(|id| id.starts_with("fc_") && !other_model && !reasoning_missing)
                {
                    item["id"] = Value::String(item_id.to_string());
                }
                item["call_id"] = Value::String(call_id.to_string());
                item["name"] = Value::String(call.name.clone());
                item["arguments"] =
                    Value::String(Value::Object(call.arguments.clone()).to_string());
                out.push(item);
            }
        }
    }
}

/// The reasoning input item stored in a thinking signature (the output item as streamed),
/// when it can be replayed: with `store: false` only its encrypted content lets the server
/// read it again.
fn reasoning_item(signature: &str) -> Option<Value> {
    let stored: Map<String, Value> = serde_json::from_str(signature).ok()?;
    if stored.get("type").and_then(Value::as_str) != Some("reasoning") {
        return None;
    }
    let encrypted = stored
        .get("encrypted_content")
        .and_then(Value::as_str)
        .filter(|e| !e.is_empty())?;
    let mut item = json!({
        "type": "reasoning",
        "id": stored.get("id").cloned().unwrap_or(Value::Null),
        "summary": stored.get("summary").cloned().unwrap_or_else(|| json!([])),
        "encrypted_content": encrypted,
    });
    if let Some(content) = stored
        .get("content")
        .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
    {
        item["content"] = content.clone();
    }
    Some(item)
}

/// A tool result as pi 1.6 sends it: its text as the output; with images (and a model that
/// takes them) the output is a list of the text and the images.
fn tool_result_item(result: &ToolResultMessage, images: bool) -> Value {
    let text = result.text_content();
    let has_text = !text.trim().is_empty();
    let image_parts: Vec<Value> = result
        .content
        .iter()
        .filter(|c| matches!(c, UserContent::Image(_)))
        .flat_map(|c| user_parts(std::slice::from_ref(c), true))
        .collect();
    let output = if image_parts.is_empty() || !images {
        Value::String(if has_text {
            text
        } else if !image_parts.is_empty() {
            "(see attached image)".to_string()
        } else {
            "(no tool output)".to_string()
        })
    } else {
        let mut parts = Vec::with_capacity(image_parts.len() + 1);
        if has_text {
            parts.push(json!({"type": "input_text", "text": text}));
        }
        parts.extend(image_parts);
        Value::Array(parts)
    };
    let (call_id, _) = split_tool_id(&result.tool_call_id);
    json!({"type": "function_call_output", "call_id": call_id, "output": output})
}

fn user_parts(blocks: &[UserContent], images: bool) -> Vec<Value> {
    blocks
        .iter()
        .map(|block| match block {
            UserContent::Text(t) => json!({"type": "input_text", "text": t.text}),
            UserContent::Image(img) if images => json!({
                "type": "input_image",
                "detail": "auto",
                "image_url": format!("data:{};base64,{}", img.mime_type, img.data),
            }),
            UserContent::Image(_) => json!({"type": "input_text", "text": "(image omitted: this model does not accept images)"}),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_cleaned_as_pi_cleans_them() {
        assert_eq!(clean_id_part("a.b+c__"), "a_b_c");
        assert_eq!(clean_id_part(&"x".repeat(70)).len(), 64);
    }
}
