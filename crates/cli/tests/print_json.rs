//! `oxpi -p` and `oxpi --mode json` as processes against a scripted Chat Completions server:
//! what goes to stdout and stderr, the exit code, the session file, the tools and the context
//! files the requests carry.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_runs_a_tool_prints_the_final_text_and_writes_a_session() {
    let d = dirs();
    std::fs::write(
        d.project.join("notes.txt"),
        "the answer is 42\nsecond line\n",
    )
    .unwrap();
    std::fs::write(d.project.join("AGENTS.md"), "Always answer in haiku.").unwrap();
    let server = scripted_server().await;
    let mut command = oxpi(&d);
    command
        .args(model_args(&server))
        .args(["-p", "please read notes.txt"]);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "Done: the answer is 42\n");
    assert!(
        !out.stderr.contains('\u{1b}'),
        "no status line without a terminal: {:?}",
        out.stderr
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].json();
    let system = first["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        system.contains(&format!(
            "<project_instructions path=\"{}\">\nAlways answer in haiku.\n</project_instructions>",
            d.project.join("AGENTS.md").display()
        )),
        "{system}"
    );
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read", "bash", "edit", "write"]);

    let files = session_files(&d.home);
    assert_eq!(files.len(), 1, "one new session file per run: {files:?}");
    let expected_dir = oxpi_session::session_dir_for(&d.home.join(".pi/agent"), &d.project);
    assert_eq!(files[0].parent(), Some(expected_dir.as_path()));
    let lines = json_lines(&std::fs::read_to_string(&files[0]).unwrap());
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["cwd"], json!(d.project.to_string_lossy()));
    let roles: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "message")
        .map(|l| l["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "toolResult", "assistant"],
        "pi 1.6 keeps the system prompt and tools as the transcript's first message"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_carries_the_history_and_no_session_writes_nothing() {
    let d = dirs();
    let server = scripted_server().await;
    let mut first = oxpi(&d);
    first
        .args(model_args(&server))
        .args(["-p", "first question"]);
    assert_eq!(run(first).await.stdout, "Echo: first question\n");

    let mut second = oxpi(&d);
    second
        .args(model_args(&server))
        .args(["-c", "-p", "second question"]);
    let out = run(second).await;
    assert_eq!(out.stdout, "Echo: second question\n", "{}", out.stderr);
    let sent = messages(&server.requests()[1]);
    let texts: Vec<String> = sent.iter().map(|m| m["content"].to_string()).collect();
    assert!(
        texts.iter().any(|t| t.contains("first question")),
        "{texts:?}"
    );
    assert_eq!(
        session_files(&d.home).len(),
        1,
        "-c appends to the same file"
    );

    let mut third = oxpi(&d);
    third
        .args(model_args(&server))
        .args(["--no-session", "--no-tools", "-p", "third"]);
    let out = run(third).await;
    assert_eq!(out.stdout, "Echo: third\n");
    assert_eq!(
        session_files(&d.home).len(),
        1,
        "--no-session writes no file"
    );
    let request = server.requests()[2].json();
    assert!(
        request
            .get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
        "{request}"
    );
    assert_eq!(
        messages(&server.requests()[2]).len(),
        2,
        "system and the prompt only"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_request_goes_to_stderr_with_exit_code_1() {
    let d = dirs();
    let server = oxpi_testkit::TestServer::start(vec![oxpi_testkit::Reply::json_error(
        400,
        r#"{"error":{"message":"model scripted-1 is not served here"}}"#,
    )])
    .await
    .unwrap();
    let mut command = oxpi(&d);
    command.args(model_args(&server)).args(["-p", "hi"]);
    let out = run(command).await;
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("is not served here"), "{}", out.stderr);

    let mut bad = oxpi(&d);
    bad.args(["--model", "no-such-model-anywhere", "-p", "hi"]);
    let out = run(bad).await;
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stderr.trim(), "Model not found: no-such-model-anywhere");

    // A near miss names the catalogue's closest ids.
    let mut typo = oxpi(&d);
    typo.args(["--model", "claude-haiku-4-5x", "-p", "hi"]);
    let out = run(typo).await;
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .starts_with("Model not found: claude-haiku-4-5x (did you mean claude-haiku-4-5"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn json_mode_writes_the_header_then_pi_s_event_records() {
    let d = dirs();
    std::fs::write(d.project.join("notes.txt"), "hello\n").unwrap();
    let server = scripted_server().await;
    let mut command = oxpi(&d);
    command
        .args(model_args(&server))
        .args(["--mode", "json", "read notes.txt"]);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.ends_with('\n') && !out.stdout.contains('\r'));
    let records = json_lines(&out.stdout);
    assert_eq!(records[0]["type"], "session");
    assert_eq!(records[0]["version"], 3);
    let types: Vec<&str> = records
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.last(), Some(&"agent_settled"));
    assert_eq!(records.last().unwrap()["aborted"], false);
    for expected in [
        "agent_start",
        "turn_start",
        "message_start",
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "turn_end",
        "agent_end",
    ] {
        assert!(types.contains(&expected), "{expected} missing: {types:?}");
    }
    for update in records.iter().filter(|r| r["type"] == "message_update") {
        assert!(
            update.get("message").is_none(),
            "no cumulative message: {update}"
        );
        assert!(update["assistantMessageEvent"].get("partial").is_none());
        assert!(update["usage"].is_object(), "{update}");
    }
    let start = records
        .iter()
        .find(|r| r["assistantMessageEvent"]["type"] == "toolcall_start")
        .expect("a toolcall_start");
    assert_eq!(start["assistantMessageEvent"]["toolName"], "read");
    assert_eq!(start["assistantMessageEvent"]["id"], "call_1");
    let end = records.iter().find(|r| r["type"] == "agent_end").unwrap();
    assert_eq!(end["willRetry"], false);
    let last_text: Value = records
        .iter()
        .rev()
        .find(|r| r["type"] == "message_end")
        .unwrap()["message"]["content"][0]["text"]
        .clone();
    assert_eq!(last_text, "Done: hello");
}
