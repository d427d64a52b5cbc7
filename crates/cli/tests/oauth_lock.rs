//! Twenty processes hitting a Codex login's expiry together, sharing pi's `auth.json.lock`:
//! oxpi processes (this test binary run again as [`child_process`], refreshing and requesting
//! through oxpi-ai's `Models` on the `auth.json`, as the `oxpi` command does, but pointed at
//! the fake issuer) mixed with pi 1.6 processes under Node (pi's own
//! `refreshStoredOAuthCredential` on its `AuthStorage`, `fetch` redirected to the fake issuer,
//! `tests/common/pi_oauth_refresh.mjs`); without Node, oxpi processes only. The issuer sees one
//! refresh and refuses nothing, every process's request succeeds, and one valid login is left
//! in `auth.json` (its refresh token the live one), with no lock left behind.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use oxpi_ai::collection::{AuthFile, Credential, CredentialStore};
use oxpi_ai::oauth::OAuthConfig;
use oxpi_ai::{Context, Message, Models, StopReason, StreamOptions};
use oxpi_testkit::oauth_issuer::{FakeIssuer, Flavor};
use serde_json::{json, Value};

/// Set only by [`twenty_processes_hitting_expiry_together_refresh_once`] for its children:
/// `{"auth": path, "issuer": origin, "backend": url, "go": path}`.
const CHILD_SPEC: &str = "OXPI_TEST_OAUTH_LOCK_CHILD";

const PROCESSES: usize = 20;

/// The oxpi side of the test, in a process of its own: one request through the stored login
/// (refreshed under the lock when it expires). Outside the test's children it has nothing to
/// do.
#[tokio::test]
async fn child_process() {
    let Ok(spec) = std::env::var(CHILD_SPEC) else {
        return;
    };
    let spec: Value = serde_json::from_str(&spec).unwrap();
    // Every process starts its request when all are ready.
    while !Path::new(spec["go"].as_str().unwrap()).exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let models = Models::builder()
        .credentials(AuthFile::new(spec["auth"].as_str().unwrap()))
        .oauth(OAuthConfig::openai_codex().at_origin(spec["issuer"].as_str().unwrap()))
        .build();
    let mut model = oxpi_ai::models::get_model("openai-codex", "gpt-5.6-luna").unwrap();
    model.base_url = format!("{}/backend-api", spec["backend"].as_str().unwrap());
    let reply = models
        .complete(
            &model,
            &Context::new("Be brief.").with_message(Message::user("hi")),
            StreamOptions::default()
                .with_max_retries(0)
                .with_timeout(Duration::from_secs(60)),
        )
        .await;
    assert_eq!(
        (reply.stop_reason, reply.error_message),
        (StopReason::Stop, None)
    );
    println!("REQUEST OK");
}

fn write_expired_login(path: &Path) {
    std::fs::write(
        path,
        json!({
            "groq": {"type": "api_key", "key": "gsk-kept"},
            "openai-codex": {"type": "oauth", "access": "expired", "refresh": "refresh-0", "expires": 0, "accountId": "acct-42"},
        })
        .to_string(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_processes_hitting_expiry_together_refresh_once() {
    let issuer = FakeIssuer::start(Flavor::Codex).await.unwrap();
    issuer.add_refresh_token("refresh-0");
    // A slow issuer: every process finds the token expired while the first refresh runs.
    issuer.state().refresh_delay = Some(Duration::from_secs(1));
    let backend = issuer.model_server().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    write_expired_login(&path);
    let pi = common::pi::pi("twenty_processes_hitting_expiry_together_refresh_once");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/pi_oauth_refresh.mjs");
    let go = dir.path().join("go");
    let spec = json!({"auth": path, "issuer": issuer.server.base_url(), "backend": backend.base_url(), "go": go});
    let mut children = Vec::new();
    let mut pis = 0;
    for i in 0..PROCESSES {
        let mut command = match &pi {
            Some(prefix) if i % 2 == 0 => {
                pis += 1;
                let mut node = tokio::process::Command::new(common::pi::node(prefix));
                node.arg(&script)
                    .arg(prefix)
                    .arg(&path)
                    .arg(issuer.server.base_url())
                    .arg(backend.base_url())
                    .arg(&go);
                node
            }
            _ => {
                let mut me = tokio::process::Command::new(std::env::current_exe().unwrap());
                me.args([
                    "--exact",
                    "child_process",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_SPEC, spec.to_string());
                me
            }
        };
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        children.push(command.spawn().unwrap());
    }
    // Let every process load before the start (Node takes longest), then start them at once.
    tokio::time::sleep(Duration::from_secs(2)).await;
    std::fs::write(&go, b"").unwrap();
    let outputs = futures::future::join_all(children.into_iter().map(|child| async move {
        tokio::time::timeout(Duration::from_secs(180), child.wait_with_output())
            .await
            .expect("the process finished")
            .unwrap()
    }))
    .await;
    for (i, output) in outputs.iter().enumerate() {
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("REQUEST OK"),
            "process {i}: {}\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let state = issuer.state();
    assert_eq!(
        (state.refreshes, state.refused.clone()),
        (1, Vec::<String>::new()),
        "with {pis} pi processes"
    );
    drop(state);
    assert_eq!(backend.requests().len(), PROCESSES);
    let Some(Credential::OAuth(login)) = AuthFile::new(&path).read("openai-codex").unwrap() else {
        panic!("no login left in {}", path.display())
    };
    assert!(issuer.refresh_token_valid(&login.refresh));
    assert!(issuer.accepts(&login.access));
    assert_eq!(login.extra.get("accountId"), Some(&json!("acct-42")));
    assert_eq!(
        AuthFile::new(&path).read("groq").unwrap(),
        Some(Credential::api_key("gsk-kept"))
    );
    assert!(!dir.path().join("auth.json.lock").exists());
    eprintln!("{PROCESSES} processes, {pis} of them pi: one refresh");
}
