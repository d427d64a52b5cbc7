//! What every lab shares: which model to run against, chosen from flags (`--provider`,
//! `--model`, `--base-url`, `--api-key`) with `OXPI_PROVIDER`, `OXPI_MODEL`, `OXPI_BASE_URL` and
//! `OXPI_API_KEY` as fallbacks, and the embedded default model when nothing is set.
//!
//! - `--provider` alone: the provider's default model, its key from `OXPI_API_KEY` or its own
//!   variable (`OPENAI_API_KEY`, …).
//! - `--base-url` without `--provider`: any OpenAI-compatible server.
//! - nothing: the embedded llama.cpp server with Qwen2.5-Coder-1.5B ([`oxpi_local`]).

pub mod lab;

use oxpi_ai::{ApiKey, Model};

/// The model flags of a lab, before environment fallbacks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelArgs {
    /// `--provider`.
    pub provider: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--api-key` (kept out of `Debug` output by [`ModelChoice`]).
    pub api_key: Option<String>,
}

/// Usage text for the shared flags.
pub const MODEL_FLAGS_USAGE: &str = "  --provider NAME   openai, anthropic, google, openrouter, groq, deepseek, xai, mistral, cerebras, together (env OXPI_PROVIDER)
  --model ID        model id (env OXPI_MODEL)
  --base-url URL    an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (env OXPI_BASE_URL)
  --api-key KEY     API key (env OXPI_API_KEY, else the provider's own variable such as OPENAI_API_KEY)
  With none of these set, the embedded default model runs locally (about 1.1 GB downloaded once).";

impl ModelArgs {
    /// Takes the model flags out of `args`; returns them and the other arguments.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<(Self, Vec<String>), String> {
        let mut out = Self::default();
        let mut rest = Vec::new();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let slot = match flag.as_str() {
                "--provider" => &mut out.provider,
                "--model" => &mut out.model,
                "--base-url" => &mut out.base_url,
                "--api-key" => &mut out.api_key,
                _ => {
                    rest.push(arg);
                    continue;
                }
            };
            let value = match inline {
                Some(v) => v,
                None => args.next().ok_or_else(|| format!("{flag} needs a value"))?,
            };
            *slot = Some(value);
        }
        Ok((out, rest))
    }

    /// Fills unset flags from `OXPI_*` variables read through `lookup`.
    pub fn with_env(mut self, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        self.provider = self.provider.or_else(|| get("OXPI_PROVIDER"));
        self.model = self.model.or_else(|| get("OXPI_MODEL"));
        self.base_url = self.base_url.or_else(|| get("OXPI_BASE_URL"));
        self.api_key = self.api_key.or_else(|| get("OXPI_API_KEY"));
        self
    }

    /// Decides which model to use.
    pub fn resolve(self) -> Result<ModelChoice, String> {
        let api_key = self.api_key.map(ApiKey::new);
        match (self.provider, self.base_url, self.model) {
            (None, None, None) => Ok(ModelChoice::Embedded),
            (None, None, Some(model)) => Err(format!(
                "--model {model} needs --provider or --base-url (with neither, the embedded model runs)"
            )),
            (None, Some(base_url), model) => Ok(ModelChoice::Remote {
                model: Box::new(Model::openai_compatible(
                    base_url,
                    model.unwrap_or_else(|| "default".to_string()),
                )),
                api_key,
            }),
            (Some(provider), base_url, model) => {
                let id = match model.or_else(|| default_model(&provider).map(str::to_string)) {
                    Some(id) => id,
                    None => return Err(format!("give --model for provider {provider}")),
                };
                let mut model = match (oxpi_ai::models::model_for(&provider, &id), &base_url) {
                    (Some(model), _) => model,
                    (None, Some(url)) => {
                        let mut m = Model::openai_compatible(url, &id);
                        m.provider = provider.clone();
                        m
                    }
                    (None, None) => {
                        return Err(format!("unknown provider {provider}: give --base-url for its endpoint"))
                    }
                };
                if let Some(url) = base_url {
                    model.base_url = url.trim_end_matches('/').to_string();
                }
                Ok(ModelChoice::Remote {
                    model: Box::new(model),
                    api_key,
                })
            }
        }
    }
}

/// The default model of a built-in provider (its `defaultModel` in oxpi-ai's provider facts).
pub fn default_model(provider: &str) -> Option<&'static str> {
    oxpi_ai::provider_facts::facts(provider)?
        .default_model
        .as_deref()
}

/// Which model a lab runs against.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelChoice {
    /// A provider or server reachable over HTTP.
    Remote {
        /// The model.
        model: Box<Model>,
        /// The key, if one was given (else the provider's variable is used).
        api_key: Option<ApiKey>,
    },
    /// The embedded default model, started on demand.
    Embedded,
}

/// A model ready for requests; holds the embedded server (if any) until dropped.
#[derive(Debug)]
pub struct LiveModel {
    /// The model.
    pub model: Model,
    /// The key to send, if any.
    pub api_key: Option<ApiKey>,
    /// The embedded server, when one was started.
    pub server: Option<oxpi_local::LocalServer>,
}

impl LiveModel {
    /// Stops the embedded server, if any.
    pub async fn shutdown(self) {
        if let Some(server) = self.server {
            let _ = server.shutdown().await;
        }
    }
}

/// Makes the choice ready: for the embedded model, installs (first use) and starts it.
pub async fn start(choice: ModelChoice) -> Result<LiveModel, String> {
    match choice {
        ModelChoice::Remote { model, api_key } => Ok(LiveModel {
            model: *model,
            api_key,
            server: None,
        }),
        ModelChoice::Embedded => {
            let config = oxpi_local::LocalModelConfig::from_env();
            let server = oxpi_local::start(&config)
                .await
                .map_err(|e| format!("could not start the embedded model: {e}"))?;
            Ok(LiveModel {
                model: server.model(),
                api_key: None,
                server: Some(server),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn every_default_model_is_in_the_catalogue() {
        for provider in [
            "openai",
            "anthropic",
            "google",
            "openrouter",
            "groq",
            "deepseek",
            "xai",
            "mistral",
            "cerebras",
        ] {
            let id = default_model(provider).unwrap();
            assert!(
                oxpi_ai::models::get_model(provider, id).is_some(),
                "{provider}/{id}"
            );
        }
    }

    #[test]
    fn nothing_set_means_the_embedded_model() {
        let (parsed, rest) = ModelArgs::parse(args(&["--repeat", "3"])).unwrap();
        assert_eq!(rest, args(&["--repeat", "3"]));
        assert_eq!(
            parsed.with_env(env(&[])).resolve(),
            Ok(ModelChoice::Embedded)
        );
    }

    #[test]
    fn a_base_url_alone_means_an_openai_compatible_server() {
        let (parsed, _) =
            ModelArgs::parse(args(&["--base-url=http://h:1/v1/", "--model", "qwen"])).unwrap();
        let expected = ModelChoice::Remote {
            model: Box::new(Model::openai_compatible("http://h:1/v1", "qwen")),
            api_key: None,
        };
        assert_eq!(parsed.with_env(env(&[])).resolve(), Ok(expected));
    }

    #[test]
    fn flags_win_over_env_and_env_fills_the_rest() {
        let (parsed, _) = ModelArgs::parse(args(&["--provider", "groq"])).unwrap();
        let choice = parsed
            .with_env(env(&[
                ("OXPI_PROVIDER", "openai"),
                ("OXPI_API_KEY", "k"),
                ("OXPI_MODEL", ""),
            ]))
            .resolve()
            .unwrap();
        let ModelChoice::Remote { model, api_key } = choice else {
            panic!("expected a remote model")
        };
        assert_eq!(
            (model.provider.as_str(), model.id.as_str()),
            ("groq", "llama-3.3-70b-versatile")
        );
        assert_eq!(api_key, Some(ApiKey::new("k")));
    }

    #[test]
    fn unclear_choices_are_errors() {
        let resolve = |list: &[&str]| {
            ModelArgs::parse(args(list))
                .unwrap()
                .0
                .with_env(env(&[]))
                .resolve()
        };
        assert!(resolve(&["--model", "x"])
            .unwrap_err()
            .contains("needs --provider or --base-url"));
        assert!(resolve(&["--provider", "acme"])
            .unwrap_err()
            .contains("give --model"));
        let Ok(ModelChoice::Remote { model, .. }) = resolve(&["--provider", "anthropic"]) else {
            panic!("anthropic is a provider")
        };
        assert_eq!(
            (model.api.as_str(), model.id.as_str()),
            ("anthropic-messages", "claude-haiku-4-5")
        );
        assert_eq!(
            ModelArgs::parse(args(&["--model"])),
            Err("--model needs a value".to_string())
        );
    }
}
