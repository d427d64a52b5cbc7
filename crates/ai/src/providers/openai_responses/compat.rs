//! Per-model settings of the Responses API, as pi 1.6 reads them (`model.compat`, camelCase
//! keys, every one optional), over the host rules of `data/responses-hosts.json` (the facts pi
//! keeps in code as provider names: Copilot sends no `off` effort, xAI always asks for the
//! encrypted reasoning, which providers keep a Responses item id in a tool-call id).

use std::sync::OnceLock;

use serde::Deserialize;

use super::Endpoint;
use crate::types::model::Model;

/// The host rules: which providers get which settings.
const HOSTS_JSON: &str = include_str!("../../../data/responses-hosts.json");

/// One rule of `data/responses-hosts.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HostRule {
    /// What the rule is for (documentation only).
    #[allow(dead_code)]
    about: String,
    /// Provider names it applies to.
    providers: Vec<String>,
    /// The APIs it applies to (every Responses API when empty).
    #[serde(default)]
    apis: Vec<String>,
    /// The settings it gives.
    compat: Overrides,
}

/// The rules, parsed on first use (a file that does not parse gives none and a log error; the
/// tests catch it).
fn host_rules() -> &'static [HostRule] {
    static RULES: OnceLock<Vec<HostRule>> = OnceLock::new();
    RULES.get_or_init(|| {
        serde_json::from_str(HOSTS_JSON).unwrap_or_else(|e| {
            tracing::error!("data/responses-hosts.json does not parse: {e}");
            Vec::new()
        })
    })
}

/// Per-model settings (pi-ai's `getCompat` of its Responses providers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResponsesCompat {
    /// Tools carry a `strict` field (`supportsStrictMode`; default false on OpenAI's endpoint,
    /// true on Azure). It is `false`: a tool asking for JSON-schema sampling
    /// (`constrainedSampling`) is not acted on yet.
    pub supports_strict_mode: bool,
    /// The instructions of a reasoning model go as a `developer` message
    /// (`supportsDeveloperRole`, default true).
    pub supports_developer_role: bool,
    /// The model accepts `xhigh` reasoning effort (`supportsXhigh`, default false).
    pub supports_xhigh: bool,
    /// `prompt_cache_retention: "24h"` (or `prompt_cache_options.ttl`) for long retention
    /// (`supportsLongCacheRetention`, default true).
    pub supports_long_cache_retention: bool,
    /// Send the session id as a `session_id` header (`sendSessionIdHeader`, default true).
    pub send_session_id_header: bool,
    /// Later system messages stay in the conversation (`supportsMidConvoSystemMessages`).
    pub supports_mid_convo_system_messages: bool,
    /// Tools may be declared in `additional_tools` input items (`supportsAdditionalTools`);
    /// with mid-conversation system messages every tool is declared that way.
    pub supports_additional_tools: bool,
    /// Caching is asked for with `prompt_cache_options` (`supportsExplicitPromptCacheMode`).
    pub supports_explicit_prompt_cache_mode: bool,
    /// The server takes `max_output_tokens` (`supportsMaxOutputTokens`, default true).
    pub supports_max_output_tokens: bool,
    /// The asked effort goes in a `configuration_update` input item, `reasoning.effort` being
    /// `medium` (`supportsMidConvoEffort`).
    pub supports_mid_convo_effort: bool,
    /// Send `prompt_cache_key` (`promptCacheKeyMode` other than `disabled`).
    pub send_prompt_cache_key: bool,
    /// A reasoning model with no level asked gets its `off` effort (oxpi's `sendReasoningOff`,
    /// default true; false for GitHub Copilot, as pi).
    pub send_reasoning_off: bool,
    /// `include: ["reasoning.encrypted_content"]` on every request of a reasoning model
    /// (oxpi's `alwaysIncludeEncryptedReasoning`; xAI, as pi).
    pub always_include_encrypted_reasoning: bool,
    /// A tool-call id from another model keeps its `|item` part, as `fc_…` (oxpi's
    /// `keepsResponsesItemIds`; pi's list of providers that do).
    pub keeps_responses_item_ids: bool,
    /// Tools carry `strict: null` rather than `strict: false` where they carry the field (pi's
    /// Codex provider leaves the strictness unset).
    pub strict_null: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Overrides {
    supports_strict_mode: Option<bool>,
    supports_developer_role: Option<bool>,
    supports_xhigh: Option<bool>,
    supports_long_cache_retention: Option<bool>,
    send_session_id_header: Option<bool>,
    supports_mid_convo_system_messages: Option<bool>,
    supports_additional_tools: Option<bool>,
    supports_explicit_prompt_cache_mode: Option<bool>,
    supports_max_output_tokens: Option<bool>,
    supports_mid_convo_effort: Option<bool>,
    prompt_cache_key_mode: Option<String>,
    send_reasoning_off: Option<bool>,
    always_include_encrypted_reasoning: Option<bool>,
    keeps_responses_item_ids: Option<bool>,
}

impl ResponsesCompat {
    /// Settings for `model` on OpenAI's endpoint; an unreadable `compat` value is an error
    /// naming the model.
    pub fn for_model(model: &Model) -> Result<Self, String> {
        Self::for_endpoint(model, Endpoint::OpenAi)
    }

    /// Settings for `model` at `endpoint` (Azure's provider sends `strict` by default).
    pub(crate) fn for_endpoint(model: &Model, endpoint: Endpoint) -> Result<Self, String> {
        let mut compat = Self {
            // Azure's and the Codex provider send `strict` by default.
            supports_strict_mode: endpoint != Endpoint::OpenAi,
            supports_developer_role: true,
            supports_xhigh: false,
            supports_long_cache_retention: true,
            send_session_id_header: true,
            supports_mid_convo_system_messages: false,
            supports_additional_tools: false,
            supports_explicit_prompt_cache_mode: false,
            supports_max_output_tokens: true,
            supports_mid_convo_effort: false,
            send_prompt_cache_key: true,
            send_reasoning_off: true,
            always_include_encrypted_reasoning: false,
            keeps_responses_item_ids: false,
            strict_null: endpoint == Endpoint::Codex,
        };
        for rule in host_rules() {
            let provider = rule.providers.contains(&model.provider);
            let api = rule.apis.is_empty() || rule.apis.iter().any(|a| *a == model.api.as_str());
            if provider && api {
                compat.apply(&rule.compat);
            }
        }
        if let Some(value) = &model.compat {
            let o: Overrides = serde_json::from_value(value.clone())
                .map_err(|e| format!("invalid compat settings for model {}: {e}", model.id))?;
            compat.apply(&o);
        }
        Ok(compat)
    }

    fn apply(&mut self, o: &Overrides) {
        let set = |field: &mut bool, value: Option<bool>| {
            if let Some(value) = value {
                *field = value;
            }
        };
        set(&mut self.supports_strict_mode, o.supports_strict_mode);
        set(&mut self.supports_developer_role, o.supports_developer_role);
        set(&mut self.supports_xhigh, o.supports_xhigh);
        set(
            &mut self.supports_long_cache_retention,
            o.supports_long_cache_retention,
        );
        set(&mut self.send_session_id_header, o.send_session_id_header);
        set(
            &mut self.supports_mid_convo_system_messages,
            o.supports_mid_convo_system_messages,
        );
        set(
            &mut self.supports_additional_tools,
            o.supports_additional_tools,
        );
        set(
            &mut self.supports_explicit_prompt_cache_mode,
            o.supports_explicit_prompt_cache_mode,
        );
        set(
            &mut self.supports_max_output_tokens,
            o.supports_max_output_tokens,
        );
        set(
            &mut self.supports_mid_convo_effort,
            o.supports_mid_convo_effort,
        );
        if let Some(mode) = &o.prompt_cache_key_mode {
            self.send_prompt_cache_key = mode != "disabled";
        }
        set(&mut self.send_reasoning_off, o.send_reasoning_off);
        set(
            &mut self.always_include_encrypted_reasoning,
            o.always_include_encrypted_reasoning,
        );
        set(
            &mut self.keeps_responses_item_ids,
            o.keeps_responses_item_ids,
        );
    }

    /// Every tool is declared in `additional_tools` input items, none in `tools` (pi's tool
    /// support `changes`).
    pub fn declares_tools_in_input(&self) -> bool {
        self.supports_mid_convo_system_messages && self.supports_additional_tools
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_rules_parse() {
        let rules: Vec<HostRule> = serde_json::from_str(HOSTS_JSON).unwrap_or_default();
        assert!(rules.len() >= 3, "{HOSTS_JSON}");
    }
}
