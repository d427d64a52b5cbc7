//! pi 1.6's OAuth providers (`pi-ai`'s `auth/oauth/*`): what a stored login (`"type": "oauth"`
//! in `auth.json`) means for a request, and how it is refreshed.
//!
//! - [`OAuthConfig`]: one provider's client id and endpoints, pi's by default (tests point them
//!   at local servers): Anthropic (Claude Pro/Max), OpenAI Codex (ChatGPT Plus/Pro), GitHub
//!   Copilot.
//! - `refresh`: the refresh request each issuer takes, its answer turned into the credential
//!   pi stores.
//! - [`to_auth`]: the credential as request auth (pi's `toAuth`): the key, and for Copilot the
//!   base URL its token names.
//! - `stored`: refreshing a stored credential under the credential store's lock (the
//!   `auth.json.lock` directory pi takes), re-checked under the lock, so processes refresh once.
//! - `api`: the provider wrapper [`crate::Models`] puts in front of a wire API for a provider
//!   with a stored login (a 401 before any content refreshes once and asks again).
//! - [`login`]: pi's login flows (authorization code with PKCE and a loopback callback server or
//!   a pasted redirect; Copilot's device code in `device`), reaching the user through a
//!   [`login::LoginUi`]; [`crate::Models::login`] stores what they end with.
//!
//! Tokens never appear in an error text or a `Debug` output: errors name the provider and the
//! endpoint, and quote a server's answer only with every token of the request redacted.

pub(crate) mod api;
mod callback;
mod device;
pub mod login;
pub mod refresh;
pub mod stored;

use crate::collection::OAuthCredential;

/// How long before its expiry a token is refreshed (pi's `DEFAULT_OAUTH_MINIMUM_VALIDITY_MS`).
pub const MINIMUM_VALIDITY_MS: f64 = 5.0 * 60.0 * 1000.0;

/// Which of pi's OAuth providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthKind {
    /// `anthropic`: Claude Pro/Max (authorization code with PKCE; JSON token endpoint).
    Anthropic,
    /// `openai-codex`: ChatGPT Plus/Pro (authorization code with PKCE; form token endpoint).
    OpenAiCodex,
    /// `github-copilot`: a GitHub device-code login exchanged for Copilot tokens.
    GitHubCopilot,
}

impl OAuthKind {
    /// Whether oxpi turns this login into requests: all three (an Anthropic token with pi's
    /// Claude Code identity, see `anthropic_messages`).
    pub fn requests_built(self) -> bool {
        true
    }
}

/// One OAuth provider's client and endpoints.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// Which provider.
    pub kind: OAuthKind,
    /// The OAuth client id.
    pub client_id: String,
    /// The authorization endpoint (Copilot: the device-code endpoint).
    pub authorize_url: String,
    /// The token endpoint (Copilot: GitHub's access-token endpoint).
    pub token_url: String,
    /// Copilot: where a GitHub token is exchanged for a Copilot token (its refresh endpoint);
    /// the others: the token endpoint again.
    pub refresh_url: String,
    /// The redirect URI of the browser flow.
    pub redirect_uri: String,
    /// The scopes asked for, space-separated.
    pub scope: String,
    /// Anthropic's copy-code login: the redirect URI on Anthropic's page that shows the code
    /// to paste (empty for the others).
    pub copy_code_redirect_uri: String,
    /// The API base URL requests go to in place of the one the login names (Copilot's
    /// `proxy-ep`), for tests against a local model server; `None` (pi's behaviour) normally.
    pub api_base_url: Option<String>,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("kind", &self.kind)
            .field("token_url", &self.token_url)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// pi's Anthropic client (Claude Pro/Max).
    pub fn anthropic() -> Self {
        Self {
            kind: OAuthKind::Anthropic,
            client_id: "9d1c250a-e61b-44d9-88ed-5944d1962f5e".into(),
            authorize_url: "https://claude.ai/oauth/authorize".into(),
            token_url: "https://platform.claude.com/v1/oauth/token".into(),
            refresh_url: "https://platform.claude.com/v1/oauth/token".into(),
            redirect_uri: "http://localhost:53692/callback".into(),
            scope: "org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload".into(),
            copy_code_redirect_uri: "https://platform.claude.com/oauth/code/callback".into(),
            api_base_url: None,
        }
    }

    /// pi's OpenAI Codex client (ChatGPT Plus/Pro), shared with the Codex CLI.
    pub fn openai_codex() -> Self {
        Self {
            kind: OAuthKind::OpenAiCodex,
            client_id: "app_EMoamEEZ73f0CkXaXp7hrann".into(),
            authorize_url: "https://auth.openai.com/oauth/authorize".into(),
            token_url: "https://auth.openai.com/oauth/token".into(),
            refresh_url: "https://auth.openai.com/oauth/token".into(),
            redirect_uri: "http://localhost:1455/auth/callback".into(),
            scope: "openid profile email offline_access".into(),
            copy_code_redirect_uri: String::new(),
            api_base_url: None,
        }
    }

    /// pi's GitHub Copilot client on github.com.
    pub fn github_copilot() -> Self {
        Self {
            kind: OAuthKind::GitHubCopilot,
            client_id: "Iv1.b507a08c87ecfe98".into(),
            authorize_url: "https://github.com/login/device/code".into(),
            token_url: "https://github.com/login/oauth/access_token".into(),
            refresh_url: "https://api.github.com/copilot_internal/v2/token".into(),
            redirect_uri: String::new(),
            scope: "read:user".into(),
            copy_code_redirect_uri: String::new(),
            api_base_url: None,
        }
    }

    /// pi's GitHub Copilot client on a GitHub Enterprise domain (`company.ghe.com`, or a URL
    /// naming it): its device-code, access-token and Copilot-token endpoints on that host.
    /// `None` when `domain` names no host.
    pub fn github_enterprise(domain: &str) -> Option<Self> {
        let host = normalize_domain(domain)?;
        Some(Self {
            authorize_url: format!("https://{host}/login/device/code"),
            token_url: format!("https://{host}/login/oauth/access_token"),
            refresh_url: format!("https://api.{host}/copilot_internal/v2/token"),
            ..Self::github_copilot()
        })
    }

    /// pi's client for a provider id (`anthropic`, `openai-codex`, `github-copilot`).
    pub fn for_provider(provider: &str) -> Option<Self> {
        match provider {
            "anthropic" => Some(Self::anthropic()),
            "openai-codex" => Some(Self::openai_codex()),
            "github-copilot" => Some(Self::github_copilot()),
            _ => None,
        }
    }

    /// This client with requests sent to `base_url` whatever the login names (tests).
    pub fn with_api_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.api_base_url = Some(base_url.into());
        self
    }

    /// This client with the browser flow's redirect URI (its callback server's port and path);
    /// a test passes port 0 for any free port.
    pub fn with_redirect_uri(mut self, redirect_uri: impl Into<String>) -> Self {
        self.redirect_uri = redirect_uri.into();
        self
    }

    /// The provider id pi stores the credential under.
    pub fn provider_id(&self) -> &'static str {
        match self.kind {
            OAuthKind::Anthropic => "anthropic",
            OAuthKind::OpenAiCodex => "openai-codex",
            OAuthKind::GitHubCopilot => "github-copilot",
        }
    }

    /// Every endpoint replaced by the same path on `origin` (`http://127.0.0.1:PORT`), for tests
    /// against a local authorization server.
    pub fn at_origin(mut self, origin: &str) -> Self {
        let origin = origin.trim_end_matches('/');
        let move_url = |url: &mut String| {
            if let Some(rest) = url
                .split_once("://")
                .and_then(|(_, r)| r.find('/').map(|i| &r[i..]))
            {
                *url = format!("{origin}{rest}");
            }
        };
        move_url(&mut self.authorize_url);
        move_url(&mut self.token_url);
        move_url(&mut self.refresh_url);
        self
    }
}

/// What a stored login gives a request (pi's `toAuth` result).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestAuth {
    /// The key the wire API sends (its access token).
    pub api_key: String,
    /// A base URL the token names (Copilot's `proxy-ep`), replacing the model's.
    pub base_url: Option<String>,
}

impl std::fmt::Debug for RequestAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestAuth")
            .field("api_key", &"<redacted>")
            .field("base_url", &self.base_url)
            .finish()
    }
}

/// The credential as request auth (pi's `toAuth`): the access token as the key; for Copilot
/// the API host its token names (`proxy-ep=proxy.X` → `https://api.X`), else
/// `https://copilot-api.<enterprise domain>`, else the individual endpoint.
pub fn to_auth(kind: OAuthKind, credential: &OAuthCredential) -> RequestAuth {
    let base_url = (kind == OAuthKind::GitHubCopilot).then(|| copilot_base_url(credential));
    RequestAuth {
        api_key: credential.access.clone(),
        base_url,
    }
}

fn copilot_base_url(credential: &OAuthCredential) -> String {
    let from_token = credential
        .access
        .split(';')
        .find_map(|part| part.trim().strip_prefix("proxy-ep="))
        .filter(|host| !host.is_empty());
    if let Some(host) = from_token {
        let host = host
            .strip_prefix("proxy.")
            .map_or_else(|| host.to_string(), |rest| format!("api.{rest}"));
        return format!("https://{host}");
    }
    match credential
        .extra
        .get("enterpriseUrl")
        .and_then(|v| v.as_str())
    {
        Some(domain) if !domain.is_empty() => {
            let host = domain
                .split("://")
                .last()
                .unwrap_or(domain)
                .split('/')
                .next()
                .unwrap_or(domain);
            format!("https://copilot-api.{host}")
        }
        _ => "https://api.individual.githubcopilot.com".to_string(),
    }
}

/// The host a GitHub Enterprise URL or domain names (pi's `normalizeDomain`), lowercased;
/// `None` for an empty or unusable one.
pub fn normalize_domain(input: &str) -> Option<String> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return None;
    }
    let url = if trimmed.contains("://") {
        trimmed.to_string()
    } else {
        format!("https://{trimmed}")
    };
    reqwest::Url::parse(&url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .filter(|h| !h.is_empty())
}

/// The stored login of `config`'s provider as request auth (pi's `toAuth`), refreshed first
/// under the store's lock when it expires within five minutes, or when its access token is
/// `failed` (one the server just refused with 401). For callers that make requests through
/// their own path (a key callback) rather than through [`crate::Models`].
pub async fn request_auth(
    store: std::sync::Arc<dyn crate::collection::CredentialStore>,
    config: OAuthConfig,
    failed: Option<String>,
) -> Result<RequestAuth, stored::StoredError> {
    let kind = config.kind;
    let credential = stored::current_credential(store, config, failed).await?;
    Ok(to_auth(kind, &credential))
}

/// Milliseconds since the epoch, now.
pub(crate) fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

/// Whether the credential expires within [`MINIMUM_VALIDITY_MS`] (pi's `expiresSoon`).
pub fn expires_soon(credential: &OAuthCredential) -> bool {
    now_ms() + MINIMUM_VALIDITY_MS >= credential.expires
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn credential(access: &str, extra: serde_json::Value) -> OAuthCredential {
        let mut value = json!({"access": access, "refresh": "r", "expires": 1.0});
        if let (Some(map), Some(more)) = (value.as_object_mut(), extra.as_object()) {
            map.extend(more.clone());
        }
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn copilot_base_urls_come_from_the_token_then_the_enterprise() {
        let cases = [
            (
                "tid=1;exp=2;proxy-ep=proxy.individual.githubcopilot.com;x=1",
                json!({}),
                "https://api.individual.githubcopilot.com",
            ),
            (
                "tid=1;proxy-ep=proxy.business.githubcopilot.com",
                json!({"enterpriseUrl": "corp.ghe.com"}),
                "https://api.business.githubcopilot.com",
            ),
            (
                "tid=1",
                json!({"enterpriseUrl": "corp.ghe.com"}),
                "https://copilot-api.corp.ghe.com",
            ),
            (
                "tid=1",
                json!({}),
                "https://api.individual.githubcopilot.com",
            ),
        ];
        for (token, extra, url) in cases {
            let auth = to_auth(OAuthKind::GitHubCopilot, &credential(token, extra));
            assert_eq!(auth.base_url.as_deref(), Some(url), "{token}");
            assert_eq!(auth.api_key, token);
        }
        let auth = to_auth(OAuthKind::Anthropic, &credential("sk-ant-oat-1", json!({})));
        assert_eq!(
            (auth.api_key.as_str(), auth.base_url.clone()),
            ("sk-ant-oat-1", None)
        );
        assert!(!format!("{auth:?}").contains("sk-ant"));
    }

    #[test]
    fn endpoints_move_to_a_local_origin_keeping_their_paths() {
        let config = OAuthConfig::openai_codex().at_origin("http://127.0.0.1:9/");
        assert_eq!(
            (config.authorize_url.as_str(), config.token_url.as_str()),
            (
                "http://127.0.0.1:9/oauth/authorize",
                "http://127.0.0.1:9/oauth/token"
            )
        );
        let copilot = OAuthConfig::github_copilot().at_origin("http://127.0.0.1:9");
        assert_eq!(
            copilot.refresh_url,
            "http://127.0.0.1:9/copilot_internal/v2/token"
        );
    }
}
