//! API keys and authentication headers: the environment variables that hold each provider's
//! key (pi's `getEnvApiKey`), the key a request uses, and Cloudflare's AI Gateway header.

use reqwest::header::HeaderName;

use crate::options::{ApiKey, StreamOptions};

/// The environment variables that hold a provider's API key, in the order they are tried
/// ([`crate::provider_facts`]; empty for a provider oxpi does not know). Anthropic's OAuth
/// tokens and Bedrock's AWS credentials are not keys oxpi can send; see the README's provider
/// table.
pub fn api_key_env_vars(provider: &str) -> &'static [String] {
    crate::provider_facts::facts(provider).map_or(&[], |facts| facts.api_key_env.as_slice())
}

/// The key from `options`, else from the provider's environment variables.
pub fn resolve_api_key(provider: &str, options: &StreamOptions) -> Option<ApiKey> {
    if let Some(key) = &options.api_key {
        return Some(key.clone());
    }
    api_key_env_vars(provider)
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()))
        .map(ApiKey::new)
}

/// The API key for a request: from `options` or the provider's variables. A provider that has
/// key variables needs one (the error names them, in the text of [`crate::ModelsError::NotConfigured`]);
/// others (local servers) may go without.
pub(crate) fn required_api_key(
    provider: &str,
    options: &StreamOptions,
) -> Result<Option<ApiKey>, String> {
    let key = resolve_api_key(provider, options);
    let env_vars = api_key_env_vars(provider);
    if key.is_none() && !env_vars.is_empty() {
        return Err(format!(
            "Provider is not configured: {provider} (set {} or pass StreamOptions::api_key)",
            env_vars.join(" or ")
        ));
    }
    Ok(key)
}

/// An environment variable's value, trimmed; `None` when it is unset or blank.
pub(crate) fn env_value(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The authentication header of a request: a provider whose facts name a header of its own
/// (Cloudflare's AI Gateway: `cf-aig-authorization`, as pi sends it) gets the key there as
/// `Bearer …`, in place of the API's own header; every other provider gets `default`.
pub(crate) fn auth_header(
    provider: &str,
    key: &ApiKey,
    default: impl FnOnce(&ApiKey) -> (HeaderName, String),
) -> (HeaderName, String) {
    let own = crate::provider_facts::facts(provider)
        .and_then(|facts| facts.auth_header.as_deref())
        .and_then(|name| HeaderName::try_from(name).ok());
    match own {
        Some(name) => (name, format!("Bearer {}", key.expose())),
        None => default(key),
    }
}
