//! Context → ConverseStream request body, as pi's `bedrock-converse-stream` writes it: text and
//! images, tool calls and results (consecutive results in one user turn, with a status),
//! thinking replayed with its signature on Claude (as text when a signature is missing),
//! cache points after the system prompt and the last user turn on Claude models that cache,
//! and Claude's thinking settings in `additionalModelRequestFields`.

use serde_json::{json, Map, Value};

use crate::options::{CacheRetention, ReasoningLevel, StreamOptions, ToolChoice};
use crate::providers::anthropic_messages::convert::MIN_THINKING_BUDGET;
use crate::transform::transform_messages;
use crate::types::content::{AssistantContent, ImageContent, UserContent};
use crate::types::context::Context;
use crate::types::message::{Message, ToolResultMessage, UserMessageContent};
use crate::types::model::Model;

/// The request body (the model id goes in the URL).
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Value, String> {
    let retention = options.resolved_cache_retention();
    let cache = supports_prompt_caching(model) && retention != CacheRetention::None;
    let cache_point = || {
        let mut point = json!({"type": "default"});
        if retention == CacheRetention::Long {
            point["ttl"] = json!("1h");
        }
        json!({"cachePoint": point})
    };
    let mut body = Map::new();
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, context, cache.then(cache_point))?),
    );
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        let mut blocks = vec![json!({"text": system})];
        if cache {
            blocks.push(cache_point());
        }
        body.insert("system".into(), Value::Array(blocks));
    }
    let (max_tokens, budget) = output_limits(model, context, options);
    let mut inference = Map::new();
    if let Some(max) = max_tokens {
        inference.insert("maxTokens".into(), json!(max));
    }
    if let Some(t) = options.temperature {
        inference.insert("temperature".into(), json!(t));
    }
    body.insert("inferenceConfig".into(), Value::Object(inference));
    if let Some(tools) = tool_config(context, options.tool_choice.as_ref()) {
        body.insert("toolConfig".into(), tools);
    }
    if let Some(fields) = additional_fields(model, options, budget) {
        body.insert("additionalModelRequestFields".into(), fields);
    }
    Ok(Value::Object(body))
}

/// Anthropic's models on Bedrock (by id or name, as pi: inference profiles hide the model in an
/// ARN, but their names may say it).
pub fn is_claude(model: &Model) -> bool {
    let id = model.id.to_ascii_lowercase();
    let name = model.name.to_ascii_lowercase();
    id.contains("anthropic.claude") || id.contains("anthropic/claude") || name.contains("claude")
}

fn candidates(model: &Model) -> Vec<String> {
    [model.id.as_str(), model.name.as_str()]
        .iter()
        .flat_map(|v| {
            let lower = v.to_ascii_lowercase();
            let dashed: String = lower
                .chars()
                .map(|c| {
                    if c.is_whitespace() || matches!(c, '_' | '.' | ':') {
                        '-'
                    } else {
                        c
                    }
                })
                .collect();
            [lower, dashed]
        })
        .collect()
}

/// The Claude 5 families (pi 1.6's `fable-5`, `opus-5`, `sonnet-5`, `haiku-5`).
const CLAUDE_5: &[&str] = &["fable-5", "opus-5", "sonnet-5", "haiku-5"];
/// Models that take `xhigh` effort and `thinking.block_binding` (pi 1.6's lists; Opus 4.6 and
/// Sonnet 4.6 reject `block_binding`).
const BINDING_AND_XHIGH: &[&str] = &[
    "opus-4-7", "opus-4-8", "fable-5", "opus-5", "sonnet-5", "haiku-5",
];
/// Models that think adaptively (an effort instead of a budget).
const ADAPTIVE: &[&str] = &[
    "opus-4-6",
    "opus-4-7",
    "opus-4-8",
    "sonnet-4-6",
    "fable-5",
    "opus-5",
    "sonnet-5",
    "haiku-5",
];
/// The beta Bedrock needs for `thinking.block_binding`.
const THINKING_BINDING_BETA: &str = "thinking-binding-controls-2026-08-01";

fn names_any(model: &Model, parts: &[&str]) -> bool {
    candidates(model)
        .iter()
        .any(|s| parts.iter().any(|p| s.contains(p)))
}

/// Claude 5, Claude 4.x, 3.7 Sonnet and 3.5 Haiku take cache points (pi's list).
pub fn supports_prompt_caching(model: &Model) -> bool {
    names_any(model, &["claude"])
        && names_any(
            model,
            &[CLAUDE_5, &["-4-", "claude-3-7-sonnet", "claude-3-5-haiku"]].concat(),
        )
}

/// Opus 4.6 and later, Sonnet 4.6 and the Claude 5 families think adaptively.
pub fn supports_adaptive_thinking(model: &Model) -> bool {
    names_any(model, ADAPTIVE)
}

/// `(maxTokens, thinking budget)` as pi's `streamSimple`: budget-based Claude thinking adds the
/// budget to the limit, capped by the model.
fn output_limits(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> (Option<u64>, Option<u64>) {
    let base = options.resolved_max_tokens_in(model, context);
    match options
        .reasoning
        .filter(|_| model.reasoning && is_claude(model) && !supports_adaptive_thinking(model))
    {
        Some(level) => {
            let cap = if model.max_tokens > 0 {
                model.max_tokens
            } else {
                u64::MAX
            };
            let (max, budget) = crate::options::adjust_max_tokens_for_thinking(
                base.unwrap_or(0),
                cap,
                level,
                &options.thinking_budgets,
            );
            // As on Anthropic's API: thinking is left off when not even the smallest budget fits.
            (Some(max), (budget >= MIN_THINKING_BUDGET).then_some(budget))
        }
        None => (base, None),
    }
}

fn effort(model: &Model, level: ReasoningLevel) -> String {
    if level == ReasoningLevel::Xhigh && names_any(model, BINDING_AND_XHIGH) {
        return "xhigh".into();
    }
    crate::providers::anthropic_messages::thinking::effort(model, level)
}

fn additional_fields(model: &Model, options: &StreamOptions, budget: Option<u64>) -> Option<Value> {
    let level = options
        .reasoning
        .filter(|_| model.reasoning && is_claude(model))?;
    let gov = model.id.to_ascii_lowercase().starts_with("us-gov.")
        || model.id.to_ascii_lowercase().starts_with("arn:aws-us-gov:");
    let mut thinking = if supports_adaptive_thinking(model) {
        json!({"type": "adaptive"})
    } else {
        json!({"type": "enabled", "budget_tokens": budget?})
    };
    if !gov {
        thinking["display"] = json!("summarized");
    }
    let binding = !gov && supports_adaptive_thinking(model) && names_any(model, BINDING_AND_XHIGH);
    if binding {
        // Replayed signed thinking is bound to the prompt and tools it was made with; stale
        // blocks are dropped instead of failing the request (as pi 1.6 asks).
        thinking["block_binding"] = json!({"prefix_mismatch_behavior": "drop_block"});
    }
    let mut fields = json!({"thinking": thinking});
    if supports_adaptive_thinking(model) {
        fields["output_config"] = json!({"effort": effort(model, level)});
        if binding {
            fields["anthropic_beta"] = json!([THINKING_BINDING_BETA]);
        }
    } else {
        fields["anthropic_beta"] = json!(["interleaved-thinking-2025-05-14"]);
    }
    Some(fields)
}

fn tool_config(context: &Context, choice: Option<&ToolChoice>) -> Option<Value> {
    if context.tools.is_empty() || choice == Some(&ToolChoice::None) {
        return None;
    }
    let tools: Vec<Value> = context
        .tools
        .iter()
        .map(|tool| {
            json!({"toolSpec": {
                "name": tool.name,
                "description": tool.description,
                "inputSchema": {"json": tool.parameters},
            }})
        })
        .collect();
    let mut config = json!({"tools": tools});
    match choice {
        Some(ToolChoice::Auto) => config["toolChoice"] = json!({"auto": {}}),
        Some(ToolChoice::Required) => config["toolChoice"] = json!({"any": {}}),
        Some(ToolChoice::Tool(name)) => config["toolChoice"] = json!({"tool": {"name": name}}),
        Some(ToolChoice::None) | None => {}
    }
    Some(config)
}

/// Bedrock's tool-call id rule: `[A-Za-z0-9_-]`, at most 64 characters.
pub fn bedrock_tool_id(id: &str) -> String {
    crate::providers::shared::safe_call_id(id)
}

fn image_block(image: &ImageContent) -> Result<Value, String> {
    let format = match image.mime_type.as_str() {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => return Err(format!("Bedrock does not take images of type {other}")),
    };
    // A blob in the JSON protocol is its base64 text, which is what the image already holds.
    Ok(json!({"image": {"format": format, "source": {"bytes": image.data}}}))
}

fn user_content(content: &UserContent) -> Result<Value, String> {
    match content {
        UserContent::Text(t) => Ok(json!({"text": t.text})),
        UserContent::Image(image) => image_block(image),
    }
}

fn tool_result(result: &ToolResultMessage) -> Result<Value, String> {
    let content = result
        .content
        .iter()
        .map(user_content)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({"toolResult": {
        "toolUseId": result.tool_call_id,
        "content": content,
        "status": if result.is_error { "error" } else { "success" },
    }}))
}

fn convert_messages(
    model: &Model,
    context: &Context,
    cache_point: Option<Value>,
) -> Result<Vec<Value>, String> {
    let messages = transform_messages(&context.messages, model, bedrock_tool_id);
    let signatures = is_claude(model);
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    let mut last_was_result = false;
    for message in messages.iter() {
        let is_result = matches!(message, Message::ToolResult(_));
        match message {
            // Replayed into the prompt and tools before a provider sees the context
            // (`Context::for_request`).
            Message::System(_) => {}
            Message::Custom(_) => {} // dropped by `Context::for_request`
            Message::User(user) => {
                let content = match &user.content {
                    UserMessageContent::Text(text) => vec![json!({"text": text})],
                    UserMessageContent::Blocks(blocks) => blocks
                        .iter()
                        .map(user_content)
                        .collect::<Result<Vec<_>, _>>()?,
                };
                out.push(json!({"role": "user", "content": content}));
            }
            Message::Assistant(assistant) => {
                let mut content = Vec::new();
                for block in &assistant.content {
                    match block {
                        AssistantContent::Text(t) if !t.text.trim().is_empty() => {
                            content.push(json!({"text": t.text}));
                        }
                        AssistantContent::ToolCall(call) => content.push(json!({"toolUse": {
                            "toolUseId": call.id, "name": call.name, "input": call.arguments,
                        }})),
                        AssistantContent::Thinking(t) if !t.thinking.trim().is_empty() => {
                            let signature = t
                                .thinking_signature
                                .as_deref()
                                .filter(|s| !s.trim().is_empty());
                            content.push(match (signatures, signature) {
                                (true, Some(signature)) => json!({"reasoningContent": {"reasoningText": {
                                    "text": t.thinking, "signature": signature,
                                }}}),
                                // Without its signature Claude rejects the block: send it as text.
                                (true, None) => json!({"text": t.thinking}),
                                (false, _) => json!({"reasoningContent": {"reasoningText": {"text": t.thinking}}}),
                            });
                        }
                        AssistantContent::Text(_) | AssistantContent::Thinking(_) => {}
                    }
                }
                if !content.is_empty() {
                    out.push(json!({"role": "assistant", "content": content}));
                }
            }
            Message::ToolResult(result) => {
                let block = tool_result(result)?;
                match out.last_mut() {
                    Some(last) if last_was_result => {
                        if let Some(content) = last["content"].as_array_mut() {
                            content.push(block);
                        }
                    }
                    _ => out.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
        last_was_result = is_result;
    }
    if let Some(point) = cache_point {
        if let Some(last) = out.last_mut().filter(|m| m["role"] == "user") {
            if let Some(content) = last["content"].as_array_mut() {
                content.push(point);
            }
        }
    }
    Ok(out)
}
