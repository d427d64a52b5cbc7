//! pi 1.6's login flows (`pi-ai`'s `auth/oauth/*`), each ending in the credential pi stores:
//!
//! - Anthropic (Claude Pro/Max): authorization code with PKCE (S256; the verifier doubles as
//!   the state, as in pi). "Browser": a callback server on `127.0.0.1:53692` (any free port
//!   when that one is taken) racing a pasted redirect URL or `code#state`; "copy code": the
//!   redirect goes to Anthropic's page and the user pastes the code it shows. The code is
//!   exchanged with JSON at the token endpoint.
//! - OpenAI Codex (ChatGPT Plus/Pro): authorization code with PKCE and a random state, a
//!   callback server on pi's port 1455 racing a pasted redirect URL (headless use); the code
//!   is exchanged with a form; the account id is read from the access token.
//! - GitHub Copilot: GitHub's device code (an optional GitHub Enterprise domain first), polled
//!   until the user approved it, then the GitHub token exchanged for a Copilot token.
//!
//! The user is reached through a [`LoginUi`]: it shows [`LoginEvent`]s (the URL to open, the
//! device code) and answers [`LoginPrompt`]s (a method, a pasted code). Errors never contain
//! a code, a verifier or a token.

use std::sync::Arc;

use base64::Engine;
use futures::future::BoxFuture;
use serde_json::json;

use super::callback::CallbackServer;
use super::refresh::{credential_from, form, send_for_json};
use super::{OAuthConfig, OAuthKind};
use crate::collection::OAuthCredential;
use crate::options::ApiKey;

/// Something the user should see during a login.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginEvent {
    /// Open this URL in a browser (pi's `auth_url`).
    AuthUrl {
        /// The authorization URL.
        url: String,
        /// What to do there.
        instructions: String,
    },
    /// Enter this code at this page (pi's `device_code`).
    DeviceCode {
        /// The code to enter.
        user_code: String,
        /// Where to enter it.
        verification_uri: String,
    },
    /// A step of the login (pi's `progress`).
    Progress(String),
}

/// Something the login asks the user.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginPrompt {
    /// Pick one option by its id (the first is the default).
    Select {
        /// The question.
        message: String,
        /// `(id, label)` pairs.
        options: Vec<(String, String)>,
    },
    /// Paste an authorization code or the redirect URL the browser ended on.
    ManualCode {
        /// The request.
        message: String,
        /// An example of the expected input.
        placeholder: String,
    },
    /// Free text (Copilot's GitHub Enterprise domain; blank for github.com).
    Text {
        /// The question.
        message: String,
        /// An example of the expected input.
        placeholder: String,
    },
}

/// How a login reaches the user (pi's `OAuthLoginInteraction`).
pub trait LoginUi: Send + Sync {
    /// Shows an event.
    fn notify(&self, event: LoginEvent);
    /// Asks; `None` when no answer will come (input closed). A prompt racing the browser's
    /// callback is dropped when the callback wins.
    fn prompt(&self, prompt: LoginPrompt) -> BoxFuture<'static, Option<String>>;
}

/// Why a login failed, without any code or token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("OAuth login failed for {provider}: {reason}")]
pub struct LoginError {
    /// The provider.
    pub provider: String,
    /// What went wrong.
    pub reason: String,
}

/// Runs `config`'s login flow with `ui` and returns the credential to store.
pub async fn login(
    config: &OAuthConfig,
    ui: Arc<dyn LoginUi>,
) -> Result<OAuthCredential, LoginError> {
    let client = crate::providers::client::new_client().map_err(|e| LoginError {
        provider: config.provider_id().into(),
        reason: e,
    })?;
    let flow = Flow {
        config,
        client,
        ui,
        secrets: std::sync::Mutex::new(Vec::new()),
    };
    match config.kind {
        OAuthKind::Anthropic => {
            let method = flow
                .select(
                    "Select Anthropic login method:",
                    &[
                        ("browser", "Browser login (default)"),
                        ("copy_code", "Copy code login (headless)"),
                    ],
                )
                .await?;
            match method.as_str() {
                "copy_code" => flow.anthropic_copy_code().await,
                "browser" => flow.browser().await,
                other => Err(flow.fail(format!("Unknown Anthropic login method: {other}"))),
            }
        }
        OAuthKind::OpenAiCodex => flow.browser().await,
        OAuthKind::GitHubCopilot => flow.copilot().await,
    }
}

/// The PKCE pair (pi's `generatePKCE`): 32 random bytes as base64url, and its SHA-256 as
/// base64url.
pub fn pkce() -> Result<(String, String), String> {
    let verifier = b64(&random::<32>()?);
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    Ok((verifier.clone(), b64(digest.as_ref())))
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub(super) fn random<const N: usize>() -> Result<[u8; N], String> {
    let mut bytes = [0u8; N];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| "no randomness for the login".to_string())?;
    Ok(bytes)
}

/// What a pasted answer holds (pi's `parseAuthorizationInput`): a redirect URL's `code` and
/// `state`, `code#state`, a query string, or a bare code.
pub fn parse_authorization_input(input: &str) -> (Option<String>, Option<String>) {
    let value = input.trim();
    if value.is_empty() {
        return (None, None);
    }
    let pick = |pairs: Vec<(String, String)>, name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    if let Ok(url) = reqwest::Url::parse(value) {
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        return (pick(pairs.clone(), "code"), pick(pairs, "state"));
    }
    if let Some((code, state)) = value.split_once('#') {
        return (Some(code.to_string()), Some(state.to_string()));
    }
    if value.contains("code=") {
        let pairs: Vec<(String, String)> =
            reqwest::Url::parse(&format!("http://x/?{}", value.trim_start_matches('?')))
                .map(|u| u.query_pairs().into_owned().collect())
                .unwrap_or_default();
        return (pick(pairs.clone(), "code"), pick(pairs, "state"));
    }
    (Some(value.to_string()), None)
}

pub(super) struct Flow<'a> {
    pub(super) config: &'a OAuthConfig,
    pub(super) client: reqwest::Client,
    pub(super) ui: Arc<dyn LoginUi>,
    /// Codes and verifiers of this login, redacted from every error.
    secrets: std::sync::Mutex<Vec<ApiKey>>,
}

impl Flow<'_> {
    fn provider(&self) -> &'static str {
        self.config.provider_id()
    }

    fn name(&self) -> &'static str {
        match self.config.kind {
            OAuthKind::Anthropic => "Anthropic",
            OAuthKind::OpenAiCodex => "OpenAI",
            OAuthKind::GitHubCopilot => "GitHub Copilot",
        }
    }

    pub(super) fn secret(&self, value: &str) {
        if let Ok(mut secrets) = self.secrets.lock() {
            secrets.push(ApiKey::new(value.to_string()));
        }
    }

    pub(super) fn fail(&self, reason: String) -> LoginError {
        let reason = match self.secrets.lock() {
            Ok(secrets) => secrets.iter().fold(reason, |text, secret| {
                crate::secret::redact(text, Some(secret))
            }),
            Err(_) => "(the reason could not be redacted)".to_string(),
        };
        LoginError {
            provider: self.provider().into(),
            reason,
        }
    }

    pub(super) async fn ask(&self, prompt: LoginPrompt) -> Result<String, LoginError> {
        self.ui
            .prompt(prompt)
            .await
            .ok_or_else(|| self.fail("Login cancelled".into()))
    }

    async fn select(&self, message: &str, options: &[(&str, &str)]) -> Result<String, LoginError> {
        let answer = self
            .ask(LoginPrompt::Select {
                message: message.into(),
                options: options
                    .iter()
                    .map(|(id, label)| (id.to_string(), label.to_string()))
                    .collect(),
            })
            .await?;
        Ok(if answer.trim().is_empty() {
            options[0].0.to_string()
        } else {
            answer.trim().to_string()
        })
    }

    /// The browser flow of Anthropic and Codex: PKCE, the callback server racing a pasted
    /// answer, then the exchange.
    async fn browser(&self) -> Result<OAuthCredential, LoginError> {
        let config = self.config;
        let anthropic = config.kind == OAuthKind::Anthropic;
        let (verifier, challenge) = pkce().map_err(|e| self.fail(e))?;
        self.secret(&verifier);
        let state = if anthropic {
            verifier.clone()
        } else {
            random::<16>()
                .map_err(|e| self.fail(e))?
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        let configured = reqwest::Url::parse(&config.redirect_uri)
            .map_err(|_| self.fail("the redirect URI is not a URL".into()))?;
        let (port, path) = (
            configured.port_or_known_default().unwrap_or(80),
            configured.path().to_string(),
        );
        let start = |port| CallbackServer::start(port, path.clone(), state.clone(), self.name());
        // Anthropic takes any loopback port; Codex's client knows 1455 only (shared with the
        // Codex CLI): without it the login goes on with the pasted redirect URL.
        let mut callback = match start(port).await {
            Ok(server) => Some(server),
            Err(_) if anthropic => start(0).await.ok(),
            Err(_) => None,
        };
        let redirect_uri = match &callback {
            Some(server) => format!("http://localhost:{}{path}", server.port),
            None => format!("http://localhost:{port}{path}"),
        };
        let mut params = vec![
            ("response_type", "code"),
            ("client_id", config.client_id.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("scope", config.scope.as_str()),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state.as_str()),
        ];
        if anthropic {
            // pi's order: code, client_id, response_type, …
            params.swap(0, 1);
            params.insert(0, ("code", "true"));
        } else {
            params.extend([
                ("id_token_add_organizations", "true"),
                ("codex_cli_simplified_flow", "true"),
                ("originator", "pi"),
            ]);
        }
        self.ui.notify(LoginEvent::AuthUrl {
            url: format!("{}?{}", config.authorize_url, form(&params)),
            instructions: if anthropic {
                "Complete login in your browser. If the browser is on another machine, paste the final redirect URL here."
            } else {
                "A browser window should open. Complete login to finish."
            }
            .into(),
        });
        let prompt = LoginPrompt::ManualCode {
            message: "Complete login in your browser, or paste the authorization code / redirect URL here:".into(),
            placeholder: redirect_uri.clone(),
        };
        let (code, pasted_state) = self.callback_or_pasted(callback.as_mut(), prompt).await?;
        drop(callback);
        if pasted_state.as_ref().is_some_and(|s| *s != state) {
            return Err(self.fail(
                if anthropic {
                    "OAuth state mismatch"
                } else {
                    "State mismatch"
                }
                .into(),
            ));
        }
        let code = code.ok_or_else(|| self.fail("Missing authorization code".into()))?;
        self.exchange(
            &code,
            pasted_state.as_deref().unwrap_or(&state),
            &verifier,
            &redirect_uri,
        )
        .await
    }

    /// The code from the callback, else from the pasted answer (with the state it carried).
    async fn callback_or_pasted(
        &self,
        callback: Option<&mut CallbackServer>,
        prompt: LoginPrompt,
    ) -> Result<(Option<String>, Option<String>), LoginError> {
        let pasted = self.ui.prompt(prompt);
        let Some(server) = callback else {
            let input = pasted
                .await
                .ok_or_else(|| self.fail("Login cancelled".into()))?;
            return Ok(parse_authorization_input(&input));
        };
        let input = tokio::select! {
            code = server.wait() => return code.map(|c| (Some(c), None)).map_err(|e| self.fail(e)),
            input = pasted => input,
        };
        match input {
            Some(input) => Ok(parse_authorization_input(&input)),
            // No paste will come: the browser still may.
            None => server
                .wait()
                .await
                .map(|c| (Some(c), None))
                .map_err(|e| self.fail(e)),
        }
    }

    /// Anthropic's copy-code login: the code Anthropic's page shows, pasted as `code#state`.
    async fn anthropic_copy_code(&self) -> Result<OAuthCredential, LoginError> {
        let config = self.config;
        let (verifier, challenge) = pkce().map_err(|e| self.fail(e))?;
        self.secret(&verifier);
        let redirect_uri = config.copy_code_redirect_uri.as_str();
        let params = [
            ("code", "true"),
            ("client_id", config.client_id.as_str()),
            ("response_type", "code"),
            ("redirect_uri", redirect_uri),
            ("scope", config.scope.as_str()),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", verifier.as_str()),
        ];
        self.ui.notify(LoginEvent::AuthUrl {
            url: format!("{}?{}", config.authorize_url, form(&params)),
            instructions: "Complete login in your browser, then copy the code Anthropic shows and paste it here.".into(),
        });
        let input = self
            .ask(LoginPrompt::ManualCode {
                message: "Paste the code Anthropic shows after you sign in:".into(),
                placeholder: "code#state".into(),
            })
            .await?;
        let (code, state) = parse_authorization_input(&input);
        if state.as_ref().is_some_and(|s| *s != verifier) {
            return Err(self.fail("OAuth state mismatch".into()));
        }
        let code = code.ok_or_else(|| self.fail("Missing authorization code".into()))?;
        self.exchange(
            &code,
            state.as_deref().unwrap_or(&verifier),
            &verifier,
            redirect_uri,
        )
        .await
    }

    /// The code exchanged at the token endpoint: JSON for Anthropic, a form for Codex.
    async fn exchange(
        &self,
        code: &str,
        state: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<OAuthCredential, LoginError> {
        self.secret(code);
        self.ui.notify(LoginEvent::Progress(
            "Exchanging authorization code for tokens...".into(),
        ));
        let config = self.config;
        let request = match config.kind {
            OAuthKind::Anthropic => self
                .client
                .post(&config.token_url)
                .header("content-type", "application/json")
                .header("accept", "application/json")
                .body(
                    json!({
                        "grant_type": "authorization_code",
                        "client_id": config.client_id,
                        "code": code,
                        "state": state,
                        "redirect_uri": redirect_uri,
                        "code_verifier": verifier,
                    })
                    .to_string(),
                ),
            _ => self
                .client
                .post(&config.token_url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form(&[
                    ("grant_type", "authorization_code"),
                    ("client_id", &config.client_id),
                    ("code", code),
                    ("code_verifier", verifier),
                    ("redirect_uri", redirect_uri),
                ])),
        };
        let body =
            send_for_json(request, &config.token_url, &|reason, _| self.fail(reason)).await?;
        credential_from(config.kind, &body, None).map_err(|reason| self.fail(reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_answers_are_read_as_pi_reads_them() {
        let some = |s: &str| Some(s.to_string());
        assert_eq!(
            parse_authorization_input("http://localhost:1455/auth/callback?code=c1&state=s1"),
            (some("c1"), some("s1"))
        );
        assert_eq!(
            parse_authorization_input(" c2#s2 "),
            (some("c2"), some("s2"))
        );
        assert_eq!(
            parse_authorization_input("code=c3&state=s3"),
            (some("c3"), some("s3"))
        );
        assert_eq!(parse_authorization_input("c4"), (some("c4"), None));
        assert_eq!(parse_authorization_input("  "), (None, None));
    }

    #[test]
    fn the_pkce_challenge_is_the_verifiers_sha256() {
        let (verifier, challenge) = pkce().unwrap_or_default();
        assert_eq!(verifier.len(), 43);
        let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
        assert_eq!(challenge, b64(digest.as_ref()));
        assert_ne!(pkce().unwrap_or_default().0, verifier);
    }
}
