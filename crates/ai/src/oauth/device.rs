//! GitHub Copilot's login (pi's `loginGitHubCopilot`): an optional GitHub Enterprise domain,
//! GitHub's device code shown to the user and polled until approved, then the GitHub token
//! exchanged for a Copilot token. pi then lists and enables the account's models; oxpi does not
//! (see docs/differences-from-pi.md).

use serde_json::Value;

use super::login::{Flow, LoginError, LoginEvent, LoginPrompt};
use super::refresh::{form, send_for_json};
use super::OAuthConfig;
use crate::collection::OAuthCredential;

impl Flow<'_> {
    /// GitHub's device flow, then the GitHub token exchanged for a Copilot token.
    pub(super) async fn copilot(&self) -> Result<OAuthCredential, LoginError> {
        let input = self
            .ask(LoginPrompt::Text {
                message: "GitHub Enterprise URL/domain (blank for github.com)".into(),
                placeholder: "company.ghe.com".into(),
            })
            .await?;
        let enterprise = super::normalize_domain(&input);
        if !input.trim().is_empty() && enterprise.is_none() {
            return Err(self.fail("Invalid GitHub Enterprise URL/domain".into()));
        }
        let config = match &enterprise {
            Some(domain) => OAuthConfig::github_enterprise(domain)
                .ok_or_else(|| self.fail("Invalid GitHub Enterprise URL/domain".into()))?,
            None => self.config.clone(),
        };
        let headers = |request: reqwest::RequestBuilder| {
            request
                .header("accept", "application/json")
                .header("content-type", "application/x-www-form-urlencoded")
                .header("user-agent", "GitHubCopilotChat/0.35.0")
        };
        let device = send_for_json(
            headers(self.client.post(&config.authorize_url)).body(form(&[
                ("client_id", &config.client_id),
                ("scope", &config.scope),
            ])),
            &config.authorize_url,
            &|reason, _| self.fail(reason),
        )
        .await?;
        let text = |name: &str| device.get(name).and_then(Value::as_str).map(str::to_string);
        let (Some(device_code), Some(user_code), Some(verification_uri), Some(expires_in)) = (
            text("device_code"),
            text("user_code"),
            text("verification_uri"),
            device.get("expires_in").and_then(Value::as_f64),
        ) else {
            return Err(self.fail("Invalid device code response fields".into()));
        };
        self.secret(&device_code);
        let trusted = reqwest::Url::parse(&verification_uri)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                self.fail("Untrusted verification_uri in device code response".into())
            })?;
        self.ui.notify(LoginEvent::DeviceCode {
            user_code,
            verification_uri: trusted.to_string(),
        });
        let interval = device
            .get("interval")
            .and_then(Value::as_f64)
            .unwrap_or(5.0);
        let github_token = self
            .poll_device(&config, &device_code, interval, expires_in)
            .await?;
        self.secret(&github_token);
        let mut previous = OAuthCredential::new(String::new(), github_token, 0.0);
        if let Some(domain) = enterprise {
            let mut extra = serde_json::Map::new();
            extra.insert("enterpriseUrl".into(), Value::String(domain));
            previous = previous.with_extra(extra);
        }
        super::refresh::refresh(&config, &self.client, &previous)
            .await
            .map_err(|e| self.fail(e.reason))
    }

    /// Polls GitHub's token endpoint (pi's `pollOAuthDeviceCodeFlow`: a wait before the first
    /// poll, at least a second between polls, `slow_down` taking the server's interval or five
    /// seconds more) until the user approved, refused, or the code expired.
    async fn poll_device(
        &self,
        config: &OAuthConfig,
        device_code: &str,
        interval: f64,
        expires_in: f64,
    ) -> Result<String, LoginError> {
        let deadline = std::time::Instant::now()
            + std::time::Duration::from_secs_f64(expires_in.clamp(0.0, 3600.0));
        let mut wait = interval.max(1.0);
        let mut slowed = false;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(self.fail(if slowed {
                    "Device flow timed out after one or more slow_down responses".into()
                } else {
                    "Device flow timed out".into()
                }));
            }
            tokio::time::sleep(std::time::Duration::from_secs_f64(wait).min(left)).await;
            let answer = send_for_json(
                self.client
                    .post(&config.token_url)
                    .header("accept", "application/json")
                    .header("content-type", "application/x-www-form-urlencoded")
                    .header("user-agent", "GitHubCopilotChat/0.35.0")
                    .body(form(&[
                        ("client_id", &config.client_id),
                        ("device_code", device_code),
                        ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                    ])),
                &config.token_url,
                &|reason, _| self.fail(reason),
            )
            .await?;
            if let Some(token) = answer.get("access_token").and_then(Value::as_str) {
                return Ok(token.to_string());
            }
            match answer.get("error").and_then(Value::as_str) {
                Some("authorization_pending") => {}
                Some("slow_down") => {
                    slowed = true;
                    wait = match answer.get("interval").and_then(Value::as_f64) {
                        Some(seconds) if seconds > 0.0 => seconds.max(1.0),
                        _ => wait + 5.0,
                    };
                }
                Some(error) => {
                    let description = answer
                        .get("error_description")
                        .and_then(Value::as_str)
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default();
                    return Err(self.fail(format!("Device flow failed: {error}{description}")));
                }
                None => return Err(self.fail("Invalid device token response".into())),
            }
        }
    }
}
