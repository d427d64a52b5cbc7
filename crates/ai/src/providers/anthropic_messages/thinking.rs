//! What a Messages request asks of the model's thinking, and the `anthropic-beta` features that
//! go with it, as pi 1.6 decides them from the model's data (`reasoning`, `thinkingLevelMap`
//! and the compat block), never from its name:
//!
//! - no reasoning level on a reasoning model: `thinking: {"type": "disabled"}`, unless the
//!   model's `thinkingLevelMap` says `"off": null` (it cannot stop thinking);
//! - `compat.forceAdaptiveThinking` (Opus 4.6 and later, which reject budget thinking):
//!   `{"type": "adaptive", "display": "summarized"}` and `output_config.effort` (the level's
//!   `thinkingLevelMap` value, else `low`/`medium`/`high`);
//! - otherwise a token budget (`{"type": "enabled", "budget_tokens": N, "display": …}`) and
//!   the `interleaved-thinking-2025-05-14` beta, so the model may think between tool calls;
//! - tools stream their arguments eagerly (`eager_input_streaming`) unless
//!   `compat.supportsEagerToolInputStreaming` is false, where the
//!   `fine-grained-tool-streaming-2025-05-14` beta asks for the same;
//! - `compat.allowedFallbackModels` adds `fallbacks` and the `server-side-fallback-2026-07-01`
//!   beta;
//! - `compat.supportsMidConvoEffort` (managed effort): the effort is set by effort markers in
//!   the conversation (`convert.rs`), `thinking` is adaptive with
//!   `block_binding: {"prefix_mismatch_behavior": "drop_block"}`, the top-level
//!   `output_config.effort` stays `low` (fixed, so the cached prompt is the same at every level;
//!   low, as an organization's effort cap may reject a higher one), with the
//!   `mid-conversation-output-config-2026-07-01` and `thinking-binding-controls-2026-08-01`
//!   betas; unless reasoning is off on a model that can stop thinking (then `disabled`, no
//!   markers);
//! - `compat.supportsMidConvoSystemMessages` with `supportsMidConvoToolChanges` and tools: the
//!   deferred placeholder tool and the `inline-tools-2026-09-15` beta (pi's native tool changes).
//!
//! An `anthropic-beta` header in the model's or the options' headers replaces the list.

use serde_json::Value;

use super::wire::{BlockBinding, FallbackParam, OutputConfig, ThinkingParam};
use crate::options::{ReasoningLevel, StreamOptions};
use crate::types::model::Model;

/// The beta that lets a budget-thinking model think between tool calls.
pub const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
/// The beta that streams tool arguments unbuffered where `eager_input_streaming` is not taken.
pub const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
/// The beta of `fallbacks`.
pub const SERVER_SIDE_FALLBACK_BETA: &str = "server-side-fallback-2026-07-01";
/// The beta of effort markers in the conversation.
pub const MID_CONVERSATION_OUTPUT_CONFIG_BETA: &str = "mid-conversation-output-config-2026-07-01";
/// The beta of `thinking.block_binding`.
pub const THINKING_BINDING_CONTROLS_BETA: &str = "thinking-binding-controls-2026-08-01";
/// The beta of native tool changes (the deferred placeholder tool).
pub const INLINE_TOOLS_BETA: &str = "inline-tools-2026-09-15";
/// `thinking.display` (pi's default; Opus 4.7 otherwise omits the thinking text).
pub const THINKING_DISPLAY: &str = "summarized";
/// The top-level effort of managed-effort requests.
pub const MANAGED_TOP_LEVEL_EFFORT: &str = "low";
/// The effort of a managed-effort request without a level that picks one.
pub const MANAGED_DEFAULT_EFFORT: &str = "high";

/// The Messages settings of a model's compat block that decide the request's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicCompat {
    /// `supportsEagerToolInputStreaming` (default true).
    pub eager_input_streaming: bool,
    /// `supportsTemperature` (default true; Opus 4.7 and later reject `temperature`).
    pub supports_temperature: bool,
    /// `forceAdaptiveThinking` (default false).
    pub force_adaptive_thinking: bool,
    /// `supportsMidConvoEffort` (default false): effort markers; pi never sends `temperature`
    /// to these.
    pub mid_convo_effort: bool,
    /// `supportsMidConvoSystemMessages` (default false).
    pub mid_convo_system_messages: bool,
    /// `supportsMidConvoToolChanges` (default false).
    pub mid_convo_tool_changes: bool,
    /// `supportsCacheControlOnTools` (default true; Fireworks takes none).
    pub cache_control_on_tools: bool,
    /// `supportsLongCacheRetention` (default true, as pi 1.6): `ttl: "1h"` for long retention.
    pub long_cache_retention: bool,
    /// The ids of `allowedFallbackModels`.
    pub fallback_models: Vec<String>,
    /// The header that carries the session id when caching is on (`sendSessionAffinityHeaders`,
    /// `sessionAffinityFormat`): `x-session-affinity`, OpenRouter's `x-session-id`, or none.
    pub session_affinity_header: Option<&'static str>,
}

/// Host rules of `data/anthropic-hosts.json`: compat defaults pi keeps in code by provider name.
const HOSTS_JSON: &str = include_str!("../../../data/anthropic-hosts.json");

/// One rule of `data/anthropic-hosts.json`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HostRule {
    /// What the rule is for (documentation only).
    #[allow(dead_code)]
    about: String,
    /// Provider names it applies to.
    providers: Vec<String>,
    /// Pieces of the (lowercased) base URL it applies to.
    hosts: Vec<String>,
    /// The compat defaults it gives (a model's own compat block wins).
    compat: serde_json::Map<String, Value>,
}

/// The rules, parsed on first use (a file that does not parse gives none and a log error; the
/// tests catch it).
fn host_rules() -> &'static [HostRule] {
    static RULES: std::sync::OnceLock<Vec<HostRule>> = std::sync::OnceLock::new();
    RULES.get_or_init(|| {
        serde_json::from_str(HOSTS_JSON).unwrap_or_else(|e| {
            tracing::error!("data/anthropic-hosts.json does not parse: {e}");
            Vec::new()
        })
    })
}

/// The compat value `name` of the model, else of the first host rule that matches it.
fn compat_value<'a>(model: &'a Model, name: &str) -> Option<&'a Value> {
    if let Some(value) = model.compat.as_ref().and_then(|c| c.get(name)) {
        return Some(value);
    }
    let url = model.base_url.to_ascii_lowercase();
    host_rules()
        .iter()
        .filter(|rule| {
            rule.providers.contains(&model.provider)
                || rule.hosts.iter().any(|h| url.contains(h.as_str()))
        })
        .find_map(|rule| rule.compat.get(name))
}

impl AnthropicCompat {
    /// Reads the model's compat block; absent or mistyped fields take their defaults.
    pub fn for_model(model: &Model) -> Self {
        let compat = model.compat.as_ref();
        let flag = |name: &str, default: bool| {
            compat
                .and_then(|c| c.get(name))
                .and_then(Value::as_bool)
                .unwrap_or(default)
        };
        let fallback_models = compat
            .and_then(|c| c.get("allowedFallbackModels"))
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|f| f.get("model").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Self {
            eager_input_streaming: flag("supportsEagerToolInputStreaming", true),
            supports_temperature: flag("supportsTemperature", true),
            force_adaptive_thinking: flag("forceAdaptiveThinking", false),
            mid_convo_effort: flag("supportsMidConvoEffort", false),
            mid_convo_system_messages: flag("supportsMidConvoSystemMessages", false),
            mid_convo_tool_changes: flag("supportsMidConvoToolChanges", false),
            cache_control_on_tools: flag("supportsCacheControlOnTools", true),
            long_cache_retention: flag("supportsLongCacheRetention", true),
            fallback_models,
            session_affinity_header: session_affinity_header(model),
        }
    }

    /// Whether tool changes are native (pi's `nativeToolChanges`): the model takes
    /// mid-conversation system messages and tool changes, and the request has tools. Such a
    /// request declares the deferred placeholder tool after its tools, from the first request on,
    /// so the first tool change keeps the cached prefix.
    pub fn native_tool_changes(&self, has_tools: bool) -> bool {
        self.mid_convo_system_messages && self.mid_convo_tool_changes && has_tools
    }

    /// `fallbacks` of the request.
    pub fn fallbacks(&self) -> Vec<FallbackParam> {
        self.fallback_models
            .iter()
            .map(|model| FallbackParam {
                model: model.clone(),
            })
            .collect()
    }
}

/// pi 1.6's session-affinity header of an Anthropic-format model, if it sends one.
fn session_affinity_header(model: &Model) -> Option<&'static str> {
    let send = compat_value(model, "sendSessionAffinityHeaders").and_then(Value::as_bool);
    if send != Some(true) {
        return None;
    }
    match compat_value(model, "sessionAffinityFormat").and_then(Value::as_str) {
        Some("openrouter") => Some("x-session-id"),
        _ => Some("x-session-affinity"),
    }
}

/// What the request asks of thinking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThinkingPlan {
    /// No `thinking` field (not a reasoning model, or one that cannot stop thinking).
    Unset,
    /// `{"type": "disabled"}`.
    Disabled,
    /// Budget thinking with this many tokens.
    Budget(u64),
    /// Adaptive thinking at this effort.
    Adaptive(String),
    /// Managed effort (`compat.supportsMidConvoEffort`): adaptive thinking whose effort the
    /// conversation's markers set, this one for the reply asked for.
    Managed(String),
}

impl ThinkingPlan {
    /// The plan for `model` and the options' reasoning level; `budget` is the token budget
    /// [`super::convert::output_limits`] found room for (budget models only).
    pub fn new(
        model: &Model,
        options: &StreamOptions,
        compat: &AnthropicCompat,
        budget: Option<u64>,
    ) -> Self {
        let off_taken = !matches!(
            model.thinking_level_map.as_ref().and_then(|m| m.get("off")),
            Some(None)
        );
        let thinking_off = model.reasoning && options.reasoning.is_none() && off_taken;
        if compat.mid_convo_effort && !thinking_off {
            return Self::Managed(match options.reasoning {
                Some(level) if compat.force_adaptive_thinking => effort(model, level),
                _ => MANAGED_DEFAULT_EFFORT.to_string(),
            });
        }
        let Some(level) = options.reasoning else {
            return if thinking_off {
                Self::Disabled
            } else {
                Self::Unset
            };
        };
        if compat.force_adaptive_thinking {
            return if model.reasoning {
                Self::Adaptive(effort(model, level))
            } else {
                Self::Unset
            };
        }
        match budget {
            Some(budget) if model.reasoning => Self::Budget(budget),
            _ => Self::Unset,
        }
    }

    /// The `thinking` field.
    pub fn param(&self) -> Option<ThinkingParam> {
        let param = |kind, budget_tokens, display| ThinkingParam {
            kind,
            budget_tokens,
            display,
            block_binding: None,
        };
        match self {
            Self::Unset => None,
            Self::Disabled => Some(param("disabled", None, None)),
            Self::Budget(budget) => Some(param("enabled", Some(*budget), Some(THINKING_DISPLAY))),
            Self::Adaptive(_) => Some(param("adaptive", None, Some(THINKING_DISPLAY))),
            Self::Managed(_) => Some(ThinkingParam {
                block_binding: Some(BlockBinding {
                    prefix_mismatch_behavior: "drop_block",
                }),
                ..param("adaptive", None, Some(THINKING_DISPLAY))
            }),
        }
    }

    /// The `output_config` field (adaptive thinking only; fixed at
    /// [`MANAGED_TOP_LEVEL_EFFORT`] with managed effort).
    pub fn output_config(&self) -> Option<OutputConfig> {
        let effort = match self {
            Self::Adaptive(effort) => effort.clone(),
            Self::Managed(_) => MANAGED_TOP_LEVEL_EFFORT.to_string(),
            _ => return None,
        };
        Some(OutputConfig { effort })
    }

    /// The effort of the reply asked for, with managed effort (the last marker's).
    pub fn managed_effort(&self) -> Option<&str> {
        match self {
            Self::Managed(effort) => Some(effort),
            _ => None,
        }
    }
}

/// The effort of adaptive thinking for `level`: the model's `thinkingLevelMap` value, else
/// `low` for minimal and low, `medium`, and `high` for the rest (pi's
/// `mapThinkingLevelToEffort`).
pub fn effort(model: &Model, level: ReasoningLevel) -> String {
    if let Some(Some(mapped)) = model
        .thinking_level_map
        .as_ref()
        .and_then(|m| m.get(level.as_str()))
    {
        return mapped.clone();
    }
    match level {
        ReasoningLevel::Minimal | ReasoningLevel::Low => "low",
        ReasoningLevel::Medium => "medium",
        _ => "high",
    }
    .to_string()
}

/// Whether `temperature` goes in the request: not with a reasoning level (pi sends none with
/// thinking enabled) and not to models whose compat says they reject it.
pub fn sends_temperature(options: &StreamOptions, compat: &AnthropicCompat) -> bool {
    options.reasoning.is_none() && !compat.mid_convo_effort && compat.supports_temperature
}

/// The `anthropic-beta` features of a request (see the module docs); empty when the model's or
/// the options' headers carry their own `anthropic-beta`.
pub fn beta_features(
    model: &Model,
    options: &StreamOptions,
    compat: &AnthropicCompat,
    has_tools: bool,
) -> Vec<&'static str> {
    let configured = model
        .headers
        .keys()
        .chain(options.headers.keys())
        .any(|name| name.eq_ignore_ascii_case("anthropic-beta"));
    if configured {
        return Vec::new();
    }
    let mut features = Vec::new();
    if has_tools && !compat.eager_input_streaming {
        features.push(FINE_GRAINED_TOOL_STREAMING_BETA);
    }
    if model.reasoning && options.reasoning.is_some() && !compat.force_adaptive_thinking {
        features.push(INTERLEAVED_THINKING_BETA);
    }
    if !compat.fallback_models.is_empty() {
        features.push(SERVER_SIDE_FALLBACK_BETA);
    }
    if compat.mid_convo_effort {
        features.push(MID_CONVERSATION_OUTPUT_CONFIG_BETA);
        features.push(THINKING_BINDING_CONTROLS_BETA);
    }
    if compat.native_tool_changes(has_tools) {
        features.push(INLINE_TOOLS_BETA);
    }
    features
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model(compat: Value, map: Value) -> Model {
        let mut model = Model::openai_compatible("http://x", "claude");
        model.reasoning = true;
        model.compat = Some(compat);
        model.thinking_level_map = serde_json::from_value(map).expect("a level map");
        model
    }

    #[test]
    fn off_is_disabled_unless_the_model_cannot_stop_thinking() {
        let options = StreamOptions::default();
        let plain = model(json!({}), json!(null));
        let compat = AnthropicCompat::for_model(&plain);
        assert_eq!(
            ThinkingPlan::new(&plain, &options, &compat, None),
            ThinkingPlan::Disabled
        );
        let always = model(json!({}), json!({"off": null}));
        assert_eq!(
            ThinkingPlan::new(&always, &options, &compat, None),
            ThinkingPlan::Unset
        );
    }

    #[test]
    fn managed_effort_needs_forced_adaptive_thinking_to_take_the_level() {
        let options = StreamOptions::default().with_reasoning(ReasoningLevel::Low);
        let budget = model(json!({"supportsMidConvoEffort": true}), json!(null));
        let plan = ThinkingPlan::new(
            &budget,
            &options,
            &AnthropicCompat::for_model(&budget),
            None,
        );
        // pi passes an effort only to forceAdaptiveThinking models; the others get its default.
        assert_eq!(plan, ThinkingPlan::Managed("high".into()));
        let adaptive = model(
            json!({"supportsMidConvoEffort": true, "forceAdaptiveThinking": true}),
            json!(null),
        );
        let compat = AnthropicCompat::for_model(&adaptive);
        let plan = ThinkingPlan::new(&adaptive, &options, &compat, None);
        assert_eq!(plan.managed_effort(), Some("low"));
        assert_eq!(plan.output_config().map(|c| c.effort), Some("low".into()));
        // Off on a model that can stop thinking: disabled, no markers.
        let off = ThinkingPlan::new(&adaptive, &StreamOptions::default(), &compat, None);
        assert_eq!(off, ThinkingPlan::Disabled);
    }

    #[test]
    fn adaptive_models_take_an_effort_from_their_level_map() {
        let m = model(
            json!({"forceAdaptiveThinking": true}),
            json!({"xhigh": "xhigh", "minimal": null}),
        );
        let compat = AnthropicCompat::for_model(&m);
        let plan = |level| {
            ThinkingPlan::new(
                &m,
                &StreamOptions::default().with_reasoning(level),
                &compat,
                Some(2048),
            )
        };
        assert_eq!(
            plan(ReasoningLevel::Xhigh),
            ThinkingPlan::Adaptive("xhigh".into())
        );
        assert_eq!(
            plan(ReasoningLevel::Minimal),
            ThinkingPlan::Adaptive("low".into())
        );
        assert_eq!(
            plan(ReasoningLevel::Max),
            ThinkingPlan::Adaptive("high".into())
        );
    }
}
