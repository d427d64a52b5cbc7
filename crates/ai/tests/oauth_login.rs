//! pi 1.6's logins against local fake issuers (`oxpi_testkit::oauth_issuer`) that check what a
//! real one checks (client id, scopes, redirect URI, state, the PKCE verifier against its S256
//! challenge, one use per code, rotated refresh tokens), then the whole path: login → request
//! → expiry → refresh → request, and a 401 → refresh → one retry, for Anthropic (browser
//! callback and copy-code), OpenAI Codex (browser callback and pasted redirect URL) and GitHub
//! Copilot (device code).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use oxpi_ai::collection::{AuthFile, Credential, CredentialStore, OAuthCredential};
use oxpi_ai::oauth::login::{LoginEvent, LoginPrompt, LoginUi};
use oxpi_ai::oauth::OAuthConfig;
use oxpi_ai::{Context, Message, Models, StopReason, StreamOptions, Tool};
use oxpi_testkit::oauth_issuer::{FakeIssuer, Flavor};
use oxpi_testkit::TestServer;
use serde_json::json;

/// How the scripted user answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The browser reaches the callback server; nothing is pasted.
    Callback,
    /// The browser cannot reach back: the user pastes what the issuer showed.
    Paste,
}

/// A user with a browser: opens the authorization URL at the fake issuer, then lets the
/// browser follow the redirect to the callback server, or pastes it.
struct User {
    mode: Mode,
    method: &'static str,
    pasted: Mutex<Option<tokio::sync::oneshot::Receiver<String>>>,
    paste: Mutex<Option<tokio::sync::oneshot::Sender<String>>>,
    events: Mutex<Vec<LoginEvent>>,
}

impl User {
    fn new(mode: Mode, method: &'static str) -> Arc<Self> {
        let (paste, pasted) = tokio::sync::oneshot::channel();
        Arc::new(Self {
            mode,
            method,
            pasted: Mutex::new(Some(pasted)),
            paste: Mutex::new(Some(paste)),
            events: Mutex::new(Vec::new()),
        })
    }
}

impl LoginUi for User {
    fn notify(&self, event: LoginEvent) {
        if let LoginEvent::AuthUrl { url, .. } = &event {
            let (url, mode) = (url.clone(), self.mode);
            let paste = self.paste.lock().unwrap().take();
            tokio::spawn(async move {
                let landed = FakeIssuer::authorize(&url).await.unwrap();
                match mode {
                    Mode::Paste => {
                        let _ = paste.unwrap().send(landed);
                    }
                    Mode::Callback => {
                        let page = reqwest::get(&landed).await.unwrap();
                        assert_eq!(page.status().as_u16(), 200, "{landed}");
                    }
                }
            });
        }
        self.events.lock().unwrap().push(event);
    }

    fn prompt(&self, prompt: LoginPrompt) -> BoxFuture<'static, Option<String>> {
        match prompt {
            LoginPrompt::Select { .. } => futures::future::ready(Some(self.method.into())).boxed(),
            LoginPrompt::Text { .. } => futures::future::ready(Some(String::new())).boxed(),
            LoginPrompt::ManualCode { .. } => match self.pasted.lock().unwrap().take() {
                Some(pasted) if self.mode == Mode::Paste => {
                    async move { pasted.await.ok() }.boxed()
                }
                _ => futures::future::pending().boxed(),
            },
            _ => futures::future::ready(None).boxed(),
        }
    }
}

const OTHER: &str = "{\"type\":\"api_key\",  \"key\": \"gsk-kept\", \"note\": [1, 2]}";

fn temp_auth(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("oxpi-login-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("auth.json");
    std::fs::write(&path, format!("{{\n  \"groq\": {OTHER}\n}}")).unwrap();
    // pi creates it private (the mode applies on creation only, in pi and in oxpi).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    (dir, path)
}

fn config(flavor: Flavor, issuer: &FakeIssuer, backend: &TestServer) -> OAuthConfig {
    let origin = issuer.server.base_url();
    match flavor {
        Flavor::Anthropic => OAuthConfig::anthropic()
            .at_origin(origin)
            .with_redirect_uri("http://localhost:0/callback"),
        Flavor::Codex => OAuthConfig::openai_codex()
            .at_origin(origin)
            .with_redirect_uri("http://localhost:0/auth/callback"),
        Flavor::Copilot => OAuthConfig::github_copilot()
            .at_origin(origin)
            .with_api_base_url(backend.base_url()),
    }
}

fn model(flavor: Flavor, backend: &TestServer) -> oxpi_ai::Model {
    let (provider, id) = match flavor {
        Flavor::Anthropic => ("anthropic", "claude-sonnet-4-5"),
        Flavor::Codex => ("openai-codex", "gpt-5.6-luna"),
        Flavor::Copilot => ("github-copilot", "gemini-4-neon"),
    };
    let mut model = oxpi_ai::models::get_model(provider, id).unwrap();
    model.base_url = match flavor {
        Flavor::Codex => format!("{}/backend-api", backend.base_url()),
        _ => backend.base_url().to_string(),
    };
    model
}

fn stored(path: &std::path::Path, provider: &str) -> OAuthCredential {
    match AuthFile::new(path).read(provider).unwrap() {
        Some(Credential::OAuth(credential)) => credential,
        other => panic!("{other:?}"),
    }
}

/// Time passes: the issuer's tokens expire, and the stored expiry says so too.
fn expire(issuer: &FakeIssuer, path: &std::path::Path, provider: &str) {
    issuer.expire_access_tokens();
    AuthFile::new(path)
        .modify(provider, &mut |current| match current {
            Some(Credential::OAuth(c)) => Some(Credential::OAuth(
                OAuthCredential::new(c.access.clone(), c.refresh.clone(), 0.0)
                    .with_extra(c.extra.clone()),
            )),
            _ => None,
        })
        .unwrap();
}

async fn ask(models: &Models, model: &oxpi_ai::Model) -> oxpi_ai::AssistantMessage {
    let context = Context::new("Be brief.")
        .with_message(Message::user("hi"))
        .with_tool(Tool::new(
            "read",
            "Reads a file.",
            json!({"type": "object"}),
        ));
    let options = StreamOptions::default()
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(30));
    models.complete(model, &context, options).await
}

/// Login, request, expiry, refresh, request; a server-side expiry (401), refresh, retry.
async fn whole_path(flavor: Flavor, provider: &str, mode: Mode, method: &'static str) {
    let issuer = FakeIssuer::start(flavor).await.unwrap();
    let backend = issuer.model_server().await.unwrap();
    let paste = if mode == Mode::Paste {
        "paste"
    } else {
        "callback"
    };
    let (dir, path) = temp_auth(&format!("{provider}-{method}-{paste}"));
    let models = Models::builder()
        .credentials(AuthFile::new(&path))
        .oauth(config(flavor, &issuer, &backend))
        .build();
    let user = User::new(mode, method);
    models.login(provider, user.clone()).await.unwrap();
    let first = stored(&path, provider);
    assert!(issuer.accepts(&first.access), "{provider}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("\"groq\": {OTHER},")), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let model = model(flavor, &backend);
    for round in 0..3 {
        match round {
            1 => expire(&issuer, &path, provider),
            2 => issuer.expire_access_tokens(), // the server refuses a token still stored as valid
            _ => {}
        }
        let reply = ask(&models, &model).await;
        assert_eq!(
            (reply.stop_reason, reply.text(), reply.error_message),
            (StopReason::Stop, "ok".to_string(), None),
            "{provider} round {round}"
        );
        assert_eq!(
            issuer.state().refreshes,
            round + usize::from(flavor == Flavor::Copilot)
        );
    }
    let last = stored(&path, provider);
    assert!(issuer.accepts(&last.access));
    let refused = issuer.state().refused.clone();
    assert_eq!(refused, Vec::<String>::new(), "{provider}");
    if flavor == Flavor::Copilot {
        assert_eq!(last.refresh, first.refresh, "the GitHub token is kept");
    } else {
        assert!(!issuer.refresh_token_valid(&first.refresh), "rotated");
        assert!(issuer.refresh_token_valid(&last.refresh));
    }
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains(&format!("\"groq\": {OTHER},")));
    // 3 successful requests, plus the one refused with 401 before its retry.
    let requests = backend.requests();
    assert_eq!(requests.len(), 4, "{provider}");
    if flavor == Flavor::Anthropic {
        let sent = &requests[0];
        assert_eq!(sent.header("x-api-key"), None);
        assert_eq!(sent.header("user-agent"), Some("claude-cli/2.1.322"));
        assert_eq!(sent.header("x-app"), Some("cli"));
        assert!(sent
            .header("anthropic-beta")
            .unwrap_or_default()
            .starts_with("claude-code-20250219,oauth-2025-04-20"));
        let body = sent.json();
        assert_eq!(
            body["system"][0]["text"],
            "You are Claude Code, Anthropic's official CLI for Claude."
        );
        assert_eq!(body["system"][1]["text"], "Be brief.");
        assert_eq!(body["tools"][0]["name"], "Read");
    }
    let events = user.events.lock().unwrap().clone();
    let shown = events.iter().any(|e| {
        matches!(
            e,
            LoginEvent::AuthUrl { .. } | LoginEvent::DeviceCode { .. }
        )
    });
    assert!(shown);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn anthropic_browser_login_then_requests_and_refreshes() {
    whole_path(Flavor::Anthropic, "anthropic", Mode::Callback, "browser").await;
}

#[tokio::test]
async fn anthropic_copy_code_login_then_requests_and_refreshes() {
    whole_path(Flavor::Anthropic, "anthropic", Mode::Paste, "copy_code").await;
}

#[tokio::test]
async fn codex_browser_login_then_requests_and_refreshes() {
    whole_path(Flavor::Codex, "openai-codex", Mode::Callback, "browser").await;
}

#[tokio::test]
async fn codex_pasted_redirect_login_then_requests_and_refreshes() {
    whole_path(Flavor::Codex, "openai-codex", Mode::Paste, "browser").await;
}

#[tokio::test]
async fn copilot_device_login_then_requests_and_refreshes() {
    whole_path(Flavor::Copilot, "github-copilot", Mode::Callback, "").await;
}

#[tokio::test]
async fn the_fake_refuses_a_reused_code_a_wrong_verifier_and_a_wrong_redirect() {
    let issuer = FakeIssuer::start(Flavor::Codex).await.unwrap();
    let (verifier, challenge) = oxpi_ai::oauth::login::pkce().unwrap();
    let authorize = |redirect: &str, challenge: &str| {
        format!(
            "{}/oauth/authorize?response_type=code&client_id=app_EMoamEEZ73f0CkXaXp7hrann&redirect_uri={}&scope=openid+profile+email+offline_access&code_challenge={challenge}&code_challenge_method=S256&state=s1&codex_cli_simplified_flow=true",
            issuer.server.base_url(),
            redirect.replace(':', "%3A").replace('/', "%2F")
        )
    };
    let redirect = "http://localhost:1455/auth/callback";
    assert!(
        FakeIssuer::authorize(&authorize("https://evil.example/cb", &challenge))
            .await
            .is_err()
    );
    let landed = FakeIssuer::authorize(&authorize(redirect, &challenge))
        .await
        .unwrap();
    let (code, state) = oxpi_ai::oauth::login::parse_authorization_input(&landed);
    assert_eq!(state.as_deref(), Some("s1"));
    let code = code.unwrap();
    let client = reqwest::Client::new();
    let exchange = |verifier: String, redirect: &'static str| {
        client
            .post(format!("{}/oauth/token", issuer.server.base_url()))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "grant_type=authorization_code&client_id=app_EMoamEEZ73f0CkXaXp7hrann&code={code}&code_verifier={verifier}&redirect_uri={}",
                redirect.replace(':', "%3A").replace('/', "%2F")
            ))
            .send()
    };
    let wrong = exchange("x".repeat(43), redirect).await.unwrap();
    assert_eq!(wrong.status().as_u16(), 400);
    // The code was spent by that attempt, as a real issuer does: the right verifier now fails
    // too.
    let reused = exchange(verifier.clone(), redirect).await.unwrap();
    assert_eq!(reused.status().as_u16(), 400);
    let refused = issuer.state().refused.clone();
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(refused[0].contains("redirect_uri"), "{refused:?}");
    assert!(refused[1].contains("code_verifier"), "{refused:?}");
    assert!(refused[2].contains("already used"), "{refused:?}");
    assert_eq!(issuer.state().exchanges, 0);
}

#[tokio::test]
async fn a_pasted_redirect_with_another_state_is_refused_without_secrets_in_the_error() {
    struct Forged;
    impl LoginUi for Forged {
        fn notify(&self, _: LoginEvent) {}
        fn prompt(&self, prompt: LoginPrompt) -> BoxFuture<'static, Option<String>> {
            let answer = match prompt {
                LoginPrompt::ManualCode { .. } => {
                    "http://localhost:1455/auth/callback?code=stolen-code&state=forged"
                }
                _ => "browser",
            };
            futures::future::ready(Some(answer.to_string())).boxed()
        }
    }
    let issuer = FakeIssuer::start(Flavor::Codex).await.unwrap();
    let config = OAuthConfig::openai_codex()
        .at_origin(issuer.server.base_url())
        .with_redirect_uri("http://localhost:0/auth/callback");
    let error = oxpi_ai::oauth::login::login(&config, Arc::new(Forged))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(error, "OAuth login failed for openai-codex: State mismatch");
    let (dir, path) = temp_auth("forged");
    let models = Models::builder()
        .credentials(AuthFile::new(&path))
        .oauth(config)
        .build();
    let error = models
        .login("openai-codex", Arc::new(Forged))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(error, "login to openai-codex failed: State mismatch");
    assert_eq!(AuthFile::new(&path).read("openai-codex").unwrap(), None);
    assert_eq!(issuer.state().exchanges, 0);
    let _ = std::fs::remove_dir_all(dir);
}

/// What an issuer saw, without the values that are random per login (codes, verifiers,
/// challenges, states): method, path, content type, and each query or body field with its value
/// when it is one of the fixed ones (client id, grant type, scopes, redirect URI with its port
/// masked, flags).
fn shape(requests: &[oxpi_testkit::Recorded]) -> Vec<String> {
    const FIXED: [&str; 9] = [
        "client_id",
        "grant_type",
        "response_type",
        "scope",
        "code_challenge_method",
        "redirect_uri",
        "id_token_add_organizations",
        "codex_cli_simplified_flow",
        "originator",
    ];
    let port = regex::Regex::new(r"localhost:\d+").unwrap();
    requests
        .iter()
        .map(|r| {
            let (path, query) = r.path.split_once('?').unwrap_or((r.path.as_str(), ""));
            let body = String::from_utf8_lossy(&r.body).into_owned();
            let fields: Vec<(String, String)> =
                match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&body) {
                    Ok(map) => map
                        .into_iter()
                        .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
                        .collect(),
                    Err(_) => reqwest::Url::parse(&format!(
                        "http://x/?{query}{}{body}",
                        if body.is_empty() { "" } else { "&" }
                    ))
                    .unwrap()
                    .query_pairs()
                    .into_owned()
                    .collect(),
                };
            let fields: Vec<String> = fields
                .into_iter()
                .map(|(k, v)| {
                    let v = port.replace_all(&v, "localhost:PORT");
                    if FIXED.contains(&k.as_str()) || v == "true" {
                        format!("{k}={v}")
                    } else {
                        k
                    }
                })
                .collect();
            format!(
                "{} {path} {:?} {}",
                r.method,
                r.header("content-type"),
                fields.join("&")
            )
        })
        .collect()
}

/// pi's own login functions (pi-ai 1.6 under Node, `fetch` redirected to a fake issuer) and
/// oxpi's make the same requests to the issuer and store the same fields.
#[tokio::test]
async fn pi_and_oxpi_logins_send_the_issuer_the_same_requests() {
    let Some(dir) = tokio::task::spawn_blocking(oxpi_testkit::pi::pi16)
        .await
        .unwrap()
        .unwrap()
    else {
        eprintln!("SKIP: no Node to run pi's logins");
        return;
    };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/node/pi16/oauth_login.mjs");
    for (flavor, provider, method) in [
        (Flavor::Anthropic, "anthropic", "copy_code"),
        (Flavor::Anthropic, "anthropic", "browser"),
        (Flavor::Codex, "openai-codex", "browser"),
        (Flavor::Copilot, "github-copilot", ""),
    ] {
        let pi_issuer = FakeIssuer::start(flavor).await.unwrap();
        let mut node = std::process::Command::new("node");
        node.arg(&script)
            .arg(&dir)
            .arg(provider)
            .arg(pi_issuer.server.base_url())
            .arg(method);
        let output = tokio::task::spawn_blocking(move || node.output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            output.status.success(),
            "{provider} {method}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut pi_fields: Vec<String> = serde_json::from_slice(&output.stdout).unwrap();
        let mut pi_requests = pi_issuer.server.requests();
        if flavor == Flavor::Copilot {
            // pi also lists the account's models after the login; oxpi does not (documented).
            pi_fields.retain(|f| f != "availableModelIds");
            pi_requests.retain(|r| r.path != "/models");
        }

        let ox_issuer = FakeIssuer::start(flavor).await.unwrap();
        let (dir, path) = temp_auth(&format!("oracle-{provider}-{method}"));
        let config = match flavor {
            Flavor::Anthropic => OAuthConfig::anthropic(),
            Flavor::Codex => OAuthConfig::openai_codex(),
            Flavor::Copilot => OAuthConfig::github_copilot(),
        }
        .at_origin(ox_issuer.server.base_url());
        let models = Models::builder()
            .credentials(AuthFile::new(&path))
            .oauth(config)
            .build();
        models
            .login(provider, User::new(Mode::Paste, method))
            .await
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let stored: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut ox_fields: Vec<String> = stored[provider]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        ox_fields.sort();
        assert_eq!(ox_fields, pi_fields, "{provider} {method}");
        assert_eq!(
            shape(&ox_issuer.server.requests()),
            shape(&pi_requests),
            "{provider} {method}"
        );
        let exchanges = usize::from(flavor != Flavor::Copilot);
        assert_eq!(ox_issuer.state().exchanges, exchanges);
        assert_eq!(pi_issuer.state().exchanges, exchanges);
        let _ = std::fs::remove_dir_all(dir);
    }
}
