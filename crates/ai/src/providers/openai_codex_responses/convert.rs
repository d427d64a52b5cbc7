//! Context and options → the Codex request body, as pi 1.6's `openai-codex-responses` builds
//! it: the Responses input items and tools of [`crate::providers::openai_responses`] (tools with
//! `strict: null`), then the backend's own fields.

use serde::Serialize;
use serde_json::{json, Value};

use crate::options::{CacheRetention, ReasoningSummary, StreamOptions};
use crate::output_limit::clamp_prompt_cache_key;
use crate::providers::openai_responses::convert::{
    openai_tool_choice, responses_tools, ResponsesCompat,
};
use crate::providers::openai_responses::input::convert_input;
use crate::types::context::Context;
use crate::types::model::Model;

/// The Responses API's floor for `max_output_tokens`.
const MIN_OUTPUT_TOKENS: u64 = 16;

/// The effort sent in `reasoning` while a `configuration_update` item carries the asked one.
const CONFIGURATION_UPDATE_REQUEST_EFFORT: &str = "medium";

/// The request body, fields in pi's order.
#[derive(Debug, Serialize)]
pub(crate) struct CodexRequest {
    model: String,
    store: bool,
    stream: bool,
    input: Vec<Value>,
    text: Value,
    include: [&'static str; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<String>,
    tool_choice: Value,
    parallel_tool_calls: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_tier: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Value>,
}

/// The session id as the prompt cache key and session headers: none when cache retention is
/// `none`, else clamped to 64 characters as pi does.
pub(crate) fn codex_session_id(options: &StreamOptions) -> Option<String> {
    options
        .session_id
        .as_deref()
        .filter(|_| options.resolved_cache_retention() != CacheRetention::None)
        .map(clamp_prompt_cache_key)
}

/// The effort pi asks for: the level clamped to the model, or `none` for a reasoning model with
/// no level (pi's `streamSimple`); `None` for a model without reasoning.
fn asked_effort(
    model: &Model,
    options: &StreamOptions,
    compat: &ResponsesCompat,
) -> Option<String> {
    match options
        .reasoning
        .and_then(|level| level.clamped_for(model, compat.supports_xhigh))
    {
        Some(level) => Some(level.as_str().to_string()),
        None if model.reasoning => Some("none".to_string()),
        None => None,
    }
}

/// The model's wire value of an effort (pi's `resolveReasoningEffort`): `none` is the model's
/// `off` entry (`None` when that is null), any other level its entry, else its own name.
fn resolve_effort(model: &Model, effort: &str) -> Option<String> {
    let entry = model.thinking_level_map.as_ref();
    if effort == "none" {
        return match entry.and_then(|m| m.get("off")) {
            Some(Some(value)) => Some(value.clone()),
            Some(None) => None,
            None => Some("none".to_string()),
        };
    }
    match entry.and_then(|m| m.get(effort)) {
        Some(Some(value)) => Some(value.clone()),
        _ => Some(effort.to_string()),
    }
}

/// Builds the body for `model`.
pub(crate) fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    compat: &ResponsesCompat,
) -> CodexRequest {
    let asked = asked_effort(model, options, compat);
    let configuration_update = asked
        .as_deref()
        .filter(|_| compat.supports_mid_convo_effort)
        .and_then(|effort| resolve_effort(model, effort));
    let reasoning = asked.as_deref().and_then(|asked| {
        let effort = match &configuration_update {
            Some(_) => Some(CONFIGURATION_UPDATE_REQUEST_EFFORT.to_string()),
            None => resolve_effort(model, asked),
        }?;
        let summary = options.reasoning_summary.unwrap_or(ReasoningSummary::Auto);
        Some(json!({"effort": effort, "summary": summary}))
    });
    let mut input = convert_input(model, context, compat);
    if let Some(effort) = configuration_update {
        input.push(json!({"type": "configuration_update", "reasoning": {"effort": effort}}));
    }
    let tools = if compat.declares_tools_in_input() {
        Vec::new()
    } else {
        responses_tools(&context.tools, compat)
    };
    CodexRequest {
        model: model.id.clone(),
        store: false,
        stream: true,
        input,
        text: json!({"verbosity": "low"}),
        include: ["reasoning.encrypted_content"],
        prompt_cache_key: codex_session_id(options),
        tool_choice: options
            .tool_choice
            .as_ref()
            .map_or_else(|| json!("auto"), openai_tool_choice),
        parallel_tool_calls: true,
        max_output_tokens: options
            .resolved_max_tokens_in(model, context)
            .filter(|tokens| *tokens > 0 && compat.supports_max_output_tokens)
            .map(|tokens| tokens.max(MIN_OUTPUT_TOKENS)),
        temperature: options.temperature,
        service_tier: options.service_tier.map(|tier| tier.as_str()),
        tools,
        reasoning,
    }
}
