//! Large tool results in a durable run, against a real Restate server and the scripted service:
//! a 1 MiB result is journaled in its tool step and stored in one state key, and in no other
//! journal entry or state value (measured with the server's SQL introspection API); the
//! transcript (`get_messages`) is whole before and after the service process is killed and the
//! run replayed, and after a second prompt; a result above `MAX_RESULT_BYTES` is truncated with
//! a notice and the run finishes.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use oxpi_durable::scripted::{recorded_text, BIG_BYTES};
use oxpi_durable::server::{free_port, RestateServer, ServiceProcess};
use oxpi_durable::{RunReply, MAX_RESULT_BYTES, OUTCOME_UNKNOWN};
use oxpi_testkit::scripted_runs::{final_text, prompt_text, reply_for};
use oxpi_testkit::TestServer;
use serde_json::{json, Value};

fn service(port: u16, model_url: &str, dir: &Path, hang_on: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxpi-durable-scripted"));
    command
        .env("OXPI_DURABLE_PORT", port.to_string())
        .env("OXPI_DURABLE_MODEL_URL", model_url)
        .env("OXPI_DURABLE_EFFECTS", dir.join("effects"))
        .env("OXPI_DURABLE_HANG_ON", hang_on);
    command
}

async fn prompt(ingress: &str, key: &str, text: &str) -> RunReply {
    let response = reqwest::Client::new()
        .post(format!("{ingress}/OxpiAgent/{key}/prompt"))
        .json(&json!({ "text": text }))
        .timeout(Duration::from_secs(600))
        .send()
        .await
        .expect("the ingress answers");
    assert!(response.status().is_success(), "{}", response.status());
    response.json().await.expect("a RunReply")
}

async fn messages(ingress: &str, key: &str) -> Vec<Value> {
    reqwest::Client::new()
        .post(format!("{ingress}/OxpiAgent/{key}/get_messages"))
        .send()
        .await
        .expect("get_messages answers")
        .json()
        .await
        .expect("a JSON array")
}

async fn query(restate: &RestateServer, sql: &str) -> Vec<Value> {
    let body: Value = reqwest::Client::new()
        .post(format!("{}/query", restate.admin_url()))
        .header("accept", "application/json")
        .json(&json!({ "query": sql }))
        .send()
        .await
        .expect("the admin API answers")
        .json()
        .await
        .expect("JSON rows");
    body["rows"].as_array().cloned().unwrap_or_default()
}

/// The journal entries of run `key`'s prompt invocations at least `min` bytes long.
async fn large_entries(restate: &RestateServer, key: &str, min: usize) -> Vec<Value> {
    query(
        restate,
        &format!(
            "SELECT i.id, j.index, j.entry_type, j.name, j.raw_length FROM sys_journal j \
             JOIN sys_invocation i ON j.id = i.id \
             WHERE i.target_service_name = 'OxpiAgent' AND i.target_service_key = '{key}' AND i.target_handler_name = 'prompt' \
             AND j.raw_length >= {min} ORDER BY j.id, j.index"
        ),
    )
    .await
}

/// Run `key`'s state keys and value lengths.
async fn state_sizes(restate: &RestateServer, key: &str) -> Vec<(String, u64)> {
    query(
        restate,
        &format!(
            "SELECT key, value_length FROM state \
             WHERE service_name = 'OxpiAgent' AND service_key = '{key}' ORDER BY key"
        ),
    )
    .await
    .into_iter()
    .map(|row| {
        (
            row["key"].as_str().unwrap_or_default().to_string(),
            row["value_length"].as_u64().unwrap_or_default(),
        )
    })
    .collect()
}

/// The entry types of `entries`, sorted.
fn kinds(entries: &[Value]) -> Vec<String> {
    let mut kinds: Vec<String> = entries
        .iter()
        .map(|e| e["entry_type"].as_str().unwrap_or_default().to_string())
        .collect();
    kinds.sort();
    kinds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_are_stored_once_and_the_transcript_stays_whole() {
    let Some(restate) = common::restate_or_skip().await else {
        return;
    };
    let model = TestServer::start_fn(|request| reply_for(&request.json()))
        .await
        .expect("model server");
    let model_url = format!("{}/v1", model.base_url());
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port().expect("port");
    let ingress = restate.ingress_url();
    let mut first =
        ServiceProcess::start(service(port, &model_url, dir.path(), "crash turn 1"), port)
            .await
            .expect("service A");
    restate
        .register(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("registered");

    // Two 1 MiB results: each in one step and one state key, nowhere else.
    let reply = prompt(&ingress, "big", &prompt_text("big", 2, "record_big")).await;
    assert_eq!(reply.text, final_text("big", 2));
    let big = messages(&ingress, "big").await;
    assert_eq!(big.len(), 6, "user, 2 × (call, result), final");
    let expected: Vec<String> = (0..2)
        .map(|turn| recorded_text(&format!("big turn {turn}"), BIG_BYTES))
        .collect();
    assert_eq!(
        common::first_texts(&big, "toolResult"),
        expected,
        "the whole results"
    );
    // Each result in two entries (its tool step's result, its state key's write), and no entry
    // holding two (the transcript step and the transcript's state value hold references).
    let entries = large_entries(&restate, "big", BIG_BYTES).await;
    assert_eq!(
        kinds(&entries),
        [
            "Command: SetState",
            "Command: SetState",
            "Notification: Run",
            "Notification: Run"
        ],
        "{entries:#?}"
    );
    assert!(
        entries
            .iter()
            .all(|e| e["raw_length"].as_u64() < Some(2 * BIG_BYTES as u64)),
        "{entries:#?}"
    );
    let states = state_sizes(&restate, "big").await;
    let large_states: Vec<&String> = states
        .iter()
        .filter(|(_, n)| *n >= BIG_BYTES as u64)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(large_states, ["result/2", "result/4"], "{states:?}");
    let transcript_size = states.iter().find(|(k, _)| k == "messages").map(|s| s.1);
    assert!(transcript_size.is_some_and(|n| n < 16 * 1024), "{states:?}");

    // Killed while the tool of turn 1 runs (after turn 0's large result is journaled).
    let ingress_for_run = ingress.clone();
    let crash = tokio::spawn(async move {
        prompt(
            &ingress_for_run,
            "crash",
            &prompt_text("crash", 3, "record_big"),
        )
        .await
    });
    let effects = dir.path().join("effects");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !std::fs::read_to_string(&effects)
        .unwrap_or_default()
        .contains("crash\tcrash turn 1")
    {
        assert!(Instant::now() < deadline, "turn 1's tool never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    first.kill();
    let _second = ServiceProcess::start(service(port, &model_url, dir.path(), ""), port)
        .await
        .expect("service B");
    let reply = crash.await.expect("task");
    assert_eq!(reply.text, final_text("crash", 3));
    let crashed = common::first_texts(&messages(&ingress, "crash").await, "toolResult");
    assert_eq!(crashed.len(), 3);
    assert_eq!(crashed[0], recorded_text("crash turn 0", BIG_BYTES));
    assert_eq!(crashed[1], OUTCOME_UNKNOWN);
    assert_eq!(crashed[2], recorded_text("crash turn 2", BIG_BYTES));
    let entries = large_entries(&restate, "crash", BIG_BYTES).await;
    assert_eq!(
        kinds(&entries).len(),
        4,
        "the replay added none: {entries:#?}"
    );
    assert!(
        entries
            .iter()
            .all(|e| e["raw_length"].as_u64() < Some(2 * BIG_BYTES as u64)),
        "{entries:#?}"
    );

    // A second prompt on the new process reads the stored results back (the scripted model
    // follows the run's first script: it answers at once).
    let reply = prompt(&ingress, "big", "and now?").await;
    assert_eq!(reply.text, final_text("big", 2));
    let again = messages(&ingress, "big").await;
    assert_eq!(again.len(), 8);
    assert_eq!(again[6]["content"][0]["text"], "and now?");
    assert_eq!(again[..6], big[..], "the first prompt's transcript, whole");

    // Above the bound: truncated with a notice, and the run goes on.
    let reply = prompt(&ingress, "huge", &prompt_text("huge", 1, "record_huge")).await;
    assert_eq!(reply.text, final_text("huge", 1));
    let huge = common::first_texts(&messages(&ingress, "huge").await, "toolResult");
    assert_eq!(huge.len(), 1);
    assert!(huge[0].starts_with("recorded: huge turn 0\nhuge turn 0 huge turn 0"));
    assert!(
        huge[0].contains("[Tool result truncated: it was "),
        "{}",
        &huge[0][huge[0].len() - 300..]
    );
    assert!(huge[0].len() <= MAX_RESULT_BYTES && huge[0].len() > MAX_RESULT_BYTES / 2);
}
