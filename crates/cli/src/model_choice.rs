//! Which model a run uses, from `--provider`, `--model` (`provider/id`, `:<thinking>`),
//! `--thinking`, `--api-key` and `--base-url`, with keys from `--api-key`, pi's `auth.json`
//! and the provider's environment variables (in that order, as pi). Nothing given: the
//! embedded local model.

use oxpi_ai::{ApiKey, Model, ThinkingLevel};

use crate::auth_file::AuthKeys;

/// The model options of the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ModelFlags {
    /// `--provider`.
    pub provider: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--thinking`.
    pub thinking: Option<String>,
    /// `--api-key`.
    pub api_key: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
}

/// Why no model could be chosen.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ChoiceError {
    /// No model of that id (in that provider); the closest ones the catalogue has.
    #[error("Model not found: {0}{hint}", hint = did_you_mean(.1))]
    NotFound(String, Vec<String>),
    /// Several providers offer the id and none has credentials.
    #[error(
        "model {id} is offered by several providers ({providers}): choose one with --provider"
    )]
    Ambiguous {
        /// The id.
        id: String,
        /// The providers, comma-separated.
        providers: String,
    },
    /// A provider without a default model and no `--model`.
    #[error("give --model for provider {0}")]
    NoDefault(String),
    /// An unknown thinking level.
    #[error("unknown thinking level {0}: use off, minimal, low, medium, high, xhigh or max")]
    Thinking(String),
    /// `--api-key` without a model to give it to.
    #[error("--api-key needs a model: give --model, --provider or --base-url")]
    KeyWithoutModel,
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// The embedded llama.cpp server, started on demand.
    Embedded,
    /// A provider or server over HTTP.
    Remote {
        /// The model.
        model: Box<Model>,
        /// The key, when one was found (else oxpi-ai reads the provider's variables).
        api_key: Option<ApiKey>,
    },
}

/// The decision: where, and at which thinking level (before clamping to the model).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Choice {
    /// Where requests go.
    pub target: Target,
    /// The thinking level asked for, if any.
    pub thinking: Option<ThinkingLevel>,
}

/// True when `provider` has a key in `auth` or one of its environment variables.
pub(crate) fn has_credentials(
    provider: &str,
    auth: &AuthKeys,
    env: &dyn Fn(&str) -> Option<String>,
) -> bool {
    auth.get(provider).is_some()
        || auth.has_login(provider)
        || oxpi_ai::providers::auth::api_key_env_vars(provider)
            .iter()
            .any(|var| env(var).is_some_and(|v| !v.trim().is_empty()))
}

/// `pattern` without a `:<thinking>` suffix, and the level it named.
fn split_thinking(pattern: &str) -> (&str, Option<ThinkingLevel>) {
    match pattern.rsplit_once(':') {
        Some((id, suffix)) => match ThinkingLevel::parse(suffix) {
            Some(level) => (id, Some(level)),
            None => (pattern, None),
        },
        None => (pattern, None),
    }
}

/// Decides the model. `env` reads environment variables (a test passes its own).
pub(crate) fn choose(
    flags: &ModelFlags,
    auth: &AuthKeys,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Choice, ChoiceError> {
    let (pattern, mut thinking) = match flags.model.as_deref() {
        Some(m) => {
            let (id, level) = split_thinking(m);
            (Some(id.to_string()), level)
        }
        None => (None, None),
    };
    if let Some(level) = &flags.thinking {
        thinking =
            Some(ThinkingLevel::parse(level).ok_or_else(|| ChoiceError::Thinking(level.clone()))?);
    }
    let model = match (&flags.provider, &flags.base_url, pattern) {
        (None, None, None) => {
            if flags.api_key.is_some() {
                return Err(ChoiceError::KeyWithoutModel);
            }
            return Ok(Choice {
                target: Target::Embedded,
                thinking,
            });
        }
        (None, Some(url), id) => Model::openai_compatible(url, id.as_deref().unwrap_or("default")),
        (Some(provider), url, id) => {
            let id = match id.or_else(|| default_model(provider)) {
                Some(id) => id,
                None => return Err(ChoiceError::NoDefault(provider.clone())),
            };
            match (oxpi_ai::models::model_for(provider, &id), url) {
                (Some(model), _) => model,
                (None, Some(url)) => {
                    let mut model = Model::openai_compatible(url, &id);
                    model.provider = provider.clone();
                    model
                }
                (None, None) => return Err(not_found(Some(provider), &id)),
            }
        }
        (None, None, Some(id)) => find_by_id(&id, auth, env)?,
    };
    let mut model = model;
    if let Some(url) = &flags.base_url {
        model.base_url = url.trim_end_matches('/').to_string();
    }
    let api_key = flags
        .api_key
        .clone()
        .or_else(|| auth.get(&model.provider).map(str::to_string))
        .map(ApiKey::new);
    Ok(Choice {
        target: Target::Remote {
            model: Box::new(model),
            api_key,
        },
        thinking,
    })
}

/// The default model of a provider (its `defaultModel` in oxpi-ai's provider facts).
fn default_model(provider: &str) -> Option<String> {
    oxpi_ai::provider_facts::facts(provider)?
        .default_model
        .clone()
}

/// [`ChoiceError::NotFound`] for `provider/id` (or a bare id) with the catalogue's closest
/// models: `provider/id` pairs for a provider, ids for a bare id.
fn not_found(provider: Option<&str>, id: &str) -> ChoiceError {
    let (name, suggestions) = match provider {
        Some(provider) => (
            format!("{provider}/{id}"),
            match oxpi_ai::Models::new().model(provider, id) {
                Err(oxpi_ai::ModelsError::UnknownModel { suggestions, .. }) => suggestions,
                _ => Vec::new(),
            },
        ),
        None => {
            let ids = oxpi_ai::models::builtin_models()
                .iter()
                .map(|m| m.id.as_str());
            let found = oxpi_ai::models::closest(id, ids);
            (
                id.to_string(),
                found.into_iter().map(String::from).collect(),
            )
        }
    };
    ChoiceError::NotFound(name, suggestions)
}

/// ` (did you mean a or b?)`, or nothing.
fn did_you_mean(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!(" (did you mean {one}?)"),
        [rest @ .., last] => format!(" (did you mean {} or {last}?)", rest.join(", ")),
    }
}

/// A model named without `--provider`: `provider/id`, else an exact id of the catalogue; when
/// several providers offer it, the first with credentials.
fn find_by_id(
    pattern: &str,
    auth: &AuthKeys,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Model, ChoiceError> {
    if let Some((provider, id)) = pattern.split_once('/') {
        if let Some(model) = oxpi_ai::models::get_model(provider, id) {
            return Ok(model);
        }
    }
    let matches: Vec<&Model> = oxpi_ai::models::builtin_models()
        .iter()
        .filter(|m| m.id == pattern)
        .collect();
    match matches.as_slice() {
        [] => Err(match pattern.split_once('/') {
            Some((provider, id)) if oxpi_ai::models::providers().iter().any(|p| p == provider) => {
                not_found(Some(provider), id)
            }
            _ => not_found(None, pattern),
        }),
        [one] => Ok((*one).clone()),
        several => several
            .iter()
            .find(|m| has_credentials(&m.provider, auth, env))
            .map(|m| (*m).clone())
            .ok_or_else(|| ChoiceError::Ambiguous {
                id: pattern.to_string(),
                providers: several
                    .iter()
                    .map(|m| m.provider.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn flags(model: Option<&str>) -> ModelFlags {
        ModelFlags {
            model: model.map(String::from),
            ..ModelFlags::default()
        }
    }

    fn remote(choice: Choice) -> (Model, Option<ApiKey>) {
        match choice.target {
            Target::Remote { model, api_key } => (*model, api_key),
            Target::Embedded => panic!("expected a remote model"),
        }
    }

    #[test]
    fn nothing_configured_is_the_embedded_model() {
        let choice = choose(&ModelFlags::default(), &AuthKeys::default(), &no_env).unwrap();
        assert_eq!(choice.target, Target::Embedded);
        let keyed = ModelFlags {
            api_key: Some("k".into()),
            ..ModelFlags::default()
        };
        assert_eq!(
            choose(&keyed, &AuthKeys::default(), &no_env),
            Err(ChoiceError::KeyWithoutModel)
        );
    }

    #[test]
    fn provider_slash_id_and_a_thinking_suffix() {
        let choice = choose(
            &flags(Some("openai/gpt-4o-mini:high")),
            &AuthKeys::default(),
            &no_env,
        )
        .unwrap();
        assert_eq!(choice.thinking, Some(ThinkingLevel::High));
        let (model, key) = remote(choice);
        assert_eq!(
            (model.provider.as_str(), model.id.as_str()),
            ("openai", "gpt-4o-mini")
        );
        assert_eq!(key, None);
        // --thinking wins over the suffix.
        let mut f = flags(Some("openai/gpt-4o-mini:high"));
        f.thinking = Some("low".into());
        let choice = choose(&f, &AuthKeys::default(), &no_env).unwrap();
        assert_eq!(choice.thinking, Some(ThinkingLevel::Low));
        f.thinking = Some("lots".into());
        assert_eq!(
            choose(&f, &AuthKeys::default(), &no_env),
            Err(ChoiceError::Thinking("lots".into()))
        );
    }

    #[test]
    fn keys_come_from_the_flag_then_auth_json() {
        let auth = AuthKeys::parse(r#"{"groq": {"type": "api_key", "key": "from-file"}}"#).unwrap();
        let mut f = ModelFlags {
            provider: Some("groq".into()),
            ..ModelFlags::default()
        };
        let (model, key) = remote(choose(&f, &auth, &no_env).unwrap());
        assert_eq!(
            model.id, "llama-3.3-70b-versatile",
            "the provider's default model"
        );
        assert_eq!(key, Some(ApiKey::new("from-file")));
        f.api_key = Some("from-flag".into());
        let (_, key) = remote(choose(&f, &auth, &no_env).unwrap());
        assert_eq!(key, Some(ApiKey::new("from-flag")));
    }

    #[test]
    fn a_base_url_is_any_openai_compatible_server() {
        let f = ModelFlags {
            base_url: Some("http://127.0.0.1:9/v1/".into()),
            model: Some("qwen:off".into()),
            ..ModelFlags::default()
        };
        let choice = choose(&f, &AuthKeys::default(), &no_env).unwrap();
        assert_eq!(choice.thinking, Some(ThinkingLevel::Off));
        let (model, _) = remote(choice);
        assert_eq!(
            model,
            Model::openai_compatible("http://127.0.0.1:9/v1", "qwen")
        );
    }

    #[test]
    fn an_id_offered_by_several_providers_takes_the_one_with_credentials() {
        let id = "gpt-4o-mini";
        let providers: Vec<String> = oxpi_ai::models::builtin_models()
            .iter()
            .filter(|m| m.id == id)
            .map(|m| m.provider.clone())
            .collect();
        assert!(
            providers.len() > 1,
            "{id} is in several providers: {providers:?}"
        );
        let err = choose(&flags(Some(id)), &AuthKeys::default(), &no_env).unwrap_err();
        assert!(matches!(err, ChoiceError::Ambiguous { .. }), "{err}");
        let last = providers.last().unwrap().clone();
        let var = oxpi_ai::providers::auth::api_key_env_vars(&last)
            .first()
            .cloned()
            .expect("a key variable");
        let env = move |name: &str| (name == var).then(|| "k".to_string());
        let (model, _) = remote(choose(&flags(Some(id)), &AuthKeys::default(), &env).unwrap());
        assert_eq!(model.provider, last);
        assert_eq!(
            choose(
                &flags(Some("zzzzzzzzzzzzzzzzzzzz")),
                &AuthKeys::default(),
                &no_env
            ),
            Err(ChoiceError::NotFound("zzzzzzzzzzzzzzzzzzzz".into(), vec![]))
        );
    }

    #[test]
    fn an_unknown_model_names_the_closest() {
        let err = |model: &str| {
            choose(&flags(Some(model)), &AuthKeys::default(), &no_env)
                .unwrap_err()
                .to_string()
        };
        let text = err("anthropic/claude-haiku-4-5x");
        assert!(
            text.starts_with(
                "Model not found: anthropic/claude-haiku-4-5x (did you mean anthropic/claude-haiku-4-5"
            ),
            "{text}"
        );
        assert!(
            err("gpt-4o-mimi").contains("did you mean gpt-4o-mini"),
            "{}",
            err("gpt-4o-mimi")
        );
        let f = ModelFlags {
            provider: Some("antropic".into()),
            model: Some("claude-haiku-4-5".into()),
            ..ModelFlags::default()
        };
        let err = choose(&f, &AuthKeys::default(), &no_env).unwrap_err();
        assert!(
            err.to_string()
                .contains("(did you mean anthropic/claude-haiku-4-5"),
            "{err}"
        );
    }
}
