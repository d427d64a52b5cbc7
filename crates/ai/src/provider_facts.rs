//! What oxpi knows about each provider apart from its models, as data beside the catalogue
//! (`data/providers.json`), not as `match`es on names: the environment variables that hold its
//! API key (pi's `getEnvApiKey`, 0.73.1 with the providers pi 1.6 added), the header its key
//! goes in when that is not the wire API's own (Cloudflare's AI Gateway), and the model the labs
//! use when none is named. A provider on an existing wire API is a row here and models in the
//! catalogue.
//!
//! ```
//! use oxpi_ai::provider_facts::facts;
//! assert_eq!(facts("google").unwrap().api_key_env, ["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
//! assert_eq!(facts("cloudflare-ai-gateway").unwrap().auth_header.as_deref(), Some("cf-aig-authorization"));
//! assert!(facts("my-local-server").is_none());
//! ```

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// The facts file.
const PROVIDERS_JSON: &str = include_str!("../data/providers.json");

/// One provider's facts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct ProviderFacts {
    /// The variables that may hold its API key, in the order they are tried.
    #[serde(default)]
    pub api_key_env: Vec<String>,
    /// The header that carries the key as `Bearer …` in place of the wire API's own.
    #[serde(default)]
    pub auth_header: Option<String>,
    /// The model used when none is named (the labs' default).
    #[serde(default)]
    pub default_model: Option<String>,
    /// The attribution headers the service reads (see [`crate::identity`]); a custom provider
    /// whose base URL has this provider's host reads the same ones.
    #[serde(default)]
    pub attribution: Option<Attribution>,
    /// Credentials other than a key that configure it (pi's ambient sources): groups of
    /// variables, any group fully set counts (`AWS_PROFILE`; `AWS_ACCESS_KEY_ID` with
    /// `AWS_SECRET_ACCESS_KEY`; …).
    #[serde(default)]
    pub ambient_env: Vec<Vec<String>>,
    /// The login its only credential comes from, when that is an OAuth login oxpi does not do
    /// (openai-codex: "a ChatGPT login").
    #[serde(default)]
    pub oauth_login: Option<String>,
    /// Send GitHub Copilot's per-request editor headers on every API (pi's
    /// `buildCopilotDynamicHeaders`: `X-Initiator`, `Openai-Intent`, `Copilot-Vision-Request`).
    #[serde(default)]
    pub copilot_headers: bool,
    /// A header that carries the session id on every API whatever the cache retention (OpenCode:
    /// `x-opencode-session`, its per-conversation routing header).
    #[serde(default)]
    pub session_header: Option<String>,
}

/// Which attribution headers a service reads (pi's `getAttributionHeaders`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Attribution {
    /// OpenRouter: `HTTP-Referer`, `X-OpenRouter-Title`, `X-OpenRouter-Categories`.
    Openrouter,
    /// NVIDIA NIM: `X-BILLING-INVOKE-ORIGIN`.
    Nvidia,
    /// OpenCode: `x-opencode-client`.
    Opencode,
}

/// Every provider's facts, by name, parsed on first use. A file that did not parse (the tests
/// catch it) gives no facts and an error in the log, never a panic.
pub fn all() -> &'static BTreeMap<String, ProviderFacts> {
    static FACTS: OnceLock<BTreeMap<String, ProviderFacts>> = OnceLock::new();
    FACTS.get_or_init(|| {
        serde_json::from_str(PROVIDERS_JSON).unwrap_or_else(|e| {
            tracing::error!("the built-in provider facts do not parse: {e}");
            BTreeMap::new()
        })
    })
}

/// The facts of `provider`; `None` for a provider oxpi does not know (a local server).
pub fn facts(provider: &str) -> Option<&'static ProviderFacts> {
    all().get(provider)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_facts_file_parses_and_every_provider_has_a_credential_source() {
        let parsed: BTreeMap<String, ProviderFacts> =
            serde_json::from_str(PROVIDERS_JSON).expect("data/providers.json parses");
        assert!(parsed.len() >= 40, "{}", parsed.len());
        for (name, facts) in &parsed {
            assert!(
                !facts.api_key_env.is_empty()
                    || !facts.ambient_env.is_empty()
                    || facts.oauth_login.is_some(),
                "{name} has no key variable, ambient credentials or login"
            );
        }
        assert_eq!(&parsed, all());
    }
}
