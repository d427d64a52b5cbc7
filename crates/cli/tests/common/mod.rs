//! What the command tests share: a project directory with its own HOME, a scripted
//! Chat Completions server that answers by what the request holds, and `oxpi` run as a process
//! with a deadline.

#![allow(dead_code, clippy::unwrap_used)]

pub mod pi;
pub mod tmux;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use oxpi_testkit::{Recorded, Reply, TestServer};
use serde_json::Value;

/// Generous: the machine is shared and loaded.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A home directory and a project in a temporary directory.
pub struct Dirs {
    pub _root: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
}

pub fn dirs() -> Dirs {
    let root = tempfile::tempdir().expect("temp dir");
    let home = root.path().join("home");
    let project = root.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    // Canonical, so paths compare with what the process sees as its cwd.
    let project = project.canonicalize().unwrap();
    let home = home.canonicalize().unwrap();
    Dirs {
        _root: root,
        home,
        project,
    }
}

/// One Chat Completions SSE chunk.
pub fn chunk(delta: Value, finish: Option<&str>) -> String {
    let body = serde_json::json!({
        "id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {body}\n\n")
}

/// A streamed text reply, in two deltas, with usage.
pub fn text_reply(text: &str) -> Reply {
    let (a, b) = text.split_at(text.len() / 2);
    let usage = serde_json::json!({
        "id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    });
    Reply::sse([
        chunk(serde_json::json!({"role": "assistant", "content": a}), None),
        chunk(serde_json::json!({"content": b}), None),
        chunk(serde_json::json!({}), Some("stop")),
        format!("data: {usage}\n\n"),
        "data: [DONE]\n\n".to_string(),
    ])
}

/// A reply calling `tool` with `args`.
pub fn tool_reply(id: &str, tool: &str, args: &Value) -> Reply {
    let call = serde_json::json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
        "function": {"name": tool, "arguments": args.to_string()}}]});
    Reply::sse([
        chunk(call, None),
        chunk(serde_json::json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_string(),
    ])
}

/// The request's messages.
pub fn messages(request: &Recorded) -> Vec<Value> {
    request.json()["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The text of the request's last user message.
pub fn last_user_text(request: &Recorded) -> String {
    messages(request)
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        })
        .unwrap_or_default()
}

/// The scripted model: a prompt containing `read <file>` makes it read the file, one containing
/// `list-dir <dir>` makes it call `ls` on the directory; after a tool
/// result it answers `Done: <first line of the result>`; a prompt containing `slow` gets a
/// reply that stalls (to be aborted); anything else is answered `Echo: <prompt>`.
pub async fn scripted_server() -> TestServer {
    TestServer::start_fn(|request| {
        let messages = messages(request);
        let last = messages.last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            let content = match &last["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let first = content.lines().next().unwrap_or("").to_string();
            return text_reply(&format!("Done: {first}"));
        }
        let prompt = last_user_text(request);
        if let Some(rest) = prompt.split("read ").nth(1) {
            let file = rest.split_whitespace().next().unwrap_or("");
            return tool_reply("call_1", "read", &serde_json::json!({"path": file}));
        }
        if let Some(rest) = prompt.split("list-dir ").nth(1) {
            let dir = rest.split_whitespace().next().unwrap_or("");
            return tool_reply("call_1", "ls", &serde_json::json!({"path": dir}));
        }
        if prompt.contains("slow") {
            return Reply::sse_parts(vec![
                oxpi_testkit::Part::Bytes(
                    chunk(
                        serde_json::json!({"role": "assistant", "content": "thinking"}),
                        None,
                    )
                    .into_bytes(),
                ),
                oxpi_testkit::Part::Stall,
            ]);
        }
        text_reply(&format!("Echo: {prompt}"))
    })
    .await
    .expect("start the scripted server")
}

/// The model flags for the scripted server.
pub fn model_args(server: &TestServer) -> Vec<String> {
    vec![
        "--base-url".into(),
        format!("{}/v1", server.base_url()),
        "--model".into(),
        "scripted-1".into(),
    ]
}

/// `oxpi` with HOME and the working directory set, no inherited pi variables.
pub fn oxpi(dirs: &Dirs) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_oxpi"));
    command
        .current_dir(&dirs.project)
        .env("HOME", &dirs.home)
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// What a finished process printed.
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `command` to its end (bounded by [`DEADLINE`]).
pub async fn run(mut command: tokio::process::Command) -> Output {
    let child = command.spawn().expect("start oxpi");
    let output = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("oxpi finished within the deadline")
        .expect("oxpi's output");
    Output {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The session files under `home`'s pi directory.
pub fn session_files(home: &Path) -> Vec<PathBuf> {
    let root = home.join(".pi/agent/sessions");
    let mut files = Vec::new();
    for dir in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            files.push(file.path());
        }
    }
    files.sort();
    files
}

/// The JSON lines of a file or an output.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}
