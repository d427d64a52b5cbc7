//! Built-in Claude models on Anthropic's API: context windows, output limits and prices (US
//! dollars per million tokens: input, output, cache read, cache write), as published in 2025
//! and listed in pi-mono's `models.generated.ts`. Dated ids and their aliases are both listed.

use std::collections::BTreeMap;

use super::DEFAULT_BASE_URL;
use crate::types::model::{InputKind, Model, ModelCost, API_ANTHROPIC_MESSAGES};

struct Spec {
    id: &'static str,
    name: &'static str,
    reasoning: bool,
    /// input, output, cache read, cache write.
    price: [f64; 4],
    context_window: u64,
    max_tokens: u64,
}

const SONNET: [f64; 4] = [3.0, 15.0, 0.3, 3.75];
const OPUS: [f64; 4] = [15.0, 75.0, 1.5, 18.75];
const HAIKU_4_5: [f64; 4] = [1.0, 5.0, 0.1, 1.25];
const HAIKU_3_5: [f64; 4] = [0.8, 4.0, 0.08, 1.0];

const SPECS: &[Spec] = &[
    Spec {
        id: "claude-sonnet-4-5-20250929",
        name: "Claude Sonnet 4.5",
        reasoning: true,
        price: SONNET,
        context_window: 200_000,
        max_tokens: 64_000,
    },
    Spec {
        id: "claude-sonnet-4-5",
        name: "Claude Sonnet 4.5 (latest)",
        reasoning: true,
        price: SONNET,
        context_window: 200_000,
        max_tokens: 64_000,
    },
    Spec {
        id: "claude-sonnet-4-20250514",
        name: "Claude Sonnet 4",
        reasoning: true,
        price: SONNET,
        context_window: 200_000,
        max_tokens: 64_000,
    },
    Spec {
        id: "claude-sonnet-4-0",
        name: "Claude Sonnet 4 (latest)",
        reasoning: true,
        price: SONNET,
        context_window: 200_000,
        max_tokens: 64_000,
    },
    Spec {
        id: "claude-opus-4-1-20250805",
        name: "Claude Opus 4.1",
        reasoning: true,
        price: OPUS,
        context_window: 200_000,
        max_tokens: 32_000,
    },
    Spec {
        id: "claude-opus-4-1",
        name: "Claude Opus 4.1 (latest)",
        reasoning: true,
        price: OPUS,
        context_window: 200_000,
        max_tokens: 32_000,
    },
    Spec {
        id: "claude-haiku-4-5-20251001",
        name: "Claude Haiku 4.5",
        reasoning: true,
        price: HAIKU_4_5,
        context_window: 200_000,
        max_tokens: 64_000,
    },
    Spec {
        id: "claude-haiku-4-5",
        name: "Claude Haiku 4.5 (latest)",
        reasoning: true,
        price: HAIKU_4_5,
        context_window: 200_000,
        max_tokens: 64_000,
    },
    Spec {
        id: "claude-3-5-haiku-20241022",
        name: "Claude Haiku 3.5",
        reasoning: false,
        price: HAIKU_3_5,
        context_window: 200_000,
        max_tokens: 8_192,
    },
    Spec {
        id: "claude-3-5-haiku-latest",
        name: "Claude Haiku 3.5 (latest)",
        reasoning: false,
        price: HAIKU_3_5,
        context_window: 200_000,
        max_tokens: 8_192,
    },
];

/// Every built-in model of the `anthropic` provider (api `anthropic-messages`).
pub fn builtin() -> Vec<Model> {
    SPECS
        .iter()
        .map(|s| Model {
            id: s.id.to_string(),
            name: s.name.to_string(),
            api: API_ANTHROPIC_MESSAGES.to_string(),
            provider: "anthropic".to_string(),
            base_url: DEFAULT_BASE_URL.to_string(),
            reasoning: s.reasoning,
            input: vec![InputKind::Text, InputKind::Image],
            cost: ModelCost {
                input: s.price[0],
                output: s.price[1],
                cache_read: s.price[2],
                cache_write: s.price[3],
            },
            context_window: s.context_window,
            max_tokens: s.max_tokens,
            headers: BTreeMap::new(),
            compat: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_are_unique_and_sane() {
        let models = builtin();
        assert_eq!(models.len(), SPECS.len());
        let mut ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), models.len(), "duplicate ids");
        for model in &models {
            assert!(model.max_tokens <= model.context_window, "{}", model.id);
            assert!(model.cost.output > model.cost.input, "{}", model.id);
            assert!(model.cost.cache_read < model.cost.input, "{}", model.id);
            assert!(model.cost.cache_write > model.cost.input, "{}", model.id);
        }
        let sonnet = models
            .iter()
            .find(|m| m.id == "claude-sonnet-4-5-20250929")
            .unwrap();
        assert_eq!(
            (sonnet.cost, sonnet.reasoning, sonnet.base_url.as_str()),
            (
                ModelCost {
                    input: 3.0,
                    output: 15.0,
                    cache_read: 0.3,
                    cache_write: 3.75
                },
                true,
                "https://api.anthropic.com/v1"
            )
        );
    }
}
