//! The model catalogue: every chat model pi-ai 1.6.0 lists (1,698 models of 42 providers), with
//! pi's ids, names, APIs, providers, base URLs, limits, prices (US dollars per million tokens,
//! price tiers), headers, compat settings, thinking-level maps, input limits and prompt-cache
//! lifetimes. It is `data/models.json`, generated from pi-ai's published list by
//! `cargo xtask models`, and read once on first use. Models on `openai-codex-responses` take a
//! ChatGPT login's access token as their key. [`crate::Models`] is the collection over these
//! providers.
//!
//! ```
//! use oxpi_ai::models;
//! let model = models::get_model("anthropic", "claude-sonnet-4-5").unwrap();
//! assert_eq!(model.api, "anthropic-messages");
//! assert_eq!(model.cost.cache_read, 0.3);
//! assert!(models::providers().contains(&"openrouter".to_string()));
//! assert!(models::models("groq").iter().all(|m| m.provider == "groq"));
//! ```

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::types::model::{Model, API_OPENAI_COMPLETIONS};
use crate::types::usage::{Usage, UsageCost};

/// The catalogue file, as `cargo xtask models` wrote it.
const CATALOGUE_JSON: &str = include_str!("../data/models.json");

/// The parsed catalogue file.
#[derive(Debug, Deserialize)]
pub struct Catalogue {
    /// Which pi-ai release (and which of its functions) the models came from.
    pub source: String,
    /// Models per provider, as pi lists them (counted by the generator, apart from `models`).
    pub counts: BTreeMap<String, usize>,
    /// The models, sorted by provider then id.
    pub models: Vec<Model>,
}

/// The catalogue, parsed on first use. A file that did not parse (a broken regeneration; the
/// tests catch it) gives an empty catalogue and an error in the log, never a panic.
pub fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        serde_json::from_str(CATALOGUE_JSON).unwrap_or_else(|e| {
            tracing::error!("the built-in model catalogue does not parse: {e}");
            Catalogue {
                source: String::new(),
                counts: BTreeMap::new(),
                models: Vec::new(),
            }
        })
    })
}

/// Every model of the catalogue.
pub fn builtin_models() -> &'static [Model] {
    &catalogue().models
}

/// The providers of the catalogue, sorted (pi's `getProviders`).
pub fn providers() -> Vec<String> {
    let mut providers: Vec<String> = builtin_models()
        .iter()
        .map(|m| m.provider.clone())
        .collect();
    providers.dedup();
    providers
}

/// The models of `provider`, sorted by id (pi's `getModels`); empty for an unknown provider.
pub fn models(provider: &str) -> Vec<Model> {
    builtin_models()
        .iter()
        .filter(|m| m.provider == provider)
        .cloned()
        .collect()
}

/// The catalogue model `id` of `provider` (pi's `getModel`).
pub fn get_model(provider: &str, id: &str) -> Option<Model> {
    builtin_models()
        .iter()
        .find(|m| m.provider == provider && m.id == id)
        .cloned()
}

/// Fills in `usage.cost` from the model's prices and returns it (pi's `calculateCost`).
pub fn calculate_cost(model: &Model, usage: &mut Usage) -> UsageCost {
    model.calculate_cost(usage)
}

/// True when both are the same model of the same provider (pi's `modelsAreEqual`).
pub fn models_are_equal(a: &Model, b: &Model) -> bool {
    a.id == b.id && a.provider == b.provider
}

/// Providers oxpi knows that pi's catalogue does not list: (provider, API, base URL). (Together,
/// once here, is in pi 1.6's catalogue.)
const EXTRA_PROVIDERS: &[(&str, &str, &str)] = &[];

/// The wire API of a provider: the API of its first catalogue model (pi lists each provider's
/// models on one API, but GitHub Copilot and OpenCode, which use several), else Chat
/// Completions.
pub fn provider_api(provider: &str) -> &'static str {
    builtin_models()
        .iter()
        .find(|m| m.provider == provider)
        .map(|m| m.api.as_str())
        .or_else(|| {
            EXTRA_PROVIDERS
                .iter()
                .find(|(p, _, _)| *p == provider)
                .map(|(_, api, _)| *api)
        })
        .unwrap_or(API_OPENAI_COMPLETIONS)
}

/// The base URL of a provider's models (its first catalogue model's).
pub fn provider_base_url(provider: &str) -> Option<&'static str> {
    builtin_models()
        .iter()
        .find(|m| m.provider == provider)
        .map(|m| m.base_url.as_str())
        .or_else(|| {
            EXTRA_PROVIDERS
                .iter()
                .find(|(p, _, _)| *p == provider)
                .map(|(_, _, url)| *url)
        })
}

/// A model for `provider` and `id`: the catalogue's when it has it, else a model with the
/// provider's API and base URL and default limits (for ids newer than the catalogue).
pub fn model_for(provider: &str, id: &str) -> Option<Model> {
    get_model(provider, id).or_else(|| {
        let mut model = Model::openai_compatible(provider_base_url(provider)?, id);
        model.provider = provider.to_string();
        model.api = provider_api(provider).into();
        Some(model)
    })
}

/// The candidates closest to `query`, best first, at most three ("did you mean"): those within a
/// few edits of it (a third of its length, at least two; case ignored), then those containing it.
///
/// ```
/// use oxpi_ai::models::closest;
/// let ids = ["claude-haiku-4-5", "claude-sonnet-4-5", "gpt-4o-mini"];
/// assert_eq!(closest("claude-haiku-4.5", ids), ["claude-haiku-4-5"]);
/// assert_eq!(closest("GPT-4o", ids), ["gpt-4o-mini"]);
/// assert!(closest("llama", ids).is_empty());
/// ```
pub fn closest<'a>(query: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let query = query.to_lowercase();
    let limit = (query.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &'a str)> = candidates
        .into_iter()
        .filter_map(|candidate| {
            let lower = candidate.to_lowercase();
            let distance = edit_distance(&query, &lower);
            if distance <= limit {
                Some((distance, candidate))
            } else if !query.is_empty() && lower.contains(&query) {
                Some((limit + 1 + lower.len() - query.len(), candidate))
            } else {
                None
            }
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_parses_and_pairs_are_unique() {
        let models = builtin_models();
        assert!(models.len() > 1600, "{}", models.len());
        let mut keys: Vec<(&str, &str)> = models
            .iter()
            .map(|m| (m.provider.as_str(), m.id.as_str()))
            .collect();
        let count = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), count, "(provider, id) pairs are unique");
    }

    #[test]
    fn closest_ranks_by_edits_then_containment() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        let ids = ["gpt-4o", "gpt-4o-mini", "gpt-5", "o3"];
        assert_eq!(closest("gpt4o", ids), ["gpt-4o", "gpt-5"]);
        assert_eq!(closest("4o-mini", ids), ["gpt-4o-mini"]);
        assert!(closest("", ids).len() <= 3);
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
            ("anthropic-messages", "https://api.anthropic.com")
        );
        // pi 1.6 lists Together, at its new domain.
        let together = model_for("together", "meta-llama/x").unwrap();
        assert_eq!(together.base_url, "https://api.together.ai/v1");
    }
}
