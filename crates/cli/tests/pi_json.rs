//! `oxpi --mode json` against pi-coding-agent 1.6's `pi --mode json` on the same scripted
//! server and the same prompt (a tool call, then text): the same records in the same order,
//! record by record the same field names and value kinds (ids, timestamps and values are not
//! compared). Skips with a line saying so when Node is missing.

#![allow(clippy::unwrap_used)]

mod common;

use common::pi;
use common::*;
use serde_json::Value;

async fn pi_records(prefix: &std::path::Path, prompt: &str) -> Vec<Value> {
    let d = dirs();
    std::fs::write(d.project.join("notes.txt"), "hello from the file\n").unwrap();
    let server = scripted_server().await;
    pi::configure(&d.home, server.base_url());
    let mut command = tokio::process::Command::new(pi::node(prefix));
    command
        .arg(pi::cli(prefix))
        .args([
            "--mode",
            "json",
            "--provider",
            "scripted",
            "--model",
            "scripted-1",
            prompt,
        ])
        .current_dir(&d.project)
        .env("HOME", &d.home)
        .env("PI_OFFLINE", "1")
        .env_remove("PI_CODING_AGENT_DIR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "pi failed: {}", out.stderr);
    json_lines(&out.stdout)
}

async fn oxpi_records(prompt: &str) -> Vec<Value> {
    let d = dirs();
    std::fs::write(d.project.join("notes.txt"), "hello from the file\n").unwrap();
    let server = scripted_server().await;
    let mut command = oxpi(&d);
    command
        .args(model_args(&server))
        .args(["--mode", "json", prompt]);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "oxpi failed: {}", out.stderr);
    json_lines(&out.stdout)
}

/// Fields whose content differs by design (docs/differences-from-pi.md, "oxpi --mode json"):
/// the system prompt's sections and the tools' schemas are oxpi's own, a tool's `details` are
/// oxpi's tool details (pi 1.6 sends `structuredContent`), and pi-coding-agent's extra fields
/// on a finished reply (`durationMs`, `rawStopReason`, `responseModel`, `thinkingLevel`) are not
/// recorded by oxpi's agent. In `usage`, oxpi-ai's Chat Completions usage has no `reasoning`
/// count, and a `message_update` carries the usage the reply started with (pi's partial has
/// the provider's `totalFromProvider` flag once the usage chunk is read).
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
    "thinkingLevel",
];

fn kind(record: &Value) -> String {
    let mut kind = record["type"].as_str().unwrap_or("?").to_string();
    if let Some(inner) = record["assistantMessageEvent"]["type"].as_str() {
        kind = format!("{kind}/{inner}");
    }
    kind
}

#[tokio::test(flavor = "multi_thread")]
async fn json_mode_records_match_pi_s_record_by_record() {
    let Some(prefix) = pi::pi("json_mode_records_match_pi_s_record_by_record") else {
        return;
    };
    let prompt = "please read notes.txt";
    let theirs = pi_records(&prefix, prompt).await;
    let ours = oxpi_records(prompt).await;
    let their_kinds: Vec<String> = theirs.iter().map(kind).collect();
    for r in &theirs {
        eprintln!("PI {r}");
    }
    for r in &ours {
        eprintln!("OX {r}");
    }
    let our_kinds: Vec<String> = ours.iter().map(kind).collect();
    assert_eq!(our_kinds, their_kinds, "the same records in the same order");
    let mut differences = Vec::new();
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        let (a, b) = (
            pi::shape(&pi::without(a, NOT_COMPARED)),
            pi::shape(&pi::without(b, NOT_COMPARED)),
        );
        if a != b {
            differences.push(format!(
                "record {i} ({}):\n oxpi {a}\n pi   {b}",
                kind(&ours[i])
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
