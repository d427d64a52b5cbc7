//! Tests of `models_json.rs`: pi's custom providers, config values and errors.

use super::*;
use serde_json::json;

fn env(name: &str) -> Option<String> {
    match name {
        "KEY" => Some("k-1".into()),
        "HOST" => Some("box".into()),
        _ => None,
    }
}

fn load(value: Value) -> CustomModels {
    CustomModels::from_object(
        PathBuf::from("/a/models.json"),
        value.as_object().unwrap(),
        &env,
    )
}

#[test]
fn config_values_resolve_as_pi() {
    let r = |t: &str| resolve_config_value(t, &env);
    assert_eq!(r("plain").as_deref(), Some("plain"));
    assert_eq!(r("$KEY").as_deref(), Some("k-1"));
    assert_eq!(r("Bearer ${KEY}!").as_deref(), Some("Bearer k-1!"));
    assert_eq!(r("a$$b$!c").as_deref(), Some("a$b!c"));
    assert_eq!(r("${not a name}").as_deref(), Some("${not a name}"));
    assert_eq!(r("cost $5").as_deref(), Some("cost $5"));
    assert_eq!(r("$MISSING"), None);
    assert_eq!(r("!printf ' out \\n'").as_deref(), Some("out"));
    assert_eq!(r("!exit 3"), None);
}

#[test]
fn a_custom_provider_s_models_get_pi_s_defaults_and_its_settings() {
    let c = load(json!({"providers": {"ollama": {
        "baseUrl": "http://$HOST:11434/v1", "api": "openai-completions", "apiKey": "$KEY",
        "headers": {"X-A": "${KEY}", "X-Missing": "$MISSING"},
        "compat": {"supportsDeveloperRole": false, "maxTokensField": "max_tokens"},
        "models": [{"id": "qwen3", "reasoning": true, "compat": {"maxTokensField": "max_completion_tokens"}},
                   {"id": "llama", "contextWindow": 8192, "maxTokens": 512}]
    }}}));
    assert_eq!(c.errors, Vec::<String>::new());
    let q = c.get("ollama", "qwen3").unwrap();
    assert_eq!(q.name, "qwen3");
    assert_eq!(
        q.base_url, "http://$HOST:11434/v1",
        "baseUrl is not a config value"
    );
    assert_eq!(
        (q.context_window, q.max_tokens, q.reasoning),
        (128_000, 16_384, true)
    );
    assert_eq!(
        q.headers,
        BTreeMap::from([("X-A".to_string(), "k-1".to_string())])
    );
    assert_eq!(
        q.compat,
        Some(json!({"supportsDeveloperRole": false, "maxTokensField": "max_completion_tokens"}))
    );
    let l = c.get("ollama", "llama").unwrap();
    assert_eq!((l.context_window, l.max_tokens), (8192, 512));
    assert_eq!(c.api_key("ollama", &env).as_deref(), Some("k-1"));
    assert!(c.has_key("ollama", &env));
}

#[test]
fn wrong_entries_are_left_out_with_their_field_named() {
    let c = load(json!({"providers": {
        "bad": "nope",
        "x": {"baseUrl": "http://h/v1", "api": "openai-completions",
              "models": [{"name": "no id"}, {"id": 5}, {"id": "ok"}, {"id": "w", "contextWindow": "big"}]},
        "y": {"models": [{"id": "m"}]}
    }}));
    assert_eq!(
        c.models.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["ok"]
    );
    assert_eq!(c.errors.len(), 5, "{:#?}", c.errors);
    assert_eq!(
        c.errors[0],
        "/a/models.json: providers.bad must be an object, found a string (\"nope\"); left out"
    );
    assert_eq!(
        c.errors[1],
        "/a/models.json: providers.x.models[0].id is required; left out"
    );
    assert_eq!(
        c.errors[2],
        "/a/models.json: providers.x.models[1].id must be a string, found a number (5); left out"
    );
    assert!(
        c.errors[3].starts_with("/a/models.json: providers.x.models[3]: invalid type"),
        "{}",
        c.errors[3]
    );
    assert_eq!(
        c.errors[4],
        "/a/models.json: providers.y.models[0] needs an `api` and a `baseUrl` (its own or the \
         provider's); left out"
    );
}

#[test]
fn built_in_providers_take_base_url_headers_and_overrides() {
    let c = load(json!({"providers": {"openai": {
        "baseUrl": "http://proxy/v1/", "headers": {"X-P": "1"},
        "modelOverrides": {"gpt-4o-mini": {"name": "Mini", "contextWindow": 1000}}
    }}}));
    let mut m = oxpi_ai::models::model_for("openai", "gpt-4o-mini").unwrap();
    c.adjust(&mut m);
    assert_eq!(
        (m.name.as_str(), m.context_window, m.base_url.as_str()),
        ("Mini", 1000, "http://proxy/v1")
    );
    assert_eq!(m.headers.get("X-P").map(String::as_str), Some("1"));
}

#[test]
fn invalid_json_is_one_error_naming_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("models.json"),
        "{\n \"providers\": {\n  x\n}",
    )
    .unwrap();
    let c = CustomModels::load(Some(dir.path()), &env);
    assert!(c.models.is_empty());
    assert_eq!(
        c.errors,
        [format!(
            "{}:3:3: invalid JSON: key must be a string; no custom model loads",
            dir.path().join("models.json").display()
        )]
    );
}
