//! The reasoning parameters of a Chat Completions request, per `thinkingFormat`, as pi 1.6
//! sends them: the requested level clamped to what the model takes, mapped through its
//! `thinkingLevelMap`; "no reasoning" sent as off where the model would otherwise think
//! (its map's `off` value, or OpenRouter's `none`); `reasoning_effort` only where the server
//! takes it (`supportsReasoningEffort`).

use serde_json::{json, Map, Value};

use super::compat::{OpenAiCompat, ThinkingFormat};
use super::wire::ChatRequest;
use crate::options::StreamOptions;
use crate::types::model::Model;

/// Tokens always left for the answer when a thinking budget shares the output limit.
const MIN_ANSWER_TOKENS: u64 = 1_024;

/// What the map says for `level`: absent (`None`), `null` (`Some(None)`) or a value.
fn mapped<'m>(model: &'m Model, level: &str) -> Option<Option<&'m str>> {
    model
        .thinking_level_map
        .as_ref()?
        .get(level)
        .map(|v| v.as_deref())
}

/// `map[level] ?? level` (a `null` entry also falls back to the level).
fn value_or_level(model: &Model, level: &str) -> String {
    mapped(model, level)
        .flatten()
        .map_or_else(|| level.to_string(), str::to_string)
}

/// The model's `off` value unless its map says `off: null` (then it cannot be turned off).
fn off_value(model: &Model) -> Option<Option<&str>> {
    match mapped(model, "off") {
        Some(None) => None,
        Some(Some(off)) => Some(Some(off)),
        None => Some(None),
    }
}

/// Sets the reasoning fields of `request`.
pub(crate) fn apply_reasoning(
    request: &mut ChatRequest,
    model: &Model,
    options: &StreamOptions,
    compat: &OpenAiCompat,
) {
    if !model.reasoning {
        return;
    }
    // pi's `clampThinkingLevel`: `off` (or no level) sends no effort.
    let effort = options
        .reasoning
        .and_then(|level| level.clamped_for(model, compat.supports_xhigh))
        .map(|level| level.as_str());
    let supports = compat.supports_reasoning_effort;
    match compat.thinking_format {
        ThinkingFormat::Zai => {
            request.thinking = Some(match effort {
                Some(_) => json!({"type": "enabled", "clear_thinking": false}),
                None => json!({"type": "disabled"}),
            });
            if let (Some(level), true) = (effort, supports) {
                // An absent entry is the level itself; a `null` one sends nothing.
                request.reasoning_effort = match mapped(model, level) {
                    None => Some(level.to_string()),
                    Some(value) => value.map(str::to_string),
                };
            }
        }
        ThinkingFormat::Qwen => {
            request.enable_thinking = Some(effort.is_some());
            if let (Some(level), true) = (effort, supports) {
                request.reasoning_effort = Some(value_or_level(model, level));
            }
        }
        ThinkingFormat::QwenChatTemplate => {
            request.chat_template_kwargs =
                Some(json!({"enable_thinking": effort.is_some(), "preserve_thinking": true}));
        }
        ThinkingFormat::ChatTemplate => {
            let budget = thinking_budget(request, model, options, effort);
            request.chat_template_kwargs = compat
                .chat_template_kwargs
                .as_ref()
                .and_then(|values| template_values(model, effort, values, budget));
        }
        ThinkingFormat::Baseten => {
            let budget = thinking_budget(request, model, options, effort);
            request.chat_template_args = compat
                .chat_template_args
                .as_ref()
                .and_then(|values| template_values(model, effort, values, budget));
            if supports {
                let entry = match effort {
                    Some(level) => mapped(model, level),
                    None => mapped(model, "off"),
                };
                request.reasoning_effort = match entry {
                    None => effort.map(str::to_string),
                    Some(value) => value.map(str::to_string),
                };
            }
        }
        ThinkingFormat::Deepseek => {
            if effort.is_some() {
                request.thinking = Some(json!({"type": "enabled"}));
            } else if off_value(model).is_some() {
                request.thinking = Some(json!({"type": "disabled"}));
            }
            if let (Some(level), true) = (effort, supports) {
                request.reasoning_effort = Some(value_or_level(model, level));
            }
        }
        ThinkingFormat::Openrouter => {
            request.reasoning = match effort {
                Some(level) => Some(json!({"effort": value_or_level(model, level)})),
                None => off_value(model).map(|off| json!({"effort": off.unwrap_or("none")})),
            };
        }
        ThinkingFormat::AntLing => {
            if let Some(Some(value)) = effort.and_then(|level| mapped(model, level)) {
                request.reasoning = Some(json!({"effort": value}));
            }
        }
        ThinkingFormat::Together => {
            request.reasoning = Some(json!({"enabled": effort.is_some()}));
            if let (Some(level), true) = (effort, supports) {
                request.reasoning_effort = Some(value_or_level(model, level));
            }
        }
        ThinkingFormat::StringThinking => {
            request.thinking = match effort {
                Some(level) => Some(Value::String(value_or_level(model, level))),
                None => off_value(model).map(|off| Value::String(off.unwrap_or("none").into())),
            };
        }
        ThinkingFormat::None => {}
        ThinkingFormat::Openai => {
            if !supports {
                return;
            }
            request.reasoning_effort = match effort {
                Some(level) => Some(value_or_level(model, level)),
                // No reasoning asked: a model that thinks by default names its "off" value.
                None => mapped(model, "off").flatten().map(str::to_string),
            };
        }
    }
}

/// The thinking budget for `effort` under the request's output limit (pi's
/// `resolveClampedThinkingBudget`): at most the limit less [`MIN_ANSWER_TOKENS`]; `None` for
/// no effort or no room.
fn thinking_budget(
    request: &ChatRequest,
    model: &Model,
    options: &StreamOptions,
    effort: Option<&str>,
) -> Option<u64> {
    let level = options.reasoning.filter(|_| effort.is_some())?;
    let ceiling = request
        .max_tokens
        .or(request.max_completion_tokens)
        .unwrap_or(model.max_tokens);
    let budget = options
        .thinking_budgets
        .budget(level)
        .min(ceiling.saturating_sub(MIN_ANSWER_TOKENS));
    (budget > 0).then_some(budget)
}

/// Chat-template values (pi's `buildChatTemplateValues`): plain values as they are; `{"$var":
/// "thinking.enabled"}`, `{"$var": "thinking.budget"}`, and other objects as the level's mapped
/// value; `omitWhenOff` ones left out without reasoning. `None` when nothing is left.
fn template_values(
    model: &Model,
    effort: Option<&str>,
    values: &Map<String, Value>,
    budget: Option<u64>,
) -> Option<Value> {
    let mut out = Map::new();
    for (key, value) in values {
        let resolved = match value {
            Value::Object(spec) => {
                if effort.is_none() && spec.get("omitWhenOff") == Some(&Value::Bool(true)) {
                    continue;
                }
                match spec.get("$var").and_then(Value::as_str) {
                    Some("thinking.enabled") => Some(Value::Bool(effort.is_some())),
                    Some("thinking.budget") => budget.map(Value::from),
                    _ => {
                        let entry = mapped(model, effort.unwrap_or("off"));
                        match entry {
                            None => effort.map(|e| Value::String(e.to_string())),
                            Some(v) => v.map(|v| Value::String(v.to_string())),
                        }
                    }
                }
            }
            other => Some(other.clone()),
        };
        if let Some(resolved) = resolved {
            out.insert(key.clone(), resolved);
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}
