//! Compaction in the command, over real HTTP against a scripted Chat Completions server: a
//! context overflow (a 400 naming the context length) is recovered in print, JSON and RPC
//! modes as pi's command does (the failed reply left out, the session compacted, the turn
//! retried once); RPC `compact` during a prompt aborts the prompt first; a `compact` during the
//! recovery's retry keeps the retried turn (pi #7086); `get_state.isCompacting` is true while a
//! summary is in flight, manual or automatic.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use oxpi_testkit::{Part, Reply, TestServer};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

const OVERFLOW: &str = r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, your messages resulted in 52000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;

/// What the scripted model holds back.
#[derive(Clone, Copy, Default)]
struct Script {
    /// The first this many summary requests stall (to be aborted).
    stall_summaries: usize,
    /// The retried turn after the overflow stalls after its first words (to be aborted).
    stall_retry: bool,
}

/// Requests without tools are summaries (`## Goal\nthe summary`); a `fill` prompt is answered
/// `noted`; the first `overflow` prompt gets the provider's context-overflow 400, its retry
/// `Recovered`; a `slow` prompt stalls after `thinking`.
async fn server(script: Script) -> TestServer {
    let summaries = Arc::new(AtomicUsize::new(0));
    let overflowed = Arc::new(AtomicBool::new(false));
    TestServer::start_fn(move |request| {
        let has_tools = request.json()["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty());
        if !has_tools {
            if summaries.fetch_add(1, Ordering::SeqCst) < script.stall_summaries {
                return Reply::StallAfterHeaders { status: 200 };
            }
            return text_reply("## Goal\nthe summary");
        }
        let prompt = last_user_text(request);
        if prompt.starts_with("fill") {
            return text_reply("noted");
        }
        let stalled = |text: &str| {
            Reply::sse_parts(vec![
                Part::Bytes(
                    chunk(json!({"role": "assistant", "content": text}), None).into_bytes(),
                ),
                Part::Stall,
            ])
        };
        if prompt.contains("slow") {
            return stalled("thinking");
        }
        if prompt.contains("overflow") {
            if !overflowed.swap(true, Ordering::SeqCst) {
                return Reply::json_error(400, OVERFLOW);
            }
            if script.stall_retry {
                // Long enough (25,000 tokens) to leave a manual compaction something to cut.
                return stalled(&format!("retrying {}", "y ".repeat(50_000)));
            }
            return text_reply("Recovered");
        }
        text_reply("Echo")
    })
    .await
    .expect("start the scripted server")
}

/// 100 KB: 25,000 tokens by pi's estimate, more than the 20,000 a compaction keeps, so two such
/// prompts leave the first to summarize.
fn fill(n: &str) -> String {
    format!("fill {n} {}", "x ".repeat(50_000))
}

fn summary_requests(server: &TestServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.json()["tools"].as_array().is_none_or(|t| t.is_empty()))
        .count()
}

/// The session file's entries.
fn entries(d: &Dirs) -> Vec<Value> {
    let files = session_files(&d.home);
    assert_eq!(files.len(), 1, "{files:?}");
    json_lines(&std::fs::read_to_string(&files[0]).unwrap())
}

/// Each entry as `type` or `type:role:stopReason`.
fn shape(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .skip(1)
        .map(|e| {
            let kind = e["type"].as_str().unwrap_or("?").to_string();
            match e["message"]["role"].as_str() {
                Some(role) => match e["message"]["stopReason"].as_str() {
                    Some(stop) => format!("{kind}:{role}:{stop}"),
                    None => format!("{kind}:{role}"),
                },
                None => kind,
            }
        })
        .filter(|s| !s.starts_with("model_change") && !s.starts_with("thinking_level"))
        .collect()
}

/// The user texts of a session's message entries.
fn user_prompts(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| {
            let text = e["message"]["content"][0]["text"].as_str().unwrap_or("");
            text.chars().take(13).collect()
        })
        .collect()
}

/// Runs `oxpi <mode> [-c] -p <prompt>` to its end.
async fn print(d: &Dirs, server: &TestServer, mode: &[&str], again: bool, prompt: &str) -> Output {
    let mut command = oxpi(d);
    command.args(model_args(server)).args(mode);
    if again {
        command.arg("-c");
    }
    command.args(["-p", prompt]);
    run(command).await
}

async fn overflow_in(mode: &[&str]) -> (Dirs, TestServer, Output) {
    let d = dirs();
    let server = server(Script::default()).await;
    for (n, again) in [("one", false), ("two", true)] {
        let out = print(&d, &server, mode, again, &fill(n)).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
    }
    let out = print(&d, &server, mode, true, "overflow now").await;
    (d, server, out)
}

/// What every recovery leaves: one summary request, the retry carrying the summary and the
/// prompt (not the failed reply, not the summarized prompt), and the session holding the
/// prompt once, the failed reply, its context edit, the compaction and the answer.
fn assert_recovered(d: &Dirs, server: &TestServer) {
    assert_eq!(summary_requests(server), 1);
    let retry = serde_json::to_string(&messages(server.requests().last().unwrap())).unwrap();
    assert!(retry.contains("the summary"), "{retry}");
    assert!(retry.contains("overflow now"));
    assert!(!retry.contains("maximum context length"), "{retry}");
    assert!(!retry.contains("fill one"));
    let entries = entries(d);
    assert_eq!(
        user_prompts(&entries),
        ["fill one x x ", "fill two x x ", "overflow now"]
    );
    let shape = shape(&entries);
    let tail = &shape[shape.len() - 5..];
    assert_eq!(
        tail,
        [
            "message:user",
            "message:assistant:error",
            "context_edit",
            "compaction",
            "message:assistant:stop",
        ],
        "{shape:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_recovers_from_a_context_overflow_by_compacting_and_retrying() {
    let (d, server, out) = overflow_in(&[]).await;
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (Some(0), "Recovered\n"),
        "{}",
        out.stderr
    );
    assert_recovered(&d, &server);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overflow_with_nothing_to_compact_fails_the_command_saying_so() {
    let d = dirs();
    let server = server(Script::default()).await;
    let out = print(&d, &server, &[], false, "overflow 1st").await;
    assert_eq!(out.code, Some(1), "stdout: {}", out.stdout);
    assert!(
        out.stderr.contains("maximum context length is 4096 tokens")
            && out
                .stderr
                .contains("context overflow recovery failed: nothing to compact"),
        "{}",
        out.stderr
    );
    assert_eq!(summary_requests(&server), 0);
    assert_eq!(user_prompts(&entries(&d)), ["overflow 1st"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn json_mode_recovers_from_a_context_overflow_by_compacting_and_retrying() {
    let (d, server, out) = overflow_in(&["--mode", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let records = json_lines(&out.stdout);
    let ends: Vec<String> = records
        .iter()
        .filter(|r| r["type"] == "message_end" && r["message"]["role"] == "assistant")
        .map(|r| {
            r["message"]["stopReason"]
                .as_str()
                .unwrap_or("?")
                .to_string()
        })
        .collect();
    assert_eq!(
        ends,
        ["error", "stop"],
        "the failed reply, then the retried one"
    );
    assert_recovered(&d, &server);
}

/// `oxpi --mode rpc` driven with JSON lines.
struct Rpc {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    records: mpsc::UnboundedReceiver<Value>,
    seen: Vec<Value>,
    next: u32,
}

impl Rpc {
    fn start(d: &Dirs, server: &TestServer) -> Self {
        let mut command = oxpi(d);
        command
            .args(["--mode", "rpc"])
            .args(model_args(server))
            .stdin(Stdio::piped());
        let mut child = command.spawn().expect("start oxpi --mode rpc");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, records) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let value: Value = serde_json::from_str(&line).expect("one JSON record per line");
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            records,
            seen: Vec::new(),
            next: 0,
        }
    }

    /// Sends `command` with a fresh id; returns the id.
    async fn send(&mut self, mut command: Value) -> String {
        self.next += 1;
        let id = format!("req-{}", self.next);
        command["id"] = json!(id);
        let line = format!("{command}\n");
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
        id
    }

    /// Sends `command`; returns its response.
    async fn call(&mut self, command: Value) -> Value {
        let id = self.send(command).await;
        self.response(&id).await
    }

    /// The response to `id`, also when it came already.
    async fn response(&mut self, id: &str) -> Value {
        let is_it = |r: &Value| r["type"] == "response" && r["id"] == json!(id);
        if let Some(seen) = self.seen.iter().find(|r| is_it(r)) {
            return seen.clone();
        }
        self.until(is_it).await
    }

    /// The next record matching `pred` (records before it are kept in `seen`).
    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let record = match tokio::time::timeout(DEADLINE, self.records.recv()).await {
                Ok(Some(record)) => record,
                Ok(None) => panic!("oxpi stopped; records so far: {:?}", self.seen),
                Err(_) => panic!(
                    "no record within {DEADLINE:?}; records: {:?}",
                    self.seen
                        .iter()
                        .map(|r| r["type"].clone())
                        .collect::<Vec<_>>()
                ),
            };
            self.seen.push(record.clone());
            if pred(&record) {
                return record;
            }
        }
    }

    async fn prompt(&mut self, text: &str) {
        let response = self.call(json!({"type": "prompt", "message": text})).await;
        assert_eq!(response["success"], true, "{response}");
    }

    async fn settled(&mut self) {
        self.until(|r| r["type"] == "agent_settled").await;
    }

    async fn state(&mut self) -> Value {
        let response = self.call(json!({"type": "get_state"})).await;
        response["data"].clone()
    }

    /// Where in `seen`, from `from` on, the first record matching `pred` is.
    fn position(&self, from: usize, pred: impl Fn(&Value) -> bool) -> usize {
        from + self.seen[from..]
            .iter()
            .position(pred)
            .unwrap_or_else(|| panic!("not seen; records: {:?}", self.seen))
    }

    async fn close(mut self) -> Option<i32> {
        drop(self.stdin);
        let status = tokio::time::timeout(DEADLINE, self.child.wait())
            .await
            .expect("oxpi exits when stdin closes")
            .unwrap();
        status.code()
    }
}

/// An RPC process that has answered two `fill` prompts.
async fn filled_rpc(script: Script) -> (Dirs, TestServer, Rpc) {
    let d = dirs();
    let server = server(script).await;
    let mut rpc = Rpc::start(&d, &server);
    for n in ["one", "two"] {
        rpc.prompt(&fill(n)).await;
        rpc.settled().await;
    }
    (d, server, rpc)
}

/// Waits until the server has seen `n` summary requests.
async fn until_summaries(server: &TestServer, n: usize) {
    let waited = tokio::time::timeout(DEADLINE, async {
        while summary_requests(server) < n {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{n} summary request(s) never came");
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_recovers_from_a_context_overflow_by_compacting_and_retrying() {
    let (d, server, mut rpc) = filled_rpc(Script::default()).await;
    rpc.prompt("overflow now").await;
    rpc.settled().await;
    let last = rpc.call(json!({"type": "get_last_assistant_text"})).await;
    assert_eq!(last["data"]["text"], "Recovered", "{last}");
    assert_recovered(&d, &server);
    assert_eq!(rpc.close().await, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_compact_during_the_recovery_s_retry_keeps_the_retried_turn() {
    let (d, server, mut rpc) = filled_rpc(Script {
        stall_retry: true,
        ..Script::default()
    })
    .await;
    let from = rpc.seen.len();
    rpc.prompt("overflow now").await;
    // The retried turn streams its first words, then stalls.
    rpc.until(|r| r["type"] == "message_update").await;
    let compacted = rpc.call(json!({"type": "compact"})).await;
    assert_eq!(compacted["success"], true, "{compacted}");

    // The retried turn ended aborted, its events streamed, and the run settled, all before
    // the manual compaction's response.
    let aborted = rpc.position(from, |r| {
        r["type"] == "message_end" && r["message"]["stopReason"] == "aborted"
    });
    let settled = rpc.position(from, |r| r["type"] == "agent_settled");
    let started = rpc.position(from, |r| r["type"] == "compaction_start");
    assert!(aborted < started && settled < started, "{:?}", rpc.seen);
    let text = rpc.seen[aborted]["message"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.starts_with("retrying y y"), "{text:.40}");

    // The session holds the retried turn, then the manual compaction after it.
    let shape = shape(&entries(&d));
    let tail = &shape[shape.len() - 6..];
    assert_eq!(
        tail,
        [
            "message:user",
            "message:assistant:error",
            "context_edit",
            "compaction",
            "message:assistant:aborted",
            "compaction",
        ],
        "{shape:?}"
    );
    assert!(summary_requests(&server) >= 2);
    let state = rpc.state().await;
    assert_eq!(
        (&state["isStreaming"], &state["isCompacting"]),
        (&json!(false), &json!(false))
    );
    assert_eq!(rpc.close().await, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_compact_during_a_streaming_prompt_aborts_it_then_compacts() {
    let (d, server, mut rpc) = filled_rpc(Script::default()).await;
    let from = rpc.seen.len();
    rpc.prompt("slow answer").await;
    rpc.until(|r| r["type"] == "message_update").await;
    let compacted = rpc.call(json!({"type": "compact"})).await;
    assert_eq!(compacted["success"], true, "{compacted}");
    assert_eq!(compacted["data"]["summary"], "## Goal\nthe summary");
    let aborted = rpc.position(from, |r| {
        r["type"] == "message_end" && r["message"]["stopReason"] == "aborted"
    });
    let started = rpc.position(from, |r| r["type"] == "compaction_start");
    assert!(aborted < started, "{:?}", rpc.seen);
    let shape = shape(&entries(&d));
    let tail = &shape[shape.len() - 3..];
    assert_eq!(
        tail,
        ["message:user", "message:assistant:aborted", "compaction"],
        "{shape:?}"
    );
    assert_eq!(shape.iter().filter(|s| *s == "compaction").count(), 1);
    assert_eq!(summary_requests(&server), 1);
    // The agent continues from the compacted context.
    let listed = rpc.call(json!({"type": "get_messages"})).await;
    let roles: Vec<&str> = listed["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(roles[..2], ["system", "compactionSummary"], "{roles:?}");
    assert_eq!(rpc.close().await, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn is_compacting_is_true_while_a_summary_is_in_flight() {
    let (_d, server, mut rpc) = filled_rpc(Script {
        stall_summaries: 2,
        ..Script::default()
    })
    .await;
    assert_eq!(rpc.state().await["isCompacting"], false);

    // Manual: the summary stalls; state is answered meanwhile; abort cancels it.
    let compact = rpc.send(json!({"type": "compact"})).await;
    until_summaries(&server, 1).await;
    assert_eq!(rpc.state().await["isCompacting"], true);
    rpc.call(json!({"type": "abort"})).await;
    let refused = rpc.response(&compact).await;
    assert_eq!(refused["success"], false, "{refused}");
    let end = rpc.position(0, |r| r["type"] == "compaction_end");
    assert_eq!(rpc.seen[end]["aborted"], true, "{}", rpc.seen[end]);
    assert_eq!(rpc.state().await["isCompacting"], false);

    // Automatic: the overflow's recovery summary stalls.
    let from = rpc.seen.len();
    rpc.prompt("overflow now").await;
    until_summaries(&server, 2).await;
    let state = rpc.state().await;
    assert_eq!(
        (&state["isStreaming"], &state["isCompacting"]),
        (&json!(true), &json!(true))
    );
    rpc.call(json!({"type": "abort"})).await;
    // `abort` answers once the run has settled.
    rpc.position(from, |r| r["type"] == "agent_settled");
    let state = rpc.state().await;
    assert_eq!(
        (&state["isStreaming"], &state["isCompacting"]),
        (&json!(false), &json!(false))
    );
    assert_eq!(rpc.close().await, Some(0));
}
