//! `generationConfig.thinkingConfig`, as pi 1.6 builds it for every reasoning model:
//!
//! - the requested level is clamped to the levels the model takes (its `thinkingLevelMap`,
//!   [`clamp_thinking_level`]) and mapped through that map to a Google level (`minimal`, `low`,
//!   `medium`, `high`);
//! - models with Gemini's discrete control (Gemini 3 Pro/Flash, Gemini 4 and later, the
//!   `gemini-flash(-lite)-latest` aliases, Gemma 4: [`uses_thinking_level`]) get
//!   `{"includeThoughts": true, "thinkingLevel": "LOW"}`; the others a token budget (the
//!   options' budget for that level, else pi's table for Gemini 2.5, else `-1`, dynamic);
//! - no level ("off") on a model that thinks by default is sent as off: `{"thinkingBudget": 0}`,
//!   or on a discrete-level model that cannot stop thinking, its lowest level.

use serde_json::{json, Value};

use crate::options::{ReasoningLevel, ThinkingBudgets};
use crate::types::model::Model;
use crate::types::thinking::{clamp_thinking_level, ThinkingLevel};

/// The `thinkingConfig` of a request on `model` (`None` for a model without reasoning).
pub fn thinking_config(
    model: &Model,
    level: Option<ReasoningLevel>,
    budgets: &ThinkingBudgets,
) -> Option<Value> {
    if !model.reasoning {
        return None;
    }
    let clamped = level.map_or(ThinkingLevel::Off, |level| {
        clamp_thinking_level(model, level.into())
    });
    if clamped == ThinkingLevel::Off {
        return Some(disabled(model));
    }
    let google = google_level(model, clamped);
    if uses_thinking_level(&model.id) {
        return Some(json!({"includeThoughts": true, "thinkingLevel": google.to_uppercase()}));
    }
    Some(json!({"includeThoughts": true, "thinkingBudget": budget(model, google, budgets)}))
}

/// "Off": a zero budget, or the lowest level a discrete-level model takes when it cannot stop.
fn disabled(model: &Model) -> Value {
    if !uses_thinking_level(&model.id) {
        return json!({"thinkingBudget": 0});
    }
    match clamp_thinking_level(model, ThinkingLevel::Off) {
        ThinkingLevel::Off => json!({"thinkingBudget": 0}),
        lowest => json!({"thinkingLevel": google_level(model, lowest).to_uppercase()}),
    }
}

/// The Google level of a (supported) pi level: its `thinkingLevelMap` value, lowercased, when
/// that is one of Google's four; the level's own name otherwise. `xhigh` and `max` (which pi
/// refuses with an error) are sent as `high`, the most Gemini takes.
fn google_level(model: &Model, level: ThinkingLevel) -> &'static str {
    let mapped = model
        .thinking_level_map
        .as_ref()
        .and_then(|m| m.get(level.as_str()))
        .and_then(|v| v.as_deref())
        .map(str::to_ascii_lowercase);
    match mapped.as_deref().unwrap_or(level.as_str()) {
        "minimal" => "minimal",
        "low" => "low",
        "medium" => "medium",
        _ => "high",
    }
}

/// The token budget of a Google level: the options' budget for it, else pi's table for the
/// Gemini 2.5 models, else `-1` (the model decides).
fn budget(model: &Model, level: &str, budgets: &ThinkingBudgets) -> i64 {
    let custom = match level {
        "minimal" => budgets.minimal,
        "low" => budgets.low,
        "medium" => budgets.medium,
        _ => budgets.high,
    };
    if let Some(custom) = custom {
        return i64::try_from(custom).unwrap_or(i64::MAX);
    }
    let id = &model.id;
    let table: [i64; 4] = if id.contains("2.5-pro") {
        [128, 2048, 8192, 32768]
    } else if id.contains("2.5-flash-lite") {
        [512, 2048, 8192, 24576]
    } else if id.contains("2.5-flash") {
        [128, 2048, 8192, 24576]
    } else {
        return -1;
    };
    match level {
        "minimal" => table[0],
        "low" => table[1],
        "medium" => table[2],
        _ => table[3],
    }
}

/// Whether the model takes Gemini's discrete `thinkingLevel` rather than a token budget (pi's
/// `usesGoogleThinkingLevel`, by the model id's family).
pub fn uses_thinking_level(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    if id == "gemini-flash-latest" || id == "gemini-flash-lite-latest" {
        return true;
    }
    if id.contains("gemma-4") || id.contains("gemma4") {
        return true;
    }
    id.match_indices("gemini-").any(|(at, prefix)| {
        let rest = &id[at + prefix.len()..];
        let bytes = rest.as_bytes();
        // Gemini 4 and later: `gemini-4…` to `gemini-9…`, or two digits (`gemini-10…`).
        let later = matches!(bytes, [b'4'..=b'9', ..] | [b'1'..=b'9', b'0'..=b'9', ..]);
        // Gemini 3 Pro/Flash, with or without a minor version: `gemini-3-pro`, `gemini-3.1-flash`.
        let three = rest.strip_prefix('3').is_some_and(|after| {
            let after = after
                .strip_prefix('.')
                .map(|minor| minor.trim_start_matches(|c: char| c.is_ascii_digit()))
                .filter(|trimmed| trimmed.len() < after.len() - 1)
                .unwrap_or(after);
            after.starts_with("-pro") || after.starts_with("-flash")
        });
        later || three
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xhigh_through_the_map_is_high() {
        let mut model = Model::openai_compatible("http://x", "gemini-4-hydrogen");
        model.reasoning = true;
        model.thinking_level_map = serde_json::from_value(
            json!({"off": null, "minimal": null, "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}),
        )
        .expect("a level map");
        assert_eq!(
            thinking_config(&model, Some(ReasoningLevel::Xhigh), &ThinkingBudgets::new()),
            Some(json!({"includeThoughts": true, "thinkingLevel": "HIGH"}))
        );
        assert_eq!(
            thinking_config(&model, None, &ThinkingBudgets::new()),
            Some(json!({"thinkingLevel": "LOW"}))
        );
    }

    #[test]
    fn discrete_levels_by_model_family() {
        for id in [
            "gemini-3-flash-preview",
            "gemini-3.1-pro-preview",
            "gemini-3.8-flash",
            "gemini-4-argon",
            "gemini-flash-latest",
            "gemma-4-31b-it",
            "models/gemini-3-pro",
        ] {
            assert!(uses_thinking_level(id), "{id}");
        }
        for id in [
            "gemini-2.5-flash",
            "gemini-2.5-pro",
            "gemini-pro-latest",
            "gemini-3.-pro",
            "gemini-3-nano",
            "gemini-1.5-pro",
        ] {
            assert!(!uses_thinking_level(id), "{id}");
        }
    }
}
