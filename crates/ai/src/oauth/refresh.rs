//! The refresh request of each issuer, as pi 1.6 makes it, and its answer as the credential pi
//! stores:
//!
//! - Anthropic: `POST` JSON `{grant_type: "refresh_token", client_id, refresh_token}`; the new
//!   tokens, expiring five minutes before `expires_in` says.
//! - OpenAI Codex: `POST` a form `grant_type=refresh_token&refresh_token=…&client_id=…`; the new
//!   tokens, `expires_in` from now, and the `accountId` read from the access token.
//! - GitHub Copilot: `GET` the Copilot token endpoint with the GitHub token as bearer and
//!   Copilot's editor headers; the Copilot token, expiring five minutes before `expires_at`.
//!
//! The refresh token goes to its issuer's endpoint only: the client follows no redirect to
//! another origin ([`crate::providers::client`]). Error texts never contain a token.

use serde_json::{json, Map, Value};

use super::{now_ms, OAuthConfig, OAuthKind};
use crate::collection::OAuthCredential;
use crate::options::ApiKey;

/// Copilot's editor headers on its token endpoint (pi's `COPILOT_HEADERS`).
const COPILOT_HEADERS: [(&str, &str); 4] = [
    ("user-agent", "GitHubCopilotChat/0.35.0"),
    ("editor-version", "vscode/1.107.0"),
    ("editor-plugin-version", "copilot-chat/0.35.0"),
    ("copilot-integration-id", "vscode-chat"),
];

/// Five minutes, taken off the expiry Anthropic and Copilot give.
const EARLY_MS: f64 = 5.0 * 60.0 * 1000.0;

/// A refresh that failed: why, without any token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("OAuth refresh failed for {provider}: {reason}")]
pub struct RefreshError {
    /// The provider.
    pub provider: String,
    /// What went wrong (the endpoint, the status, the server's text with tokens redacted).
    pub reason: String,
    /// Whether the issuer refused the refresh token (HTTP 400/401/403), so a login is needed.
    pub rejected: bool,
}

/// Encodes form fields as `URLSearchParams` does.
pub(crate) fn form(fields: &[(&str, &str)]) -> String {
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'*');
    fields
        .iter()
        .map(|(k, v)| {
            let enc = |s: &str| {
                percent_encoding::utf8_percent_encode(s, KEEP)
                    .to_string()
                    .replace("%20", "+")
            };
            format!("{}={}", enc(k), enc(v))
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Refreshes `credential` at `config`'s issuer with `client`.
pub async fn refresh(
    config: &OAuthConfig,
    client: &reqwest::Client,
    credential: &OAuthCredential,
) -> Result<OAuthCredential, RefreshError> {
    let provider = config.provider_id();
    let secrets = [
        ApiKey::new(credential.refresh.clone()),
        ApiKey::new(credential.access.clone()),
    ];
    let fail = |reason: String, rejected: bool| {
        let reason = secrets.iter().fold(reason, |text, secret| {
            crate::secret::redact(text, Some(secret))
        });
        RefreshError {
            provider: provider.to_string(),
            reason,
            rejected,
        }
    };
    let request = match config.kind {
        OAuthKind::Anthropic => client
            .post(&config.refresh_url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(
                json!({
                    "grant_type": "refresh_token",
                    "client_id": config.client_id,
                    "refresh_token": credential.refresh,
                })
                .to_string(),
            ),
        OAuthKind::OpenAiCodex => client
            .post(&config.refresh_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", &credential.refresh),
                ("client_id", &config.client_id),
            ])),
        OAuthKind::GitHubCopilot => {
            // An enterprise login refreshes at its own GitHub (pi's `getUrls(domain)`), never
            // at github.com; an endpoint given in place of pi's (a test's) is kept.
            let url = match credential
                .extra
                .get("enterpriseUrl")
                .and_then(Value::as_str)
            {
                Some(domain)
                    if !domain.is_empty()
                        && config.refresh_url == OAuthConfig::github_copilot().refresh_url =>
                {
                    OAuthConfig::github_enterprise(domain)
                        .map(|c| c.refresh_url)
                        .ok_or_else(|| fail(format!("{domain:?} is not a domain"), false))?
                }
                _ => config.refresh_url.clone(),
            };
            let mut request = client
                .get(&url)
                .header("accept", "application/json")
                .header("authorization", format!("Bearer {}", credential.refresh));
            for (name, value) in COPILOT_HEADERS {
                request = request.header(name, value);
            }
            request
        }
    };
    let url = config.refresh_url.clone();
    let body = send_for_json(request, &url, &fail).await?;
    credential_from(config.kind, &body, Some(credential)).map_err(|reason| fail(reason, false))
}

/// Sends a token request and reads its JSON answer; `fail` makes the error (its text redacted
/// of the request's tokens), `rejected` when the issuer answered 400/401/403.
pub(crate) async fn send_for_json<E>(
    request: reqwest::RequestBuilder,
    url: &str,
    fail: &(dyn Fn(String, bool) -> E + Sync),
) -> Result<Value, E> {
    let response = request
        .timeout(std::time::Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| {
            fail(
                format!("{url}: {}", crate::diagnostics::error_chain(&e)),
                false,
            )
        })?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| fail(format!("{url}: {e}"), false))?;
    if !status.is_success() {
        let rejected = matches!(status.as_u16(), 400 | 401 | 403);
        return Err(fail(
            format!(
                "{url} answered {status}: {}",
                crate::diagnostics::quote_chunk(&text)
            ),
            rejected,
        ));
    }
    serde_json::from_str(&text).map_err(|_| {
        fail(
            format!("{url} answered with something that is not JSON"),
            false,
        )
    })
}

/// A token endpoint's answer as the credential pi stores: for Anthropic and Codex the
/// `access_token`, `refresh_token` and `expires_in` of an exchange or a refresh; for Copilot
/// the Copilot `token` and `expires_at`, with the GitHub token of `previous` (a login passes
/// the GitHub token as `previous.refresh`) kept as the refresh token.
pub(crate) fn credential_from(
    kind: OAuthKind,
    body: &Value,
    previous: Option<&OAuthCredential>,
) -> Result<OAuthCredential, String> {
    let field = |name: &str| body.get(name).and_then(Value::as_str).map(str::to_string);
    let number = |name: &str| body.get(name).and_then(Value::as_f64);
    let missing = || "the answer lacks a field pi needs".to_string();
    let mut extra = Map::new();
    let (access, refresh, expires) = match kind {
        OAuthKind::Anthropic => {
            let (Some(access), Some(refresh), Some(expires_in)) = (
                field("access_token"),
                field("refresh_token"),
                number("expires_in"),
            ) else {
                return Err(missing());
            };
            (access, refresh, now_ms() + expires_in * 1000.0 - EARLY_MS)
        }
        OAuthKind::OpenAiCodex => {
            let (Some(access), Some(refresh), Some(expires_in)) = (
                field("access_token"),
                field("refresh_token"),
                number("expires_in"),
            ) else {
                return Err(missing());
            };
            let account = crate::providers::openai_codex_responses::account_id(&access)?;
            extra.insert("accountId".into(), Value::String(account));
            (access, refresh, now_ms() + expires_in * 1000.0)
        }
        OAuthKind::GitHubCopilot => {
            let (Some(token), Some(expires_at), Some(previous)) =
                (field("token"), number("expires_at"), previous)
            else {
                return Err(missing());
            };
            // pi keeps the GitHub token as the refresh token and the enterprise domain; the
            // models the account may use are kept from the login (pi fetches them again).
            for kept in ["enterpriseUrl", "availableModelIds"] {
                if let Some(value) = previous.extra.get(kept) {
                    extra.insert(kept.into(), value.clone());
                }
            }
            (
                token,
                previous.refresh.clone(),
                expires_at * 1000.0 - EARLY_MS,
            )
        }
    };
    Ok(OAuthCredential::new(access, refresh, expires).with_extra(extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_encoded_as_url_search_params_does() {
        assert_eq!(
            form(&[("a b", "x+y/z=1&2"), ("k", "-._*~")]),
            "a+b=x%2By%2Fz%3D1%262&k=-._*%7E"
        );
    }
}
