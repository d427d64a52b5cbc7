//! A pi user's `auth.json` with a subscription login used by `oxpi` (the process): the
//! stored Codex login's token sent to the Codex backend (a fake taking only the tokens its
//! fake issuer gave out), and `oxpi logout` removing the login with the other entries kept
//! byte for byte.

#![allow(clippy::unwrap_used)]

mod common;

use oxpi_ai::collection::OAuthCredential;
use oxpi_ai::oauth::OAuthConfig;
use oxpi_testkit::oauth_issuer::{FakeIssuer, Flavor};

const OTHER: &str = "{\"type\":\"api_key\", \"key\": \"gsk-kept\"}";

/// A Codex login as pi stores it, made at the fake issuer (valid for an hour).
async fn codex_login(issuer: &FakeIssuer) -> OAuthCredential {
    issuer.add_refresh_token("refresh-from-pi");
    let config = OAuthConfig::openai_codex().at_origin(issuer.server.base_url());
    let client = oxpi_ai::providers::client::new_client().unwrap();
    let stale = OAuthCredential::new("old", "refresh-from-pi", 0.0);
    oxpi_ai::oauth::refresh::refresh(&config, &client, &stale)
        .await
        .unwrap()
}

fn write_auth(home: &std::path::Path, credential: &OAuthCredential) -> std::path::PathBuf {
    let dir = home.join(".pi/agent");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("auth.json");
    let login = serde_json::json!({
        "type": "oauth",
        "access": credential.access,
        "refresh": credential.refresh,
        "expires": credential.expires,
        "accountId": credential.extra.get("accountId"),
    });
    std::fs::write(
        &path,
        format!("{{\n  \"groq\": {OTHER},\n  \"openai-codex\": {login},\n  \"zai\": {OTHER}\n}}"),
    )
    .unwrap();
    path
}

#[tokio::test]
async fn a_stored_codex_login_is_used_for_requests() {
    let issuer = FakeIssuer::start(Flavor::Codex).await.unwrap();
    let backend = issuer.model_server().await.unwrap();
    let dirs = common::dirs();
    let credential = codex_login(&issuer).await;
    write_auth(&dirs.home, &credential);
    // pi's models.json moves the built-in provider to the fake backend.
    std::fs::write(
        dirs.home.join(".pi/agent/models.json"),
        serde_json::json!({"providers": {"openai-codex": {"baseUrl": format!("{}/backend-api", backend.base_url())}}})
            .to_string(),
    )
    .unwrap();
    let mut command = common::oxpi(&dirs);
    command.args([
        "-p",
        "--no-session",
        "--model",
        "openai-codex/gpt-5.6-luna",
        "hi",
    ]);
    let out = common::run(command).await;
    assert_eq!(
        (out.code, out.stdout.trim()),
        (Some(0), "ok"),
        "{}",
        out.stderr
    );
    let requests = backend.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {}", credential.access).as_str())
    );
    assert_eq!(requests[0].header("chatgpt-account-id"), Some("acct-42"));
    assert!(!out.stderr.contains(&credential.access));
}

#[tokio::test]
async fn logout_removes_the_login_and_keeps_the_other_entries_byte_for_byte() {
    let issuer = FakeIssuer::start(Flavor::Codex).await.unwrap();
    let dirs = common::dirs();
    let path = write_auth(&dirs.home, &codex_login(&issuer).await);
    let mut command = common::oxpi(&dirs);
    command.args(["logout", "openai-codex"]);
    let out = common::run(command).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("Logged out of openai-codex"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{{\n  \"groq\": {OTHER},\n  \"zai\": {OTHER}\n}}")
    );
    let mut again = common::oxpi(&dirs);
    again.args(["auth", "logout", "openai-codex"]);
    let out = common::run(again).await;
    assert_eq!(out.code, Some(0));
    assert!(out
        .stderr
        .contains("No credentials stored for openai-codex"));
    let mut unknown = common::oxpi(&dirs);
    unknown.args(["login", "no-such-provider"]);
    let out = common::run(unknown).await;
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .contains("oxpi has no login for \"no-such-provider\""),
        "{}",
        out.stderr
    );
}
