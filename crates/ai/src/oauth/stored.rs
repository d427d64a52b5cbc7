//! A stored login refreshed under the credential store's lock (pi's
//! `refreshStoredOAuthCredential`): the need is checked again under the lock, so of many
//! requests and processes that find the token expiring only the first refreshes; the others
//! read the token it stored. For [`crate::AuthFile`] the lock is pi's `auth.json.lock`
//! directory, so oxpi and pi share it. The refresh runs on a blocking thread with its own
//! runtime, since the store's `modify` holds the lock through a synchronous closure.

use std::sync::Arc;

use super::refresh::{refresh, RefreshError};
use super::{expires_soon, OAuthConfig};
use crate::collection::{Credential, CredentialStore, OAuthCredential};

/// Why a stored login could not give a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoredError {
    /// The issuer refused, or the refresh could not be made.
    #[error(transparent)]
    Refresh(#[from] RefreshError),
    /// The store failed, or the credential was removed meanwhile.
    #[error("{0}")]
    Store(String),
}

/// The stored credential of `config`'s provider, refreshed first (under the store's lock) when
/// it expires within five minutes or its access token is `failed` (a token the server refused).
pub(crate) async fn current_credential(
    store: Arc<dyn CredentialStore>,
    config: OAuthConfig,
    failed: Option<String>,
) -> Result<OAuthCredential, StoredError> {
    let provider = config.provider_id();
    let needs =
        move |c: &OAuthCredential| expires_soon(c) || failed.as_deref() == Some(c.access.as_str());
    let stored = store
        .read(provider)
        .map_err(|e| StoredError::Store(e.to_string()))?;
    match stored {
        Some(Credential::OAuth(credential)) if !needs(&credential) => return Ok(credential),
        Some(Credential::OAuth(_)) => {}
        _ => {
            return Err(StoredError::Store(format!(
                "{provider} has no stored login"
            )))
        }
    }
    let joined = tokio::task::spawn_blocking(move || {
        let mut error = None;
        let result = store.modify(provider, &mut |current| {
            let Some(Credential::OAuth(credential)) = current else {
                return None;
            };
            if !needs(credential) {
                return None; // another request or process refreshed it
            }
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    error = Some(StoredError::Store(format!(
                        "no runtime for the refresh: {e}"
                    )));
                    return None;
                }
            };
            let client = match crate::providers::client::new_client() {
                Ok(client) => client,
                Err(e) => {
                    error = Some(StoredError::Store(e));
                    return None;
                }
            };
            match runtime.block_on(refresh(&config, &client, credential)) {
                Ok(next) => Some(Credential::OAuth(next)),
                Err(e) => {
                    error = Some(e.into());
                    None
                }
            }
        });
        match (error, result) {
            (Some(error), _) => Err(error),
            (None, Ok(Some(Credential::OAuth(credential)))) => Ok(credential),
            (None, Ok(_)) => Err(StoredError::Store(format!(
                "{provider} has no stored login (logged out meanwhile)"
            ))),
            (None, Err(e)) => Err(StoredError::Store(e.to_string())),
        }
    })
    .await;
    joined.unwrap_or_else(|e| {
        Err(StoredError::Store(format!(
            "the refresh did not finish: {e}"
        )))
    })
}
