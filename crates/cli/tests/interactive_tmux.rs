//! `oxpi`'s interactive mode in a real terminal: tmux runs it against the scripted local model,
//! the tests type with `send-keys` and read the screen with `capture-pane`, polling up to a
//! deadline. Without tmux each test prints why it is skipped.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::tmux::{server, tmux_missing, Tmux};
use common::*;
use serde_json::Value;

fn session_lines(home: &Path) -> Vec<Value> {
    let files = session_files(home);
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_call_is_shown_and_ctrl_c_twice_restores_the_terminal() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    std::fs::write(d.project.join("notes.txt"), "the answer is 42\n").unwrap();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 80, 24);
    tmux.wait_text("scripted-1").await;
    tmux.type_text("please read notes.txt");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_text("Done: the answer is 42").await;
    assert!(screen.contains("read notes.txt"), "{screen}");
    assert!(screen.contains(" please read notes.txt"), "{screen}");
    tmux.keys(&["C-c"]);
    tmux.wait_text("Press Ctrl+C again to exit").await;
    tmux.keys(&["C-c"]);
    tmux.wait_text("oxpi exited: 0").await;
    tmux.wait_for("stty-after", |_| tmux.stty("after").is_some())
        .await;
    assert_eq!(
        tmux.stty("after"),
        tmux.stty("before"),
        "the terminal's state is back"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn steering_while_a_tool_runs_is_in_the_next_request() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 80, 24);
    tmux.wait_text("scripted-1").await;
    tmux.type_text("please bash sleep 3; echo slept");
    tmux.keys(&["Enter"]);
    tmux.wait_text("$ sleep 3; echo slept").await;
    tmux.type_text("steer this way");
    tmux.keys(&["Enter"]);
    // The steering message is the last one of the next request: the model answers it.
    tmux.wait_text("Echo: steer this way").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(last_user_text(&requests[1]), "steer this way");
    let roles: Vec<String> = messages(&requests[1])
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_during_bash_aborts_and_the_session_stays_whole() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
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
    // `Esc` also stops a `!` command.
    tmux.type_text("!sleep 50");
    tmux.keys(&["Enter"]);
    tmux.wait_text("$ sleep 50").await;
    tmux.keys(&["Escape"]);
    tmux.wait_text("Command aborted").await;
    tmux.wait_for("the spinner to stop", |s| !s.contains("Working…"))
        .await;
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
    let lines = session_lines(&d.home);
    let calls: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "assistant")
        .flat_map(|l| l["message"]["content"].as_array().unwrap())
        .filter(|b| b["type"] == "toolCall")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    let results: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "toolResult")
        .map(|l| l["message"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["call_b"]);
    assert_eq!(results, calls, "every tool call has its result");
    assert_eq!(
        server.requests().len(),
        1,
        "nothing is asked after the abort"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn model_selector_switches_the_next_request_s_model() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let server = server().await;
    let args: Vec<String> = [
        "--provider",
        "groq",
        "--model",
        "llama-3.1-8b-instant",
        "--api-key",
        "test-key",
        "--base-url",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("{}/v1", server.base_url())])
    .collect();
    let tmux = Tmux::start(&d, &args, 100, 24);
    tmux.wait_text("groq/llama-3.1-8b-instant").await;
    tmux.type_text("/model");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Select a model").await;
    tmux.type_text("70b");
    tmux.wait_text("→ groq/llama-3.3-70b-versatile").await;
    tmux.keys(&["Enter"]);
    tmux.wait_text("Model: groq/llama-3.3-70b-versatile").await;
    tmux.type_text("hello");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Echo: hello").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].json()["model"], "llama-3.3-70b-versatile");
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn at_search_inserts_a_path_and_resume_opens_an_older_session() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    std::fs::create_dir_all(d.project.join("src/deep")).unwrap();
    std::fs::write(d.project.join("src/deep/needle.rs"), "").unwrap();
    std::fs::write(d.project.join("other.txt"), "").unwrap();
    let server = server().await;
    // An older session of this directory, written by -p.
    let mut older = oxpi(&d);
    older
        .args(model_args(&server))
        .args(["-p", "the older question"]);
    assert_eq!(run(older).await.code, Some(0));

    let tmux = Tmux::start(&d, &model_args(&server), 80, 24);
    tmux.wait_text("scripted-1").await;
    tmux.type_text("look at @");
    tmux.wait_text("Insert a file").await;
    tmux.type_text("needle");
    tmux.wait_text("→ src/deep/needle.rs").await;
    tmux.keys(&["Enter"]);
    tmux.wait_text("look at @src/deep/needle.rs").await;
    tmux.keys(&["C-u"]);
    tmux.type_text("/resume");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Resume a session").await;
    tmux.wait_text("→ the older question").await;
    tmux.keys(&["Enter"]);
    tmux.wait_text("Resumed").await;
    let screen = tmux.wait_text("Echo: the older question").await;
    assert!(screen.contains(" the older question"), "{screen}");
    tmux.type_text("and now");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Echo: and now").await;
    let requests = server.requests();
    let texts: Vec<String> = messages(requests.last().unwrap())
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            parts => parts
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["text"].as_str())
                .collect(),
        })
        .collect();
    assert_eq!(
        texts,
        ["the older question", "and now"],
        "the resumed history is sent"
    );
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
    // The new session had no message, so no file (as pi); the resumed one holds both turns.
    let lines = session_lines(&d.home);
    let users = lines
        .iter()
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "user")
        .count();
    assert_eq!(users, 2, "the resumed session is appended to");
}

/// `signal` sent to oxpi ends it with `code`, the terminal restored.
async fn a_signal_restores_the_terminal(signal: &str, code: i32) {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 80, 24);
    tmux.wait_text("scripted-1").await;
    let shell = tmux
        .cmd()
        .args(["display", "-p", "-t", "t", "#{pane_pid}"])
        .output()
        .unwrap();
    let shell = String::from_utf8_lossy(&shell.stdout).trim().to_string();
    let status = Command::new("pkill")
        .args([signal, "-P", &shell, "-x", "oxpi"])
        .status()
        .unwrap();
    assert!(status.success(), "oxpi was signalled");
    tmux.wait_text(&format!("oxpi exited: {code}")).await;
    tmux.wait_for("stty-after", |_| tmux.stty("after").is_some())
        .await;
    assert_eq!(tmux.stty("after"), tmux.stty("before"));
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_restores_the_terminal() {
    a_signal_restores_the_terminal("-TERM", 143).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_restores_the_terminal() {
    a_signal_restores_the_terminal("-HUP", 129).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tree_moves_the_leaf_and_the_next_prompt_continues_from_there() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 80, 24);
    tmux.wait_text("scripted-1").await;
    for prompt in ["one", "two"] {
        tmux.type_text(prompt);
        tmux.keys(&["Enter"]);
        tmux.wait_text(&format!("Echo: {prompt}")).await;
    }
    tmux.type_text("/tree");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Session tree").await;
    tmux.wait_text("assistant: Echo: two  ← current").await;
    tmux.type_text("Echo: one");
    tmux.wait_text("→ assistant: Echo: one").await;
    tmux.keys(&["Enter"]);
    tmux.wait_text("Moved in the session tree").await;
    tmux.type_text("three");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Echo: three").await;
    let requests = server.requests();
    let users: Vec<String> = messages(requests.last().unwrap())
        .iter()
        .filter(|m| m["role"] == "user" || m["role"] == "assistant")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            parts => parts
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["text"].as_str())
                .collect(),
        })
        .collect();
    assert_eq!(
        users,
        ["one", "Echo: one", "three"],
        "the branch left `two` behind"
    );
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_first_prompt_is_sent_and_a_resize_to_60_columns_redraws_the_footer() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let server = server().await;
    // `oxpi "first prompt"` starts with that message.
    let mut args = model_args(&server);
    args.push("first prompt".into());
    let tmux = Tmux::start(&d, &args, 100, 24);
    tmux.wait_text("Echo: first prompt").await;
    let footer = |s: &str, width: usize| {
        s.lines()
            .any(|l| l.starts_with('↑') && l.ends_with("scripted-1") && l.chars().count() == width)
    };
    tmux.wait_for("the footer at 100 columns", |s| footer(s, 100))
        .await;
    assert!(tmux
        .cmd()
        .args(["resize-window", "-t", "t", "-x", "60", "-y", "24"])
        .status()
        .unwrap()
        .success());
    tmux.wait_for("the footer at 60 columns", |s| footer(s, 60))
        .await;
    tmux.type_text("hello");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Echo: hello").await;
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tree_filters_and_a_label_written_as_pi_writes_it() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    std::fs::write(d.project.join("notes.txt"), "the answer is 42\n").unwrap();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 100, 30);
    tmux.wait_text("scripted-1").await;
    tmux.type_text("please read notes.txt");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Done: the answer is 42").await;
    tmux.type_text("/tree");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Session tree").await;
    // pi's default view: the tool result as its call, the reply of calls only left out.
    tmux.wait_text("[read: notes.txt]").await;
    tmux.keys(&["C-u"]);
    tmux.wait_text("Session tree [user]").await;
    let screen = tmux
        .wait_for("only user messages", |s| !s.contains("[read: notes.txt]"))
        .await;
    assert!(screen.contains("→ user: please read notes.txt"), "{screen}");
    // `Shift+L` edits the selected entry's label.
    tmux.type_text("L");
    tmux.wait_text("Label (empty removes it):").await;
    tmux.type_text("start here");
    tmux.keys(&["Enter"]);
    tmux.wait_text("[start here] user: please read notes.txt")
        .await;
    tmux.keys(&["C-l"]);
    tmux.wait_text("Session tree [labeled]").await;
    tmux.keys(&["C-o"]);
    tmux.wait_text("Session tree [all]").await;
    tmux.wait_text("[label: start here]").await;
    tmux.keys(&["Escape"]);
    tmux.wait_for("the tree to close", |s| !s.contains("Session tree"))
        .await;
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
    let lines = session_lines(&d.home);
    let user_id = lines
        .iter()
        .find(|l| l["type"] == "message" && l["message"]["role"] == "user")
        .map(|l| l["id"].clone())
        .unwrap();
    let label = lines.iter().find(|l| l["type"] == "label").unwrap();
    assert_eq!(label["targetId"], user_id);
    assert_eq!(label["label"], "start here");
}

#[tokio::test(flavor = "multi_thread")]
async fn compact_summarizes_and_the_session_file_holds_the_compaction() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    // Two reads of a large file (50 KB each as `read` cuts it): more than pi's 20,000 recent
    // tokens kept, so the first turn is summarized.
    let big: String = (1..=1500)
        .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog again\n"))
        .collect();
    std::fs::write(d.project.join("big.txt"), big).unwrap();
    // The scripted model, but a request with no tools (the summary's) gets the summary.
    let server = oxpi_testkit::TestServer::start_fn(|request| {
        if request.json()["tools"]
            .as_array()
            .is_none_or(|t| t.is_empty())
        {
            return text_reply("## Goal\nRead big.txt twice (names kept)");
        }
        let last = messages(request).last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            let content = last["content"].to_string();
            let first = content.trim_matches('"').split("\\n").next().unwrap_or("");
            return text_reply(&format!("Done: {first}"));
        }
        let prompt = last_user_text(request);
        match prompt.split("read ").nth(1) {
            Some(file) => tool_reply("call_1", "read", &serde_json::json!({"path": file})),
            None => text_reply(&format!("Echo: {prompt}")),
        }
    })
    .await
    .unwrap();
    let tmux = Tmux::start(&d, &model_args(&server), 100, 40);
    tmux.wait_text("scripted-1").await;
    tmux.submit("alpha: read big.txt");
    tmux.wait_text("Done: line 1:").await;
    tmux.submit("bravo: read big.txt");
    tmux.wait_for("the second read", |s| {
        s.matches("Done: line 1:").count() >= 2
    })
    .await;
    tmux.submit("/compact keep the names");
    let screen = tmux.wait_text("Compacted:").await;
    assert!(screen.contains("tokens before"), "{screen}");
    // The summary request is the third: no tools offered, the conversation in it, the
    // instructions given to /compact too.
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let summary_request = requests[4].json();
    assert!(
        summary_request["tools"]
            .as_array()
            .is_none_or(|t| t.is_empty()),
        "{summary_request}"
    );
    let asked = summary_request.to_string();
    assert!(
        asked.contains("alpha: read big.txt") && asked.contains("keep the names"),
        "{asked}"
    );
    // The next prompt goes out with the summary in place of what it summarized.
    tmux.submit("charlie question");
    tmux.wait_text("Echo: charlie question").await;
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
    let files = session_files(&d.home);
    assert_eq!(files.len(), 1, "{files:?}");
    let entries: Vec<Value> = json_lines(&std::fs::read_to_string(&files[0]).unwrap());
    let compactions: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    assert_eq!(compactions.len(), 1, "{entries:?}");
    // pi's summary of a split turn: the server's answer, then the files read.
    let summary = compactions[0]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("## Goal\nRead big.txt twice (names kept)")
            && summary.ends_with("<read-files>\nbig.txt\n</read-files>"),
        "{summary}"
    );
    let last = server.requests().last().unwrap().json().to_string();
    assert!(last.contains("charlie question"), "{last}");
    assert!(
        last.contains("Read big.txt twice (names kept)") && !last.contains("alpha: read big.txt"),
        "the summary is in the next request: {last}"
    );
}
