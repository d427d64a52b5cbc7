//! [`Models`]: a collection of providers with auth resolved per provider (pi 1.6's
//! `createModels`). It holds the built-in providers of the catalogue and any custom ones side
//! by side (each keyed by its id), a [`CredentialStore`] (in memory, or pi's `auth.json` as
//! [`AuthFile`]) and an [`Env`] lookup; `stream`/`complete` (and the `_simple` variants taking a
//! thinking level, pi's `streamSimple`/`completeSimple`) find the model's provider, resolve its
//! key and hand the request to the provider's wire API.
//!
//! A key is resolved as pi 1.6 does it: the request's own key, else the provider's stored
//! credential (a stored credential owns the provider: the environment is read only when nothing
//! is stored), else the provider's key variables, else its ambient credentials.
//!
//! ```no_run
//! use oxpi_ai::collection::{AuthFile, Env, Models, SimpleStreamOptions};
//! use oxpi_ai::{Context, Message, ThinkingLevel};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let env = Env::process();
//! let auth = AuthFile::new(AuthFile::default_path(&env).ok_or("no home directory")?);
//! let models = Models::builder().credentials(auth).env(env).build();
//! let model = models.get_model("anthropic", "claude-sonnet-4-5").ok_or("no such model")?;
//! let context = Context::new("You are terse.").with_message(Message::user("Hi!"));
//! let options = SimpleStreamOptions::new().with_reasoning(ThinkingLevel::High);
//! let reply = models.complete_simple(model, &context, options).await;
//! println!("{}", reply.text());
//! # Ok(()) }
//! ```

mod auth_file;
mod credentials;
mod login;
mod lookup;
mod provider;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use auth_file::AuthFile;
pub use credentials::{
    ApiKeyCredential, Credential, CredentialError, CredentialKind, CredentialStore, Env,
    InMemoryCredentialStore, OAuthCredential,
};
pub use provider::{Provider, ProviderAuth};

use crate::failure::Failure;
use crate::options::{ApiKey, ReasoningLevel, StreamOptions};

use crate::stream::AssistantMessageEventStream;
use crate::types::context::Context;
use crate::types::message::AssistantMessage;
use crate::types::model::Model;
use crate::types::thinking::ThinkingLevel;

/// Why a provider's auth could not be resolved; a request ends with this text as its error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelsError {
    /// The collection has no provider of this id.
    #[error("Unknown provider: {0}")]
    UnknownProvider(String),
    /// No model of this id at this provider ([`Models::model`]); `suggestions` are the closest
    /// `provider/id` pairs the collection has.
    #[error("Unknown model: {provider}/{id}{}", lookup::did_you_mean(suggestions))]
    UnknownModel {
        /// The provider asked for.
        provider: String,
        /// The id asked for.
        id: String,
        /// The closest `provider/id` pairs, best first (at most three).
        suggestions: Vec<String>,
    },
    /// No credential for the provider (pi's text, then where one would come from).
    #[error("Provider is not configured: {provider} ({hint})")]
    NotConfigured {
        /// The provider.
        provider: String,
        /// Where a credential would come from.
        hint: String,
    },
    /// The provider's credential comes from an OAuth login, which oxpi does not do yet.
    #[error("{provider} needs {login} (OAuth), which oxpi does not do yet")]
    LoginRequired {
        /// The provider.
        provider: String,
        /// The login ("a ChatGPT login").
        login: String,
    },
    /// An OAuth credential is stored for the provider; oxpi keeps it but cannot use it.
    #[error("the stored credential of {0} is an OAuth login, which oxpi cannot use yet (store an API key for it, or use pi)")]
    OAuthUnsupported(String),
    /// The stored credential cannot be used.
    #[error("the stored credential of {provider} cannot be used: {reason}")]
    Credential {
        /// The provider.
        provider: String,
        /// Why.
        reason: String,
    },
    /// A login ([`Models::login`]) failed.
    #[error("login to {provider} failed: {reason}")]
    Login {
        /// The provider.
        provider: String,
        /// Why (never a code or a token).
        reason: String,
    },
    /// The credential store failed.
    #[error(transparent)]
    Store(#[from] CredentialError),
}

impl ModelsError {
    fn failure(&self) -> Failure {
        match self {
            Self::UnknownProvider(_) | Self::UnknownModel { .. } => {
                Failure::config(self.to_string())
            }
            _ => Failure::auth(self.to_string()),
        }
    }
}

/// How a provider is configured (pi's `AuthCheck`), without the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthCheck {
    /// Where the credential comes from: `"stored credential"`, a variable's name, the ambient
    /// variables, `"no key needed"`.
    pub source: String,
    /// Its kind.
    pub kind: CredentialKind,
}

/// Auth resolved for one request.
#[derive(Debug, Clone)]
pub(crate) struct ResolvedAuth {
    key: Option<ApiKey>,
    source: String,
}

/// Options of [`Models::stream_simple`] (pi's `SimpleStreamOptions`): the request's options and
/// one thinking level, mapped onto each API's reasoning setting (clamped to what the model
/// takes; `off` asks for none).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SimpleStreamOptions {
    /// How much to think; `None` leaves the API's default.
    pub reasoning: Option<ThinkingLevel>,
    /// Everything else.
    pub options: StreamOptions,
}

impl SimpleStreamOptions {
    /// No thinking level, default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the thinking level.
    pub fn with_reasoning(mut self, level: ThinkingLevel) -> Self {
        self.reasoning = Some(level);
        self
    }

    /// Sets the thinking level: [`with_reasoning`](Self::with_reasoning) under the name
    /// `AgentOptions::with_thinking_level` has.
    pub fn with_thinking_level(self, level: ThinkingLevel) -> Self {
        self.with_reasoning(level)
    }

    /// Sets the other options.
    pub fn with_options(mut self, options: StreamOptions) -> Self {
        self.options = options;
        self
    }

    fn into_stream_options(self) -> StreamOptions {
        let mut options = self.options;
        if let Some(level) = self.reasoning {
            options.reasoning = ReasoningLevel::from_thinking_level(level);
        }
        options
    }
}

impl From<StreamOptions> for SimpleStreamOptions {
    fn from(options: StreamOptions) -> Self {
        Self::new().with_options(options)
    }
}

/// Providers by id, with a credential store and an environment (pi's `Models`).
#[derive(Clone)]
pub struct Models {
    providers: BTreeMap<String, Provider>,
    credentials: Arc<dyn CredentialStore>,
    env: Env,
    /// OAuth clients that replace pi's for a provider id (tests: local issuers).
    oauth: BTreeMap<String, crate::oauth::OAuthConfig>,
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Models")
            .field("providers", &self.providers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Models`].
#[derive(Default)]
#[must_use]
pub struct ModelsBuilder {
    builtins: Option<bool>,
    providers: Vec<Provider>,
    credentials: Option<Arc<dyn CredentialStore>>,
    env: Option<Env>,
    oauth: BTreeMap<String, crate::oauth::OAuthConfig>,
}

impl ModelsBuilder {
    /// Whether the catalogue's providers are included (default: yes).
    pub fn builtins(mut self, include: bool) -> Self {
        self.builtins = Some(include);
        self
    }

    /// Adds a provider, replacing one of the same id (a built-in one too).
    pub fn provider(mut self, provider: Provider) -> Self {
        self.providers.push(provider);
        self
    }

    /// The credential store (default: an empty [`InMemoryCredentialStore`]).
    pub fn credentials(mut self, store: impl CredentialStore + 'static) -> Self {
        self.credentials = Some(Arc::new(store));
        self
    }

    /// A shared credential store.
    pub fn shared_credentials(mut self, store: Arc<dyn CredentialStore>) -> Self {
        self.credentials = Some(store);
        self
    }

    /// The environment keys are read from (default: [`Env::process`]).
    pub fn env(mut self, env: Env) -> Self {
        self.env = Some(env);
        self
    }

    /// An OAuth client (endpoints, client id) for its provider in place of pi's, e.g. a local
    /// issuer in tests ([`crate::oauth::OAuthConfig::at_origin`]).
    pub fn oauth(mut self, config: crate::oauth::OAuthConfig) -> Self {
        self.oauth.insert(config.provider_id().to_string(), config);
        self
    }

    /// The collection.
    pub fn build(self) -> Models {
        let mut providers = BTreeMap::new();
        if self.builtins.unwrap_or(true) {
            for id in crate::models::providers() {
                if let Some(provider) = Provider::builtin(&id) {
                    providers.insert(id, provider);
                }
            }
        }
        for provider in self.providers {
            providers.insert(provider.id().to_string(), provider);
        }
        Models {
            providers,
            credentials: self
                .credentials
                .unwrap_or_else(|| Arc::new(InMemoryCredentialStore::new())),
            env: self.env.unwrap_or_else(Env::process),
            oauth: self.oauth,
        }
    }
}

impl Default for Models {
    fn default() -> Self {
        Self::builder().build()
    }
}

impl Models {
    /// A builder: the built-in providers, an in-memory credential store, the process
    /// environment, unless told otherwise.
    pub fn builder() -> ModelsBuilder {
        ModelsBuilder::default()
    }

    /// The built-in providers with an in-memory store and the process environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in providers with pi's own `auth.json` as the credential store
    /// ([`AuthFile::default_path`]: `$PI_CODING_AGENT_DIR/auth.json`, else
    /// `~/.pi/agent/auth.json`) and the process environment; an in-memory store when there is
    /// no home directory.
    pub fn with_pi_auth() -> Self {
        let env = Env::process();
        let builder = Self::builder().env(env.clone());
        match AuthFile::default_path(&env) {
            Some(path) => builder.credentials(AuthFile::new(path)).build(),
            None => builder.build(),
        }
    }

    /// Adds or replaces the provider of its id (pi's `setProvider`).
    pub fn set_provider(&mut self, provider: Provider) {
        self.providers.insert(provider.id().to_string(), provider);
    }

    /// Removes a provider (pi's `deleteProvider`).
    pub fn remove_provider(&mut self, id: &str) -> Option<Provider> {
        self.providers.remove(id)
    }

    /// Every provider, by id (pi's `getProviders`).
    pub fn providers(&self) -> impl Iterator<Item = &Provider> {
        self.providers.values()
    }

    /// The provider `id`.
    pub fn provider(&self, id: &str) -> Option<&Provider> {
        self.providers.get(id)
    }

    /// The models of one provider, or of all (pi's `getModels`).
    pub fn models(&self, provider: Option<&str>) -> Vec<&Model> {
        match provider {
            Some(id) => self
                .providers
                .get(id)
                .map(|p| p.models().iter().collect())
                .unwrap_or_default(),
            None => self.providers.values().flat_map(|p| p.models()).collect(),
        }
    }

    /// The model `id` of `provider` (pi's `getModel`); [`model`](Self::model) says why not.
    pub fn get_model(&self, provider: &str, id: &str) -> Option<&Model> {
        self.providers
            .get(provider)?
            .models()
            .iter()
            .find(|m| m.id == id)
    }

    /// The credential store.
    pub fn credentials(&self) -> &Arc<dyn CredentialStore> {
        &self.credentials
    }

    /// Whether `provider` is configured, and from where (pi's `checkAuth`); `Ok(None)` when
    /// it is not. A stored OAuth credential or a key that cannot be resolved is an error.
    pub fn check_auth(&self, provider: &str) -> Result<Option<AuthCheck>, ModelsError> {
        let Some(entry) = self.providers.get(provider) else {
            return Ok(None);
        };
        Ok(self.resolve(entry, None)?.map(|auth| AuthCheck {
            kind: if auth.source == "OAuth" {
                CredentialKind::OAuth
            } else {
                CredentialKind::ApiKey
            },
            source: auth.source,
        }))
    }

    /// The models of the configured providers (of one, or of all) (pi's `getAvailable`).
    /// Providers whose stored credential oxpi cannot use are left out; a failing credential
    /// store is an error.
    pub fn available(&self, provider: Option<&str>) -> Result<Vec<&Model>, ModelsError> {
        let mut models = Vec::new();
        for entry in self.providers.values() {
            if provider.is_some_and(|id| id != entry.id()) {
                continue;
            }
            match self.resolve(entry, None) {
                Ok(Some(_)) => models.extend(entry.models()),
                Ok(None) => {}
                Err(ModelsError::Store(e)) => return Err(ModelsError::Store(e)),
                Err(_) => {}
            }
        }
        Ok(models)
    }

    /// Streams a reply from `model`'s provider with its auth resolved. A model whose provider
    /// the collection does not hold but which names its server (a `base_url`, as
    /// [`Model::openai_compatible`] does) is streamed as it is, its key from `options` or its
    /// provider's variables. A provider that is unknown (and no `base_url`) or not configured
    /// gives a stream of one `error` event saying so.
    pub fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        if let Some(stream) = self.stream_with_login(model, context, &options) {
            return stream;
        }
        if !self.providers.contains_key(&model.provider) && !model.base_url.is_empty() {
            return crate::registry::stream(model, context, options);
        }
        let prepared = self.providers.get(&model.provider).map_or_else(
            || Err(ModelsError::UnknownProvider(model.provider.clone())),
            |provider| self.apply_auth(provider, options).map(|o| (provider, o)),
        );
        match prepared {
            Ok((provider, options)) => provider
                .registry_for(model.api.as_str())
                .stream(model, context, options),
            Err(error) => crate::registry::failed(model, error.failure()),
        }
    }

    /// Streams a reply and returns the final message (errors are in its `stop_reason` and
    /// `error_message`).
    pub async fn complete(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessage {
        self.stream(model, context, options).result().await
    }

    /// [`stream`](Self::stream) with one thinking level (pi's `streamSimple`).
    pub fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: impl Into<SimpleStreamOptions>,
    ) -> AssistantMessageEventStream {
        self.stream(model, context, options.into().into_stream_options())
    }

    /// [`complete`](Self::complete) with one thinking level (pi's `completeSimple`).
    pub async fn complete_simple(
        &self,
        model: &Model,
        context: &Context,
        options: impl Into<SimpleStreamOptions>,
    ) -> AssistantMessage {
        self.stream_simple(model, context, options).result().await
    }

    /// pi's OAuth client for `provider`, or the one given to the builder.
    /// Only for logins whose requests oxpi builds ([`crate::oauth::OAuthKind::requests_built`]).
    fn oauth_config(&self, provider: &str) -> Option<crate::oauth::OAuthConfig> {
        self.oauth
            .get(provider)
            .cloned()
            .or_else(|| crate::oauth::OAuthConfig::for_provider(provider))
            .filter(|config| config.kind.requests_built())
    }

    /// The stream of a request through a stored login, when the provider has one (and the
    /// options carry no key of their own): the wire API behind [`crate::oauth`]'s wrapper, which
    /// refreshes the login under the store's lock when it expires and sends its token.
    fn stream_with_login(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Option<AssistantMessageEventStream> {
        if options.api_key.is_some() {
            return None;
        }
        let registry = self.login_registry(model)?;
        Some(registry.stream(model, context, options.clone()))
    }

    /// The options with the provider's key in them (a key already in them wins).
    fn apply_auth(
        &self,
        provider: &Provider,
        mut options: StreamOptions,
    ) -> Result<StreamOptions, ModelsError> {
        let given = options.api_key.clone();
        let Some(auth) = self.resolve(provider, given)? else {
            return Err(self.not_configured(provider));
        };
        options.api_key = auth.key;
        Ok(options)
    }

    fn not_configured(&self, provider: &Provider) -> ModelsError {
        let auth = provider.auth();
        if let Some(login) = &auth.oauth_login {
            return ModelsError::LoginRequired {
                provider: provider.id().to_string(),
                login: login.clone(),
            };
        }
        let mut sources: Vec<String> = auth.api_key_env.clone();
        sources.extend(auth.ambient_env.iter().map(|group| group.join(" with ")));
        sources.push("a key in the credential store".into());
        ModelsError::NotConfigured {
            provider: provider.id().to_string(),
            hint: format!("set {}", sources.join(" or ")),
        }
    }

    /// pi 1.6's order: the request's key; else the stored credential, which owns the provider;
    /// else the key variables; else the ambient variables; else configured if keyless.
    fn resolve(
        &self,
        provider: &Provider,
        given: Option<ApiKey>,
    ) -> Result<Option<ResolvedAuth>, ModelsError> {
        if let Some(key) = given {
            return Ok(Some(ResolvedAuth {
                key: Some(key),
                source: "StreamOptions::api_key".into(),
            }));
        }
        let id = provider.id();
        let stored = self.credentials.read(id)?;
        let mut own_env = BTreeMap::new();
        match stored {
            Some(Credential::OAuth(_)) if self.oauth_config(id).is_some() => {
                // The token is taken (and refreshed) when a request runs.
                return Ok(Some(ResolvedAuth {
                    key: None,
                    source: "OAuth".into(),
                }));
            }
            Some(Credential::OAuth(_)) => return Err(ModelsError::OAuthUnsupported(id.into())),
            Some(Credential::ApiKey(credential)) => {
                if let Some(key) = credential.key.as_deref().filter(|k| !k.is_empty()) {
                    let key = credentials::resolve_key_template(key, &credential.env, &self.env)
                        .map_err(|reason| ModelsError::Credential {
                            provider: id.into(),
                            reason,
                        })?;
                    return Ok(Some(ResolvedAuth {
                        key: Some(ApiKey::new(key)),
                        source: "stored credential".into(),
                    }));
                }
                own_env = credential.env;
            }
            None => {}
        }
        let lookup = |name: &str| {
            own_env
                .get(name)
                .filter(|v| !v.trim().is_empty())
                .cloned()
                .or_else(|| self.env.get(name))
        };
        let auth = provider.auth();
        for var in &auth.api_key_env {
            if let Some(value) = lookup(var) {
                return Ok(Some(ResolvedAuth {
                    key: Some(ApiKey::new(value)),
                    source: var.clone(),
                }));
            }
        }
        for group in &auth.ambient_env {
            if !group.is_empty() && group.iter().all(|var| lookup(var).is_some()) {
                return Ok(Some(ResolvedAuth {
                    key: None,
                    source: group.join(" + "),
                }));
            }
        }
        Ok(auth.keyless.then(|| ResolvedAuth {
            key: None,
            source: "no key needed".into(),
        }))
    }
}
