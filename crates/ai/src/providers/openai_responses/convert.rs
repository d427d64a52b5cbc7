//! Context → Responses request, as pi 1.6 builds it for OpenAI's endpoint (and compatible
//! servers) or an Azure resource: tools as given with `strict: false` where the model takes the
//! field, the `off` effort for a reasoning model with no level asked, the prompt cache fields by
//! compat. The input items are built in [`super::input`].

use serde_json::{json, Value};

pub use super::compat::ResponsesCompat;
use super::input::convert_input;
use super::wire::ResponsesRequest;
use super::Endpoint;
use crate::options::{CacheRetention, ReasoningSummary, StreamOptions, ToolChoice};
use crate::output_limit::clamp_prompt_cache_key;
use crate::types::context::{Context, Tool};
use crate::types::model::Model;

/// pi's floor for `max_output_tokens` (OpenAI rejects less than 16).
const MIN_OUTPUT_TOKENS: u64 = 16;

/// The effort sent in `reasoning` while a `configuration_update` item carries the asked one.
const CONFIGURATION_UPDATE_REQUEST_EFFORT: &str = "medium";

/// Function tools in the Responses form: the schema as given, `strict: false` where the model
/// takes the field (pi acts on a tool's `constrainedSampling`; oxpi does not yet).
pub fn responses_tools(tools: &[Tool], compat: &ResponsesCompat) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let mut function = json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            });
            if compat.supports_strict_mode {
                function["strict"] = if compat.strict_null {
                    Value::Null
                } else {
                    Value::Bool(false)
                };
            }
            function
        })
        .collect()
}

/// Builds the request body for `endpoint`.
pub fn build_request(
    endpoint: Endpoint,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    compat: &ResponsesCompat,
) -> ResponsesRequest {
    let azure = endpoint == Endpoint::Azure;
    let tools = if compat.declares_tools_in_input() {
        Vec::new()
    } else {
        responses_tools(&context.tools, compat)
    };
    // The level's wire value: the model's `thinking_level_map` entry, else its name.
    // pi 1.6: the level clamped to what the model takes (`off` sends none).
    let effort = options
        .reasoning
        .and_then(|level| level.clamped_for(model, compat.supports_xhigh))
        .and_then(|level| model.thinking_level_value(level.as_str()));
    let configuration_update = effort
        .clone()
        .filter(|_| compat.supports_mid_convo_effort && !azure && model.reasoning);
    let mut include = Vec::new();
    let mut reasoning = None;
    if model.reasoning {
        // As pi: a summary alone turns reasoning on at medium effort.
        if effort.is_some() || options.reasoning_summary.is_some() {
            let summary = options.reasoning_summary.unwrap_or(ReasoningSummary::Auto);
            let sent = match &configuration_update {
                Some(_) => CONFIGURATION_UPDATE_REQUEST_EFFORT,
                None => effort.as_deref().unwrap_or("medium"),
            };
            reasoning = Some(json!({"effort": sent, "summary": summary}));
            include.push("reasoning.encrypted_content".to_string());
        } else if compat.send_reasoning_off {
            // The model's `off` value, `none` without one; an `off: null` entry sends nothing.
            let off = match model.thinking_level_map.as_ref().and_then(|m| m.get("off")) {
                Some(Some(value)) => Some(value.clone()),
                Some(None) => None,
                None => Some("none".to_string()),
            };
            reasoning = off.map(|effort| json!({"effort": effort}));
        }
        if compat.always_include_encrypted_reasoning && include.is_empty() && !azure {
            include.push("reasoning.encrypted_content".to_string());
        }
    }
    let mut input = convert_input(model, context, compat);
    if let Some(effort) = configuration_update {
        input.push(json!({"type": "configuration_update", "reasoning": {"effort": effort}}));
    }
    let retention = options.resolved_cache_retention();
    let long = retention == CacheRetention::Long && compat.supports_long_cache_retention;
    let explicit = compat.supports_explicit_prompt_cache_mode && !azure;
    // Azure's provider sends the session id as the key whatever the retention (pi 1.6).
    let key_session = if azure {
        options.session_id.as_deref()
    } else {
        cache_session_id(options)
    };
    ResponsesRequest {
        model: model.id.clone(),
        input,
        stream: true,
        store: false,
        max_output_tokens: options
            .resolved_max_tokens_in(model, context)
            .filter(|_| azure || compat.supports_max_output_tokens)
            .map(|tokens| tokens.max(MIN_OUTPUT_TOKENS)),
        temperature: options.temperature,
        tools,
        reasoning,
        include,
        prompt_cache_key: key_session
            .filter(|_| compat.send_prompt_cache_key)
            .map(clamp_prompt_cache_key),
        prompt_cache_retention: (long && !explicit && !azure).then_some("24h"),
        prompt_cache_options: explicit
            .then(|| match retention {
                CacheRetention::None => Some(json!({"mode": "explicit"})),
                _ if long => Some(json!({"ttl": "30m"})),
                _ => None,
            })
            .flatten(),
        service_tier: options.service_tier.map(|tier| tier.as_str()),
        tool_choice: options.tool_choice.as_ref().map(openai_tool_choice),
    }
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
