//! The `bash` tool as pi 1.6 has it: texts, limits and notices, exit codes, streamed output,
//! timeouts, aborts and daemons, with real processes (unconfined: the sandbox has its tests in
//! `bash_sandbox.rs`).

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

mod bash_common;

use std::time::Duration;

use bash_common::{alive, kill, pids, run, run_with, text, wait_for, TREE, TREE_SIZE};
use oxpi_agent_core::AgentToolHandle;
use oxpi_tools::{BashTool, Sandbox, Workspace};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn tool(dir: &tempfile::TempDir) -> BashTool {
    BashTool::new(Workspace::new(dir.path()).unwrap()).with_sandbox(Sandbox::None)
}

#[test]
fn definition_is_pi_s() {
    let dir = tempfile::tempdir().unwrap();
    let handle = AgentToolHandle::new(tool(&dir)).unwrap();
    let def = handle.definition();
    assert_eq!(def.name, "bash");
    assert_eq!(
        def.description,
        "Execute a bash command in the current working directory. Returns stdout and stderr. \
         Output is truncated to last 2000 lines or 50KB (whichever is hit first). If \
         truncated, full output is saved to a temp file. Optionally provide a timeout in \
         seconds."
    );
    let params = &def.parameters;
    assert_eq!(params["required"], json!(["command"]));
    assert_eq!(params["properties"]["command"]["type"], "string");
    assert_eq!(
        params["properties"]["command"]["description"],
        "Shell command to execute"
    );
    assert_eq!(
        params["properties"]["timeout"]["description"],
        "Timeout in seconds (optional, no default timeout)"
    );
}

#[tokio::test]
async fn stdout_and_stderr_come_back_combined_with_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        tool(&dir),
        json!({"command": "echo out; echo err >&2; echo again"}),
    )
    .await;
    assert_eq!(out.text(), "out\nerr\nagain\n");
    let details = out.details();
    assert_eq!(details.exit_code, 0);
    assert_eq!(details.output, "out\nerr\nagain\n");
    assert!(!details.truncated);
    assert_eq!(details.full_output_path, None);
    assert_eq!(details.truncation, None);
}

#[tokio::test]
async fn a_non_zero_exit_code_is_an_error_result_with_details() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(tool(&dir), json!({"command": "echo out; exit 3"})).await;
    let err = out.result.as_ref().unwrap_err();
    assert_eq!(err.message, "out\n\n\nCommand exited with code 3");
    assert_eq!(out.details().exit_code, 3);
    assert_eq!(out.details().output, "out\n");

    let silent = run(tool(&dir), json!({"command": "exit 2"})).await;
    assert_eq!(silent.text(), "(no output)\n\nCommand exited with code 2");
    let nothing = run(tool(&dir), json!({"command": "true"})).await;
    assert_eq!(nothing.text(), "(no output)");
    assert!(nothing.result.is_ok());
    // A shell killed by a signal: 128 + the signal, as shells report it.
    let killed = run(tool(&dir), json!({"command": "kill -9 $$"})).await;
    assert_eq!(killed.text(), "(no output)\n\nCommand exited with code 137");
}

#[tokio::test]
async fn runs_in_the_workspace_root_with_the_tool_s_environment() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let out = run(
        tool(&dir).env("PI_MODEL", "qwen"),
        json!({"command": "pwd; echo $PI_MODEL; test -n \"$OXPI_BASH_RUN\" && echo marked"}),
    )
    .await;
    assert_eq!(out.text(), format!("{}\nqwen\nmarked\n", root.display()));
}

#[tokio::test]
async fn timeouts_are_checked_as_pi_checks_them() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [json!(0), json!(-1)] {
        let out = run(tool(&dir), json!({"command": "true", "timeout": bad})).await;
        assert_eq!(
            out.text(),
            "Invalid timeout: must be a finite number of seconds"
        );
    }
    let out = run(tool(&dir), json!({"command": "true", "timeout": 3e6})).await;
    assert_eq!(
        out.text(),
        "Invalid timeout: maximum is 2147483.647 seconds"
    );
    let shell = run(
        tool(&dir).shell("/nonexistent/bash"),
        json!({"command": "true"}),
    )
    .await;
    assert_eq!(
        shell.text(),
        "Custom shell path not found: /nonexistent/bash"
    );
}

#[tokio::test]
async fn the_line_limit_keeps_the_last_2000_lines_and_the_file_everything() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(tool(&dir), json!({"command": "seq 1 2500"})).await;
    let details = out.details();
    let file = details.full_output_file.clone().unwrap();
    let shown: Vec<String> = (501..=2500).map(|i| i.to_string()).collect();
    assert_eq!(
        out.text(),
        format!(
            "{}\n\n[Showing lines 501-2500 of 2500. Full output: {file}]",
            shown.join("\n")
        )
    );
    let all: String = (1..=2500).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), all);
    let t = details.truncation.unwrap();
    assert_eq!(
        (t.truncated_by.as_deref(), t.total_lines, t.output_lines),
        (Some("lines"), 2500, 2000)
    );
    // The structured output is whole (under 1 MB), so it has no path of its own.
    assert_eq!(details.output, all);
    assert!(!details.truncated);
    assert_eq!(details.full_output_path, None);
    std::fs::remove_file(file).unwrap();
}

#[tokio::test]
async fn the_byte_limit_keeps_the_last_50kb_of_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    // 2000 lines of 100 digits: 202,000 bytes. 506 lines (101 × 506 − 1 bytes) fit in 51,200.
    let out = run(
        tool(&dir),
        json!({"command": "for i in $(seq 1 2000); do printf '%0100d\\n' $i; done"}),
    )
    .await;
    let details = out.details();
    let file = details.full_output_file.clone().unwrap();
    let shown: Vec<String> = (1495..=2000).map(|i| format!("{i:0100}")).collect();
    assert_eq!(
        out.text(),
        format!(
            "{}\n\n[Showing lines 1495-2000 of 2000 (50KB limit). Full output: {file}]",
            shown.join("\n")
        )
    );
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 202_000);
    std::fs::remove_file(file).unwrap();
}

#[tokio::test]
async fn one_long_line_shows_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        tool(&dir),
        json!({"command": "head -c 100000 /dev/zero | tr '\\0' a"}),
    )
    .await;
    let file = out.details().full_output_file.unwrap();
    assert_eq!(
        out.text(),
        format!(
            "{}\n\n[Showing last 50KB of line 1 (line is 97.7KB). Full output: {file}]",
            "a".repeat(51_200)
        )
    );
    std::fs::remove_file(file).unwrap();
}

#[tokio::test]
async fn one_long_line_ending_in_a_newline_shows_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        tool(&dir),
        json!({"command": "head -c 300000 /dev/zero | tr '\\0' a; echo"}),
    )
    .await;
    let file = out.details().full_output_file.unwrap();
    assert_eq!(
        out.text(),
        format!(
            // pi's notice names the size of the line still open, which after the final
            // newline is empty: "line is 0B", as pi 1.6 prints it.
            "{}\n\n[Showing last 50KB of line 1 (line is 0B). Full output: {file}]",
            "a".repeat(51_200)
        )
    );
    std::fs::remove_file(file).unwrap();
}

/// pi starts the command detached (a session of its own): it has no controlling terminal, so
/// it cannot type into the agent's (`TIOCSTI`) or stop on a prompt (`ssh`, `sudo`).
#[tokio::test]
async fn the_command_runs_in_a_session_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    // Field 6 of /proc/<pid>/stat is the session id; the shell's pid is `$$`.
    let out = run(
        tool(&dir),
        json!({"command": "echo $$ $(cut -d')' -f2- /proc/$$/stat | cut -d' ' -f5)"}),
    )
    .await;
    let text = out.text();
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(fields.len(), 2, "{text}");
    assert_eq!(
        fields[0], fields[1],
        "the shell leads its own session: {text}"
    );
    let own = std::fs::read_to_string("/proc/self/stat").unwrap();
    let own_session = own
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(3)
        .unwrap();
    assert_ne!(fields[1], own_session);
}

#[tokio::test]
async fn partial_output_streams_as_updates() {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    // The command waits for the test to see "one" in an update before it prints "two".
    let seen_go = go.clone();
    let out = run_with(
        tool(&dir),
        json!({"command": "echo one; while [ ! -e go ]; do sleep 0.05; done; echo two"}),
        CancellationToken::new(),
        move |partial| {
            if text(partial) == "one\n" {
                std::fs::write(&seen_go, "").unwrap();
            }
        },
    )
    .await;
    assert_eq!(out.text(), "one\ntwo\n");
    assert!(go.exists(), "no update carried the first line");
    assert_eq!(out.updates[0].content, vec![], "the first update is empty");
    assert_eq!(text(out.updates.last().unwrap()), "one\ntwo\n");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        tool(&dir),
        json!({"command": format!("echo started; {TREE}"), "timeout": 5}),
    )
    .await;
    assert_eq!(
        out.text(),
        // pi's shape: the output as it is, a blank line, the status.
        "started\n\n\nCommand timed out after 5 seconds"
    );
    let pids = pids(&dir.path().join("pids.txt"));
    assert_eq!(
        pids.len(),
        TREE_SIZE,
        "the tree did not start in 5 s: {pids:?}"
    );
    let all_dead = wait_for(Duration::from_secs(10), || pids.iter().all(|p| !alive(*p))).await;
    pids.iter().for_each(|p| kill(*p));
    assert!(all_dead, "still running: {pids:?}");
}

#[tokio::test]
async fn an_abort_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let pid_file = dir.path().join("pids.txt");
    let (file, trigger) = (pid_file.clone(), cancel.clone());
    let watcher = tokio::spawn(async move {
        wait_for(Duration::from_secs(60), || pids(&file).len() == TREE_SIZE).await;
        trigger.cancel();
    });
    let out = run_with(tool(&dir), json!({"command": TREE}), cancel, |_| {}).await;
    watcher.await.unwrap();
    assert_eq!(out.text(), "Command aborted");
    let pids = pids(&pid_file);
    assert_eq!(pids.len(), TREE_SIZE);
    let all_dead = wait_for(Duration::from_secs(10), || pids.iter().all(|p| !alive(*p))).await;
    pids.iter().for_each(|p| kill(*p));
    assert!(all_dead, "still running: {pids:?}");
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_tree() {
    // The agent drops a tool's future when it is aborted.
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids.txt");
    let call = tokio::spawn(run(tool(&dir), json!({"command": TREE})));
    assert!(
        wait_for(Duration::from_secs(60), || pids(&pid_file).len()
            == TREE_SIZE)
        .await
    );
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let pids = pids(&pid_file);
    let all_dead = wait_for(Duration::from_secs(10), || pids.iter().all(|p| !alive(*p))).await;
    pids.iter().for_each(|p| kill(*p));
    assert!(all_dead, "still running: {pids:?}");
}

#[tokio::test]
async fn a_daemon_that_keeps_stdout_open_does_not_hold_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        run(
            tool(&dir),
            json!({"command": "sleep 300 & echo $! > daemon.pid; echo started"}),
        ),
    )
    .await
    .expect("the tool waited for the daemon");
    assert_eq!(out.text(), "started\n");
    let daemon = pids(&dir.path().join("daemon.pid"))[0];
    // As in pi, a command's background process outlives it.
    let survived = alive(daemon);
    kill(daemon);
    assert!(survived);
}

#[tokio::test]
async fn output_after_the_shell_exited_is_kept_while_it_comes() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        tool(&dir).exit_grace(Duration::from_secs(5)),
        json!({"command": "(sleep 1; echo late) & echo early"}),
    )
    .await;
    assert_eq!(out.text(), "early\nlate\n");
}

#[tokio::test]
async fn a_timeout_after_the_shell_exited_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // The background loop writes every 0.2 s; with a 10 s grace it keeps the tool reading.
    let out = run(
        tool(&dir).exit_grace(Duration::from_secs(10)),
        json!({
            "command": "(echo $BASHPID > loop.pid; while :; do echo tick; sleep 0.2; done) & exit 3",
            "timeout": 3
        }),
    )
    .await;
    let text = out.text();
    let status = text.rsplit("\n\n").next().unwrap();
    let rest = status
        .strip_prefix("Command timed out after 3 seconds. The shell exited with code 3 after ")
        .unwrap_or_else(|| panic!("unexpected status: {status}"));
    let seconds: f64 = rest
        .strip_suffix(
            " seconds, but background processes it started kept writing output until the timeout.",
        )
        .unwrap()
        .parse()
        .unwrap();
    assert!((0.0..3.0).contains(&seconds), "{seconds}");
    assert!(text.starts_with("tick\n"));
    let looping = pids(&dir.path().join("loop.pid"))[0];
    let dead = wait_for(Duration::from_secs(10), || !alive(looping)).await;
    kill(looping);
    assert!(dead, "the background loop survived the timeout");
}

#[tokio::test]
async fn output_that_is_not_utf8_is_cut_with_pi_s_notice_and_a_full_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let tool = tool(&dir).output_dir(out_dir.path());
    // 30,000 bytes 0xFF: 90,000 bytes of U+FFFD once decoded, over the 50 KB limit.
    let out = run(
        tool,
        json!({"command": "head -c 30000 /dev/zero | tr '\\0' '\\377'"}),
    )
    .await;
    let details = out.details();
    let file = details
        .full_output_file
        .clone()
        .expect("a full-output file");
    assert_eq!(std::fs::read(&file).unwrap(), vec![0xffu8; 30_000]);
    let truncation = details.truncation.expect("truncation details");
    assert_eq!(
        (
            truncation.truncated,
            truncation.total_bytes,
            truncation.output_bytes
        ),
        (true, 90_000, 51_198)
    );
    let shown = "\u{fffd}".repeat(17_066);
    assert_eq!(
        out.text(),
        format!("{shown}\n\n[Showing last 50.0KB of line 1 (line is 87.9KB). Full output: {file}]")
    );
}

#[tokio::test]
async fn a_command_prefix_runs_first_on_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        tool(&dir).command_prefix("shopt -s expand_aliases; alias hi='echo prefixed'"),
        json!({"command": "hi"}),
    )
    .await;
    assert_eq!(out.text(), "prefixed\n");
}
