//! [`Models::login`], [`Models::refresh`] and [`Models::logout`]: pi's login of an OAuth provider run and its
//! credential stored (under the store's lock; other entries of an `auth.json` kept byte for
//! byte), or a stored credential removed.

use std::sync::Arc;

use super::{Credential, Models, ModelsError};
use crate::oauth::login::{login, LoginUi};
use crate::oauth::OAuthConfig;

impl Models {
    /// pi's OAuth client for `provider` (or the one given to the builder), whether or not
    /// oxpi sends requests with its login yet.
    pub fn oauth_client(&self, provider: &str) -> Option<OAuthConfig> {
        self.oauth
            .get(provider)
            .cloned()
            .or_else(|| OAuthConfig::for_provider(provider))
    }

    /// A registry whose provider for `model`'s API sends requests with the stored login of
    /// `model`'s provider (refreshed under the store's lock when it expires, and once after a
    /// 401), when it has one: for code that takes a registry rather than a `Models` (a
    /// summarizer).
    pub fn login_registry(&self, model: &crate::Model) -> Option<crate::ProviderRegistry> {
        let provider = self.providers.get(&model.provider)?;
        let config = self.oauth_config(provider.id())?;
        match self.credentials.read(provider.id()) {
            Ok(Some(Credential::OAuth(_))) => {}
            _ => return None,
        }
        let api = model.api.as_str();
        let inner = provider.registry_for(api).get(api)?;
        let mut registry = crate::ProviderRegistry::new();
        registry.register(crate::oauth::api::OAuthApi {
            api: api.to_string(),
            inner,
            store: self.credentials.clone(),
            config,
        });
        Some(registry)
    }

    /// Runs `provider`'s login flow with `ui` and stores the credential it ends with.
    pub async fn login(&self, provider: &str, ui: Arc<dyn LoginUi>) -> Result<(), ModelsError> {
        let failed = |reason: String| ModelsError::Login {
            provider: provider.into(),
            reason,
        };
        let config = self.oauth_client(provider).ok_or_else(|| {
            failed("oxpi has no OAuth login for it (anthropic, openai-codex and github-copilot have one)".into())
        })?;
        let credential = login(&config, ui).await.map_err(|e| failed(e.reason))?;
        let store = self.credentials.clone();
        let provider = provider.to_string();
        tokio::task::spawn_blocking(move || {
            let mut next = Some(Credential::OAuth(credential));
            store.modify(&provider, &mut |_| next.take()).map(|_| ())
        })
        .await
        .map_err(|e| ModelsError::Login {
            provider: config.provider_id().into(),
            reason: format!("storing the login did not finish: {e}"),
        })??;
        Ok(())
    }

    /// Refreshes `provider`'s stored login now, whether or not it expires soon (pi's
    /// `refreshOAuthToken`): under the store's lock, the new tokens stored in place of the old
    /// ones. Requests refresh on their own before expiry and after a 401; this is for a program
    /// that wants a fresh token ahead of time. An error names the provider, never a token.
    pub async fn refresh(&self, provider: &str) -> Result<(), ModelsError> {
        let failed = |reason: String| ModelsError::Login {
            provider: provider.into(),
            reason,
        };
        let config = self
            .oauth_config(provider)
            .ok_or_else(|| failed("oxpi has no OAuth client for it".into()))?;
        let access = match self.credentials.read(provider)? {
            Some(Credential::OAuth(credential)) => credential.access,
            _ => return Err(failed("no stored login".into())),
        };
        // The current token taken as refused: refreshed unless another process just did.
        crate::oauth::stored::current_credential(self.credentials.clone(), config, Some(access))
            .await
            .map(|_| ())
            .map_err(|e| failed(e.to_string()))
    }

    /// Removes `provider`'s stored credential (a login or a key); `false` when there was none.
    pub fn logout(&self, provider: &str) -> Result<bool, ModelsError> {
        let had = self.credentials.read(provider)?.is_some();
        if had {
            self.credentials.delete(provider)?;
        }
        Ok(had)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::login::{LoginEvent, LoginPrompt};
    use futures::future::BoxFuture;

    struct Silent;

    impl LoginUi for Silent {
        fn notify(&self, _: LoginEvent) {}
        fn prompt(&self, _: LoginPrompt) -> BoxFuture<'static, Option<String>> {
            Box::pin(async { None })
        }
    }

    /// A login or a refresh can run in a spawned task (an interactive view does so).
    #[test]
    fn login_and_refresh_futures_are_send() {
        fn send<T: Send>(_: T) {}
        let models = Models::new();
        send(models.login("anthropic", Arc::new(Silent)));
        send(models.refresh("anthropic"));
    }
}
