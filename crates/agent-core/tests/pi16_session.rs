//! The event sequence of a run that uses every pi 1.6 hook, against pi-agent-core 1.6 itself:
//! `fixtures/pi/session16.json` was recorded by `bench/node/session16.mjs` on pi-ai's faux
//! provider (tools `echo`, `fail`, `boom`, `secret`; six calls in one reply; a blocked call, an
//! unknown tool, invalid arguments; `prepare_next_turn_with_context` adding a note,
//! `prepare_request` switching to `faux-2`, `finish_turn` continuing once). oxpi runs the same
//! script and must produce the same sequence, with `message_update` events left out (their
//! chunking is the faux providers', not the agents') and the completion order of the tools that
//! ran together taken as a set. When Node and npm are present, the same check runs against a
//! fresh recording (pi installed under the test's temporary directory); otherwise it says it
//! skips.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use oxpi_agent_core::{
    AfterToolCallResult, Agent, AgentEvent, AgentTool, AgentToolResult, RequestUpdate,
    ToolCallDecision, ToolError, ToolUpdateFn, TurnAction, TurnUpdate,
};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::{Message, StopReason, Usage, UserContent};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

struct Echo;

impl AgentTool for Echo {
    type Args = EchoArgs;
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Say the text back"
    }
    async fn execute(
        &self,
        _id: &str,
        args: EchoArgs,
        _cancel: CancellationToken,
        update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        update(AgentToolResult::text("working").with_details(json!({"progress": 0.5})));
        let usage = Usage {
            input: 3,
            output: 4,
            ..Usage::default()
        };
        Ok(AgentToolResult::text(args.text.clone())
            .with_details(json!({"length": args.text.len()}))
            .with_structured_content(json!({"echoed": args.text}))
            .with_usage(usage))
    }
}

/// A tool with no arguments: `fail` returns an error result, `boom` fails, `secret` is blocked.
struct Plain(&'static str);

impl AgentTool for Plain {
    type Args = NoArgs;
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "A scripted tool"
    }
    async fn execute(
        &self,
        _id: &str,
        _args: NoArgs,
        _cancel: CancellationToken,
        _update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        match self.0 {
            "fail" => Ok(AgentToolResult::text("it failed")
                .with_details(json!({"code": 7}))
                .with_structured_content(json!({"ok": false}))
                .as_error()),
            "boom" => Err(ToolError::new("boom went the tool")),
            _ => Ok(AgentToolResult::text("should not run")),
        }
    }
}

/// pi's `summary()` of `bench/node/pi16.mjs`, for oxpi's events.
fn summary(event: &AgentEvent) -> String {
    let message_what = |m: &Message| match m {
        Message::Assistant(a) => format!("assistant({},{})", a.model, json_name(&a.stop_reason)),
        Message::ToolResult(r) => format!("toolResult({},isError={})", r.tool_call_id, r.is_error),
        other => other.role().to_string(),
    };
    match event {
        AgentEvent::MessageStart { message } => format!("message_start {}", message_what(message)),
        AgentEvent::MessageEnd { message } => format!("message_end {}", message_what(message)),
        AgentEvent::MessageUpdate { .. } => "message_update".into(),
        AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
            format!("tool_execution_start {tool_call_id}")
        }
        AgentEvent::ToolExecutionUpdate { tool_call_id, .. } => {
            format!("tool_execution_update {tool_call_id}")
        }
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            is_error,
            duration_ms,
            ..
        } => format!(
            "tool_execution_end {tool_call_id} isError={is_error}{}",
            if duration_ms.is_some() {
                " durationMs"
            } else {
                ""
            }
        ),
        AgentEvent::TurnEnd {
            message: Message::Assistant(a),
            tool_results,
        } => format!(
            "turn_end {} toolResults={}",
            json_name(&a.stop_reason),
            tool_results.len()
        ),
        AgentEvent::AgentEnd { messages, .. } => format!("agent_end messages={}", messages.len()),
        other => json_type(other),
    }
}

fn json_name(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

/// Leaves out `message_update`s, drops the stop reason of a streaming assistant's
/// `message_start` (pi's partial says `pending`), and sorts each run of ends and updates of
/// tools that ran together (their completion order is the scheduler's).
fn normalize(sequence: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut concurrent: Vec<String> = Vec::new();
    let flush = |out: &mut Vec<String>, concurrent: &mut Vec<String>| {
        concurrent.sort();
        out.append(concurrent);
    };
    for line in sequence {
        if line.starts_with("message_update") {
            continue;
        }
        if line.starts_with("tool_execution_update") || line.ends_with("durationMs") {
            concurrent.push(line.clone());
            continue;
        }
        flush(&mut out, &mut concurrent);
        let line = match line.strip_prefix("message_start assistant(") {
            Some(rest) => format!(
                "message_start assistant({})",
                rest.split(',').next().unwrap()
            ),
            None => line.clone(),
        };
        out.push(line);
    }
    flush(&mut out, &mut concurrent);
    out
}

async fn oxpi_sequence() -> (Vec<String>, usize) {
    let faux = faux();
    let mut reply = FauxReply::text("Let me call the tools.");
    for (id, name, args) in [
        ("call_1", "echo", json!({"text": "hi"})),
        ("call_2", "fail", json!({})),
        ("call_3", "boom", json!({})),
        ("call_4", "secret", json!({})),
        ("call_5", "nope", json!({})),
        ("call_6", "echo", json!({})),
    ] {
        reply = and_call(reply, id, name, args);
    }
    faux.push(reply.with_stop_reason(StopReason::ToolUse));
    faux.push(FauxReply::text("done"));
    faux.push(FauxReply::text("anything else?"));
    let mut model = faux.model();
    model.id = "faux-1".into();
    let mut second = model.clone();
    second.id = "faux-2".into();
    let (requests, turns) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let agent = Agent::new(
        options(&faux)
            .with_model(model)
            .with_system_prompt("Be brief.")
            .with_session_id("session-16")
            .with_tools([
                handle(Echo),
                handle(Plain("fail")),
                handle(Plain("boom")),
                handle(Plain("secret")),
            ])
            .with_before_tool_call(|call| async move {
                if call.tool_call.name == "secret" {
                    ToolCallDecision::block("secret is not allowed")
                } else {
                    ToolCallDecision::Allow
                }
            })
            .with_after_tool_call(|after| async move {
                match after.tool_call.name.as_str() {
                    "echo" => {
                        let mut details = after.result.details.clone().unwrap_or(json!({}));
                        details["audited"] = json!(true);
                        Some(AfterToolCallResult::new().with_details(details))
                    }
                    "fail" => Some(
                        AfterToolCallResult::new()
                            .with_content(vec![UserContent::text("it failed (reviewed)")]),
                    ),
                    _ => None,
                }
            })
            .with_prepare_request(move |_request, _cancel| {
                let n = requests.fetch_add(1, Ordering::SeqCst) + 1;
                let update = (n == 2).then(|| RequestUpdate::new().with_model(second.clone()));
                async move { update }
            })
            .with_prepare_next_turn_with_context(|turn, _cancel| async move {
                (!turn.tool_results.is_empty()).then(|| {
                    TurnUpdate::new().with_messages([Message::user("note from prepareNextTurn")])
                })
            })
            .with_finish_turn(move |_turn, _cancel| {
                let n = turns.fetch_add(1, Ordering::SeqCst) + 1;
                async move { (n == 2).then_some(TurnAction::Continue) }
            }),
    );
    let sequence: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = sequence.clone();
    let _sub = agent.subscribe(move |e| sink.lock().unwrap().push(summary(e)));
    agent.prompt("go").await.unwrap();
    let sequence = sequence.lock().unwrap().clone();
    (sequence, faux.call_count())
}

fn recorded_sequence(recording: &Value) -> Vec<String> {
    recording["sequence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_every_hook_session_has_pi_1_6s_event_sequence() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pi/session16.json");
    let recording: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (ours, requests) = oxpi_sequence().await;
    assert_eq!(requests, recording["requests"].as_u64().unwrap() as usize);
    assert_eq!(normalize(&ours), normalize(&recorded_sequence(&recording)));
}

/// Records `bench/node/session16.mjs` with pi 1.6 installed under the test's temporary
/// directory, or says why it cannot.
fn record_with_node() -> Result<Value, String> {
    use std::process::Command;
    let works = |program: &str| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !works("node") || !works("npm") {
        return Err("node or npm is not installed".into());
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("pi16-node");
    let installed = dir.join("node_modules/@earendil-works/pi-agent-core/package.json");
    if !installed.is_file() {
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
            .arg(&dir)
            .args([
                "@earendil-works/pi-agent-core@1.6.0",
                "@earendil-works/pi-ai@1.6.0",
            ])
            .status()
            .map_err(|e| format!("npm did not start: {e}"))?;
        if !status.success() {
            return Err(format!("npm install of pi 1.6 failed ({status})"));
        }
    }
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/node/session16.mjs");
    let output = Command::new("node")
        .arg(script)
        .arg(&dir)
        .output()
        .map_err(|e| format!("node did not start: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "session16.mjs failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("session16.mjs printed no JSON: {e}"))
}

#[tokio::test]
async fn the_same_session_recorded_now_with_node_matches_too() {
    let recording = match tokio::task::spawn_blocking(record_with_node).await.unwrap() {
        Ok(recording) => recording,
        Err(why) => {
            println!("skipping the live pi 1.6 comparison: {why}");
            return;
        }
    };
    let (ours, _) = oxpi_sequence().await;
    assert_eq!(normalize(&ours), normalize(&recorded_sequence(&recording)));
}
