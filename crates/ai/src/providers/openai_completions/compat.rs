//! Differences between Chat Completions servers, detected from the base URL and overridable per
//! model through `model.compat` (camelCase keys, as in pi-ai's `OpenAICompletionsCompat`).

use serde::{Deserialize, Serialize};

use crate::types::model::Model;

/// Which field carries the output token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_completion_tokens` (OpenAI).
    MaxCompletionTokens,
    /// `max_tokens` (most compatible servers).
    MaxTokens,
}

/// How reasoning effort is requested (pi's `thinkingFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThinkingFormat {
    /// `reasoning_effort: "low" | "medium" | "high"`.
    Openai,
    /// OpenRouter's `reasoning: {effort}`.
    Openrouter,
    /// z.ai: `enable_thinking: true | false`.
    Zai,
    /// Qwen (DashScope): `enable_thinking: true | false`.
    Qwen,
    /// Qwen behind a chat template: `chat_template_kwargs: {enable_thinking, preserve_thinking}`.
    QwenChatTemplate,
    /// DeepSeek: `thinking: {type: "enabled" | "disabled"}` and `reasoning_effort`.
    Deepseek,
    /// Do not send a reasoning parameter.
    None,
    /// pi 1.6's Together format (`reasoning.enabled` and `reasoning_effort`): read, not sent
    /// yet (oxpi sends no reasoning parameter for it).
    Together,
    /// pi 1.6's Baseten format (`chat_template_args`): read, not sent yet.
    Baseten,
    /// pi 1.6's configurable `chat_template_kwargs`: read, not sent yet.
    ChatTemplate,
    /// pi 1.6's top-level `thinking` string: read, not sent yet.
    StringThinking,
    /// pi 1.6's Ant Ling format (`reasoning.effort` when mapped): read, not sent yet.
    AntLing,
}

/// Resolved compatibility settings for one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiCompat {
    /// Send the system prompt as `developer` for reasoning models.
    pub supports_developer_role: bool,
    /// Send `stream_options.include_usage`.
    pub supports_usage_in_streaming: bool,
    /// Send `store: false`.
    pub supports_store: bool,
    /// The output-limit field.
    pub max_tokens_field: MaxTokensField,
    /// Tool results need a `name`.
    pub requires_tool_result_name: bool,
    /// A user message may not follow a tool result directly; insert an assistant turn.
    pub requires_assistant_after_tool_result: bool,
    /// Replay earlier thinking as text.
    pub requires_thinking_as_text: bool,
    /// Tool call ids must be 9 alphanumerics (Mistral).
    pub requires_mistral_tool_ids: bool,
    /// Send `strict: true` on function definitions.
    pub strict_tools: bool,
    /// How reasoning effort is requested.
    pub thinking_format: ThinkingFormat,
    /// The model writes tool calls as JSON in its text instead of `tool_calls`; turn a reply
    /// that is only such calls (to offered tools, with valid arguments) into real tool calls.
    pub tool_calls_in_text: bool,
    /// Send `prompt_cache_retention: "24h"` (and the session as `prompt_cache_key`) for long
    /// cache retention (`supportsLongCacheRetention`; default true on api.openai.com).
    pub supports_long_cache_retention: bool,
    /// Put Anthropic `cache_control` markers in the messages (`cacheControlFormat:
    /// "anthropic"`; default for OpenRouter's `anthropic/` models, as pi).
    pub anthropic_cache_control: bool,
    /// Send the session id as `session_id`, `x-client-request-id` and `x-session-affinity`
    /// headers (`sendSessionAffinityHeaders`, default false).
    pub send_session_affinity_headers: bool,
    /// The model takes `xhigh` reasoning effort (`supportsXhigh`, default false: `xhigh` is sent
    /// as `high`, as pi clamps a level the model does not list).
    pub supports_xhigh: bool,
}

/// `cacheControlFormat` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum CacheControlFormat {
    Anthropic,
}

/// Overrides read from `model.compat`; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct CompatOverrides {
    supports_developer_role: Option<bool>,
    supports_usage_in_streaming: Option<bool>,
    supports_store: Option<bool>,
    max_tokens_field: Option<MaxTokensField>,
    requires_tool_result_name: Option<bool>,
    requires_assistant_after_tool_result: Option<bool>,
    requires_thinking_as_text: Option<bool>,
    requires_mistral_tool_ids: Option<bool>,
    supports_strict_mode: Option<bool>,
    thinking_format: Option<ThinkingFormat>,
    tool_calls_in_text: Option<bool>,
    supports_long_cache_retention: Option<bool>,
    cache_control_format: Option<CacheControlFormat>,
    send_session_affinity_headers: Option<bool>,
    supports_xhigh: Option<bool>,
}

impl OpenAiCompat {
    /// Detects settings from `model.provider` and `model.base_url`, then applies `model.compat`.
    /// An unreadable `compat` value is reported as an error naming the bad field.
    pub fn for_model(model: &Model) -> Result<Self, String> {
        let mut compat = Self::detect(model);
        if let Some(value) = &model.compat {
            let o: CompatOverrides = serde_json::from_value(value.clone())
                .map_err(|e| format!("invalid compat settings for model {}: {e}", model.id))?;
            let set = |field: &mut bool, v: Option<bool>| {
                if let Some(v) = v {
                    *field = v;
                }
            };
            set(
                &mut compat.supports_developer_role,
                o.supports_developer_role,
            );
            set(
                &mut compat.supports_usage_in_streaming,
                o.supports_usage_in_streaming,
            );
            set(&mut compat.supports_store, o.supports_store);
            set(
                &mut compat.requires_tool_result_name,
                o.requires_tool_result_name,
            );
            set(
                &mut compat.requires_assistant_after_tool_result,
                o.requires_assistant_after_tool_result,
            );
            set(
                &mut compat.requires_thinking_as_text,
                o.requires_thinking_as_text,
            );
            set(
                &mut compat.requires_mistral_tool_ids,
                o.requires_mistral_tool_ids,
            );
            set(&mut compat.strict_tools, o.supports_strict_mode);
            set(&mut compat.tool_calls_in_text, o.tool_calls_in_text);
            set(
                &mut compat.supports_long_cache_retention,
                o.supports_long_cache_retention,
            );
            set(
                &mut compat.send_session_affinity_headers,
                o.send_session_affinity_headers,
            );
            set(&mut compat.supports_xhigh, o.supports_xhigh);
            if let Some(CacheControlFormat::Anthropic) = o.cache_control_format {
                compat.anthropic_cache_control = true;
            }
            if let Some(f) = o.max_tokens_field {
                compat.max_tokens_field = f;
            }
            if let Some(f) = o.thinking_format {
                compat.thinking_format = f;
            }
        }
        Ok(compat)
    }

    fn detect(model: &Model) -> Self {
        let url = model.base_url.to_ascii_lowercase();
        let is = |provider: &str, host: &str| model.provider == provider || url.contains(host);
        let openai = is("openai", "api.openai.com");
        let mistral = is("mistral", "mistral.ai");
        let openrouter = is("openrouter", "openrouter.ai");
        Self {
            supports_developer_role: openai,
            supports_usage_in_streaming: true,
            supports_store: openai,
            max_tokens_field: if openai {
                MaxTokensField::MaxCompletionTokens
            } else {
                MaxTokensField::MaxTokens
            },
            requires_tool_result_name: mistral,
            requires_assistant_after_tool_result: false,
            requires_thinking_as_text: mistral,
            requires_mistral_tool_ids: mistral,
            strict_tools: false,
            thinking_format: if openrouter {
                ThinkingFormat::Openrouter
            } else if openai || is("xai", "api.x.ai") || is("groq", "groq.com") {
                ThinkingFormat::Openai
            } else {
                ThinkingFormat::None
            },
            tool_calls_in_text: false,
            supports_long_cache_retention: openai,
            anthropic_cache_control: openrouter && model.id.starts_with("anthropic/"),
            send_session_affinity_headers: false,
            supports_xhigh: false,
        }
    }
}
