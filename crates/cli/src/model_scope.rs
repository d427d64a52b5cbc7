//! pi's model scope (`--models`, else the `enabledModels` setting; `core/model-resolver.js`):
//! comma-separated patterns resolved against the models that have a key — an exact id or
//! `provider/id`, else a fuzzy match on id and name (an alias before a dated id, then the
//! latest), a `:<thinking>` suffix, and globs (`anthropic/*`, `*sonnet*`) matched against
//! `provider/id` or the id. The scope is what `Ctrl+P` and RPC `cycle_model` cycle through,
//! and its first model (or the saved default, when in the scope) starts a run that names none.

use globset::GlobBuilder;
use oxpi_ai::{Model, ThinkingLevel};

/// One model of the scope and the thinking level its pattern named.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScopedModel {
    /// The model.
    pub model: Model,
    /// The level of a `:<thinking>` suffix (`None`: keep the session's).
    pub thinking: Option<ThinkingLevel>,
}

/// What one pattern resolved to.
#[derive(Debug, Clone, PartialEq)]
enum Found {
    Missing,
    Resolved {
        model: Box<Model>,
        thinking: Option<ThinkingLevel>,
        warning: Option<String>,
    },
    Ambiguous(Vec<Model>),
}

/// How a `:suffix` is treated: ignored (`None`), or a thinking level, an invalid one giving a
/// warning (`Lenient`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Suffix {
    None,
    Lenient,
}

fn same(a: &Model, b: &Model) -> bool {
    a.provider == b.provider && a.id == b.id
}

/// `text` without a valid `:<thinking>` suffix, and the level.
fn split_thinking(text: &str) -> Option<(&str, ThinkingLevel)> {
    let (base, suffix) = text.rsplit_once(':')?;
    Some((base, ThinkingLevel::parse(suffix)?))
}

/// `provider/rest` for the longest provider id of `pool` that `text` starts with
/// (case-insensitively), and the trimmed rest.
fn split_provider<'a>(text: &'a str, pool: &[Model]) -> Option<(String, &'a str)> {
    let lower = text.to_lowercase();
    let mut best: Option<(String, &str)> = None;
    for model in pool {
        let prefix = model.provider.trim().to_lowercase();
        if prefix.is_empty() || best.as_ref().is_some_and(|(p, _)| p.len() >= prefix.len()) {
            continue;
        }
        let Some(slash) = lower.get(prefix.len()..).and_then(|r| r.find('/')) else {
            continue;
        };
        let slash = slash + prefix.len();
        if lower[..slash].trim() != prefix {
            continue;
        }
        let rest = text.get(slash + 1..).unwrap_or("").trim();
        if !rest.is_empty() {
            best = Some((model.provider.clone(), rest));
        }
    }
    best
}

fn fuzzy_matches<'a>(text: &str, pool: impl IntoIterator<Item = &'a Model>) -> Vec<&'a Model> {
    let lower = text.to_lowercase();
    pool.into_iter()
        .filter(|m| m.id.to_lowercase().contains(&lower) || m.name.to_lowercase().contains(&lower))
        .collect()
}

/// pi's `isAlias`: `-latest`, or no `-YYYYMMDD` date at the end.
fn is_alias(id: &str) -> bool {
    let dated = id.len() > 9
        && id.as_bytes()[id.len() - 9] == b'-'
        && id[id.len() - 8..].bytes().all(|b| b.is_ascii_digit());
    id.ends_with("-latest") || !dated
}

/// An id's order as `localeCompare` sorts it, near enough: punctuation, then digits, then
/// letters without case, then case (lower first).
fn locale_key(id: &str) -> (Vec<(u8, char)>, Vec<bool>) {
    let chars = id
        .chars()
        .map(|c| match c {
            c if c.is_ascii_digit() => (1, c),
            c if c.is_alphabetic() => (2, c.to_ascii_lowercase()),
            c => (0, c),
        })
        .collect();
    (chars, id.chars().map(char::is_uppercase).collect())
}

/// An alias before a dated id, then the greatest id.
fn best_fuzzy<'a>(matches: &[&'a Model]) -> Option<&'a Model> {
    let aliases: Vec<&Model> = matches
        .iter()
        .copied()
        .filter(|m| is_alias(&m.id))
        .collect();
    let pool = if aliases.is_empty() {
        matches.to_vec()
    } else {
        aliases
    };
    pool.into_iter().rev().max_by_key(|m| locale_key(&m.id))
}

fn providers(models: &[&Model]) -> usize {
    let mut names: Vec<&str> = models.iter().map(|m| m.provider.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.len()
}

/// pi's `selectReference`, every provider usable: an exact id, or `provider/id`.
fn select_reference(text: &str, pool: &[Model], fuzzy: bool) -> Option<Found> {
    let lower = text.to_lowercase();
    let raw: Vec<&Model> = pool
        .iter()
        .filter(|m| m.id.to_lowercase() == lower)
        .collect();
    let named = split_provider(text, pool).and_then(|(provider, rest)| {
        let of_provider: Vec<&Model> = pool.iter().filter(|m| m.provider == provider).collect();
        let rest_lower = rest.to_lowercase();
        of_provider
            .iter()
            .copied()
            .find(|m| m.id.to_lowercase() == rest_lower)
            .or_else(|| raw.iter().copied().find(|m| m.provider == provider))
            .or_else(|| {
                fuzzy
                    .then(|| best_fuzzy(&fuzzy_matches(rest, of_provider.iter().copied())))
                    .flatten()
            })
    });
    let others: Vec<&Model> = raw
        .iter()
        .copied()
        .filter(|m| named.is_none_or(|n| !same(m, n)))
        .collect();
    let candidates: Vec<&Model> = named.into_iter().chain(others.iter().copied()).collect();
    let resolved = |m: &Model| Found::Resolved {
        model: Box::new(m.clone()),
        thinking: None,
        warning: None,
    };
    match (candidates.first(), named) {
        (None, _) => None,
        (Some(first), _) if providers(&candidates) == 1 => Some(resolved(first)),
        (_, Some(named)) => Some(resolved(named)),
        _ if others.len() == 1 => Some(resolved(others[0])),
        _ => Some(Found::Ambiguous(candidates.into_iter().cloned().collect())),
    }
}

fn resolve_text(text: &str, pool: &[Model], fuzzy: bool, suffix: Suffix) -> Found {
    if let Some(found) = select_reference(text, pool, fuzzy) {
        return found;
    }
    if fuzzy {
        let matches = fuzzy_matches(text, pool);
        if let Some(best) = best_fuzzy(&matches) {
            let tied: Vec<&Model> = matches.into_iter().filter(|m| m.id == best.id).collect();
            return if providers(&tied) == 1 {
                Found::Resolved {
                    model: Box::new(best.clone()),
                    thinking: None,
                    warning: None,
                }
            } else {
                Found::Ambiguous(tied.into_iter().cloned().collect())
            };
        }
    }
    if suffix == Suffix::None {
        return Found::Missing;
    }
    if let Some((base, level)) = split_thinking(text) {
        return match resolve_text(base, pool, fuzzy, suffix) {
            Found::Resolved { model, warning, .. } => Found::Resolved {
                thinking: if warning.is_some() { None } else { Some(level) },
                model,
                warning,
            },
            other => other,
        };
    }
    let Some((base, bad)) = text.rsplit_once(':') else {
        return Found::Missing;
    };
    match resolve_text(base, pool, fuzzy, suffix) {
        Found::Resolved { model, .. } => Found::Resolved {
            model,
            thinking: None,
            warning: Some(format!(
                "Invalid thinking level \"{bad}\" in pattern \"{text}\". Using default instead."
            )),
        },
        other => other,
    }
}

fn resolve_reference(text: &str, pool: &[Model], fuzzy: bool, suffix: Suffix) -> Found {
    let text = text.trim();
    if text.is_empty() {
        return Found::Missing;
    }
    resolve_text(text, pool, fuzzy, suffix)
}

/// Whether `pattern` (a glob: `*` within one `/` segment, `?`, `[…]`, `{a,b}`; any case)
/// matches `text`.
fn glob_matches(pattern: &str, text: &str) -> bool {
    GlobBuilder::new(pattern)
        .case_insensitive(true)
        .literal_separator(true)
        .build()
        .is_ok_and(|g| g.compile_matcher().is_match(text))
}

/// The scope of `patterns` among `models` (those with a key), in pattern order without
/// repeats, and pi's warnings (`No models match pattern "x"`, several providers, an invalid
/// thinking level).
pub(crate) fn resolve(patterns: &[String], models: &[Model]) -> (Vec<ScopedModel>, Vec<String>) {
    let mut scope: Vec<ScopedModel> = Vec::new();
    let mut warnings = Vec::new();
    let mut add = |model: &Model, thinking: Option<ThinkingLevel>| {
        if !scope.iter().any(|s| same(&s.model, model)) {
            scope.push(ScopedModel {
                model: model.clone(),
                thinking,
            });
        }
    };
    let ambiguous = |pattern: &str, candidates: &[Model]| {
        let mut names: Vec<&str> = candidates.iter().map(|m| m.provider.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        format!(
            "Pattern \"{pattern}\" matches several providers: {}. Use provider/id to choose one.",
            names.join(", ")
        )
    };
    for pattern in patterns {
        if pattern.contains(['*', '?', '[']) {
            let (glob, thinking) = match split_thinking(pattern) {
                Some((base, level)) => (base, Some(level)),
                None => (pattern.as_str(), None),
            };
            let matches: Vec<Model> = match resolve_reference(glob, models, false, Suffix::None) {
                Found::Resolved { model, .. } => vec![*model],
                Found::Ambiguous(candidates) => {
                    warnings.push(ambiguous(pattern, &candidates));
                    candidates
                }
                Found::Missing => models
                    .iter()
                    .filter(|m| {
                        glob_matches(glob, &format!("{}/{}", m.provider, m.id))
                            || glob_matches(glob, &m.id)
                    })
                    .cloned()
                    .collect(),
            };
            if matches.is_empty() {
                warnings.push(format!("No models match pattern \"{pattern}\""));
            }
            for model in &matches {
                add(model, thinking);
            }
            continue;
        }
        match resolve_reference(pattern, models, true, Suffix::Lenient) {
            Found::Missing => warnings.push(format!("No models match pattern \"{pattern}\"")),
            Found::Resolved {
                model,
                thinking,
                warning,
            } => {
                warnings.extend(warning);
                add(&model, thinking);
            }
            Found::Ambiguous(candidates) => {
                warnings.push(ambiguous(pattern, &candidates));
                for model in &candidates {
                    add(model, None);
                }
            }
        }
    }
    (scope, warnings)
}

/// The model a run starts with when none is named: the saved default (`defaultProvider` /
/// `defaultModel`) when it is in the scope, else the scope's first (pi's
/// `buildSessionOptions`).
pub(crate) fn initial<'a>(
    scope: &'a [ScopedModel],
    default_provider: Option<&str>,
    default_model: Option<&str>,
) -> Option<&'a ScopedModel> {
    let saved = scope.iter().find(|s| {
        Some(s.model.provider.as_str()) == default_provider
            && Some(s.model.id.as_str()) == default_model
    });
    saved.or_else(|| scope.first())
}

/// pi's `getNextCycleIndex`: from `current` (its index in a list of `len`, if there) one step
/// forward or back, wrapping; `None` when there is nowhere else to go.
pub(crate) fn next_index(current: Option<usize>, len: usize, forward: bool) -> Option<usize> {
    match current {
        _ if len == 0 => None,
        None => Some(if forward { 0 } else { len - 1 }),
        Some(_) if len == 1 => None,
        Some(i) if forward => Some((i + 1) % len),
        Some(i) => Some((i + len - 1) % len),
    }
}

/// The next model of a cycle (`Ctrl+P`, RPC `cycle_model`) from `current`: through `scope`
/// when it has models, else through `available`; the scoped entry's thinking level with it
/// (`None` also for an unscoped cycle). `None` when there is only one model.
pub(crate) fn cycle(
    scope: &[ScopedModel],
    available: &[Model],
    current: &Model,
    forward: bool,
) -> Option<(Model, Option<ThinkingLevel>, bool)> {
    if !scope.is_empty() {
        let at = scope.iter().position(|s| same(&s.model, current));
        let next = &scope[next_index(at, scope.len(), forward)?];
        return Some((next.model.clone(), next.thinking, true));
    }
    let at = available.iter().position(|m| same(m, current));
    let next = &available[next_index(at, available.len(), forward)?];
    Some((next.clone(), None, false))
}

/// The models a run may switch to, in `--list-models`'s catalogue order: those with a key at
/// the start (`models.json`'s, then the catalogue's), then the catalogue's models of a
/// provider keyed for this run only (`--api-key`); `base_url` (the `--base-url` provider and
/// its server) points that provider's models there.
pub(crate) fn switchable(
    runtime: &crate::runtime::Runtime,
    base_url: Option<&(String, String)>,
) -> Vec<Model> {
    let mut available = runtime.available.clone();
    for model in oxpi_ai::models::builtin_models() {
        if !available.iter().any(|m| same(m, model)) && runtime.has_credentials(&model.provider) {
            available.push(model.clone());
        }
    }
    if let Some((provider, url)) = base_url {
        for model in available.iter_mut().filter(|m| m.provider == *provider) {
            model.base_url = url.trim_end_matches('/').to_string();
        }
    }
    available
}

/// The current model, then the others of [`switchable`] (what `/model` and RPC
/// `get_available_models` list).
pub(crate) fn current_first(
    runtime: &crate::runtime::Runtime,
    base_url: Option<&(String, String)>,
) -> Vec<Model> {
    let current = runtime.agent.model();
    let mut models = vec![current.clone()];
    models.extend(
        switchable(runtime, base_url)
            .into_iter()
            .filter(|m| !same(m, &current)),
    );
    models
}

/// Cycles the run's model one step (pi's `cycleModel`): through the scope, else the models
/// of [`switchable`]; the new model is set and recorded, with the scoped entry's thinking
/// level, else `modelThinkingLevels` or `defaultThinkingLevel` for it, else the current level
/// (clamped to the model). The model, the level set and whether the scope was cycled; `None`
/// when there is one model only.
pub(crate) fn cycle_runtime(
    runtime: &crate::runtime::Runtime,
    forward: bool,
    base_url: Option<&(String, String)>,
) -> Option<(Model, ThinkingLevel, bool)> {
    let current = runtime.agent.model();
    let available = switchable(runtime, base_url);
    let (mut model, level, scoped) = cycle(&runtime.scope, &available, &current, forward)?;
    if let Some((provider, url)) = base_url {
        if model.provider == *provider {
            model.base_url = url.trim_end_matches('/').to_string();
        }
    }
    runtime.agent.set_model(model.clone());
    let _ = runtime.with_session(|s| s.append_model_change(&model.provider, &model.id));
    let mut settings = runtime.config.settings.clone();
    let level = level
        .or_else(|| settings.model_thinking_level(&model.provider, &model.id))
        .or(runtime.config.default_thinking)
        .unwrap_or_else(|| runtime.thinking_level());
    let set = runtime.set_thinking_level(level);
    Some((model, set, scoped))
}

#[cfg(test)]
#[path = "model_scope_tests.rs"]
mod tests;
