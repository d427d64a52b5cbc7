//! `SIGTERM` / `SIGHUP` to `oxpi` while the model's `bash` command runs a tree of processes: as
//! pi 1.6, the tree is killed, the tool's temporary directory removed, and the command exits
//! 143 / 129. Real processes throughout: the tree is found in `/proc` by its unique arguments.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::{dirs, model_args, oxpi, text_reply, tool_reply, DEADLINE};
use oxpi_testkit::TestServer;
use serde_json::json;
use tokio::io::AsyncWriteExt;

/// A model whose first reply runs `command` with `bash`; it answers anything after that with text.
async fn server_running(command: String) -> TestServer {
    TestServer::start_fn(move |request| {
        let messages = common::messages(request);
        if messages.iter().any(|m| m["role"] == "tool") {
            return text_reply("done");
        }
        tool_reply("call_1", "bash", &json!({"command": command}))
    })
    .await
    .unwrap()
}

/// A tree of four: two in the background, one in a session of its own, one in the foreground,
/// each `sleep` with an argument no other process has.
fn tree_command(tag: &str) -> String {
    format!(
        "sleep 1000.{tag}1 & sleep 1000.{tag}2 & (setsid sleep 1000.{tag}3 &); sleep 1000.{tag}4"
    )
}

/// The live (not zombie) processes whose command line holds `sleep 1000.<tag>`.
fn tree_pids(tag: &str) -> Vec<i32> {
    let needle = format!("sleep\0{}", format_args!("1000.{tag}"));
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(&needle) {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .unwrap_or("Z");
        if state != "Z" && state != "X" {
            pids.push(pid);
        }
    }
    pids
}

/// The `oxpi-bash-tmp-*` directories in `tmp`.
fn bash_temp_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("oxpi-bash-tmp-"))
        .collect()
}

/// Polls until the whole tree runs (no fixed sleep: each poll is a look at `/proc`).
async fn until_tree_runs(tag: &str) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while tree_pids(tag).len() < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tree never ran: {:?}",
            tree_pids(tag)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn signal_ends_the_tree(rpc: bool, signal: &str, code: i32) {
    let dirs = dirs();
    let tmp = dirs.project.parent().unwrap().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let tag = format!("{}{}", std::process::id(), code);
    let server = server_running(tree_command(&tag)).await;
    let mut command = oxpi(&dirs);
    command.env("TMPDIR", &tmp).args(model_args(&server));
    if rpc {
        command
            .args(["--mode", "rpc"])
            .stdin(std::process::Stdio::piped());
    } else {
        command.args(["-p", "run the tree"]);
    }
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take();
    if let Some(stdin) = &mut stdin {
        let line = json!({"type": "prompt", "message": "run the tree"}).to_string();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }
    until_tree_runs(&tag).await;
    assert_eq!(
        bash_temp_dirs(&tmp).len(),
        1,
        "the tool's temporary directory"
    );
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = tokio::time::timeout(DEADLINE, child.wait())
        .await
        .expect("oxpi exits after the signal")
        .unwrap();
    assert_eq!(status.code(), Some(code), "{signal}: {status:?}");
    assert_eq!(
        tree_pids(&tag),
        Vec::<i32>::new(),
        "processes of the tree survived"
    );
    assert_eq!(bash_temp_dirs(&tmp), Vec::<String>::new());
    drop(stdin);
}

#[tokio::test]
async fn sigterm_in_print_mode_kills_the_command_tree_and_exits_143() {
    signal_ends_the_tree(false, "TERM", 143).await;
}

#[tokio::test]
async fn sighup_in_rpc_mode_kills_the_command_tree_and_exits_129() {
    signal_ends_the_tree(true, "HUP", 129).await;
}
