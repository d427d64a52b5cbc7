//! A session that cannot be written fails the command: `oxpi -p` run under a file-size limit
//! (the disk is "full" for it) prints the answer, says the session was not saved on stderr and
//! exits 1; `--mode rpc` writes a failure record for the prompt.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Stdio;

use common::*;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// `oxpi` under `sh`, with a file-size limit of 512 bytes (`ulimit -f 1`) and `SIGXFSZ`
/// ignored, so a write past the limit fails with `EFBIG` (as on a full disk).
fn limited_oxpi(d: &Dirs, args: &[String]) -> tokio::process::Command {
    let mut command = oxpi(d);
    let std = command.as_std_mut();
    let program = std.get_program().to_os_string();
    let mut shell = tokio::process::Command::new("sh");
    shell
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$@\"")
        .arg(program)
        .args(args)
        .current_dir(&d.project)
        .env("HOME", &d.home)
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    shell
}

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_says_the_session_was_not_saved_and_exits_1() {
    let d = dirs();
    let server = scripted_server().await;
    let mut args = model_args(&server);
    args.extend(["-p".to_string(), "hello".to_string()]);
    let out = run(limited_oxpi(&d, &args)).await;
    assert_eq!(out.stdout, "Echo: hello\n");
    assert!(
        out.stderr
            .contains("oxpi: the session was not saved: could not create")
            && out.stderr.contains("File too large"),
        "{}",
        out.stderr
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_reports_a_prompt_whose_messages_were_not_saved() {
    let d = dirs();
    let server = scripted_server().await;
    let mut args = model_args(&server);
    args.extend(["--mode".to_string(), "rpc".to_string()]);
    let mut command = limited_oxpi(&d, &args);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin
        .write_all(b"{\"id\":\"p1\",\"type\":\"prompt\",\"message\":\"hello\"}\n")
        .await
        .unwrap();
    let mut failures = Vec::new();
    loop {
        let line = tokio::time::timeout(DEADLINE, lines.next_line())
            .await
            .expect("a record within the deadline")
            .unwrap()
            .expect("oxpi ended before the prompt settled");
        let record: Value = serde_json::from_str(&line).unwrap();
        if record["type"] == "response" && record["success"] == false {
            failures.push(record.clone());
        }
        if record["type"] == "agent_settled" {
            break;
        }
    }
    drop(stdin);
    let _ = tokio::time::timeout(DEADLINE, child.wait()).await;
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0]["command"], "prompt");
    let error = failures[0]["error"].as_str().unwrap_or("");
    assert!(
        error.starts_with("the session was not saved: could not create")
            && error.contains("File too large"),
        "{error}"
    );
}
