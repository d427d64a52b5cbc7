//! Human in the loop: a call that needs approval waits on a Restate awakeable, with no process
//! holding it (the service is killed while it waits and started again), until `approve` or
//! `deny` answers it.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use oxpi_durable::server::{free_port, ServiceProcess};
use oxpi_testkit::scripted_runs::{final_text, prompt_text, reply_for};
use oxpi_testkit::TestServer;
use serde_json::{json, Value};

async fn post(url: String, body: Value) -> (u16, Value) {
    let request = reqwest::Client::new().post(url);
    let request = if body.is_null() {
        request
    } else {
        request.json(&body)
    };
    let response = request
        .timeout(Duration::from_secs(300))
        .send()
        .await
        .expect("ingress answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Waits until `call` is the one call pending approval of run `run`.
async fn wait_pending(ingress: &str, run: &str, call: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, pending) = post(
            format!("{ingress}/OxpiAgent/{run}/pending_approvals"),
            Value::Null,
        )
        .await;
        if pending.as_array().map(|p| p.len()) == Some(1) && pending[0]["callId"] == call {
            assert_eq!(pending[0]["toolName"], "record_safe");
            return;
        }
        assert!(Instant::now() < deadline, "{call} never waited: {pending}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waits_for_approval_across_a_restart_and_a_denied_one_gets_the_reason() {
    let Some(restate) = common::restate_or_skip().await else {
        return;
    };
    let model = TestServer::start_fn(|request| reply_for(&request.json()))
        .await
        .expect("model server");
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port().expect("port");
    let service = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_oxpi-durable-scripted"));
        command
            .env("OXPI_DURABLE_PORT", port.to_string())
            .env("OXPI_DURABLE_MODEL_URL", format!("{}/v1", model.base_url()))
            .env("OXPI_DURABLE_EFFECTS", dir.path().join("effects"))
            .env("OXPI_DURABLE_APPROVE", "record_safe");
        command
    };
    let mut first = ServiceProcess::start(service(), port)
        .await
        .expect("service A");
    restate
        .register(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("registered");
    let ingress = restate.ingress_url();

    let run = tokio::spawn(post(
        format!("{ingress}/OxpiAgent/p/prompt"),
        json!({"text": prompt_text("p", 2, "record_safe")}),
    ));
    wait_pending(&ingress, "p", "call_0").await;
    // No process holds the waiting run.
    first.kill();
    let _second = ServiceProcess::start(service(), port)
        .await
        .expect("service B");
    wait_pending(&ingress, "p", "call_0").await;
    let effects = || std::fs::read_to_string(dir.path().join("effects")).unwrap_or_default();
    assert_eq!(effects(), "", "nothing ran before the approval");

    let (status, _) = post(
        format!("{ingress}/OxpiAgent/p/approve"),
        json!({"callId": "nope"}),
    )
    .await;
    assert_eq!(status, 404, "no such call waits");
    let (status, _) = post(
        format!("{ingress}/OxpiAgent/p/approve"),
        json!({"callId": "call_0"}),
    )
    .await;
    assert_eq!(status, 200);
    wait_pending(&ingress, "p", "call_1").await;
    let (status, _) = post(
        format!("{ingress}/OxpiAgent/p/deny"),
        json!({"callId": "call_1", "reason": "not now"}),
    )
    .await;
    assert_eq!(status, 200);

    let (status, reply) = run.await.expect("task");
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["text"], final_text("p", 2));
    assert_eq!(
        effects(),
        "p\tp turn 0\n",
        "the approved call ran once, the denied one never"
    );
    let (_, messages) = post(format!("{ingress}/OxpiAgent/p/get_messages"), Value::Null).await;
    let results: Vec<&Value> = messages
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .collect();
    assert_eq!(results[0]["content"][0]["text"], "recorded: p turn 0");
    assert_eq!(results[1]["isError"], true);
    assert_eq!(results[1]["content"][0]["text"], "not now");
}
