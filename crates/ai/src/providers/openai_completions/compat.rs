//! Differences between Chat Completions servers, detected as pi 1.6 detects them (by provider
//! name or a piece of the base URL, the rules being data: `data/chat-completions-hosts.json`)
//! and overridable per model through `model.compat` (camelCase keys, as in pi-ai's
//! `OpenAICompletionsCompat`).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::types::model::Model;

/// The host rules: which providers and base-URL pieces get which compat settings.
const HOSTS_JSON: &str = include_str!("../../../data/chat-completions-hosts.json");

/// One host rule of `data/chat-completions-hosts.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HostRule {
    /// What the rule is for (documentation only).
    #[allow(dead_code)]
    about: String,
    /// Provider names it applies to.
    providers: Vec<String>,
    /// Pieces of the (lowercased) base URL it applies to.
    hosts: Vec<String>,
    /// The settings it gives.
    compat: CompatOverrides,
}

/// The rules, parsed on first use (a file that does not parse gives none and a log error; the
/// tests catch it).
fn host_rules() -> &'static [HostRule] {
    static RULES: OnceLock<Vec<HostRule>> = OnceLock::new();
    RULES.get_or_init(|| {
        serde_json::from_str(HOSTS_JSON).unwrap_or_else(|e| {
            tracing::error!("data/chat-completions-hosts.json does not parse: {e}");
            Vec::new()
        })
    })
}

/// Which session-affinity headers carry the session id (pi's `sessionAffinityFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionAffinityFormat {
    /// `session_id`, `x-client-request-id` and `x-session-affinity`.
    Openai,
    /// `x-client-request-id` and `x-session-affinity`.
    OpenaiNosession,
    /// OpenRouter's `x-session-id`.
    Openrouter,
}

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
    /// Together: `reasoning: {enabled}` and, where supported, `reasoning_effort`.
    Together,
    /// pi 1.6's Baseten format (`chat_template_args`): read, not sent yet.
    Baseten,
    /// pi 1.6's configurable `chat_template_kwargs`: read, not sent yet.
    ChatTemplate,
    /// A top-level `thinking` string: the level's value, or the model's `off` value (`none`).
    StringThinking,
    /// Ant Ling: `reasoning: {effort}` when the model maps the level.
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
    /// A forced tool call (`tool_choice` required, or one named tool) is asked for as
    /// `response_format` with a JSON schema that only admits `{"name": …, "arguments": …}` of an
    /// offered tool (oxpi's `toolChoiceAsJsonSchema`, for llama.cpp and other servers that
    /// constrain decoding to a schema but do not enforce `tool_choice`); the reply is read as a
    /// call written in text, so it needs `tool_calls_in_text` too.
    pub tool_choice_as_json_schema: bool,
    /// A line appended to the tool result the model answers next (oxpi's `toolResultHint`):
    /// small local models that call the same tool again after its result (the embedded
    /// Qwen2.5-Coder-1.5B does, greedy or not) answer from it when told.
    pub tool_result_hint: Option<String>,
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
    /// The server takes `reasoning_effort` (`supportsReasoningEffort`; false for xAI, z.ai,
    /// Moonshot, Together, NVIDIA, Cloudflare's gateway, Ant Ling).
    pub supports_reasoning_effort: bool,
    /// Every assistant turn of a reasoning model carries `reasoning_content`, empty when there
    /// is no thinking to replay (`requiresReasoningContentOnAssistantMessages`; DeepSeek).
    pub requires_reasoning_content: bool,
    /// An assistant turn without text has `content: ""`, not `null`
    /// (`requiresNonNullAssistantContent`).
    pub requires_non_null_assistant_content: bool,
    /// Send `tool_stream: true` with tools (`zaiToolStream`).
    pub zai_tool_stream: bool,
    /// Which headers carry the session id when affinity headers are sent.
    pub session_affinity_format: SessionAffinityFormat,
    /// The field thinking that arrived as `reasoning` is replayed in (`reasoning_content` for
    /// OpenCode Go, as pi).
    pub replay_reasoning_as: Option<String>,
    /// When `prompt_cache_key` is sent (`promptCacheKeyMode`: `enabled`, `disabled`, default
    /// `auto`: on api.openai.com, or with long retention where supported).
    pub prompt_cache_key_mode: Option<String>,
    /// Send `tools: []` when the conversation has tool calls but no tools are offered
    /// (`requiresToolsWithToolHistory`).
    pub requires_tools_with_tool_history: bool,
    /// OpenRouter's provider routing, sent as `provider` (`openRouterRouting`).
    pub open_router_routing: Option<serde_json::Value>,
    /// Chat-template values (`chatTemplateKwargs`), for the `chat-template` format.
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    /// Chat-template values (`chatTemplateArgs`), for the `baseten` format.
    pub chat_template_args: Option<serde_json::Map<String, serde_json::Value>>,
    /// Send GitHub Copilot's per-request headers (`X-Initiator`, `Openai-Intent`,
    /// `Copilot-Vision-Request`); an oxpi key, set by the `github-copilot` host rule.
    pub copilot_headers: bool,
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
    tool_choice_as_json_schema: Option<bool>,
    tool_result_hint: Option<String>,
    supports_long_cache_retention: Option<bool>,
    cache_control_format: Option<CacheControlFormat>,
    send_session_affinity_headers: Option<bool>,
    supports_xhigh: Option<bool>,
    supports_reasoning_effort: Option<bool>,
    requires_reasoning_content_on_assistant_messages: Option<bool>,
    requires_non_null_assistant_content: Option<bool>,
    zai_tool_stream: Option<bool>,
    session_affinity_format: Option<SessionAffinityFormat>,
    replay_reasoning_as: Option<String>,
    prompt_cache_key_mode: Option<String>,
    requires_tools_with_tool_history: Option<bool>,
    open_router_routing: Option<serde_json::Value>,
    chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    chat_template_args: Option<serde_json::Map<String, serde_json::Value>>,
    copilot_headers: Option<bool>,
}

impl OpenAiCompat {
    /// Detects settings from `model.provider` and `model.base_url` (the host rules), then
    /// applies `model.compat`. An unreadable `compat` value is reported as an error naming the
    /// bad field.
    pub fn for_model(model: &Model) -> Result<Self, String> {
        let mut compat = Self::detect(model);
        if let Some(value) = &model.compat {
            let o: CompatOverrides = serde_json::from_value(value.clone())
                .map_err(|e| format!("invalid compat settings for model {}: {e}", model.id))?;
            compat.apply(&o);
        }
        Ok(compat)
    }

    fn apply(&mut self, o: &CompatOverrides) {
        fn replace<T: Clone>(field: &mut Option<T>, value: &Option<T>) {
            if value.is_some() {
                field.clone_from(value);
            }
        }
        let set = |field: &mut bool, v: Option<bool>| {
            if let Some(v) = v {
                *field = v;
            }
        };
        set(&mut self.supports_developer_role, o.supports_developer_role);
        set(
            &mut self.supports_usage_in_streaming,
            o.supports_usage_in_streaming,
        );
        set(&mut self.supports_store, o.supports_store);
        set(
            &mut self.requires_tool_result_name,
            o.requires_tool_result_name,
        );
        set(
            &mut self.requires_assistant_after_tool_result,
            o.requires_assistant_after_tool_result,
        );
        set(
            &mut self.requires_thinking_as_text,
            o.requires_thinking_as_text,
        );
        set(
            &mut self.requires_mistral_tool_ids,
            o.requires_mistral_tool_ids,
        );
        set(&mut self.strict_tools, o.supports_strict_mode);
        set(&mut self.tool_calls_in_text, o.tool_calls_in_text);
        set(
            &mut self.tool_choice_as_json_schema,
            o.tool_choice_as_json_schema,
        );
        if let Some(hint) = &o.tool_result_hint {
            self.tool_result_hint = Some(hint.clone()).filter(|h| !h.is_empty());
        }
        set(
            &mut self.supports_long_cache_retention,
            o.supports_long_cache_retention,
        );
        set(
            &mut self.send_session_affinity_headers,
            o.send_session_affinity_headers,
        );
        set(&mut self.supports_xhigh, o.supports_xhigh);
        set(
            &mut self.supports_reasoning_effort,
            o.supports_reasoning_effort,
        );
        set(
            &mut self.requires_reasoning_content,
            o.requires_reasoning_content_on_assistant_messages,
        );
        set(
            &mut self.requires_non_null_assistant_content,
            o.requires_non_null_assistant_content,
        );
        set(&mut self.zai_tool_stream, o.zai_tool_stream);
        set(&mut self.copilot_headers, o.copilot_headers);
        if let Some(CacheControlFormat::Anthropic) = o.cache_control_format {
            self.anthropic_cache_control = true;
        }
        if let Some(f) = o.max_tokens_field {
            self.max_tokens_field = f;
        }
        if let Some(f) = o.thinking_format {
            self.thinking_format = f;
        }
        if let Some(f) = o.session_affinity_format {
            self.session_affinity_format = f;
        }
        set(
            &mut self.requires_tools_with_tool_history,
            o.requires_tools_with_tool_history,
        );
        replace(&mut self.replay_reasoning_as, &o.replay_reasoning_as);
        replace(&mut self.prompt_cache_key_mode, &o.prompt_cache_key_mode);
        replace(&mut self.open_router_routing, &o.open_router_routing);
        replace(&mut self.chat_template_kwargs, &o.chat_template_kwargs);
        replace(&mut self.chat_template_args, &o.chat_template_args);
    }

    /// pi 1.6's defaults for any server, then every host rule that names the model's provider
    /// or a piece of its base URL, in the file's order.
    fn detect(model: &Model) -> Self {
        let url = model.base_url.to_ascii_lowercase();
        let mut compat = Self {
            supports_developer_role: false,
            supports_usage_in_streaming: true,
            supports_store: true,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            requires_tool_result_name: false,
            requires_assistant_after_tool_result: false,
            requires_thinking_as_text: false,
            requires_mistral_tool_ids: false,
            strict_tools: false,
            thinking_format: ThinkingFormat::Openai,
            tool_calls_in_text: false,
            tool_choice_as_json_schema: false,
            tool_result_hint: None,
            supports_long_cache_retention: true,
            anthropic_cache_control: model.provider == "openrouter"
                && model.id.starts_with("anthropic/"),
            send_session_affinity_headers: false,
            supports_xhigh: false,
            supports_reasoning_effort: true,
            requires_reasoning_content: false,
            requires_non_null_assistant_content: false,
            zai_tool_stream: false,
            session_affinity_format: SessionAffinityFormat::Openai,
            replay_reasoning_as: None,
            prompt_cache_key_mode: None,
            requires_tools_with_tool_history: false,
            open_router_routing: None,
            chat_template_kwargs: None,
            chat_template_args: None,
            copilot_headers: false,
        };
        for rule in host_rules() {
            let named = rule.providers.contains(&model.provider);
            if named || rule.hosts.iter().any(|h| url.contains(h.as_str())) {
                compat.apply(&rule.compat);
            }
        }
        compat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_rules_parse_and_each_names_a_provider_or_host() {
        let rules: Vec<HostRule> = serde_json::from_str(HOSTS_JSON).expect("the rules parse");
        assert!(rules.len() >= 15, "{}", rules.len());
        for rule in &rules {
            assert!(
                !rule.providers.is_empty() || !rule.hosts.is_empty(),
                "{}",
                rule.about
            );
        }
        assert_eq!(rules.len(), host_rules().len());
    }
}
