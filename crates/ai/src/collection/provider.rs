//! A [`Provider`] of a [`crate::Models`] collection: who serves which models, how it is
//! authenticated ([`ProviderAuth`]), and, for a custom provider, the wire API implementations of
//! its own.

use std::sync::Arc;

use crate::provider_kit::ApiProvider;
use crate::registry::ProviderRegistry;
use crate::types::model::Model;

/// How a provider is configured (pi's `ProviderAuth`, for what oxpi supports): a stored key or
/// one of its key variables; ambient credentials (groups of variables, as AWS's); no key at all
/// (a local server); or only an OAuth login oxpi does not do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderAuth {
    /// Variables that may hold its key, in the order they are tried.
    pub api_key_env: Vec<String>,
    /// Groups of variables; a group fully set configures the provider without a key.
    pub ambient_env: Vec<Vec<String>>,
    /// Configured without any credential (a local server).
    pub keyless: bool,
    /// The OAuth login its only credential comes from (oxpi does not do it yet).
    pub oauth_login: Option<String>,
}

impl ProviderAuth {
    /// A key stored for the provider, else the first of these variables that is set.
    pub fn api_key_env<S: Into<String>>(vars: impl IntoIterator<Item = S>) -> Self {
        Self {
            api_key_env: vars.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Always configured; a stored key is still sent if there is one.
    pub fn keyless() -> Self {
        Self {
            keyless: true,
            ..Self::default()
        }
    }

    /// A built-in provider's auth, from its facts ([`crate::provider_facts`]); keyless for a
    /// provider oxpi has no facts of.
    pub fn from_facts(provider: &str) -> Self {
        match crate::provider_facts::facts(provider) {
            Some(facts) => Self {
                api_key_env: facts.api_key_env.clone(),
                ambient_env: facts.ambient_env.clone(),
                keyless: false,
                oauth_login: facts.oauth_login.clone(),
            },
            None => Self::keyless(),
        }
    }

    /// This auth, also configured by any of these groups of variables.
    pub fn with_ambient_env<S: Into<String>>(mut self, group: impl IntoIterator<Item = S>) -> Self {
        self.ambient_env
            .push(group.into_iter().map(Into::into).collect());
        self
    }
}

/// One provider of a collection (pi's `Provider`): its id, display name, base URL, models and
/// auth. Built-in providers use oxpi's wire APIs; a custom one may bring its own
/// [`ApiProvider`]s, which serve only its models, so two custom providers on one API never
/// replace each other (pi issue #2927).
///
/// ```
/// use oxpi_ai::collection::{Provider, ProviderAuth};
/// use oxpi_ai::Model;
/// let gateway = Provider::new("team-gateway")
///     .with_base_url("http://127.0.0.1:4000/v1")
///     .with_auth(ProviderAuth::api_key_env(["TEAM_GATEWAY_KEY"]))
///     .with_model(Model::openai_compatible("", "qwen3-coder"));
/// let model = &gateway.models()[0];
/// assert_eq!((model.provider.as_str(), model.base_url.as_str()), ("team-gateway", "http://127.0.0.1:4000/v1"));
/// ```
#[derive(Clone)]
pub struct Provider {
    id: String,
    name: String,
    base_url: Option<String>,
    models: Vec<Model>,
    auth: ProviderAuth,
    apis: Option<Arc<ProviderRegistry>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("models", &self.models.len())
            .field("auth", &self.auth)
            .field("apis", &self.apis)
            .finish()
    }
}

impl Provider {
    /// A provider with no models, keyless, on oxpi's built-in wire APIs.
    pub fn new(id: impl Into<String>) -> Self {
        let id = id.into();
        Self {
            name: id.clone(),
            id,
            base_url: None,
            models: Vec::new(),
            auth: ProviderAuth::keyless(),
            apis: None,
        }
    }

    /// The built-in provider `id` from the catalogue and its facts; `None` if the catalogue
    /// has no model of it.
    pub fn builtin(id: &str) -> Option<Self> {
        let models = crate::models::models(id);
        let base_url = models.first()?.base_url.clone();
        Some(Self {
            name: id.to_string(),
            id: id.to_string(),
            base_url: Some(base_url),
            models,
            auth: ProviderAuth::from_facts(id),
            apis: None,
        })
    }

    /// Sets the display name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the base URL, also of the models added later without one.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// Sets how it is authenticated.
    pub fn with_auth(mut self, auth: ProviderAuth) -> Self {
        self.auth = auth;
        self
    }

    /// Adds a model (replacing one with its id). Its `provider` becomes this provider's id, and
    /// an empty base URL becomes the provider's.
    pub fn with_model(mut self, mut model: Model) -> Self {
        model.provider = self.id.clone();
        if model.base_url.is_empty() {
            if let Some(base_url) = &self.base_url {
                model.base_url = base_url.clone();
            }
        }
        self.models.retain(|m| m.id != model.id);
        self.models.push(model);
        self
    }

    /// Adds models (see [`with_model`](Self::with_model)).
    pub fn with_models(self, models: impl IntoIterator<Item = Model>) -> Self {
        models.into_iter().fold(self, Self::with_model)
    }

    /// Serves this provider's models on `api.api()` with `api`, in place of oxpi's built-in
    /// implementation of that API (for this provider only).
    pub fn with_api(mut self, api: impl ApiProvider) -> Self {
        let mut registry = self.apis.as_deref().cloned().unwrap_or_default();
        registry.register(api);
        self.apis = Some(Arc::new(registry));
        self
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its base URL.
    pub fn base_url(&self) -> Option<&str> {
        self.base_url.as_deref()
    }

    /// Its models.
    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// How it is authenticated.
    pub fn auth(&self) -> &ProviderAuth {
        &self.auth
    }

    /// The registry that serves `api` for it: its own when it brought one, else the built-ins.
    pub(crate) fn registry_for(&self, api: &str) -> &ProviderRegistry {
        match &self.apis {
            Some(own) if own.get(api).is_some() => own,
            _ => ProviderRegistry::builtins(),
        }
    }
}
