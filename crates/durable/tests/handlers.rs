//! `steer`, `abort` and `follow_up` of a durable run, against a real Restate server and the
//! scripted service: steering queued while idle goes in with the next prompt; steering and an
//! abort sent while a turn streams reach the run before its next turn.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use oxpi_durable::server::{free_port, ServiceProcess};
use oxpi_testkit::scripted_runs::{final_text, prompt_text, reply_for, run_and_turn};
use oxpi_testkit::{Part, Reply, TestServer};
use serde_json::{json, Value};

async fn post(url: String, body: Value) -> Value {
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
    assert!(response.status().is_success(), "{}", response.status());
    response.json().await.unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steer_abort_and_follow_up_reach_the_run() {
    let Some(restate) = common::restate_or_skip().await else {
        return;
    };
    // Turn 1 of runs "m" and "x" streams slowly (3 s) once it is seen, so a steer or abort sent
    // after its request arrives lands while the turn is in progress.
    let seen_turn_1 = Arc::new(AtomicBool::new(false));
    let model = {
        let seen = seen_turn_1.clone();
        TestServer::start_fn(move |request| {
            let body = request.json();
            let reply = reply_for(&body);
            match run_and_turn(&body) {
                Some((run, 1)) if run == "m" || run == "x" => {
                    seen.store(true, Ordering::SeqCst);
                    match reply {
                        Reply::Respond {
                            status,
                            headers,
                            mut body,
                        } => {
                            body.insert(0, Part::Sleep(Duration::from_secs(3)));
                            Reply::Respond {
                                status,
                                headers,
                                body,
                            }
                        }
                        other => other,
                    }
                }
                _ => reply,
            }
        })
        .await
        .expect("model server")
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port().expect("port");
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxpi-durable-scripted"));
    command
        .env("OXPI_DURABLE_PORT", port.to_string())
        .env("OXPI_DURABLE_MODEL_URL", format!("{}/v1", model.base_url()))
        .env("OXPI_DURABLE_EFFECTS", dir.path().join("effects"));
    let _service = ServiceProcess::start(command, port).await.expect("service");
    restate
        .register(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("registered");
    let ingress = restate.ingress_url();

    // Idle: the steering message goes in right after the next prompt; an idle abort is ignored.
    post(
        format!("{ingress}/OxpiAgent/i/steer"),
        json!({"text": "steered while idle"}),
    )
    .await;
    post(format!("{ingress}/OxpiAgent/i/abort"), Value::Null).await;
    let reply = post(
        format!("{ingress}/OxpiAgent/i/prompt"),
        json!({"text": prompt_text("i", 1, "record")}),
    )
    .await;
    assert_eq!(reply["text"], final_text("i", 1));
    let messages: Vec<Value> = serde_json::from_value(
        post(format!("{ingress}/OxpiAgent/i/get_messages"), Value::Null).await,
    )
    .expect("messages");
    assert_eq!(
        common::first_texts(&messages, "user"),
        [
            prompt_text("i", 1, "record"),
            "steered while idle".to_string()
        ]
    );

    // Mid-run: a steer sent during turn 1 is in the history before turn 2.
    let run = tokio::spawn(post(
        format!("{ingress}/OxpiAgent/m/prompt"),
        json!({"text": prompt_text("m", 2, "record")}),
    ));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen_turn_1.swap(false, Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "turn 1 of m never came");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    post(
        format!("{ingress}/OxpiAgent/m/steer"),
        json!({"text": "steered mid-run"}),
    )
    .await;
    let reply = run.await.expect("task");
    assert_eq!(reply["errorMessage"], Value::Null);
    let messages: Vec<Value> = serde_json::from_value(
        post(format!("{ingress}/OxpiAgent/m/get_messages"), Value::Null).await,
    )
    .expect("messages");
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    // user, call 0, result, call 1, result, steering, then the model again.
    assert_eq!(
        &roles[..6],
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "user"
        ]
    );
    assert_eq!(messages[5]["content"][0]["text"], "steered mid-run");

    // Mid-run abort: the turn after the one in progress ends as aborted, every call answered.
    let run = tokio::spawn(post(
        format!("{ingress}/OxpiAgent/x/prompt"),
        json!({"text": prompt_text("x", 3, "record")}),
    ));
    while !seen_turn_1.swap(false, Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline + Duration::from_secs(60),
            "turn 1 of x never came"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    post(format!("{ingress}/OxpiAgent/x/abort"), Value::Null).await;
    let reply = run.await.expect("task");
    assert_eq!(reply["errorMessage"], "Request was aborted");
    assert_eq!(reply["message"]["stopReason"], "aborted");
    let messages: Vec<Value> = serde_json::from_value(
        post(format!("{ingress}/OxpiAgent/x/get_messages"), Value::Null).await,
    )
    .expect("messages");
    let results = messages
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .count();
    assert_eq!(results, 2, "calls of turns 0 and 1, each answered");

    // follow_up runs after the prompt, as another prompt of the same run.
    let reply = post(
        format!("{ingress}/OxpiAgent/x/follow_up"),
        json!({"text": prompt_text("x", 3, "record")}),
    )
    .await;
    assert_eq!(reply["errorMessage"], Value::Null);
}
