//! The keys of a run, from the sources pi reads in its order.

use std::sync::Arc;

use oxpi_ai::ApiKey;

use crate::auth_file::AuthKeys;
use crate::config::models_json::CustomModels;

/// The keys of a run: `--api-key` for the chosen model's provider, else `auth.json`, else
/// `models.json`'s `apiKey` (pi's order); `None` lets oxpi-ai read the provider's environment
/// variables.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    /// The chosen model's provider (the one `--api-key` is for).
    pub provider: String,
    /// `--api-key`.
    pub given: Option<ApiKey>,
    /// `auth.json`.
    pub auth: AuthKeys,
    /// `models.json`.
    pub custom: Arc<CustomModels>,
}

impl Keys {
    /// The key for `provider`, from the first source that has one.
    pub(crate) fn key_for(&self, provider: &str) -> Option<ApiKey> {
        if provider == self.provider {
            if let Some(key) = &self.given {
                return Some(key.clone());
            }
        }
        self.auth
            .get(provider)
            .map(str::to_string)
            .or_else(|| {
                self.custom
                    .api_key(provider, &|name| std::env::var(name).ok())
            })
            .map(ApiKey::new)
    }

    /// The key of a request: [`Keys::key_for`], but none for a provider with a stored login
    /// (its requests take the login's token: `logins::login_stream`) unless `--api-key` is its.
    pub(crate) fn key_for_request(&self, provider: &str) -> Option<ApiKey> {
        let given = self.given.clone().filter(|_| provider == self.provider);
        given.or_else(|| (!self.auth.has_login(provider)).then(|| self.key_for(provider))?)
    }
}
