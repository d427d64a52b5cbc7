//! Lab 14: a durable run. A Restate server (npm `@restatedev/restate-server`, installed on
//! first use) and a service process running oxpi-durable's `DurableAgent` (this binary again);
//! the live model follows lab-09's chain: `read` note.txt, which says the code is in
//! notes/code.txt (a fresh code), then `read` notes/code.txt, then the answer. Reading
//! notes/code.txt is slow: while it runs — after note.txt's result is in the journal — the lab
//! kills the service process (SIGKILL) and starts a new one; Restate retries the invocation,
//! the journal answers the finished steps and the run finishes.
//!
//! Checked: the reply contains the code; `reads.log` shows note.txt read once (its call
//! finished before the kill: the journal answered it, though `read` is safe to repeat) and
//! notes/code.txt read once by each process (interrupted, then run again, as a `Replay::Safe`
//! tool is); each model turn was requested exactly once over both processes (turns 0 and 1 by
//! the first, turn 2 by the second, which logged turns 0 and 1 and note.txt's read as
//! `replayed`: they came from the journal); the transcript (`get_messages`) is user →
//! assistant → toolResult → assistant → toolResult → assistant with one result per call, by id,
//! none an error.
//!
//! ```text
//! cargo run -p lab-14                                   # the embedded default model
//! cargo run -p lab-14 -- --provider openai              # OPENAI_API_KEY
//! cargo run -p lab-14 -- --base-url http://127.0.0.1:8080/v1 --model qwen
//! ```

mod service;

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use oxpi_ai::Message;
use oxpi_durable::server::{free_port, RestateServer, ServiceProcess};
use oxpi_durable::{RunReply, OUTCOME_UNKNOWN};
use oxpi_labkit::lab::{check_pairing, fresh_code, roles, run_lab};
use oxpi_labkit::LiveModel;

/// lab-09's prompt and pointer.
const PROMPT: &str = "请用 read 读取 note.txt，按其中的指引找到验证代号，只回复验证代号。";
const POINTER: &str = "验证代号不在这里，请读取 notes/code.txt。";
/// The run's key (its virtual object); the Restate server is the lab's own.
const RUN: &str = "lab-14";
/// How long the lab waits for each awaited event before it fails.
const WAIT: Duration = Duration::from_secs(180);

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::var_os(service::SERVICE_ENV).is_some() {
        return match service::serve().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("lab-14 service: {e}");
                ExitCode::FAILURE
            }
        };
    }
    run_lab("14", "durable run passed", |live| async move {
        let outcome = run(&live).await;
        (live, outcome)
    })
    .await
}

/// A service process on `port`; reading notes/code.txt takes `slow_read_ms` more.
fn service(live: &LiveModel, dir: &Path, port: u16, slow_read_ms: u64) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("no path to this binary: {e}"))?;
    let model = serde_json::to_string(&live.model).map_err(|e| e.to_string())?;
    let mut command = Command::new(exe);
    command
        .env(service::SERVICE_ENV, "1")
        .env("LAB14_PORT", port.to_string())
        .env("LAB14_MODEL", model)
        .env("LAB14_DIR", dir)
        .env("LAB14_SLOW_READ_MS", slow_read_ms.to_string());
    if let Some(key) = &live.api_key {
        command.env("LAB14_API_KEY", key.expose());
    }
    Ok(command)
}

async fn prompt(ingress: String) -> Result<RunReply, String> {
    let response = reqwest::Client::new()
        .post(format!("{ingress}/OxpiAgent/{RUN}/prompt"))
        .header("idempotency-key", RUN)
        .json(&serde_json::json!({ "text": PROMPT }))
        .timeout(Duration::from_secs(600))
        .send()
        .await
        .map_err(|e| format!("the prompt request failed: {e}"))?;
    let status = response.status();
    let body = response.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("the prompt failed: {status}: {body}"));
    }
    serde_json::from_str(&body).map_err(|e| format!("a reply that is not a RunReply: {e}: {body}"))
}

async fn transcript(ingress: &str) -> Result<Vec<Message>, String> {
    let response = reqwest::Client::new()
        .post(format!("{ingress}/OxpiAgent/{RUN}/get_messages"))
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .map_err(|e| format!("get_messages failed: {e}"))?;
    response
        .json()
        .await
        .map_err(|e| format!("get_messages did not return messages: {e}"))
}

/// One line for a transcript message: its role, and its text or tool calls.
fn describe(message: &Message) -> String {
    match message {
        Message::Assistant(a) => {
            let calls: Vec<String> = a
                .tool_calls()
                .map(|c| {
                    format!(
                        "{}({})",
                        c.name,
                        serde_json::Value::Object(c.arguments.clone())
                    )
                })
                .collect();
            if calls.is_empty() {
                format!("assistant: {}", a.text().trim())
            } else {
                format!("assistant: {}", calls.join(", "))
            }
        }
        Message::ToolResult(r) => {
            let text: Vec<&str> = r.content.iter().filter_map(|c| c.as_text()).collect();
            format!("toolResult {}: {}", r.tool_name, text.join(" "))
        }
        other => {
            let text = serde_json::to_value(other).unwrap_or_default()["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            format!("{}: {text}", other.role())
        }
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The lines of `events.log` of process `pid`, without the pid.
fn events_of(dir: &Path, pid: u32) -> Vec<String> {
    let prefix = format!("{pid}\t");
    lines(&dir.join("events.log"))
        .into_iter()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

async fn run(live: &LiveModel) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
    let root = dir.path();
    let code = fresh_code();
    std::fs::create_dir_all(root.join("notes")).map_err(|e| format!("notes/: {e}"))?;
    std::fs::write(root.join("note.txt"), POINTER).map_err(|e| format!("note.txt: {e}"))?;
    std::fs::write(
        root.join(service::SLOW_FILE),
        format!("本次验证代号：{code}"),
    )
    .map_err(|e| format!("{}: {e}", service::SLOW_FILE))?;
    let started = Instant::now();
    let restate = RestateServer::start().await?;
    println!(
        "restate-server {} ready in {:.1}s, ingress {}",
        oxpi_durable::server::RESTATE_VERSION,
        started.elapsed().as_secs_f64(),
        restate.ingress_url()
    );
    let port = free_port()?;
    // The first process's read of notes/code.txt never returns in time: the kill lands in it.
    let mut first = ServiceProcess::start(service(live, root, port, 600_000)?, port).await?;
    let first_pid = first.id();
    restate
        .register(&format!("http://127.0.0.1:{port}"))
        .await?;
    println!("model: {}/{}", live.model.provider, live.model.id);
    println!("service process 1 (pid {first_pid}) serving on port {port}");
    println!("input: {PROMPT}");
    let ingress = restate.ingress_url();
    let mut run = tokio::spawn(prompt(ingress.clone()));

    // Wait until note.txt's read is journaled and notes/code.txt's has started (reads.log).
    let deadline = Instant::now() + WAIT;
    loop {
        let events = events_of(root, first_pid);
        let journaled = events
            .iter()
            .any(|e| e.starts_with("tool\tread\t") && e.ends_with("\tfalse\tfalse"));
        let slow = format!("{first_pid}\t{}", service::SLOW_FILE);
        if journaled && lines(&root.join("reads.log")).contains(&slow) {
            break;
        }
        if run.is_finished() {
            let outcome = (&mut run).await.map_err(|e| e.to_string())?;
            return Err(format!(
                "the run ended before notes/code.txt was read (events {events:?}): {outcome:?}"
            ));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "no journaled read of note.txt and read of notes/code.txt within {WAIT:?}; events: {events:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    first.kill();
    println!(
        "killed service process 1 (SIGKILL) while it read notes/code.txt, after note.txt's read was journaled"
    );

    let second = ServiceProcess::start(service(live, root, port, 1_000)?, port).await?;
    let second_pid = second.id();
    println!(
        "service process 2 (pid {second_pid}) serving on port {port}; Restate retries the run"
    );
    let reply = tokio::time::timeout(WAIT, &mut run)
        .await
        .map_err(|_| format!("the run did not finish within {WAIT:?} of the restart"))?
        .map_err(|e| e.to_string())??;
    if let Some(message) = &reply.message {
        let reason = serde_json::to_value(message.stop_reason).unwrap_or_default();
        println!("final stopReason: {}", reason.as_str().unwrap_or("?"));
    }
    println!("final answer: {}", reply.text.trim());
    let messages = transcript(&ingress).await?;
    println!("transcript roles: {}", roles(&messages).join(" -> "));
    for message in &messages {
        println!("  {}", describe(message));
    }
    check(root, &code, &reply, &messages, first_pid, second_pid)
}

fn check(
    root: &Path,
    code: &str,
    reply: &RunReply,
    messages: &[Message],
    first: u32,
    second: u32,
) -> Result<(), String> {
    if let Some(error) = &reply.error_message {
        return Err(format!("the run stopped early: {error}"));
    }
    if !reply.text.contains(code) {
        return Err(format!(
            "the reply {:?} does not contain the code {code}",
            reply.text
        ));
    }
    let reads = lines(&root.join("reads.log"));
    println!("reads.log: {}", reads.join(" | ").replace('\t', " "));
    let expected = [
        format!("{first}\tnote.txt"),
        format!("{first}\t{}", service::SLOW_FILE),
        format!("{second}\t{}", service::SLOW_FILE),
    ];
    if reads != expected {
        return Err(format!(
            "the reads were {reads:?}; expected note.txt once (process 1) and {} once in each process",
            service::SLOW_FILE
        ));
    }
    // Model requests: each turn exactly once over both processes.
    let (one, two) = (events_of(root, first), events_of(root, second));
    println!("process 1 events: {}", one.join(" | ").replace('\t', " "));
    println!("process 2 events: {}", two.join(" | ").replace('\t', " "));
    let requests = |events: &[String]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| e.strip_prefix("request\t").map(str::to_string))
            .collect()
    };
    if requests(&one) != ["0", "1"] || requests(&two) != ["2"] {
        return Err(format!(
            "model requests by turn: process 1 {:?}, process 2 {:?}; expected [0, 1] then [2]",
            requests(&one),
            requests(&two)
        ));
    }
    let replayed = ["model\t0\ttrue", "model\t1\ttrue"];
    for step in replayed {
        if !two.iter().any(|e| e == step) {
            return Err(format!(
                "process 2 did not take {step:?} from the journal: {two:?}"
            ));
        }
    }
    if !two
        .iter()
        .any(|e| e.starts_with("tool\tread\t") && e.ends_with("\ttrue\tfalse"))
    {
        return Err(format!(
            "process 2 did not take note.txt's read from the journal: {two:?}"
        ));
    }
    let history = roles(messages);
    let expected = [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
    ];
    if history != expected {
        return Err(format!(
            "the transcript is {}, expected {}",
            history.join(" -> "),
            expected.join(" -> ")
        ));
    }
    check_pairing(messages)?;
    for message in messages {
        if let Message::ToolResult(result) = message {
            let text: String = result.content.iter().filter_map(|c| c.as_text()).collect();
            if result.is_error || text == OUTCOME_UNKNOWN {
                return Err(format!("{} failed: {text}", result.tool_name));
            }
            if !(text == POINTER || text.contains(code)) {
                return Err(format!("a read returned {text:?}"));
            }
        }
    }
    Ok(())
}
