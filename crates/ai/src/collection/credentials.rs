//! Stored credentials (pi 1.6's `Credential`, the entries of its `auth.json`), the
//! [`CredentialStore`] trait with an in-memory store, and [`Env`], the environment lookup auth
//! resolution reads (injectable, so tests never touch the process environment).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One provider's stored credential, tagged by `type` as in pi's `auth.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Credential {
    /// `{"type": "api_key", "key": …, "env": {…}}`.
    #[serde(rename = "api_key")]
    ApiKey(ApiKeyCredential),
    /// `{"type": "oauth", "access": …, "refresh": …, "expires": …, …}`: a login of one of pi's
    /// OAuth providers ([`crate::oauth`]), used and refreshed by [`crate::Models`].
    #[serde(rename = "oauth")]
    OAuth(OAuthCredential),
}

impl Credential {
    /// An API-key credential holding `key`.
    pub fn api_key(key: impl Into<String>) -> Self {
        Self::ApiKey(ApiKeyCredential {
            key: Some(key.into()),
            env: BTreeMap::new(),
        })
    }

    /// Its kind.
    pub fn kind(&self) -> CredentialKind {
        match self {
            Self::ApiKey(_) => CredentialKind::ApiKey,
            Self::OAuth(_) => CredentialKind::OAuth,
        }
    }
}

/// A stored API key and provider-scoped values (pi's `ApiKeyCredential`). In pi's coding agent
/// the key may name variables (`$NAME`, `${NAME}`); [`crate::Models`] resolves those.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApiKeyCredential {
    /// The key, if one is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Provider-scoped configuration (account ids, an AWS profile, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl ApiKeyCredential {
    /// No key, no values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the key.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Adds a provider-scoped value.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }
}

/// A stored OAuth credential (pi's `OAuthCredential`): the tokens, their expiry in
/// milliseconds since the epoch, and whatever else the login stored, kept as it was.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OAuthCredential {
    /// The access token.
    pub access: String,
    /// The refresh token.
    pub refresh: String,
    /// When the access token expires (ms since the epoch).
    pub expires: f64,
    /// Every other field, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OAuthCredential {
    /// Tokens and their expiry (ms since the epoch), nothing else.
    pub fn new(access: impl Into<String>, refresh: impl Into<String>, expires: f64) -> Self {
        Self {
            access: access.into(),
            refresh: refresh.into(),
            expires,
            extra: Map::new(),
        }
    }

    /// With these other fields (`accountId`, `enterpriseUrl`, …).
    pub fn with_extra(mut self, extra: Map<String, Value>) -> Self {
        self.extra = extra;
        self
    }
}

/// Shows neither token.
impl std::fmt::Debug for OAuthCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthCredential")
            .field("access", &"<redacted>")
            .field("refresh", &"<redacted>")
            .field("expires", &self.expires)
            .field("extra", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The kind of a credential (pi's `AuthType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CredentialKind {
    /// `api_key`.
    #[serde(rename = "api_key")]
    ApiKey,
    /// `oauth`.
    #[serde(rename = "oauth")]
    OAuth,
}

/// Why a credential store could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// The file could not be read, written or locked.
    #[error("credential file {path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        reason: String,
    },
    /// The file is not what pi writes.
    #[error("credential file {path} is invalid: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// App-owned credential storage keyed by provider id, one credential per provider (pi's
/// `CredentialStore`). `modify` is the one write path: a read-modify-write under the store's
/// lock. Calls are synchronous (a file of a few entries); they are made before a request
/// starts.
pub trait CredentialStore: Send + Sync {
    /// The stored credential of `provider`, `None` when there is none.
    fn read(&self, provider: &str) -> Result<Option<Credential>, CredentialError>;
    /// Every stored credential's provider and kind, without secrets.
    fn list(&self) -> Result<Vec<(String, CredentialKind)>, CredentialError>;
    /// Replaces the credential of `provider` with what `change` returns for the current one
    /// (`None`: left as it is) and returns the credential stored afterwards.
    fn modify(
        &self,
        provider: &str,
        change: &mut dyn FnMut(Option<&Credential>) -> Option<Credential>,
    ) -> Result<Option<Credential>, CredentialError>;
    /// Removes the credential of `provider` (a logout).
    fn delete(&self, provider: &str) -> Result<(), CredentialError>;
}

/// Credentials held in memory (pi's `InMemoryCredentialStore`), the default of [`crate::Models`].
#[derive(Debug, Default)]
pub struct InMemoryCredentialStore {
    credentials: Mutex<BTreeMap<String, Credential>>,
}

impl InMemoryCredentialStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// This store with `credential` stored for `provider`.
    pub fn with(self, provider: impl Into<String>, credential: Credential) -> Self {
        self.lock().insert(provider.into(), credential);
        self
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Credential>> {
        self.credentials
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl CredentialStore for InMemoryCredentialStore {
    fn read(&self, provider: &str) -> Result<Option<Credential>, CredentialError> {
        Ok(self.lock().get(provider).cloned())
    }

    fn list(&self) -> Result<Vec<(String, CredentialKind)>, CredentialError> {
        Ok(self
            .lock()
            .iter()
            .map(|(id, credential)| (id.clone(), credential.kind()))
            .collect())
    }

    fn modify(
        &self,
        provider: &str,
        change: &mut dyn FnMut(Option<&Credential>) -> Option<Credential>,
    ) -> Result<Option<Credential>, CredentialError> {
        let mut credentials = self.lock();
        if let Some(next) = change(credentials.get(provider)) {
            credentials.insert(provider.to_string(), next);
        }
        Ok(credentials.get(provider).cloned())
    }

    fn delete(&self, provider: &str) -> Result<(), CredentialError> {
        self.lock().remove(provider);
        Ok(())
    }
}

type EnvFn = dyn Fn(&str) -> Option<String> + Send + Sync;

/// The environment auth resolution reads (pi's `AuthContext.env`): a blank value counts as
/// unset. [`Env::process`] reads the process environment; tests pass their own.
///
/// ```
/// use oxpi_ai::collection::Env;
/// let env = Env::from_pairs([("GROQ_API_KEY", "gsk-1"), ("BLANK", "  ")]);
/// assert_eq!(env.get("GROQ_API_KEY").as_deref(), Some("gsk-1"));
/// assert_eq!(env.get("BLANK"), None);
/// assert_eq!(env.get("UNSET"), None);
/// ```
#[derive(Clone)]
pub struct Env(Arc<EnvFn>);

impl Env {
    /// The process environment.
    pub fn process() -> Self {
        Self::from_fn(|name| std::env::var(name).ok())
    }

    /// A fixed set of variables.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let vars: BTreeMap<String, String> = pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        Self::from_fn(move |name| vars.get(name).cloned())
    }

    /// Variables from a function.
    pub fn from_fn(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(lookup))
    }

    /// The value of `name`; `None` when unset or blank.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|value| !value.trim().is_empty())
    }
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Env(..)")
    }
}

/// A stored key with its variables filled in, as pi's coding agent reads `auth.json` keys:
/// `$NAME` and `${NAME}` are variables (the credential's own `env` first, then `env`), `$$` and
/// `$!` are a literal `$` and `!`. A key starting with `!` is a shell command in pi; oxpi does
/// not run commands from credentials and says so.
pub(crate) fn resolve_key_template(
    key: &str,
    own: &BTreeMap<String, String>,
    env: &Env,
) -> Result<String, String> {
    if key.starts_with('!') {
        return Err(
            "its key is a shell command (\"!…\"), which oxpi does not run; store the key itself or \"$VARIABLE\""
                .into(),
        );
    }
    let lookup = |name: &str| {
        own.get(name)
            .filter(|v| !v.is_empty())
            .cloned()
            .or_else(|| env.get(name))
    };
    let is_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(key.len());
    let mut rest = key;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let mut chars = after.chars();
        match chars.next() {
            Some(c @ ('$' | '!')) => {
                out.push(c);
                rest = &after[1..];
            }
            Some('{') => {
                match after.find('}') {
                    Some(end)
                        if after[1..end].starts_with(is_start)
                            && after[1..end].chars().all(is_name) =>
                    {
                        let name = &after[1..end];
                        out.push_str(&lookup(name).ok_or_else(|| {
                            format!("its key names ${{{name}}}, which is not set")
                        })?);
                        rest = &after[end + 1..];
                    }
                    Some(end) => {
                        out.push_str(&rest[at..at + end + 2]);
                        rest = &after[end + 1..];
                    }
                    None => {
                        out.push('$');
                        rest = after;
                    }
                }
            }
            Some(c) if is_start(c) => {
                let len = after.find(|c: char| !is_name(c)).unwrap_or(after.len());
                let name = &after[..len];
                out.push_str(
                    &lookup(name)
                        .ok_or_else(|| format!("its key names ${name}, which is not set"))?,
                );
                rest = &after[len..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_templates_fill_variables_and_keep_literals() {
        let own = BTreeMap::from([("ACCOUNT".to_string(), "acc".to_string())]);
        let env = Env::from_pairs([("KEY", "sk-1"), ("ACCOUNT", "not-this")]);
        let resolve = |key: &str| resolve_key_template(key, &own, &env);
        assert_eq!(resolve("sk-literal").unwrap(), "sk-literal");
        assert_eq!(resolve("$KEY").unwrap(), "sk-1");
        assert_eq!(resolve("${KEY}-${ACCOUNT}").unwrap(), "sk-1-acc");
        assert_eq!(resolve("a$$b$!c").unwrap(), "a$b!c");
        assert_eq!(
            resolve("cost $5 ${not a name} $").unwrap(),
            "cost $5 ${not a name} $"
        );
        assert!(resolve("$MISSING").unwrap_err().contains("$MISSING"));
        assert!(resolve("!op read x").unwrap_err().contains("shell command"));
    }
}
