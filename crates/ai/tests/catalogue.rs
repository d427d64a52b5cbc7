//! The model catalogue (`data/models.json`, written by `cargo xtask models` from pi-ai 0.73.1):
//! every model pi lists is loaded (counted per provider against the generator's own count), each
//! serializes back to pi's JSON unchanged, and the lookups behave as pi's.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use oxpi_ai::models::{
    builtin_models, calculate_cost, catalogue, get_model, models, models_are_equal, providers,
};
use oxpi_ai::providers::auth::api_key_env_vars;
use oxpi_ai::{Usage, API_ANTHROPIC_MESSAGES, API_OPENAI_COMPLETIONS};
use serde_json::Value;

const DATA: &str = include_str!("../data/models.json");

#[test]
fn every_pi_model_is_loaded_per_provider() {
    let catalogue = catalogue();
    assert!(catalogue.source.starts_with("@mariozechner/pi-ai 0.73.1"));
    let mut loaded: BTreeMap<String, usize> = BTreeMap::new();
    for model in builtin_models() {
        *loaded.entry(model.provider.clone()).or_default() += 1;
    }
    assert_eq!(loaded, catalogue.counts);
    assert_eq!(
        catalogue.counts.len(),
        30,
        "pi's 31 providers less openai-codex"
    );
    assert_eq!(builtin_models().len(), 959);
    assert_eq!(
        providers(),
        catalogue.counts.keys().cloned().collect::<Vec<_>>()
    );
}

#[test]
fn every_model_serializes_back_to_pis_json() {
    let data: Value = serde_json::from_str(DATA).unwrap();
    let pi_models = data["models"].as_array().unwrap();
    assert_eq!(pi_models.len(), builtin_models().len());
    for (pi, ours) in pi_models.iter().zip(builtin_models()) {
        let back = serde_json::to_value(ours).unwrap();
        assert_eq!(
            normalize(back),
            normalize(pi.clone()),
            "{}/{}",
            ours.provider,
            ours.id
        );
    }
}

/// Numbers as f64 (JavaScript writes `3` where serde writes `3.0`), and pi's empty `headers`
/// object as absent (oxpi leaves an empty map out).
fn normalize(value: Value) -> Value {
    match value {
        Value::Number(n) => serde_json::json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.into_iter().map(normalize).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, v)| !(k == "headers" && v.as_object().is_some_and(|o| o.is_empty())))
                .map(|(k, v)| (k, normalize(v)))
                .collect(),
        ),
        other => other,
    }
}

#[test]
fn lookups_cost_and_equality_work_as_pis() {
    let sonnet = get_model("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.api, API_ANTHROPIC_MESSAGES);
    assert_eq!(
        (
            sonnet.cost.input,
            sonnet.cost.output,
            sonnet.cost.cache_read,
            sonnet.cost.cache_write
        ),
        (3.0, 15.0, 0.3, 3.75)
    );
    let mut usage = Usage {
        input: 1_000_000,
        output: 100_000,
        cache_read: 2_000_000,
        cache_write: 0,
        ..Usage::default()
    };
    let cost = calculate_cost(&sonnet, &mut usage);
    assert!((cost.total - (3.0 + 1.5 + 0.6)).abs() < 1e-9);
    assert_eq!(usage.cost, cost);

    let other = get_model("vercel-ai-gateway", "anthropic/claude-sonnet-4.5");
    if let Some(other) = other {
        assert!(!models_are_equal(&sonnet, &other));
    }
    assert!(models_are_equal(&sonnet, &sonnet.clone()));
    assert!(models("nowhere").is_empty());
    assert_eq!(get_model("anthropic", "no-such-model"), None);
    let groq = models("groq");
    assert!(!groq.is_empty());
    assert!(groq
        .iter()
        .all(|m| m.provider == "groq" && m.api == API_OPENAI_COMPLETIONS));
    assert!(groq.windows(2).all(|w| w[0].id < w[1].id), "sorted by id");
}

#[test]
fn every_provider_with_keys_names_its_variable() {
    // Providers whose credentials are not an API key in one variable.
    let keyless = ["amazon-bedrock"];
    for provider in providers() {
        if keyless.contains(&provider.as_str()) {
            continue;
        }
        assert!(
            !api_key_env_vars(&provider).is_empty(),
            "no key variable for {provider}"
        );
    }
}

#[test]
fn every_models_compat_settings_are_understood() {
    use oxpi_ai::internals::GeminiCompat;
    use oxpi_ai::internals::OpenAiCompat;
    use oxpi_ai::internals::ResponsesCompat;
    let mut checked = 0;
    for model in builtin_models() {
        let parsed = match model.api.as_str() {
            "openai-completions" | "mistral-conversations" => {
                OpenAiCompat::for_model(model).map(|_| ())
            }
            "openai-responses" | "azure-openai-responses" => {
                ResponsesCompat::for_model(model).map(|_| ())
            }
            "google-generative-ai" | "google-vertex" => GeminiCompat::for_model(model).map(|_| ()),
            _ => Ok(()),
        };
        assert_eq!(parsed, Ok(()), "{}/{}", model.provider, model.id);
        checked += 1;
    }
    assert_eq!(checked, builtin_models().len());
}
