//! Context → Chat Completions request (pi 1.6's `buildParams`): the messages
//! ([`super::messages`]), tools, output limit, caching, and the reasoning parameters
//! ([`super::reasoning`]).

use serde_json::{json, Value};

use super::compat::{MaxTokensField, OpenAiCompat};
use super::reasoning::apply_reasoning;
use super::wire::ChatRequest;
use crate::options::{CacheRetention, StreamOptions, ToolChoice};
use crate::output_limit::clamp_prompt_cache_key;
use crate::types::content::AssistantContent;
use crate::types::context::Context;
use crate::types::message::Message;
use crate::types::model::Model;

pub use super::messages::convert_messages;

/// Builds the request body for `context` on `model`.
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    compat: &OpenAiCompat,
) -> ChatRequest {
    let max_tokens = options.resolved_max_tokens_in(model, context);
    let retention = options.resolved_cache_retention();
    let long = retention == CacheRetention::Long && compat.supports_long_cache_retention;
    let official = model.base_url.contains("api.openai.com");
    let key_mode = compat.prompt_cache_key_mode.as_deref().unwrap_or("auto");
    let takes_key = key_mode == "enabled" || (key_mode == "auto" && (official || long));
    let cache_key = options
        .session_id
        .as_deref()
        .filter(|_| retention != CacheRetention::None && takes_key)
        .map(clamp_prompt_cache_key);
    let (max_completion_tokens, max_tokens) = match compat.max_tokens_field {
        MaxTokensField::MaxCompletionTokens => (max_tokens, None),
        MaxTokensField::MaxTokens => (None, max_tokens),
    };
    let mut messages = convert_messages(model, context, compat);
    let mut tools: Option<Vec<Value>> = (!context.tools.is_empty()).then(|| {
        context
            .tools
            .iter()
            .map(|tool| {
                let mut function = json!({
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                });
                // pi sends `strict: false` where the server takes the field (constrained
                // sampling, which would make it true, is not acted on yet).
                if compat.strict_tools {
                    function["strict"] = Value::Bool(false);
                }
                json!({"type": "function", "function": function})
            })
            .collect()
    });
    let tool_stream = (tools.is_some() && compat.zai_tool_stream).then_some(true);
    if tools.is_none() && compat.requires_tools_with_tool_history && has_tool_history(context) {
        tools = Some(Vec::new());
    }
    if compat.anthropic_cache_control && retention != CacheRetention::None {
        let marker = if long {
            json!({"type": "ephemeral", "ttl": "1h"})
        } else {
            json!({"type": "ephemeral"})
        };
        add_anthropic_cache_markers(&mut messages, tools.as_deref_mut(), &marker);
    }
    let mut request = ChatRequest {
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
        tool_stream,
        reasoning_effort: None,
        reasoning: None,
        enable_thinking: None,
        chat_template_kwargs: None,
        chat_template_args: None,
        thinking: None,
        store: compat.supports_store.then_some(false),
        prompt_cache_key: cache_key,
        prompt_cache_retention: long.then_some("24h"),
        tool_choice: options.tool_choice.as_ref().map(|choice| match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        }),
        response_format: None,
        provider: compat.open_router_routing.clone(),
    };
    apply_reasoning(&mut request, model, options, compat);
    if compat.tool_choice_as_json_schema {
        if let Some(schema) = options
            .tool_choice
            .as_ref()
            .and_then(|choice| forced_call_schema(context, choice))
        {
            request.tool_choice = None;
            request.response_format = Some(json!({
                "type": "json_schema",
                "json_schema": {"name": "tool_call", "strict": true, "schema": schema},
            }));
        }
    }
    request
}

/// The schema of a forced call (`compat.toolChoiceAsJsonSchema`): one object
/// `{"name": <tool>, "arguments": <its parameters>}` for each tool `choice` admits, or `None`
/// when the choice forces nothing (`auto`, `none`) or names no offered tool.
/// Each tool's own `$defs` (or `definitions`) move to the root as `t<index>_<name>`, its `$ref`s
/// rewritten to match, so references still resolve from the combined schema's root.
pub(crate) fn forced_call_schema(context: &Context, choice: &ToolChoice) -> Option<Value> {
    let mut defs = serde_json::Map::new();
    let admitted: Vec<Value> = context
        .tools
        .iter()
        .enumerate()
        .filter(|(_, tool)| match choice {
            ToolChoice::Required => true,
            ToolChoice::Tool(name) => &tool.name == name,
            ToolChoice::Auto | ToolChoice::None => false,
        })
        .map(|(index, tool)| {
            let prefix = format!("t{index}_");
            let mut arguments = tool.parameters.clone();
            if let Some(map) = arguments.as_object_mut() {
                for key in ["$defs", "definitions"] {
                    if let Some(Value::Object(own)) = map.remove(key) {
                        for (name, mut def) in own {
                            rewrite_refs(&mut def, &prefix);
                            defs.insert(format!("{prefix}{name}"), def);
                        }
                    }
                }
                map.remove("$schema");
            }
            rewrite_refs(&mut arguments, &prefix);
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "const": tool.name},
                    "arguments": arguments,
                },
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    let mut schema = match admitted.len() {
        0 => return None,
        1 => admitted.into_iter().next()?,
        _ => json!({"anyOf": admitted}),
    };
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    Some(schema)
}

/// Points every local `$ref` of `node` (`#/$defs/X`, `#/definitions/X`) at `#/$defs/<prefix>X`.
fn rewrite_refs(node: &mut Value, prefix: &str) {
    match node {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(reference) if key == "$ref" => {
                        let name = reference
                            .strip_prefix("#/$defs/")
                            .or_else(|| reference.strip_prefix("#/definitions/"));
                        if let Some(name) = name {
                            *reference = format!("#/$defs/{prefix}{name}");
                        }
                    }
                    other => rewrite_refs(other, prefix),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rewrite_refs(item, prefix)),
        _ => {}
    }
}

/// Whether the conversation has tool calls or results (some proxies then want `tools`).
fn has_tool_history(context: &Context) -> bool {
    context.messages.iter().any(|m| match m {
        Message::ToolResult(_) => true,
        Message::Assistant(a) => a
            .content
            .iter()
            .any(|c| matches!(c, AssistantContent::ToolCall(_))),
        _ => false,
    })
}

/// Anthropic-style cache breakpoints for gateways that pass them on (OpenRouter's `anthropic/`
/// models, as pi): on the system prompt, the last tool, and the last text of the last user,
/// assistant or tool message that has text.
fn add_anthropic_cache_markers(
    messages: &mut [Value],
    tools: Option<&mut [Value]>,
    marker: &Value,
) {
    if let Some(system) = messages
        .iter_mut()
        .find(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
    {
        mark_last_text(system, marker);
    }
    if let Some(tool) = tools.and_then(|t| t.last_mut()) {
        tool["cache_control"] = marker.clone();
    }
    for message in messages.iter_mut().rev() {
        if matches!(
            message["role"].as_str(),
            Some("user" | "assistant" | "tool")
        ) && mark_last_text(message, marker)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::context::Tool;

    fn tool(name: &str, parameters: Value) -> Tool {
        serde_json::from_value(json!({"name": name, "description": "", "parameters": parameters}))
            .unwrap()
    }

    #[test]
    fn each_tool_s_definitions_move_to_the_root_with_their_references() {
        let edit = tool(
            "edit",
            json!({
                "type": "object",
                "properties": {"edits": {"type": "array", "items": {"$ref": "#/$defs/Replacement"}}},
                "$defs": {"Replacement": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Replacement"}}}},
            }),
        );
        let read = tool(
            "read",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        );
        let context = Context {
            system_prompt: None,
            messages: Default::default(),
            tools: vec![read, edit],
        };
        let schema = forced_call_schema(&context, &ToolChoice::Required).unwrap();
        assert_eq!(
            schema,
            json!({
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "const": "read"},
                            "arguments": {"type": "object", "properties": {"path": {"type": "string"}}},
                        },
                        "required": ["name", "arguments"],
                        "additionalProperties": false,
                    },
                    {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "const": "edit"},
                            "arguments": {
                                "type": "object",
                                "properties": {"edits": {"type": "array", "items": {"$ref": "#/$defs/t1_Replacement"}}},
                            },
                        },
                        "required": ["name", "arguments"],
                        "additionalProperties": false,
                    },
                ],
                "$defs": {"t1_Replacement": {"type": "object", "properties": {"next": {"$ref": "#/$defs/t1_Replacement"}}}},
            })
        );
        assert_eq!(
            forced_call_schema(&context, &ToolChoice::Tool("read".into())).unwrap()["properties"]
                ["name"]["const"],
            "read"
        );
        assert_eq!(
            forced_call_schema(&context, &ToolChoice::Tool("nope".into())),
            None
        );
        assert_eq!(forced_call_schema(&context, &ToolChoice::Auto), None);
    }

    /// The request body as sent (not re-parsed, which would sort the keys again): the forced
    /// call's schema asks for `name` before `arguments`, and for a tool's required arguments
    /// in their required order (llama.cpp's grammar makes the model write them in that order).
    #[test]
    fn the_forced_call_schema_is_sent_with_required_properties_first() {
        let mut model = Model::openai_compatible("http://127.0.0.1:1/v1", "m");
        model.compat = Some(json!({"toolChoiceAsJsonSchema": true}));
        let compat = OpenAiCompat::for_model(&model).unwrap();
        let edit = tool(
            "edit",
            json!({
                "type": "object",
                "properties": {
                    "newText": {"type": "string"},
                    "oldText": {"type": "string"},
                    "path": {"type": "string"},
                },
                "required": ["path", "oldText", "newText"],
            }),
        );
        let context = Context {
            system_prompt: None,
            messages: Default::default(),
            tools: vec![edit],
        };
        let options = StreamOptions::default().with_tool_choice(ToolChoice::Required);
        let body =
            serde_json::to_string(&build_request(&model, &context, &options, &compat)).unwrap();
        // Within the schema (the tool's own declaration keeps serde_json's sorted keys).
        let schema = &body[body.find(r#""response_format""#).unwrap()..];
        let at = |needle: &str| {
            schema
                .find(needle)
                .unwrap_or_else(|| panic!("{needle} not in {schema}"))
        };
        assert!(at(r#""name":{"#) < at(r#""arguments":{"#), "{body}");
        assert!(at(r#""path":{"#) < at(r#""oldText":{"#), "{body}");
        assert!(at(r#""oldText":{"#) < at(r#""newText":{"#), "{body}");
        // Without the setting the same request asks through `tool_choice`, with no schema.
        let plain =
            OpenAiCompat::for_model(&Model::openai_compatible("http://127.0.0.1:1/v1", "m"))
                .unwrap();
        let request = build_request(&model, &context, &options, &plain);
        assert_eq!(request.response_format, None);
        assert_eq!(request.tool_choice, Some(json!("required")));
    }
}
