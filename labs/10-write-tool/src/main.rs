//! Lab 10: a tool that changes the disk. A live model reads `note.txt` (a fresh code) with `read`,
//! writes what it read into `answer.txt` with `write`, then answers `done`.
//!
//! Checked on disk, not on the model's words: `answer.txt` exists inside the workspace and holds
//! exactly the code; nothing else in the workspace changed; `read` ran on note.txt before the
//! write; every tool call has its result, by id; the final reply says it is done.
//!
//! ```text
//! cargo run -p lab-10                                   # the embedded default model
//! cargo run -p lab-10 -- --provider openai              # OPENAI_API_KEY
//! cargo run -p lab-10 -- --base-url http://127.0.0.1:8080/v1 --model qwen
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use oxpi_agent_core::{Agent, AgentEvent, AgentOptions};
use oxpi_ai::{AssistantMessage, Message, StreamOptions};
use oxpi_labkit::lab::{
    check_pairing, fresh_code, print_tool_event, provider_error, roles, run_lab, RequestLog,
};
use oxpi_labkit::LiveModel;

const PROMPT: &str = "请用 read 读取 note.txt，再用 write 把读到的内容原样写入 answer.txt。";
/// Measured on the embedded model (greedy), with note.txt holding only the code: the issue's
/// prompt (which ends "最后只回复 done" and asks to write only the code) and any system prompt that
/// names the word "done" as the reply to give made it answer "done" without calling a tool (0/4);
/// a prompt that says "reply done" only after the steps, in the system prompt, passes.
const SYSTEM_PROMPT: &str =
    "You are a helpful assistant that can use tools. To use a tool, reply with a tool call. \
Do the steps in order, one tool call per reply. When all steps are done, reply done.";

#[tokio::main]
async fn main() -> ExitCode {
    run_lab("10", "write tool passed", |live| async move {
        let outcome = run(&live).await;
        (live, outcome)
    })
    .await
}

async fn run(live: &LiveModel) -> Result<(), String> {
    let dir =
        tempfile::tempdir().map_err(|e| format!("could not create a temporary directory: {e}"))?;
    let code = fresh_code();
    std::fs::write(dir.path().join("note.txt"), &code)
        .map_err(|e| format!("could not write note.txt: {e}"))?;
    let before = snapshot(dir.path());
    let workspace =
        oxpi_tools::Workspace::new(dir.path()).map_err(|e| format!("workspace: {e}"))?;
    let read = oxpi_tools::read_tool(workspace.clone()).map_err(|e| e.to_string())?;
    let write = oxpi_tools::write_tool(workspace).map_err(|e| e.to_string())?;

    let requests = RequestLog::default();
    let mut stream_options = StreamOptions::default()
        .with_temperature(0.0)
        .with_max_tokens(400);
    stream_options.api_key = live.api_key.clone();
    // The embedded model's tool-result hint ("if it answers the request, reply to the user
    // now; …") made it reply "done" after the `read` without calling `write` (1 run of the
    // first CI run after the hint came); this lab's prompt was measured without it, 50/50.
    let mut model = live.model.clone();
    if let Some(compat) = model.compat.as_mut().and_then(|c| c.as_object_mut()) {
        compat.remove("toolResultHint");
    }
    let mut options = AgentOptions::new(model)
        .with_system_prompt(SYSTEM_PROMPT)
        .with_tools([read, write])
        .with_max_turns(6)
        .with_stream_options(stream_options);
    options.stream_fn = Some(requests.stream_fn());
    let agent = Agent::new(options);
    let _subscription = agent.subscribe(print_event);
    println!("model: {}/{}", live.model.provider, live.model.id);
    println!("input: {PROMPT}");
    agent.prompt(PROMPT).await.map_err(|e| e.to_string())?;

    let history = agent.messages();
    let Some(Message::Assistant(final_answer)) = history.last() else {
        return Err("the history does not end with an assistant message".to_string());
    };
    if let Some(error) = provider_error(final_answer) {
        return Err(format!("the model request failed: {error}"));
    }
    println!("final answer: {}", final_answer.text().trim());
    println!("history roles: {}", roles(&history).join(" -> "));
    let after = snapshot(dir.path());
    check_facts(&history, final_answer, &code, &before, &after)
}

fn print_event(event: &AgentEvent) {
    match event {
        AgentEvent::TurnStart => println!("turn"),
        AgentEvent::MessageEnd {
            message: Message::Assistant(m),
        } => {
            let reason = serde_json::to_value(m.stop_reason).unwrap_or_default();
            println!(
                "assistant stopReason: {} text: {:?}",
                reason.as_str().unwrap_or("?"),
                m.text()
            );
        }
        other => print_tool_event(other),
    }
}

/// Every file under `dir` with its content.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path
                    .strip_prefix(dir)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                out.insert(name, std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    out
}

/// The tool calls of the history in order: (tool, path argument).
fn calls(history: &[Message]) -> Vec<(String, String)> {
    history
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(a.tool_calls()),
            _ => None,
        })
        .flatten()
        .map(|c| {
            let path = c
                .arguments
                .get("path")
                .and_then(|p| p.as_str())
                .unwrap_or("")
                .trim_start_matches("./")
                .to_string();
            (c.name.clone(), path)
        })
        .collect()
}

fn check_facts(
    history: &[Message],
    final_answer: &AssistantMessage,
    code: &str,
    before: &BTreeMap<String, Vec<u8>>,
    after: &BTreeMap<String, Vec<u8>>,
) -> Result<(), String> {
    let calls = calls(history);
    let read_at = calls
        .iter()
        .position(|(tool, path)| tool == "read" && path == "note.txt");
    let write_at = calls
        .iter()
        .position(|(tool, path)| tool == "write" && path == "answer.txt");
    match (read_at, write_at) {
        (Some(r), Some(w)) if r < w => {}
        _ => {
            return Err(format!(
                "expected read note.txt, then write answer.txt; the calls were {calls:?}"
            ))
        }
    }
    let Some(answer) = after.get("answer.txt") else {
        return Err("answer.txt was not written".to_string());
    };
    // The code, and nothing else (a final line break is allowed).
    let written = String::from_utf8_lossy(answer);
    if written.strip_suffix('\n').unwrap_or(&written) != code {
        return Err(format!("answer.txt holds {written:?}, expected {code:?}"));
    }
    let mut others = after.clone();
    others.remove("answer.txt");
    if &others != before {
        let changed: Vec<&String> = others
            .keys()
            .chain(before.keys())
            .filter(|k| others.get(*k) != before.get(*k))
            .collect();
        return Err(format!("other files changed: {changed:?}"));
    }
    check_pairing(history)?;
    if !final_answer.text().to_lowercase().contains("done") {
        return Err(format!(
            "the final reply {:?} does not say it is done",
            final_answer.text()
        ));
    }
    Ok(())
}
