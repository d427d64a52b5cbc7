//! Durable runs with real processes: a Restate server, the `oxpi-durable-scripted` service and a
//! scripted model. The service is killed (SIGKILL) mid-run — while a model reply streams, and
//! while tools run — then started again; every run finishes, finished steps are not repeated,
//! and the transcript equals an uninterrupted run's.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use oxpi_durable::server::{free_port, ServiceProcess};
use oxpi_durable::{RunReply, OUTCOME_UNKNOWN};
use oxpi_testkit::scripted_runs::{final_text, prompt_text, reply_for, run_and_turn};
use oxpi_testkit::{Part, Reply, TestServer};
use serde_json::Value;

/// Model requests seen, by (run, turn).
type Counts = Arc<Mutex<HashMap<(String, u32), u32>>>;

fn service(port: u16, model_url: &str, dir: &Path, hang_on: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxpi-durable-scripted"));
    command
        .env("OXPI_DURABLE_PORT", port.to_string())
        .env("OXPI_DURABLE_MODEL_URL", model_url)
        .env("OXPI_DURABLE_EFFECTS", dir.join("effects"))
        .env("OXPI_DURABLE_EVENTS", dir.join("events"))
        .env("OXPI_DURABLE_HANG_ON", hang_on);
    command
}

async fn prompt(ingress: &str, key: &str, text: &str) -> Result<RunReply, String> {
    let response = reqwest::Client::new()
        .post(format!("{ingress}/OxpiAgent/{key}/prompt"))
        .json(&serde_json::json!({"text": text}))
        .timeout(Duration::from_secs(600))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("{status}: {body}"));
    }
    serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))
}

async fn messages(ingress: &str, key: &str) -> Vec<Value> {
    let response = reqwest::Client::new()
        .post(format!("{ingress}/OxpiAgent/{key}/get_messages"))
        .send()
        .await
        .expect("get_messages answers");
    response.json().await.expect("a JSON array")
}

/// A message without what the clock decides (timestamps, durations).
fn without_clock(mut value: Value) -> Value {
    if let Value::Object(map) = &mut value {
        map.remove("timestamp");
        map.remove("durationMs");
        for v in map.values_mut() {
            *v = without_clock(v.take());
        }
    }
    if let Value::Array(items) = &mut value {
        for v in items.iter_mut() {
            *v = without_clock(v.take());
        }
    }
    value
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_survive_a_killed_service_process() {
    let Some(restate) = common::restate_or_skip().await else {
        return;
    };
    let counts: Counts = Arc::default();
    // When armed, the first request of run k's turn 2 stalls (a model stream in progress).
    let armed = Arc::new(AtomicBool::new(false));
    let model = {
        let (counts, armed) = (counts.clone(), armed.clone());
        TestServer::start_fn(move |request| {
            let body = request.json();
            if let Some(key) = run_and_turn(&body) {
                let mut counts = counts.lock().unwrap_or_else(|p| p.into_inner());
                let seen = counts.entry(key.clone()).or_default();
                *seen += 1;
                if key == ("k".to_string(), 2) && armed.swap(false, Ordering::SeqCst) {
                    return Reply::sse_parts(vec![Part::Stall]);
                }
            }
            reply_for(&body)
        })
        .await
        .expect("model server")
    };
    let model_url = format!("{}/v1", model.base_url());
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port().expect("port");
    let ingress = restate.ingress_url();

    // Process A: the tool calls of turn 1 of runs u and s hang, as a tool still working.
    let mut first = ServiceProcess::start(
        service(port, &model_url, dir.path(), "u turn 1,s turn 1"),
        port,
    )
    .await
    .expect("service A");
    restate
        .register(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("registered");

    // The reference: run k's script, uninterrupted.
    let reference = prompt(&ingress, "reference", &prompt_text("k", 3, "record"))
        .await
        .expect("reference run");
    assert_eq!(reference.text, final_text("k", 3));
    assert_eq!(reference.error_message, None);
    let reference_messages = messages(&ingress, "reference").await;
    assert_eq!(
        reference_messages.len(),
        8,
        "user, 3 × (call, result), final"
    );
    let before: HashMap<_, _> = counts.lock().expect("counts").clone();
    let effects_before = lines(&dir.path().join("effects")).len();
    assert_eq!(effects_before, 3);

    armed.store(true, Ordering::SeqCst);
    let runs: Vec<_> = [("k", "record"), ("u", "record"), ("s", "record_safe")]
        .into_iter()
        .map(|(run, tool)| {
            let ingress = ingress.clone();
            tokio::spawn(async move { prompt(&ingress, run, &prompt_text(run, 3, tool)).await })
        })
        .collect();
    let effects = dir.path().join("effects");
    wait_for("run k's turn 2 request and the hanging tool calls", || {
        let stalled = !armed.load(Ordering::SeqCst);
        let effects = lines(&effects);
        stalled
            && effects.contains(&"u\tu turn 1".to_string())
            && effects.contains(&"s\ts turn 1".to_string())
    })
    .await;
    first.kill();

    let _second = ServiceProcess::start(service(port, &model_url, dir.path(), ""), port)
        .await
        .expect("service B");
    for (run, handle) in ["k", "u", "s"].into_iter().zip(runs) {
        let reply = handle.await.expect("task").expect("run finished");
        assert_eq!(reply.text, final_text(run, 3), "run {run}");
        assert_eq!(reply.error_message, None, "run {run}");
    }

    // Model calls: each journaled turn requested once; the stalled turn 2 of k twice.
    let counts = counts.lock().expect("counts").clone();
    let made = |run: &str, turn: u32| {
        counts.get(&(run.to_string(), turn)).copied().unwrap_or(0)
            - before.get(&(run.to_string(), turn)).copied().unwrap_or(0)
    };
    assert_eq!(
        (made("k", 0), made("k", 1), made("k", 2), made("k", 3)),
        (1, 1, 2, 1),
        "{counts:?}"
    );
    for run in ["u", "s"] {
        assert_eq!(
            (made(run, 0), made(run, 1), made(run, 2), made(run, 3)),
            (1, 1, 1, 1),
            "{run}"
        );
    }

    // Side effects: every finished call exactly once; the unsafe interrupted call not again;
    // the safe one run again.
    let effects = lines(&effects);
    let count = |line: &str| effects.iter().filter(|l| *l == line).count();
    for turn in 0..3 {
        assert_eq!(
            count(&format!("reference\tk turn {turn}")),
            1,
            "reference, turn {turn}"
        );
        assert_eq!(count(&format!("k\tk turn {turn}")), 1, "run k, turn {turn}");
        assert_eq!(count(&format!("u\tu turn {turn}")), 1, "run u, turn {turn}");
        let safe_expected = if turn == 1 { 2 } else { 1 };
        assert_eq!(
            count(&format!("s\ts turn {turn}")),
            safe_expected,
            "run s, turn {turn}"
        );
    }

    // Transcripts: k equals the reference; u's interrupted call says its outcome is unknown.
    let k = messages(&ingress, "k").await;
    assert_eq!(
        k.into_iter().map(without_clock).collect::<Vec<_>>(),
        reference_messages
            .into_iter()
            .map(without_clock)
            .collect::<Vec<_>>()
    );
    let u = messages(&ingress, "u").await;
    let results: Vec<&Value> = u.iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(results.len(), 3, "one result per call");
    assert_eq!(results[1]["isError"], true);
    assert_eq!(results[1]["content"][0]["text"], OUTCOME_UNKNOWN);
    assert_eq!(results[2]["content"][0]["text"], "recorded: u turn 2");
    let s = messages(&ingress, "s").await;
    let s_results: Vec<&Value> = s.iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(s_results[1]["content"][0]["text"], "recorded: s turn 1");

    // The second process answered k's first turns from the journal.
    let events = lines(&dir.path().join("events"));
    assert!(
        events.contains(&"model\tk\t0\ttrue".to_string()),
        "replayed turn 0: {events:?}"
    );
    assert!(
        events.contains(&"tool\tu\tcall_1\tfalse\ttrue".to_string()),
        "{events:?}"
    );
}
