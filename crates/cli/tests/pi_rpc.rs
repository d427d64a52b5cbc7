//! `oxpi --mode rpc` driven by pi-coding-agent 1.6's own exported `RpcClient` (Node 22), and
//! the same client driving `pi --mode rpc`, on the same scripted Chat Completions server and
//! the same scenario (tests/common/rpc_driver.mjs): a prompt with a tool call, steering while a
//! tool runs, abort mid-stream, bash, get_messages, compact, fork and switch_session. Each step's
//! answer and events are compared after normalising ids, timestamps, paths and durations.
//! Skips with a line saying so when Node or npm is missing.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::pi;
use common::*;
use oxpi_testkit::{Part, Reply, TestServer};
use serde_json::{json, Value};

/// The bash command the model asks for in the steering step: it waits (bounded, 60 s) for the
/// file `go`, which the client creates once its `steer` was answered.
const WAIT_FOR_GO: &str =
    "i=0; while [ ! -f go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo waited";

/// The scripted model of this scenario (see the module doc).
async fn server() -> TestServer {
    TestServer::start_fn(|request| {
        let messages = messages(request);
        let last = messages.last().cloned().unwrap_or_default();
        let prompt = last_user_text(request);
        let has_tools = request.json()["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty());
        if !has_tools {
            // A summary request (pi's and oxpi's come without tools): the history's summary,
            // or the short one of a split turn's start.
            if prompt.contains("<conversation>") {
                return text_reply("## Goal\nRead notes.txt and big.txt, wait for go.");
            }
            return text_reply("The turn began by reading big.txt.");
        }
        if last["role"] == "tool" {
            let content = match &last["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let first = content.lines().next().unwrap_or("").to_string();
            return text_reply(&format!("Done: {first}"));
        }
        if let Some(rest) = prompt.split("read ").nth(1) {
            let file = rest.split_whitespace().next().unwrap_or("");
            return tool_reply("call_1", "read", &json!({"path": file}));
        }
        if prompt.contains("wait for go") {
            return tool_reply("call_2", "bash", &json!({"command": WAIT_FOR_GO}));
        }
        if prompt.contains("slow") {
            return Reply::sse_parts(vec![
                Part::Bytes(
                    chunk(json!({"role": "assistant", "content": "thinking"}), None).into_bytes(),
                ),
                Part::Stall,
            ]);
        }
        text_reply(&format!("Echo: {prompt}"))
    })
    .await
    .expect("start the scripted server")
}

/// A JS entry the client can start with `node`: it runs the oxpi binary with the same
/// arguments and stdio, passing SIGTERM on.
const OXPI_SHIM: &str = r#"import { spawn } from "node:child_process";
const child = spawn(process.env.OXPI_BIN, process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
"#;

/// Which agent the client starts.
enum Agent {
    Pi,
    Oxpi,
}

/// Runs the driver for `agent` in fresh directories; returns its steps and the directories'
/// paths (for normalising).
async fn drive(prefix: &Path, agent: Agent) -> (Vec<Value>, Vec<String>) {
    let d = dirs();
    std::fs::write(d.project.join("notes.txt"), "hello from the file\n").unwrap();
    // 1,000 lines of 47 bytes: under the read tool's limits, about 11,750 tokens by pi's
    // estimate, so that two reads pass compaction's 20,000 kept tokens.
    let big: String = (1..=1000)
        .map(|i| format!("line {i:04} of the big file, filling the context\n"))
        .collect();
    std::fs::write(d.project.join("big.txt"), big).unwrap();
    let server = server().await;
    let package = prefix.join("node_modules/@earendil-works/pi-coding-agent");
    let (cli, args) = match agent {
        Agent::Pi => {
            pi::configure(&d.home, server.base_url());
            (
                pi::cli(prefix),
                vec![
                    "--provider".to_string(),
                    "scripted".into(),
                    "--model".into(),
                    "scripted-1".into(),
                ],
            )
        }
        Agent::Oxpi => {
            let shim = d.home.join("oxpi-shim.mjs");
            std::fs::write(&shim, OXPI_SHIM).unwrap();
            (shim, model_args(&server))
        }
    };
    let node_bin = pi::node(prefix).parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let config = json!({
        "clientModule": package.join("dist/modes/rpc/rpc-client.js"),
        "cliPath": cli,
        "args": args,
        "cwd": d.project,
        "env": {
            "HOME": d.home,
            "PI_OFFLINE": "1",
            "PATH": path,
            "OXPI_BIN": env!("CARGO_BIN_EXE_oxpi"),
        },
    });
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/rpc_driver.mjs");
    let mut command = tokio::process::Command::new(pi::node(prefix));
    command
        .arg(driver)
        .arg(config.to_string())
        .current_dir(&d.project)
        .env("HOME", &d.home)
        .env("PATH", &path)
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "the driver failed: {}", out.stderr);
    let result: Value = serde_json::from_str(out.stdout.trim()).expect("the driver's JSON");
    let steps = result["steps"].as_array().cloned().unwrap_or_default();
    let paths = vec![
        d.project.display().to_string(),
        d.home.display().to_string(),
    ];
    (steps, paths)
}

/// Keys left out of the comparison, by design (docs/differences-from-pi.md, "oxpi --mode
/// rpc"): as in `--mode json`, the system prompt's sections and the tools' schemas are oxpi's
/// own, a tool's `details` are oxpi's tool details, pi's extra fields on a finished reply are
/// not recorded by oxpi's agent, and oxpi-ai's Chat Completions usage has no `reasoning`
/// count.
const NOT_COMPARED: &[&str] = &[
    "reasoning",
    "totalFromProvider",
    "sections",
    "toolsAdded",
    "details",
    "structuredContent",
    "durationMs",
    "rawStopReason",
    "responseModel",
    // oxpi-ai's classification of a failed or aborted reply, beside pi's `errorMessage`
    // (docs/differences-from-pi.md, "failureKind").
    "failureKind",
];

/// Keys left out of the comparison inside `message_update` records: a streamed partial's usage
/// (oxpi-ai's partial carries the usage the reply started with, pi's the usage chunk once read).
const NOT_COMPARED_IN_UPDATES: &[&str] = &["usage"];

/// Keys whose values are run-specific (ids, times, files, the server's port) or set by how
/// the model is configured (pi names the scripted provider in models.json, oxpi reaches it
/// with `--base-url`): only their presence is compared.
const OPAQUE: &[&str] = &[
    "id",
    "entryId",
    "parentId",
    "sessionId",
    "timestamp",
    "firstKeptEntryId",
    "sessionFile",
    "baseUrl",
    "provider",
    "maxTokens",
    "estimatedTokensAfter",
];

/// `value` normalised for the comparison: [`NOT_COMPARED`] keys dropped, [`OPAQUE`] values
/// replaced by their key, a model object by its id, the run's directories by placeholders, a
/// message's `thinkingLevel` (pi-coding-agent's extra field) dropped.
fn normalise(value: &Value, paths: &[String]) -> Value {
    match value {
        Value::Object(map) => {
            let is_message = map.contains_key("role");
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                if NOT_COMPARED.contains(&k.as_str()) || (is_message && k == "thinkingLevel") {
                    continue;
                }
                let v = if OPAQUE.contains(&k.as_str()) && !v.is_null() {
                    json!(format!("<{k}>"))
                } else if k == "model" && v.is_object() {
                    v["id"].clone()
                } else {
                    normalise(v, paths)
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| normalise(v, paths)).collect()),
        Value::String(s) => {
            let mut s = s.clone();
            for (i, path) in paths.iter().enumerate() {
                s = s.replace(path.as_str(), &format!("<dir{i}>"));
            }
            Value::String(s)
        }
        other => other.clone(),
    }
}

/// A step's answer and events, normalised. `tool_execution_update` records are left out: how
/// a command's output is split into updates depends on timing.
fn normalised_step(step: &Value, paths: &[String]) -> Value {
    let events: Vec<Value> = step["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"] != "tool_execution_update")
        .map(|e| {
            if e["type"] == "message_update" {
                normalise(&pi::without(e, NOT_COMPARED_IN_UPDATES), paths)
            } else {
                normalise(e, paths)
            }
        })
        .collect();
    let mut out = json!({"name": step["name"], "events": events});
    match step.get("error") {
        Some(error) => out["error"] = normalise(error, paths),
        None => out["data"] = normalise(&step["data"], paths),
    }
    out
}

/// Where `a` and `b` differ: one line per differing leaf (path, ours, theirs).
fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                if x.contains_key(k) != y.contains_key(k) {
                    out.push(format!(
                        "{path}.{k}: only in {}",
                        if x.contains_key(k) { "oxpi" } else { "pi" }
                    ));
                } else {
                    differences(&format!("{path}.{k}"), va, vb, out);
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if a != b => {
            let short = |v: &Value| v.to_string().chars().take(300).collect::<String>();
            out.push(format!("{path}:\n  oxpi {}\n  pi   {}", short(a), short(b)));
        }
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pi_s_rpc_client_gets_the_same_answers_from_oxpi_as_from_pi() {
    let Some(prefix) = pi::pi("pi_s_rpc_client_gets_the_same_answers_from_oxpi_as_from_pi") else {
        return;
    };
    let (theirs, their_paths) = drive(&prefix, Agent::Pi).await;
    let (ours, our_paths) = drive(&prefix, Agent::Oxpi).await;
    let names = |steps: &[Value]| -> Vec<String> {
        steps
            .iter()
            .map(|s| s["name"].as_str().unwrap_or("?").to_string())
            .collect()
    };
    assert_eq!(names(&ours), names(&theirs), "the same steps ran");
    assert!(names(&ours).len() >= 15, "the whole scenario ran");
    let mut found = Vec::new();
    for (a, b) in ours.iter().zip(&theirs) {
        let (a, b) = (
            normalised_step(a, &our_paths),
            normalised_step(b, &their_paths),
        );
        differences(a["name"].as_str().unwrap_or("?"), &a, &b, &mut found);
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
