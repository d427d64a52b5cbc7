//! Built-in models: ids, endpoints, limits and prices (US dollars per million tokens, as
//! published by each provider in 2025; check the provider's page before relying on a figure).
//!
//! ```
//! let model = oxpi_ai::models::get_model("openai", "gpt-4o-mini").unwrap();
//! assert_eq!(model.base_url, "https://api.openai.com/v1");
//! assert_eq!(model.cost.input, 0.15);
//! ```

use std::sync::OnceLock;

use crate::types::model::{
    InputKind, Model, ModelCost, API_ANTHROPIC_MESSAGES, API_GOOGLE_GENERATIVE_AI,
    API_OPENAI_COMPLETIONS,
};

struct Spec {
    provider: &'static str,
    id: &'static str,
    name: &'static str,
    reasoning: bool,
    images: bool,
    price: [f64; 3],
    context_window: u64,
    max_tokens: u64,
}

#[allow(clippy::too_many_arguments)] // one row of the table, positional on purpose
const fn spec(
    provider: &'static str,
    id: &'static str,
    name: &'static str,
    reasoning: bool,
    images: bool,
    price: [f64; 3],
    context_window: u64,
    max_tokens: u64,
) -> Spec {
    Spec {
        provider,
        id,
        name,
        reasoning,
        images,
        price,
        context_window,
        max_tokens,
    }
}

/// (provider, base URL) of every built-in provider.
pub const PROVIDER_BASE_URLS: &[(&str, &str)] = &[
    ("anthropic", "https://api.anthropic.com/v1"),
    ("google", "https://generativelanguage.googleapis.com/v1beta"),
    ("openai", "https://api.openai.com/v1"),
    ("openrouter", "https://openrouter.ai/api/v1"),
    ("groq", "https://api.groq.com/openai/v1"),
    ("deepseek", "https://api.deepseek.com"),
    ("xai", "https://api.x.ai/v1"),
    ("mistral", "https://api.mistral.ai/v1"),
    ("cerebras", "https://api.cerebras.ai/v1"),
    ("together", "https://api.together.xyz/v1"),
];

// price: [input, output, cache read]
const SPECS: &[Spec] = &[
    spec(
        "openai",
        "gpt-4o-mini",
        "GPT-4o mini",
        false,
        true,
        [0.15, 0.60, 0.075],
        128_000,
        16_384,
    ),
    spec(
        "openai",
        "gpt-4o",
        "GPT-4o",
        false,
        true,
        [2.50, 10.00, 1.25],
        128_000,
        16_384,
    ),
    spec(
        "openai",
        "gpt-4.1",
        "GPT-4.1",
        false,
        true,
        [2.00, 8.00, 0.50],
        1_047_576,
        32_768,
    ),
    spec(
        "openai",
        "gpt-4.1-mini",
        "GPT-4.1 mini",
        false,
        true,
        [0.40, 1.60, 0.10],
        1_047_576,
        32_768,
    ),
    spec(
        "openai",
        "gpt-4.1-nano",
        "GPT-4.1 nano",
        false,
        true,
        [0.10, 0.40, 0.025],
        1_047_576,
        32_768,
    ),
    spec(
        "openai",
        "gpt-5",
        "GPT-5",
        true,
        true,
        [1.25, 10.00, 0.125],
        400_000,
        128_000,
    ),
    spec(
        "openai",
        "gpt-5-mini",
        "GPT-5 mini",
        true,
        true,
        [0.25, 2.00, 0.025],
        400_000,
        128_000,
    ),
    spec(
        "openai",
        "gpt-5-nano",
        "GPT-5 nano",
        true,
        true,
        [0.05, 0.40, 0.005],
        400_000,
        128_000,
    ),
    spec(
        "openai",
        "o4-mini",
        "o4-mini",
        true,
        true,
        [1.10, 4.40, 0.275],
        200_000,
        100_000,
    ),
    spec(
        "openrouter",
        "openai/gpt-4o-mini",
        "GPT-4o mini (OpenRouter)",
        false,
        true,
        [0.15, 0.60, 0.075],
        128_000,
        16_384,
    ),
    spec(
        "openrouter",
        "deepseek/deepseek-chat",
        "DeepSeek V3 (OpenRouter)",
        false,
        false,
        [0.27, 1.10, 0.07],
        64_000,
        8_192,
    ),
    spec(
        "openrouter",
        "qwen/qwen-2.5-coder-32b-instruct",
        "Qwen2.5 Coder 32B (OpenRouter)",
        false,
        false,
        [0.07, 0.16, 0.0],
        32_768,
        8_192,
    ),
    spec(
        "groq",
        "llama-3.3-70b-versatile",
        "Llama 3.3 70B (Groq)",
        false,
        false,
        [0.59, 0.79, 0.0],
        131_072,
        32_768,
    ),
    spec(
        "groq",
        "llama-3.1-8b-instant",
        "Llama 3.1 8B (Groq)",
        false,
        false,
        [0.05, 0.08, 0.0],
        131_072,
        8_192,
    ),
    spec(
        "groq",
        "openai/gpt-oss-120b",
        "gpt-oss-120b (Groq)",
        true,
        false,
        [0.15, 0.75, 0.0],
        131_072,
        32_768,
    ),
    spec(
        "deepseek",
        "deepseek-chat",
        "DeepSeek V3",
        false,
        false,
        [0.27, 1.10, 0.07],
        64_000,
        8_192,
    ),
    spec(
        "deepseek",
        "deepseek-reasoner",
        "DeepSeek R1",
        true,
        false,
        [0.55, 2.19, 0.14],
        64_000,
        32_768,
    ),
    spec(
        "xai",
        "grok-4",
        "Grok 4",
        true,
        true,
        [3.00, 15.00, 0.75],
        256_000,
        64_000,
    ),
    spec(
        "xai",
        "grok-3-mini",
        "Grok 3 mini",
        true,
        false,
        [0.30, 0.50, 0.075],
        131_072,
        16_384,
    ),
    spec(
        "mistral",
        "mistral-large-latest",
        "Mistral Large",
        false,
        false,
        [2.00, 6.00, 0.0],
        128_000,
        16_384,
    ),
    spec(
        "mistral",
        "mistral-small-latest",
        "Mistral Small",
        false,
        true,
        [0.10, 0.30, 0.0],
        128_000,
        16_384,
    ),
    spec(
        "mistral",
        "codestral-latest",
        "Codestral",
        false,
        false,
        [0.30, 0.90, 0.0],
        256_000,
        16_384,
    ),
    spec(
        "cerebras",
        "llama-3.3-70b",
        "Llama 3.3 70B (Cerebras)",
        false,
        false,
        [0.85, 1.20, 0.0],
        65_536,
        8_192,
    ),
    spec(
        "cerebras",
        "gpt-oss-120b",
        "gpt-oss-120b (Cerebras)",
        true,
        false,
        [0.25, 0.69, 0.0],
        65_536,
        32_768,
    ),
    spec(
        "together",
        "meta-llama/Llama-3.3-70B-Instruct-Turbo",
        "Llama 3.3 70B (Together)",
        false,
        false,
        [0.88, 0.88, 0.0],
        131_072,
        8_192,
    ),
];

/// Every built-in model: the Chat Completions table above, then each API's own list.
pub fn builtin_models() -> &'static [Model] {
    static MODELS: OnceLock<Vec<Model>> = OnceLock::new();
    MODELS.get_or_init(|| {
        let mut models = completions_models();
        models.extend(crate::providers::anthropic_messages::models::builtin());
        models.extend(crate::providers::google_generative_ai::models::builtin());
        models.extend(crate::providers::openai_responses::models::builtin());
        models
    })
}

/// The wire API a provider speaks by default.
pub fn provider_api(provider: &str) -> &'static str {
    match provider {
        "anthropic" => API_ANTHROPIC_MESSAGES,
        "google" => API_GOOGLE_GENERATIVE_AI,
        _ => API_OPENAI_COMPLETIONS,
    }
}

fn completions_models() -> Vec<Model> {
    {
        SPECS
            .iter()
            .filter_map(|s| {
                let base_url = provider_base_url(s.provider)?;
                let mut model = Model::openai_compatible(base_url, s.id);
                model.name = s.name.to_string();
                model.api = API_OPENAI_COMPLETIONS.to_string();
                model.provider = s.provider.to_string();
                model.reasoning = s.reasoning;
                if s.images {
                    model.input = vec![InputKind::Text, InputKind::Image];
                }
                model.cost = ModelCost {
                    input: s.price[0],
                    output: s.price[1],
                    cache_read: s.price[2],
                    cache_write: 0.0,
                };
                model.context_window = s.context_window;
                model.max_tokens = s.max_tokens;
                Some(model)
            })
            .collect()
    }
}

/// The built-in model `id` of `provider`.
pub fn get_model(provider: &str, id: &str) -> Option<Model> {
    builtin_models()
        .iter()
        .find(|m| m.provider == provider && m.id == id)
        .cloned()
}

/// The base URL of a built-in provider.
pub fn provider_base_url(provider: &str) -> Option<&'static str> {
    PROVIDER_BASE_URLS
        .iter()
        .find(|(p, _)| *p == provider)
        .map(|(_, url)| *url)
}

/// A model for `provider` and `id`: the built-in one when known, else a model with the
/// provider's base URL and default limits (for ids newer than this list).
pub fn model_for(provider: &str, id: &str) -> Option<Model> {
    get_model(provider, id).or_else(|| {
        let mut model = Model::openai_compatible(provider_base_url(provider)?, id);
        model.provider = provider.to_string();
        model.api = provider_api(provider).to_string();
        Some(model)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_has_a_known_provider_and_sane_limits() {
        assert_eq!(completions_models().len(), SPECS.len());
        let mut keys: Vec<(&str, &str)> = builtin_models()
            .iter()
            .map(|m| (m.provider.as_str(), m.id.as_str()))
            .collect();
        keys.sort();
        let count = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), count, "(provider, id) pairs are unique");
        for model in builtin_models() {
            assert!(model.max_tokens <= model.context_window, "{}", model.id);
            assert!(model.cost.output >= model.cost.input, "{}", model.id);
        }
    }

    #[test]
    fn unknown_ids_get_the_provider_endpoint() {
        let model = model_for("groq", "some-new-model").unwrap();
        assert_eq!(model.base_url, "https://api.groq.com/openai/v1");
        assert_eq!(model.provider, "groq");
        assert_eq!(model_for("nowhere", "x"), None);
        let claude = model_for("anthropic", "claude-new").unwrap();
        assert_eq!(
            (claude.api.as_str(), claude.base_url.as_str()),
            ("anthropic-messages", "https://api.anthropic.com/v1")
        );
    }
}
