//! Context → Chat Completions request.

use serde_json::{json, Value};

use super::compat::{MaxTokensField, OpenAiCompat, ThinkingFormat};
use super::wire::ChatRequest;
use crate::options::{CacheRetention, StreamOptions, ToolChoice};
use crate::transform::{mistral_tool_id, openai_tool_id, transform_messages};
use crate::types::content::{AssistantContent, UserContent};
use crate::types::context::Context;
use crate::types::message::{Message, ToolResultMessage, UserMessageContent};
use crate::types::model::{InputKind, Model};

/// Builds the request body for `context` on `model`.
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    compat: &OpenAiCompat,
) -> ChatRequest {
    let max_tokens = options.resolved_max_tokens(model);
    let retention = options.resolved_cache_retention();
    let long = retention == CacheRetention::Long && compat.supports_long_cache_retention;
    let official = model.base_url.contains("api.openai.com");
    let cache_key = options
        .session_id
        .clone()
        .filter(|_| (official && retention != CacheRetention::None) || long);
    let (max_completion_tokens, max_tokens) = match compat.max_tokens_field {
        MaxTokensField::MaxCompletionTokens => (max_tokens, None),
        MaxTokensField::MaxTokens => (None, max_tokens),
    };
    // pi 1.6: the level clamped to what the model takes (`off` sends none).
    let reasoning = options
        .reasoning
        .and_then(|level| level.clamped_for(model, compat.supports_xhigh));
    let mut messages = convert_messages(model, context, compat);
    let mut tools: Vec<Value> = context
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
        .collect();
    if compat.anthropic_cache_control && retention != CacheRetention::None {
        let marker = if long {
            json!({"type": "ephemeral", "ttl": "1h"})
        } else {
            json!({"type": "ephemeral"})
        };
        add_anthropic_cache_markers(&mut messages, &mut tools, &marker);
    }
    ChatRequest {
        model: model.id.clone(),
        messages,
        stream: true,
        stream_options: compat
            .supports_usage_in_streaming
            .then(|| json!({"include_usage": true})),
        max_completion_tokens,
        max_tokens,
        temperature: options.temperature,
        tools,
        reasoning_effort: match compat.thinking_format {
            ThinkingFormat::Openai | ThinkingFormat::Deepseek => reasoning
                .and_then(|r| model.thinking_level_value(r.as_str()))
                .or_else(|| {
                    // No reasoning asked: a model that cannot turn it off names its "off" level.
                    let off = model.thinking_level_map.as_ref()?.get("off")?.clone()?;
                    (reasoning.is_none() && model.reasoning && thinking_off_applies(compat))
                        .then_some(off)
                }),
            _ => None,
        },
        reasoning: match compat.thinking_format {
            ThinkingFormat::Openrouter => match reasoning {
                Some(r) => model
                    .thinking_level_value(r.as_str())
                    .map(|effort| json!({"effort": effort})),
                None if model.reasoning => {
                    match model.thinking_level_map.as_ref().and_then(|m| m.get("off")) {
                        Some(None) => None,
                        Some(Some(off)) => Some(json!({"effort": off})),
                        None => None,
                    }
                }
                None => None,
            },
            _ => None,
        },
        enable_thinking: matches!(
            compat.thinking_format,
            ThinkingFormat::Zai | ThinkingFormat::Qwen
        )
        .then_some(reasoning.is_some())
        .filter(|_| model.reasoning),
        chat_template_kwargs: (compat.thinking_format == ThinkingFormat::QwenChatTemplate
            && model.reasoning)
            .then(|| json!({"enable_thinking": reasoning.is_some(), "preserve_thinking": true})),
        thinking: (compat.thinking_format == ThinkingFormat::Deepseek && model.reasoning)
            .then(|| json!({"type": if reasoning.is_some() { "enabled" } else { "disabled" }})),
        store: compat.supports_store.then_some(false),
        prompt_cache_key: cache_key,
        prompt_cache_retention: long.then_some("24h"),
        tool_choice: options.tool_choice.as_ref().map(|choice| match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        }),
    }
}

/// pi sends a model's `off` level as `reasoning_effort` when reasoning is not asked for, for
/// the OpenAI format only.
fn thinking_off_applies(compat: &OpenAiCompat) -> bool {
    compat.thinking_format == ThinkingFormat::Openai
}

/// Anthropic-style cache breakpoints for gateways that pass them on (OpenRouter's `anthropic/`
/// models, as pi): on the system prompt, the last tool, and the last text of the last user or
/// assistant message that has text.
fn add_anthropic_cache_markers(messages: &mut [Value], tools: &mut [Value], marker: &Value) {
    if let Some(system) = messages
        .iter_mut()
        .find(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
    {
        mark_last_text(system, marker);
    }
    if let Some(tool) = tools.last_mut() {
        tool["cache_control"] = marker.clone();
    }
    for message in messages.iter_mut().rev() {
        if matches!(message["role"].as_str(), Some("user" | "assistant"))
            && mark_last_text(message, marker)
        {
            break;
        }
    }
}

/// Puts `marker` on the message's last text part (a string content becomes one text part).
fn mark_last_text(message: &mut Value, marker: &Value) -> bool {
    match &mut message["content"] {
        Value::String(text) if !text.is_empty() => {
            let text = std::mem::take(text);
            message["content"] = json!([{"type": "text", "text": text, "cache_control": marker}]);
            true
        }
        Value::Array(parts) => match parts.iter_mut().rev().find(|p| p["type"] == "text") {
            Some(part) => {
                part["cache_control"] = marker.clone();
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// Converts the system prompt and messages, after the cross-provider transform
/// ([`transform_messages`]): failed or aborted assistant turns are dropped, tool calls without a
/// result get a synthetic one, thinking from other models arrives as text.
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
    let normalize: fn(&str) -> String = if compat.requires_mistral_tool_ids {
        mistral_tool_id
    } else {
        openai_tool_id
    };
    let messages = transform_messages(&context.messages, model, normalize);
    let mut last_was_tool = false;
    for message in &messages {
        match message {
            // Replayed into the prompt and tools before a provider sees the context
            // (`Context::for_request`).
            Message::System(_) => {}
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
                let mut text = String::new();
                let mut tool_calls = Vec::new();
                for block in &assistant.content {
                    match block {
                        AssistantContent::Text(t) => text.push_str(&t.text),
                        // Chat Completions cannot replay reasoning; some servers want it as text.
                        AssistantContent::Thinking(t) => {
                            if compat.requires_thinking_as_text
                                && t.redacted != Some(true)
                                && !t.thinking.trim().is_empty()
                            {
                                text.push_str(&t.thinking);
                                text.push_str("\n\n");
                            }
                        }
                        AssistantContent::ToolCall(call) => tool_calls.push(json!({
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": Value::Object(call.arguments.clone()).to_string(),
                            },
                        })),
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
                out.push(tool_message(result, compat));
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
    out
}

fn tool_message(result: &ToolResultMessage, compat: &OpenAiCompat) -> Value {
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
        "tool_call_id": result.tool_call_id,
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
