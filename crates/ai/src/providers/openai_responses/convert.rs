//! Context → Responses request.
//!
//! Tool-call ids: a call streamed from this API is stored as `{call_id}|{item_id}` (pi-ai's
//! convention), so one [`ToolCall::id`](crate::ToolCall) pairs with its result and still carries
//! the `fc_…` item id that replayed reasoning refers to. On the way out the call id goes to
//! `call_id` (function call and its output), the item id to the function call's `id`, and only
//! when the turn came from this very model with all its reasoning replayed; otherwise the id is
//! left out, which the API always accepts.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::wire::ResponsesRequest;
use crate::options::{CacheRetention, ReasoningSummary, StreamOptions, ToolChoice};
use crate::schema::openai_strict::strict_tool_parameters;
use crate::tool::SchemaError;
use crate::transform::{is_same_model, openai_tool_id, transform_messages};
use crate::types::content::{AssistantContent, UserContent};
use crate::types::context::Context;
use crate::types::message::{AssistantMessage, Message, ToolResultMessage, UserMessageContent};
use crate::types::model::{InputKind, Model};

/// Per-model settings, read from `model.compat` (camelCase keys; every one optional).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponsesCompat {
    /// Send tools with `strict: true` and their schemas through
    /// [`crate::schema::openai_strict`] (`supportsStrictMode`, default false).
    pub strict_tools: bool,
    /// Send the system prompt as a `developer` message for reasoning models
    /// (`supportsDeveloperRole`; default true, false for xAI).
    pub supports_developer_role: bool,
    /// The model accepts `xhigh` reasoning effort (`supportsXhigh`, default false: `xhigh` is
    /// sent as `high`).
    pub supports_xhigh: bool,
    /// Send `prompt_cache_retention: "24h"` for long cache retention
    /// (`supportsLongCacheRetention`; default true on api.openai.com, false elsewhere).
    pub supports_long_cache_retention: bool,
    /// Send the session id as a `session_id` header (`sendSessionIdHeader`, default true).
    pub send_session_id_header: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Overrides {
    supports_strict_mode: Option<bool>,
    supports_developer_role: Option<bool>,
    supports_xhigh: Option<bool>,
    supports_long_cache_retention: Option<bool>,
    send_session_id_header: Option<bool>,
}

impl ResponsesCompat {
    /// Settings for `model`; an unreadable `compat` value is an error naming the model.
    pub fn for_model(model: &Model) -> Result<Self, String> {
        let xai = model.provider == "xai" || model.base_url.contains("api.x.ai");
        let openai = model.provider == "openai" || model.base_url.contains("api.openai.com");
        let mut compat = Self {
            strict_tools: false,
            supports_developer_role: !xai,
            supports_xhigh: false,
            supports_long_cache_retention: openai,
            send_session_id_header: true,
        };
        if let Some(value) = &model.compat {
            let o: Overrides = serde_json::from_value(value.clone())
                .map_err(|e| format!("invalid compat settings for model {}: {e}", model.id))?;
            compat.strict_tools = o.supports_strict_mode.unwrap_or(compat.strict_tools);
            compat.supports_developer_role = o
                .supports_developer_role
                .unwrap_or(compat.supports_developer_role);
            compat.supports_xhigh = o.supports_xhigh.unwrap_or(compat.supports_xhigh);
            compat.supports_long_cache_retention = o
                .supports_long_cache_retention
                .unwrap_or(compat.supports_long_cache_retention);
            compat.send_session_id_header = o
                .send_session_id_header
                .unwrap_or(compat.send_session_id_header);
        }
        Ok(compat)
    }
}

/// Builds the request body. Fails (before any request) when strict mode is on and a tool's
/// schema cannot be expressed in it.
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    compat: &ResponsesCompat,
) -> Result<ResponsesRequest, SchemaError> {
    let mut tools = Vec::with_capacity(context.tools.len());
    for tool in &context.tools {
        let parameters = if compat.strict_tools {
            strict_tool_parameters(tool)?
        } else {
            tool.parameters.clone()
        };
        tools.push(json!({
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
            "strict": compat.strict_tools,
        }));
    }
    // The level's wire value: the model's `thinking_level_map` entry, else its name.
    // pi 1.6: the level clamped to what the model takes (`off` sends none).
    let effort = options
        .reasoning
        .and_then(|level| level.clamped_for(model, compat.supports_xhigh))
        .and_then(|level| model.thinking_level_value(level.as_str()));
    // As pi: a summary alone turns reasoning on at medium effort.
    let reasoning = (model.reasoning && (effort.is_some() || options.reasoning_summary.is_some()))
        .then(|| {
            let summary = options.reasoning_summary.unwrap_or(ReasoningSummary::Auto);
            json!({"effort": effort.as_deref().unwrap_or("medium"), "summary": summary})
        });
    let retention = options.resolved_cache_retention();
    let include = if reasoning.is_some() {
        vec!["reasoning.encrypted_content".to_string()]
    } else {
        Vec::new()
    };
    Ok(ResponsesRequest {
        model: model.id.clone(),
        input: convert_input(model, context, compat),
        stream: true,
        store: false,
        max_output_tokens: options.resolved_max_tokens_in(model, context),
        temperature: options.temperature,
        tools,
        reasoning,
        include,
        prompt_cache_key: cache_session_id(options).map(str::to_string),
        prompt_cache_retention: (retention == CacheRetention::Long
            && compat.supports_long_cache_retention)
            .then_some("24h"),
        service_tier: options.service_tier.map(|tier| tier.as_str()),
        tool_choice: options.tool_choice.as_ref().map(openai_tool_choice),
    })
}

/// The session id used for caching: [`StreamOptions::session_id`], unless cache retention is
/// `none`.
pub fn cache_session_id(options: &StreamOptions) -> Option<&str> {
    options
        .session_id
        .as_deref()
        .filter(|_| options.resolved_cache_retention() != CacheRetention::None)
}

/// `tool_choice` in the Responses API's form.
pub fn openai_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
    }
}

/// Splits a stored tool-call id into the call id and the item id (`call_…|fc_…`).
pub fn split_tool_id(id: &str) -> (&str, Option<&str>) {
    match id.split_once('|') {
        Some((call, item)) => (call, Some(item)),
        None => (id, None),
    }
}

/// The id rule for this API, applied through [`transform_messages`]: the call id is cleaned
/// (`[A-Za-z0-9_-]`, then [`openai_tool_id`]); an item id is cleaned, starts with `fc` and has
/// at most 64 characters. Ids already in this form are unchanged.
pub fn responses_tool_id(id: &str) -> String {
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
    let (call, item) = split_tool_id(id);
    let mut call = openai_tool_id(&clean(call));
    if call.is_empty() {
        call.push_str("call");
    }
    match item {
        None => call,
        Some(item) => {
            let mut item = clean(item);
            if !item.starts_with("fc") {
                item.insert_str(0, "fc_");
            }
            let item: String = item.chars().take(64).collect();
            format!("{call}|{}", item.trim_end_matches('_'))
        }
    }
}

/// Converts the system prompt and the messages to input items, after the cross-provider
/// transform ([`transform_messages`]).
pub fn convert_input(model: &Model, context: &Context, compat: &ResponsesCompat) -> Vec<Value> {
    let images = model.input.contains(&InputKind::Image);
    let mut out = Vec::with_capacity(context.messages.len() + 1);
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        let role = if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        // pi 1.6 sends instructions and user turns as bare `{role, content}` items.
        out.push(json!({"role": role, "content": system}));
    }
    for (index, message) in transform_messages(&context.messages, model, responses_tool_id)
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
            Message::ToolResult(result) => tool_result_items(result, images, &mut out),
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
    let same = is_same_model(assistant, model);
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
                let mut item = json!({
                    "type": "function_call",
                    "call_id": call_id,
                    "name": call.name,
                    "arguments": Value::Object(call.arguments.clone()).to_string(),
                });
                if let Some(item_id) = item_id.filter(|_| same && !reasoning_missing) {
                    item["id"] = Value::String(item_id.to_string());
                }
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

fn tool_result_items(result: &ToolResultMessage, images: bool, out: &mut Vec<Value>) {
    let text = result.text_content();
    let image_parts: Vec<Value> = result
        .content
        .iter()
        .filter(|c| matches!(c, UserContent::Image(_)))
        .flat_map(|c| user_parts(std::slice::from_ref(c), true))
        .collect();
    let output = match (text.is_empty(), image_parts.is_empty(), images) {
        (false, _, _) => text,
        (true, true, _) => "(no output)".to_string(),
        (true, false, true) => "(see attached image)".to_string(),
        (true, false, false) => "(image omitted: this model does not accept images)".to_string(),
    };
    let (call_id, _) = split_tool_id(&result.tool_call_id);
    out.push(json!({"type": "function_call_output", "call_id": call_id, "output": output}));
    if images && !image_parts.is_empty() {
        let mut parts =
            vec![json!({"type": "input_text", "text": "Attached image(s) from tool result:"})];
        parts.extend(image_parts);
        out.push(json!({"role": "user", "content": parts}));
    }
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
