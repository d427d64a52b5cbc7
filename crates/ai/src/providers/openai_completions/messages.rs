//! The conversation → Chat Completions messages, as pi 1.6 writes them: same-model thinking
//! replayed in the field it came in (or OpenRouter's `reasoning_details`), tool-call ids made
//! ones Chat Completions takes, tool results of a turn followed by their images.

use serde_json::{json, Value};

use super::compat::OpenAiCompat;
use crate::providers::openai_responses::replay::short_hash;
use crate::providers::shared::{result_text_and_images, system_message};
use crate::transform::{mistral_tool_id, transform_messages};
use crate::types::content::{AssistantContent, UserContent};
use crate::types::context::Context;
use crate::types::message::{AssistantMessage, Message, ToolResultMessage, UserMessageContent};
use crate::types::model::{InputKind, Model};

/// The reasoning fields a thinking block's signature may name.
const REASONING_FIELDS: [&str; 3] = ["reasoning", "reasoning_content", "reasoning_text"];

/// The bridge some servers need between a tool result and a user message.
const BRIDGE: &str = "I have processed the tool results.";

/// Converts the system prompt and messages, after the cross-provider transform
/// ([`transform_messages`]): failed or aborted assistant turns are dropped, tool calls without a
/// result get a synthetic one, images become placeholders for a model without image input.
pub fn convert_messages(model: &Model, context: &Context, compat: &OpenAiCompat) -> Vec<Value> {
    let images = model.input.contains(&InputKind::Image);
    let mut out = Vec::with_capacity(context.messages.len() + 1);
    out.extend(system_message(
        model,
        context.system_prompt.as_deref(),
        compat.supports_developer_role,
    ));
    let cut_at_40 = model.provider == "openai";
    let messages = if compat.requires_mistral_tool_ids {
        transform_messages(&context.messages, model, mistral_tool_id)
    } else {
        transform_messages(&context.messages, model, |id| chat_tool_id(id, cut_at_40))
    };
    let mut last_was_tool = false;
    let mut index = 0;
    while let Some(message) = messages.get(index) {
        index += 1;
        match message {
            // Replayed into the prompt and tools before a provider sees the context
            // (`Context::for_request`).
            Message::System(_) => {}
            Message::Custom(_) => {} // dropped by `Context::for_request`
            Message::User(user) => {
                if last_was_tool && compat.requires_assistant_after_tool_result {
                    out.push(json!({"role": "assistant", "content": BRIDGE}));
                }
                let content = match &user.content {
                    UserMessageContent::Text(text) => Value::String(text.clone()),
                    UserMessageContent::Blocks(blocks) => {
                        let parts = user_parts(blocks);
                        if parts.is_empty() {
                            continue;
                        }
                        Value::Array(parts)
                    }
                };
                out.push(json!({"role": "user", "content": content}));
                last_was_tool = false;
            }
            Message::Assistant(assistant) => {
                if let Some(entry) = assistant_message(model, assistant, compat) {
                    out.push(entry);
                }
                last_was_tool = false;
            }
            Message::ToolResult(first) => {
                // The results of one turn, then their images in one user message.
                let mut image_parts = Vec::new();
                let mut result = Some(first);
                while let Some(current) = result {
                    out.push(tool_message(current, compat));
                    if images {
                        image_parts.extend(
                            current
                                .content
                                .iter()
                                .filter(|c| matches!(c, UserContent::Image(_)))
                                .flat_map(|c| user_parts(std::slice::from_ref(c))),
                        );
                    }
                    result = match messages.get(index) {
                        Some(Message::ToolResult(next)) => {
                            index += 1;
                            Some(next)
                        }
                        _ => None,
                    };
                }
                if image_parts.is_empty() {
                    last_was_tool = true;
                } else {
                    if compat.requires_assistant_after_tool_result {
                        out.push(json!({"role": "assistant", "content": BRIDGE}));
                    }
                    let mut parts = vec![
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    ];
                    parts.extend(image_parts);
                    out.push(json!({"role": "user", "content": parts}));
                    last_was_tool = false;
                }
            }
        }
    }
    if let Some(hint) = &compat.tool_result_hint {
        add_tool_result_hint(&mut out, hint);
    }
    out
}

/// Appends `hint` to the last message when it is a tool result (the one the model answers
/// next; `compat.toolResultHint`).
fn add_tool_result_hint(out: &mut [Value], hint: &str) {
    if let Some(last) = out.last_mut().filter(|m| m["role"] == "tool") {
        if let Some(Value::String(content)) = last.get_mut("content") {
            content.push_str("\n\n");
            content.push_str(hint);
        }
    }
}

/// One assistant turn; `None` when it has neither content nor tool calls.
fn assistant_message(
    model: &Model,
    assistant: &AssistantMessage,
    compat: &OpenAiCompat,
) -> Option<Value> {
    let non_null =
        compat.requires_assistant_after_tool_result || compat.requires_non_null_assistant_content;
    let mut entry = json!({
        "role": "assistant",
        "content": if non_null { json!("") } else { Value::Null },
    });
    let texts: Vec<&str> = assistant
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Text(t) if !t.text.trim().is_empty() => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let text = texts.concat();
    let thinking: Vec<_> = assistant
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Thinking(t) => Some(t),
            _ => None,
        })
        .collect();
    let calls: Vec<_> = assistant.tool_calls().collect();
    // OpenRouter's reasoning details: from a thinking block's signature, else (older sessions)
    // encrypted details kept on the tool calls.
    let signed = thinking
        .iter()
        .find_map(|t| reasoning_details(t.thinking_signature.as_deref()));
    let legacy: Vec<Value> = calls
        .iter()
        .filter_map(|c| legacy_encrypted_detail(c.thought_signature.as_deref()))
        .collect();
    let details = signed.or((!legacy.is_empty()).then_some(legacy));
    let readable: Vec<_> = thinking
        .iter()
        .filter(|t| !t.thinking.trim().is_empty())
        .collect();
    if let Some(first) = readable.first() {
        if compat.requires_thinking_as_text {
            let joined: Vec<&str> = readable.iter().map(|t| t.thinking.as_str()).collect();
            let mut parts = vec![json!({"type": "text", "text": joined.join("\n\n")})];
            parts.extend(texts.iter().map(|t| json!({"type": "text", "text": t})));
            entry["content"] = Value::Array(parts);
        } else {
            if !text.is_empty() {
                entry["content"] = Value::String(text);
            }
            if details.is_none() {
                let mut field = first.thinking_signature.as_deref();
                if field == Some("reasoning") {
                    field = compat.replay_reasoning_as.as_deref().or(field);
                }
                if let Some(field) = field.filter(|f| REASONING_FIELDS.contains(f)) {
                    let joined: Vec<&str> = readable.iter().map(|t| t.thinking.as_str()).collect();
                    entry[field] = Value::String(joined.join("\n"));
                }
            }
        }
    } else if !text.is_empty() {
        entry["content"] = Value::String(text);
    }
    if !calls.is_empty() {
        let calls = calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": Value::Object(call.arguments.clone()).to_string(),
                    },
                })
            })
            .collect();
        entry["tool_calls"] = Value::Array(calls);
    }
    if let Some(details) = details {
        entry["reasoning_details"] = Value::Array(details);
    }
    if compat.requires_reasoning_content && model.reasoning && entry["reasoning_content"].is_null()
    {
        entry["reasoning_content"] = Value::String(String::new());
    }
    let has_content = match &entry["content"] {
        Value::String(s) => !s.is_empty(),
        Value::Array(parts) => !parts.is_empty(),
        _ => false,
    };
    (has_content || entry.get("tool_calls").is_some()).then_some(entry)
}

/// The reasoning details a thinking signature holds: a non-empty JSON array of valid details.
fn reasoning_details(signature: Option<&str>) -> Option<Vec<Value>> {
    let parsed: Value = serde_json::from_str(signature?).ok()?;
    match parsed {
        Value::Array(details)
            if !details.is_empty() && details.iter().all(super::stream::is_reasoning_detail) =>
        {
            Some(details)
        }
        _ => None,
    }
}

/// An encrypted reasoning detail with an id and data, as older sessions kept on a tool call.
fn legacy_encrypted_detail(signature: Option<&str>) -> Option<Value> {
    let parsed: Value = serde_json::from_str(signature?).ok()?;
    let non_empty = |key: &str| {
        parsed
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    (super::stream::is_reasoning_detail(&parsed)
        && parsed["type"] == "reasoning.encrypted"
        && non_empty("id")
        && non_empty("data"))
    .then_some(parsed)
}

/// A tool-call id Chat Completions takes (pi's rule): an id from the Responses API
/// (`call|item`) becomes `call_item` with characters outside `[a-zA-Z0-9_-]` as `_`, cut to
/// 40 characters with a hash of the whole id when longer; other ids are kept (cut to 40 for
/// OpenAI itself, `cut_at_40`).
pub fn chat_tool_id(id: &str, cut_at_40: bool) -> String {
    let Some((call, item)) = id.split_once('|') else {
        return if cut_at_40 {
            id.chars().take(40).collect()
        } else {
            id.to_string()
        };
    };
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let call = clean(call);
    let item = clean(item);
    let combined = if item.is_empty() {
        call.clone()
    } else {
        format!("{call}_{item}")
    };
    if combined.len() <= 40 {
        return combined;
    }
    let hash: String = short_hash(id).chars().take(8).collect();
    let keep = 40usize.saturating_sub(hash.len() + 1).max(1);
    let prefix: String = call.chars().take(keep).collect();
    format!("{prefix}_{hash}")
}

fn tool_message(result: &ToolResultMessage, compat: &OpenAiCompat) -> Value {
    let (text, has_images) = result_text_and_images(result);
    let content = if !text.trim().is_empty() {
        text
    } else if has_images {
        "(see attached image)".to_string()
    } else {
        "(no tool output)".to_string()
    };
    let mut entry = json!({
        "role": "tool",
        "tool_call_id": result.tool_call_id,
        "content": content,
    });
    if compat.requires_tool_result_name && !result.tool_name.is_empty() {
        entry["name"] = Value::String(result.tool_name.clone());
    }
    entry
}

/// User blocks as parts; empty texts are left out.
fn user_parts(blocks: &[UserContent]) -> Vec<Value> {
    blocks
        .iter()
        .filter_map(|block| match block {
            UserContent::Text(t) if t.text.is_empty() => None,
            UserContent::Text(t) => Some(json!({"type": "text", "text": t.text})),
            UserContent::Image(img) => Some(json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{};base64,{}", img.mime_type, img.data)},
            })),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_ids_become_chat_ids_as_pi_makes_them() {
        assert_eq!(chat_tool_id("call_a|fc_b", false), "call_a_fc_b");
        assert_eq!(chat_tool_id("call_a|", false), "call_a");
        assert_eq!(chat_tool_id("call+a|fc/b=", false), "call_a_fc_b_");
        let long = format!("call_abc|fc_{}", "x".repeat(400));
        // pi 1.6 under Node gives `call_abc_tkkq2pp2` for this id.
        assert_eq!(chat_tool_id(&long, false), "call_abc_tkkq2pp2");
        assert_eq!(chat_tool_id(&"y".repeat(50), true).len(), 40);
        assert_eq!(chat_tool_id(&"y".repeat(50), false).len(), 50);
    }

    #[test]
    fn the_hint_follows_only_the_result_the_model_answers_next() {
        let mut out = vec![
            json!({"role": "user", "content": "q"}),
            json!({"role": "tool", "tool_call_id": "a", "content": "first"}),
            json!({"role": "assistant", "content": "x"}),
            json!({"role": "tool", "tool_call_id": "b", "content": "second"}),
        ];
        add_tool_result_hint(&mut out, "Answer now.");
        assert_eq!(out[1]["content"], "first");
        assert_eq!(out[3]["content"], "second\n\nAnswer now.");
        let mut ends_with_user = vec![json!({"role": "user", "content": "q"})];
        add_tool_result_hint(&mut ends_with_user, "Answer now.");
        assert_eq!(
            ends_with_user,
            vec![json!({"role": "user", "content": "q"})]
        );
    }

    #[test]
    fn short_hash_matches_pi() {
        // From pi-ai 1.6's `shortHash` under Node.
        assert_eq!(short_hash("abc"), "y0biex7f9bbh");
    }
}
