//! Sessions cross between `oxpi`'s interactive mode and pi-coding-agent 1.6: a session the
//! interactive mode wrote (with a `bash` call aborted by `Esc`) opens in pi's own
//! `SessionManager` with every message; a session `pi -p` wrote is listed by `/resume`, opens
//! with its messages on screen, is continued, and still opens in pi. tmux drives `oxpi` (as in
//! interactive_tmux.rs); pi runs under Node 22 (tests/common/pi.rs). Each test prints a skip
//! line when tmux or Node is missing.

#![allow(clippy::unwrap_used)]

mod common;

use common::tmux::{server, tmux_missing, Tmux};
use common::*;
use serde_json::{json, Value};

/// `{role, text}` of each message pi's context holds.
fn roles_and_texts(view: &Value) -> Vec<(String, String)> {
    view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_of_the_interactive_mode_with_an_aborted_bash_call_opens_in_pi() {
    if tmux_missing() {
        return;
    }
    let Some(prefix) = pi::pi("a_session_of_the_interactive_mode_opens_in_pi") else {
        return;
    };
    let d = dirs();
    std::fs::write(d.project.join("notes.txt"), "the answer is 42\n").unwrap();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 80, 24);
    tmux.wait_text("scripted-1").await;
    tmux.type_text("please bash sleep 60");
    tmux.keys(&["Enter"]);
    tmux.wait_text("$ sleep 60").await;
    tmux.keys(&["Escape"]);
    tmux.wait_text("Operation aborted").await;
    tmux.wait_for("the spinner to stop", |s| !s.contains("Working…"))
        .await;
    tmux.type_text("please read notes.txt");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Done: the answer is 42").await;
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;

    let files = session_files(&d.home);
    assert_eq!(files.len(), 1, "{files:?}");
    let view = pi::open_session(&prefix, &files[0]);
    assert_eq!(view["header"]["cwd"], json!(d.project.to_string_lossy()));
    let ids = view["ids"].as_array().unwrap();
    assert_eq!(
        view["leaf"],
        *ids.last().unwrap(),
        "pi's leaf is the last entry"
    );
    let seen = roles_and_texts(&view);
    let roles: Vec<&str> = seen.iter().map(|(r, _)| r.as_str()).collect();
    // The system prompt as oxpi records it (pi 1.6 records one too), the aborted run (its
    // call, the call's result, the reply cut by the abort), then the next run.
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant",
            "toolResult",
            "assistant"
        ],
        "{seen:?}"
    );
    assert_eq!(seen[1].1, "please bash sleep 60");
    assert_eq!(seen[2].1, "[bash]");
    assert_eq!(view["messages"][4]["stopReason"], "aborted", "{view}");
    assert_eq!(seen[5].1, "please read notes.txt");
    assert_eq!(seen[6].1, "[read]");
    assert_eq!(seen[8].1, "Done: the answer is 42");
    let results: Vec<&Value> = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| &m["toolCallId"])
        .collect();
    assert_eq!(
        results,
        [&json!("call_b"), &json!("call_1")],
        "every call has its result"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_pi_wrote_resumes_in_the_interactive_mode_and_opens_in_pi_again() {
    if tmux_missing() {
        return;
    }
    let Some(prefix) = pi::pi("a_session_pi_wrote_resumes_in_the_interactive_mode") else {
        return;
    };
    let d = dirs();
    let server = server().await;
    pi::configure(&d.home, server.base_url());
    let mut command = tokio::process::Command::new(pi::node(&prefix));
    command
        .arg(pi::cli(&prefix))
        .args(["-p", "--provider", "scripted", "--model", "scripted-1"])
        .arg("the question pi asked")
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
    assert_eq!(out.stdout.trim(), "Echo: the question pi asked");
    let files = session_files(&d.home);
    assert_eq!(files.len(), 1, "pi wrote one session: {files:?}");

    let tmux = Tmux::start(&d, &model_args(&server), 80, 24);
    tmux.wait_text("scripted-1").await;
    tmux.type_text("/resume");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Resume a session").await;
    tmux.wait_text("→ the question pi asked").await;
    tmux.keys(&["Enter"]);
    tmux.wait_text("Resumed").await;
    let screen = tmux.wait_text("Echo: the question pi asked").await;
    assert!(screen.contains(" the question pi asked"), "{screen}");
    tmux.type_text("and oxpi follows");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Echo: and oxpi follows").await;
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
    let last = server.requests();
    let sent: Vec<String> = messages(last.last().unwrap())
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(sent, ["user", "assistant", "user"], "pi's history is sent");

    assert_eq!(session_files(&d.home), files, "the same file is continued");
    let view = pi::open_session(&prefix, &files[0]);
    assert_eq!(
        roles_and_texts(&view)[1..],
        [
            ("user".into(), "the question pi asked".into()),
            ("assistant".into(), "Echo: the question pi asked".into()),
            ("user".into(), "and oxpi follows".into()),
            ("assistant".into(), "Echo: and oxpi follows".into()),
        ]
    );
    assert_eq!(
        view["messages"][0]["role"], "system",
        "pi's own system-prompt record"
    );
    let ids = view["ids"].as_array().unwrap();
    assert_eq!(view["leaf"], *ids.last().unwrap());
}
