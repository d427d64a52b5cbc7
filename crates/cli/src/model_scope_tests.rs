//! Tests of `model_scope.rs`: pi's pattern rules (`core/model-resolver.js`) and cycling. The scope
//! expectations are what pi 1.6's `resolveModelScopeFromModels` returns for the same models.

use super::*;

fn model(provider: &str, id: &str, name: &str) -> Model {
    let mut m = Model::openai_compatible("http://h/v1", id);
    m.provider = provider.into();
    m.name = name.into();
    m
}

fn pool() -> Vec<Model> {
    vec![
        model("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5"),
        model(
            "anthropic",
            "claude-sonnet-4-5-20250929",
            "Claude Sonnet 4.5 (dated)",
        ),
        model("anthropic", "claude-haiku-4-5", "Claude Haiku 4.5"),
        model("openai", "gpt-4o", "GPT-4o"),
        model("openai", "gpt-4o-mini", "GPT-4o mini"),
        model("openrouter", "gpt-4o", "GPT-4o (OpenRouter)"),
        model("ollama", "qwen3", "Qwen 3"),
    ]
}

fn keys(scope: &[ScopedModel]) -> Vec<String> {
    scope
        .iter()
        .map(|s| {
            let level = s.thinking.map(|l| format!(":{}", l.as_str()));
            format!(
                "{}/{}{}",
                s.model.provider,
                s.model.id,
                level.unwrap_or_default()
            )
        })
        .collect()
}

fn scope_of(patterns: &[&str]) -> (Vec<String>, Vec<String>) {
    let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
    let (scope, warnings) = resolve(&patterns, &pool());
    (keys(&scope), warnings)
}

#[test]
fn exact_ids_provider_prefixes_and_fuzzy_matches() {
    // Exact id, `provider/id` (any case), fuzzy: an alias before the dated id.
    assert_eq!(
        scope_of(&["qwen3", "OpenAI/GPT-4o-mini", "sonnet"]).0,
        [
            "ollama/qwen3",
            "openai/gpt-4o-mini",
            "anthropic/claude-sonnet-4-5"
        ]
    );
    // A fuzzy match on the name; repeats are dropped.
    assert_eq!(
        scope_of(&["haiku 4.5", "claude-haiku-4-5"]).0,
        ["anthropic/claude-haiku-4-5"]
    );
    // The same id on two providers: both, with pi's warning; `provider/id` picks one.
    let (scope, warnings) = scope_of(&["gpt-4o"]);
    assert_eq!(scope, ["openai/gpt-4o", "openrouter/gpt-4o"]);
    assert_eq!(
        warnings,
        ["Pattern \"gpt-4o\" matches several providers: openai, openrouter. Use provider/id to choose one."]
    );
    assert_eq!(scope_of(&["openrouter/gpt-4o"]).0, ["openrouter/gpt-4o"]);
    // A fuzzy match within the named provider.
    assert_eq!(scope_of(&["openai/mini"]).0, ["openai/gpt-4o-mini"]);
}

#[test]
fn thinking_suffixes_and_misses() {
    assert_eq!(
        scope_of(&["sonnet:high", "qwen3:off"]).0,
        ["anthropic/claude-sonnet-4-5:high", "ollama/qwen3:off"]
    );
    let (scope, warnings) = scope_of(&["qwen3:turbo", "nothing-like-it"]);
    assert_eq!(scope, ["ollama/qwen3"]);
    assert_eq!(
        warnings,
        [
            "Invalid thinking level \"turbo\" in pattern \"qwen3:turbo\". Using default instead.",
            "No models match pattern \"nothing-like-it\""
        ]
    );
}

#[test]
fn globs_match_provider_and_id_or_the_id() {
    assert_eq!(
        scope_of(&["anthropic/*:low"]).0,
        [
            "anthropic/claude-sonnet-4-5:low",
            "anthropic/claude-sonnet-4-5-20250929:low",
            "anthropic/claude-haiku-4-5:low"
        ]
    );
    assert_eq!(
        scope_of(&["*4O-M?NI"]).0,
        ["openai/gpt-4o-mini"],
        "against the id, any case"
    );
    assert_eq!(
        scope_of(&["open*/gpt-4o"]).0,
        ["openai/gpt-4o", "openrouter/gpt-4o"]
    );
    let (scope, warnings) = scope_of(&["mistral/*"]);
    assert!(scope.is_empty());
    assert_eq!(warnings, ["No models match pattern \"mistral/*\""]);
}

#[test]
fn the_first_model_and_cycling() {
    let patterns: Vec<String> = ["qwen3", "gpt-4o-mini:high", "haiku"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (scope, _) = resolve(&patterns, &pool());
    assert_eq!(initial(&scope, None, None).unwrap().model.id, "qwen3");
    let saved = initial(&scope, Some("openai"), Some("gpt-4o-mini")).unwrap();
    assert_eq!(saved.model.id, "gpt-4o-mini");
    assert_eq!(saved.thinking, Some(ThinkingLevel::High));
    assert_eq!(
        initial(&scope, Some("openai"), Some("gpt-4o"))
            .unwrap()
            .model
            .id,
        "qwen3",
        "a saved default outside the scope"
    );
    let ids = |from: &Model, forward: bool| {
        cycle(&scope, &pool(), from, forward).map(|(m, level, scoped)| (m.id, level, scoped))
    };
    let available = pool();
    assert_eq!(
        ids(&scope[0].model, true),
        Some(("gpt-4o-mini".into(), Some(ThinkingLevel::High), true))
    );
    assert_eq!(
        ids(&scope[2].model, true),
        Some(("qwen3".into(), None, true))
    );
    assert_eq!(
        ids(&scope[0].model, false),
        Some(("claude-haiku-4-5".into(), None, true))
    );
    assert_eq!(
        ids(&available[3], true),
        Some(("qwen3".into(), None, true)),
        "from outside the scope: its first"
    );
    // No scope: the available models in order.
    assert_eq!(
        cycle(&[], &available, &available[6], true).map(|(m, _, s)| (m.id, s)),
        Some(("claude-sonnet-4-5".into(), false))
    );
    assert_eq!(cycle(&[], &available[..1], &available[0], true), None);
    assert_eq!(next_index(Some(0), 1, true), None);
    assert_eq!(next_index(None, 0, true), None);
}
