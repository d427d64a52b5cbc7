//! Stored logins (`"type": "oauth"` in `auth.json`) used for requests and refreshed as pi 1.6
//! refreshes them, against a local issuer that checks what a real one checks (client id, grant
//! type, the current refresh token), issues short-lived tokens, rotates refresh tokens and
//! refuses a used one; and a local model server that takes only a currently valid token.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use oxpi_ai::collection::{AuthFile, Credential, CredentialStore, OAuthCredential};
use oxpi_ai::oauth::{refresh::refresh, OAuthConfig};
use oxpi_ai::{Context, Message, Models, StopReason, StreamOptions};
use oxpi_testkit::{Part, Recorded, Reply, TestServer};
use serde_json::{json, Value};

/// The issuer's state: which refresh tokens and access tokens are valid now.
#[derive(Default)]
struct Issuer {
    refresh_tokens: HashSet<String>,
    access_tokens: HashSet<String>,
    refreshes: usize,
    refused: usize,
    next: usize,
}

fn access_token(n: usize) -> String {
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(r#"{"https://api.openai.com/auth":{"chatgpt_account_id":"acct-42"}}"#);
    format!("eyJhbGciOiJub25lIn0.{payload}.access{n}")
}

fn form_field(request: &Recorded, name: &str) -> Option<String> {
    String::from_utf8_lossy(&request.body)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// A Codex-shaped issuer: `POST /oauth/token`, a form, tokens living `expires_in` seconds.
async fn codex_issuer(state: Arc<Mutex<Issuer>>, expires_in: u64) -> TestServer {
    TestServer::start_fn(move |request| {
        let mut issuer = state.lock().unwrap_or_else(|p| p.into_inner());
        let grant = form_field(request, "grant_type");
        let client = form_field(request, "client_id");
        let token = form_field(request, "refresh_token").unwrap_or_default();
        let checks = request.method == "POST"
            && request.path == "/oauth/token"
            && request.header("content-type") == Some("application/x-www-form-urlencoded")
            && grant.as_deref() == Some("refresh_token")
            && client.as_deref() == Some("app_EMoamEEZ73f0CkXaXp7hrann");
        if !checks || !issuer.refresh_tokens.remove(&token) {
            issuer.refused += 1;
            return Reply::json_error(400, r#"{"error":"invalid_grant"}"#);
        }
        issuer.refreshes += 1;
        issuer.next += 1;
        let (access, refresh) = (access_token(issuer.next), format!("refresh{}", issuer.next));
        issuer.access_tokens.clear();
        issuer.access_tokens.insert(access.clone());
        issuer.refresh_tokens.insert(refresh.clone());
        Reply::Respond {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: json!({"access_token": access, "refresh_token": refresh, "expires_in": expires_in, "id_token": "x"})
                .to_string()
                .into_bytes()
                .pipe_part(),
        }
    })
    .await
    .unwrap()
}

/// (refreshes made, refreshes refused) so far.
fn counts(state: &Mutex<Issuer>) -> (usize, usize) {
    let issuer = state.lock().unwrap();
    (issuer.refreshes, issuer.refused)
}

fn sse(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap_or("")
    )
}

/// The Codex backend: a reply for a valid token, 401 otherwise.
async fn codex_backend(state: Arc<Mutex<Issuer>>) -> TestServer {
    TestServer::start_fn(move |request| {
        let issuer = state.lock().unwrap_or_else(|p| p.into_inner());
        let token = request
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !issuer.access_tokens.contains(token) || request.header("chatgpt-account-id") != Some("acct-42") {
            return Reply::json_error(401, r#"{"error":{"message":"token expired"}}"#);
        }
        Reply::sse([
            sse(json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "m", "role": "assistant", "content": []}})),
            sse(json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": "ok"})),
            sse(json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": "m", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}})),
            sse(json!({"type": "response.done", "response": {"id": "r", "status": "completed", "usage": {"input_tokens": 1, "output_tokens": 1}}})),
        ])
    })
    .await
    .unwrap()
}

/// An `auth.json` with an expired Codex login between two entries written in a style of their own.
fn auth_json(
    dir: &std::path::Path,
    refresh: &str,
    access: &str,
) -> (std::path::PathBuf, String, String) {
    let path = dir.join("auth.json");
    let groq = r#"{"type":"api_key","key":"gsk-kept",  "note": [1,2]}"#;
    let other = "{\n      \"type\": \"oauth\", \"access\": \"a\", \"refresh\": \"r\", \"expires\": 1, \"odd\": true}";
    let text = format!(
        "{{\n  \"groq\": {groq},\n  \"openai-codex\": {{\"type\": \"oauth\", \"access\": \"{access}\", \"refresh\": \"{refresh}\", \"expires\": 0, \"accountId\": \"acct-42\"}},\n  \"someone-else\": {other}\n}}"
    );
    std::fs::write(&path, text).unwrap();
    // pi creates it private; a rewrite keeps the mode it has.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    (path, groq.to_string(), other.to_string())
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("oxpi-oauth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn models(path: &std::path::Path, issuer: &TestServer) -> Models {
    Models::builder()
        .credentials(AuthFile::new(path))
        .oauth(OAuthConfig::openai_codex().at_origin(issuer.base_url()))
        .build()
}

fn codex_model(backend: &TestServer) -> oxpi_ai::Model {
    let mut model = oxpi_ai::models::get_model("openai-codex", "gpt-5.6-luna").unwrap();
    model.base_url = format!("{}/backend-api", backend.base_url());
    model
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(20))
}

fn context() -> Context {
    Context::new("Be brief.").with_message(Message::user("hi"))
}

#[tokio::test]
async fn an_expired_login_is_refreshed_once_stored_and_used_and_the_rest_of_the_file_kept() {
    let state = Arc::new(Mutex::new(Issuer::default()));
    state
        .lock()
        .unwrap()
        .refresh_tokens
        .insert("refresh0".into());
    let issuer = codex_issuer(state.clone(), 3600).await;
    let backend = codex_backend(state.clone()).await;
    let dir = temp_dir("once");
    let (path, groq, other) = auth_json(&dir, "refresh0", &access_token(0));
    let models = models(&path, &issuer);
    let model = codex_model(&backend);

    for _ in 0..2 {
        let reply = models.complete(&model, &context(), options()).await;
        assert_eq!(
            (reply.stop_reason, reply.text(), reply.error_message),
            (StopReason::Stop, "ok".to_string(), None)
        );
    }
    assert_eq!(counts(&state), (1, 0));

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("\"groq\": {groq},")), "{text}");
    assert!(
        text.contains(&format!("\"someone-else\": {other}\n}}")),
        "{text}"
    );
    let stored = AuthFile::new(&path).read("openai-codex").unwrap();
    let Some(Credential::OAuth(credential)) = stored else {
        panic!("{stored:?}")
    };
    assert_eq!(
        (
            credential.access.as_str(),
            credential.refresh.as_str(),
            credential.extra.get("accountId")
        ),
        (
            access_token(1).as_str(),
            "refresh1",
            Some(&json!("acct-42"))
        )
    );
    let in_an_hour = credential.expires
        - (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as f64);
    assert!(
        (3_500_000.0..=3_600_000.0).contains(&in_an_hour),
        "{in_an_hour}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    // A token that lives less than five minutes is refreshed on every request, with the
    // rotated refresh token each time.
    // Time passes: the stored token expires.
    AuthFile::new(&path)
        .modify("openai-codex", &mut |current| match current {
            Some(Credential::OAuth(c)) => Some(Credential::OAuth(
                OAuthCredential::new(c.access.clone(), c.refresh.clone(), 0.0)
                    .with_extra(c.extra.clone()),
            )),
            _ => None,
        })
        .unwrap();
    let short = codex_issuer(state.clone(), 60).await;
    let models = self::models(&path, &short);
    for round in 2..=3 {
        let reply = models.complete(&model, &context(), options()).await;
        assert_eq!(reply.error_message, None);
        assert_eq!(counts(&state), (round, 0));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn many_stores_hitting_expiry_at_once_refresh_once_and_all_succeed() {
    const N: usize = 12;
    let state = Arc::new(Mutex::new(Issuer::default()));
    state
        .lock()
        .unwrap()
        .refresh_tokens
        .insert("refresh0".into());
    let issuer = codex_issuer(state.clone(), 3600).await;
    let backend = codex_backend(state.clone()).await;
    let dir = temp_dir("many");
    let (path, _, _) = auth_json(&dir, "refresh0", &access_token(0));
    let model = codex_model(&backend);
    // Each request has its own store over the same file, as separate processes would: only
    // pi's lock directory orders them.
    let runs = (0..N).map(|_| {
        let models = models(&path, &issuer);
        let model = model.clone();
        tokio::spawn(async move { models.complete(&model, &context(), options()).await })
    });
    let replies = futures::future::join_all(runs).await;
    for reply in replies {
        let reply = reply.unwrap();
        assert_eq!(
            (reply.stop_reason, reply.error_message),
            (StopReason::Stop, None)
        );
    }
    let issuer_state = state.lock().unwrap();
    assert_eq!((issuer_state.refreshes, issuer_state.refused), (1, 0));
    let Some(Credential::OAuth(credential)) = AuthFile::new(&path).read("openai-codex").unwrap()
    else {
        panic!("no login left")
    };
    assert!(issuer_state.refresh_tokens.contains(&credential.refresh));
    assert!(!path.with_file_name("auth.json.lock").exists());
    drop(issuer_state);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_refused_refresh_is_an_error_naming_the_provider_without_tokens() {
    let state = Arc::new(Mutex::new(Issuer::default()));
    let issuer = codex_issuer(state.clone(), 3600).await;
    let backend = codex_backend(state.clone()).await;
    let dir = temp_dir("refused");
    let (path, _, _) = auth_json(&dir, "refresh-unknown-to-the-issuer", &access_token(0));
    let reply = models(&path, &issuer)
        .complete(&codex_model(&backend), &context(), options())
        .await;
    let text = reply.error_message.clone().unwrap_or_default();
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert!(
        text.starts_with("OAuth refresh failed for openai-codex: "),
        "{text}"
    );
    assert!(
        text.contains("400") && !text.contains("refresh-unknown") && !text.contains("access0"),
        "{text}"
    );
    // The stored login is left as it was.
    let Some(Credential::OAuth(credential)) = AuthFile::new(&path).read("openai-codex").unwrap()
    else {
        panic!()
    };
    assert_eq!(credential.refresh, "refresh-unknown-to-the-issuer");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn anthropic_and_copilot_refresh_as_pi_does() {
    let seen = Arc::new(Mutex::new(Vec::<Recorded>::new()));
    let record = seen.clone();
    let issuer = TestServer::start_fn(move |request| {
        record.lock().unwrap().push(request.clone());
        let body = if request.path == "/v1/oauth/token" {
            json!({"access_token": "sk-ant-oat-new", "refresh_token": "sk-ant-ort-new", "expires_in": 3600})
        } else {
            json!({"token": "tid=1;exp=2;proxy-ep=proxy.business.githubcopilot.com", "expires_at": 2_000_000_000u64})
        };
        Reply::Respond {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes().pipe_part(),
        }
    })
    .await
    .unwrap();
    let client = oxpi_ai::providers::client::new_client().unwrap();
    let anthropic = OAuthConfig::anthropic().at_origin(issuer.base_url());
    let next = refresh(
        &anthropic,
        &client,
        &OAuthCredential::new("sk-ant-oat-old", "sk-ant-ort-old", 0.0),
    )
    .await
    .unwrap();
    assert_eq!(
        (next.access.as_str(), next.refresh.as_str()),
        ("sk-ant-oat-new", "sk-ant-ort-new")
    );
    let copilot = OAuthConfig::github_copilot().at_origin(issuer.base_url());
    let mut extra = serde_json::Map::new();
    extra.insert("enterpriseUrl".into(), json!("corp.ghe.com"));
    let next = refresh(
        &copilot,
        &client,
        &OAuthCredential::new("old", "gho_github", 0.0).with_extra(extra.clone()),
    )
    .await
    .unwrap();
    assert_eq!(
        (
            next.access.as_str(),
            next.refresh.as_str(),
            next.expires,
            next.extra
        ),
        (
            "tid=1;exp=2;proxy-ep=proxy.business.githubcopilot.com",
            "gho_github",
            2_000_000_000_000.0 - 300_000.0,
            extra
        )
    );
    let seen = seen.lock().unwrap();
    assert_eq!(
        (
            seen[0].method.as_str(),
            seen[0].path.as_str(),
            seen[0].json()
        ),
        (
            "POST",
            "/v1/oauth/token",
            json!({"grant_type": "refresh_token", "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e", "refresh_token": "sk-ant-ort-old"})
        )
    );
    assert_eq!(
        (
            seen[1].method.as_str(),
            seen[1].path.as_str(),
            seen[1].header("authorization"),
            seen[1].header("editor-version")
        ),
        (
            "GET",
            "/copilot_internal/v2/token",
            Some("Bearer gho_github"),
            Some("vscode/1.107.0")
        )
    );
}

/// A body as one part.
trait PipePart {
    fn pipe_part(self) -> Vec<Part>;
}

impl PipePart for Vec<u8> {
    fn pipe_part(self) -> Vec<Part> {
        vec![Part::Bytes(self)]
    }
}

#[tokio::test]
async fn models_refresh_refreshes_now_even_a_token_that_is_still_valid() {
    let state = Arc::new(Mutex::new(Issuer::default()));
    state
        .lock()
        .unwrap()
        .refresh_tokens
        .insert("refresh0".into());
    let issuer = codex_issuer(state.clone(), 3600).await;
    let dir = temp_dir("refresh-now");
    let (path, groq, _) = auth_json(&dir, "refresh0", &access_token(0));
    let models = models(&path, &issuer);
    let stored_access = || match AuthFile::new(&path).read("openai-codex").unwrap() {
        Some(Credential::OAuth(c)) => c.access,
        other => panic!("{other:?}"),
    };
    models.refresh("openai-codex").await.unwrap();
    assert_eq!((counts(&state), stored_access()), ((1, 0), access_token(1)));
    // Valid for an hour now, and refreshed all the same.
    models.refresh("openai-codex").await.unwrap();
    assert_eq!((counts(&state), stored_access()), ((2, 0), access_token(2)));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("\"groq\": {groq},")), "{text}");
    let err = models.refresh("groq").await.unwrap_err().to_string();
    assert!(err.contains("groq"), "{err}");
}

#[tokio::test]
async fn a_refresh_answered_with_a_redirect_elsewhere_sends_the_refresh_token_nowhere() {
    let elsewhere = TestServer::start_fn(|_| Reply::json_error(400, "{}"))
        .await
        .unwrap();
    let target = format!("{}/oauth/token", elsewhere.base_url());
    let issuer = TestServer::start_fn(move |_| Reply::Respond {
        status: 307,
        headers: vec![("location".into(), target.clone())],
        body: Vec::new(),
    })
    .await
    .unwrap();
    let dir = temp_dir("redirect");
    let (path, _, _) = auth_json(&dir, "refresh-secret-0", &access_token(0));
    let models = models(&path, &issuer);
    let err = models
        .refresh("openai-codex")
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(issuer.requests().len(), 1, "the issuer was asked");
    assert!(
        elsewhere.requests().is_empty(),
        "the redirect was not followed to another origin"
    );
    assert!(!err.contains("refresh-secret-0"), "{err}");
    // Nothing was stored in place of the login.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("refresh-secret-0"), "{text}");
}
