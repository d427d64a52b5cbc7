//! Built-in Gemini models (provider `google`, API `google-generative-ai`).
//!
//! Context windows, output limits and prices (US dollars per million tokens, standard tier for
//! prompts up to 200k tokens; cache reads at the published context-caching rate) as in pi-ai's
//! generated model list, which follows Google's 2025 pricing page. Check Google's page before
//! relying on a figure.
//!
//! ```
//! let models = oxpi_ai::providers::google_generative_ai::models::builtin();
//! let flash = models.iter().find(|m| m.id == "gemini-2.5-flash").unwrap();
//! assert_eq!(flash.api, "google-generative-ai");
//! assert_eq!((flash.cost.input, flash.cost.output), (0.30, 2.50));
//! ```

use std::collections::BTreeMap;

use super::DEFAULT_BASE_URL;
use crate::types::model::{InputKind, Model, ModelCost, API_GOOGLE_GENERATIVE_AI};

/// (id, name, reasoning, [input, output, cache read], context window, max output tokens)
type Row = (&'static str, &'static str, bool, [f64; 3], u64, u64);

const ROWS: &[Row] = &[
    (
        "gemini-2.5-pro",
        "Gemini 2.5 Pro",
        true,
        [1.25, 10.00, 0.31],
        1_048_576,
        65_536,
    ),
    (
        "gemini-2.5-flash",
        "Gemini 2.5 Flash",
        true,
        [0.30, 2.50, 0.075],
        1_048_576,
        65_536,
    ),
    (
        "gemini-2.5-flash-lite",
        "Gemini 2.5 Flash-Lite",
        true,
        [0.10, 0.40, 0.025],
        1_048_576,
        65_536,
    ),
    (
        "gemini-2.0-flash",
        "Gemini 2.0 Flash",
        false,
        [0.10, 0.40, 0.025],
        1_048_576,
        8_192,
    ),
];

/// The built-in Gemini models: text and image input, reasoning on the 2.5 models.
pub fn builtin() -> Vec<Model> {
    ROWS.iter()
        .map(
            |&(id, name, reasoning, price, context_window, max_tokens)| Model {
                id: id.to_string(),
                name: name.to_string(),
                api: API_GOOGLE_GENERATIVE_AI.to_string(),
                provider: "google".to_string(),
                base_url: DEFAULT_BASE_URL.to_string(),
                reasoning,
                input: vec![InputKind::Text, InputKind::Image],
                cost: ModelCost {
                    input: price[0],
                    output: price[1],
                    cache_read: price[2],
                    cache_write: 0.0,
                },
                context_window,
                max_tokens,
                headers: BTreeMap::new(),
                compat: None,
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_sane() {
        let models = builtin();
        assert_eq!(models.len(), 4);
        for model in &models {
            assert!(model.max_tokens <= model.context_window, "{}", model.id);
            assert!(model.cost.output >= model.cost.input, "{}", model.id);
            assert_eq!(model.reasoning, model.id.contains("2.5"), "{}", model.id);
        }
    }
}
