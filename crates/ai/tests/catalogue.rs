//! The model catalogue (`data/models.json`, written by `cargo xtask models` from pi-ai 1.6.0):
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
    assert!(catalogue.source.starts_with("@earendil-works/pi-ai 1.6.0"));
    let mut loaded: BTreeMap<String, usize> = BTreeMap::new();
    for model in builtin_models() {
        *loaded.entry(model.provider.clone()).or_default() += 1;
    }
    assert_eq!(loaded, catalogue.counts);
    // pi 1.6 has 43 providers; one of them (typesafe) has no chat model.
    assert_eq!(catalogue.counts.len(), 42);
    assert_eq!(builtin_models().len(), 1698);
    let data: Value = serde_json::from_str(DATA).unwrap();
    let mut per_api: BTreeMap<String, u64> = BTreeMap::new();
    for model in builtin_models() {
        *per_api.entry(model.api.as_str().to_string()).or_default() += 1;
    }
    let expected: BTreeMap<String, u64> = serde_json::from_value(data["apis"].clone()).unwrap();
    assert_eq!(per_api, expected);
    assert_eq!(per_api["openai-completions"], 748);
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
    // What pi 1.6 changed: xAI on Responses, Kimi and Xiaomi on Chat Completions.
    assert!(models("xai").iter().all(|m| m.api == "openai-responses"));
    assert!(models("kimi-coding")
        .iter()
        .all(|m| m.api == API_OPENAI_COMPLETIONS));
    assert!(models("xiaomi")
        .iter()
        .all(|m| m.api == API_OPENAI_COMPLETIONS));
}

#[test]
fn every_provider_with_keys_names_its_variable() {
    // Providers whose credentials are not an API key in one variable (openai-codex: a ChatGPT
    // login).
    let keyless = ["amazon-bedrock", "openai-codex"];
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
fn every_default_model_of_the_labs_is_in_the_catalogue() {
    for (provider, facts) in oxpi_ai::provider_facts::all() {
        if let Some(id) = &facts.default_model {
            assert!(
                get_model(provider, id).is_some(),
                "{provider}'s default model {id} is not in pi 1.6's catalogue"
            );
        }
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
