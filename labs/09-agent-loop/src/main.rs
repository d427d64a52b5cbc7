//! Lab 09: the agent loop. One `agent.prompt()` against a live model, where the code is not in the
//! file the prompt names: `note.txt` points to `notes/code.txt`, and the model must follow it,
//! one `read` per turn, until it can answer.
//!
//! Checks: `read` ran on note.txt, then on notes/code.txt, each once, in that order; exactly three
//! model requests, request k carrying the history of k − 1 tool rounds; the final answer holds
//! the code; the history is user → assistant → toolResult → assistant → toolResult → assistant,
//! and every tool result answers the call before it, by id.
//!
//! ```text
//! cargo run -p lab-09                                   # the embedded default model
//! cargo run -p lab-09 -- --provider openai              # OPENAI_API_KEY
//! cargo run -p lab-09 -- --base-url http://127.0.0.1:8080/v1 --model qwen
//! ```

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use oxpi_agent_core::{Agent, AgentEvent, AgentOptions};
use oxpi_ai::{AssistantMessage, Message, StreamOptions};
use oxpi_labkit::lab::{
    check_pairing, fresh_code, print_tool_event, provider_error, roles, run_lab, RequestLog,
};
use oxpi_labkit::LiveModel;

const PROMPT: &str = "请用 read 读取 note.txt，按其中的指引找到验证代号，只回复验证代号。";
const POINTER: &str = "验证代号不在这里，请读取 notes/code.txt。";
/// Measured on the embedded model (greedy): the issue's prompt, which names `<tool_response>`,
/// made it write a fake `<tool_response>` as its answer instead of calling `read` (0/4); this one
/// passes.
const SYSTEM_PROMPT: &str = "You are a helpful assistant that can use tools. To use a tool, reply with a tool call. \
Follow pointers between files with read, one file per call. As soon as a tool result contains the code itself, \
stop calling tools and reply with exactly that code, nothing else, and never shorten it.";

/// What the run showed, gathered from the agent's events and the requests it made.
#[derive(Debug, Default)]
struct Trace {
    /// The roles of each model request's messages.
    requests: Vec<Vec<&'static str>>,
    turns: usize,
}

fn lock(trace: &Mutex<Trace>) -> std::sync::MutexGuard<'_, Trace> {
    trace.lock().unwrap_or_else(|p| p.into_inner())
}

#[tokio::main]
async fn main() -> ExitCode {
    run_lab("09", "agent loop passed", |live| async move {
        let outcome = run(&live).await;
        (live, outcome)
    })
    .await
}

async fn run(live: &LiveModel) -> Result<(), String> {
    let dir =
        tempfile::tempdir().map_err(|e| format!("could not create a temporary directory: {e}"))?;
    let code = fresh_code();
    let note = format!("本次验证代号：{code}");
    std::fs::create_dir(dir.path().join("notes"))
        .map_err(|e| format!("could not create notes/: {e}"))?;
    std::fs::write(dir.path().join("note.txt"), POINTER)
        .map_err(|e| format!("could not write note.txt: {e}"))?;
    std::fs::write(dir.path().join("notes/code.txt"), &note)
        .map_err(|e| format!("could not write notes/code.txt: {e}"))?;
    let workspace =
        oxpi_tools::Workspace::new(dir.path()).map_err(|e| format!("workspace: {e}"))?;
    let read = oxpi_tools::read_tool(workspace).map_err(|e| e.to_string())?;

    let trace = Arc::new(Mutex::new(Trace::default()));
    let requests = RequestLog::default();
    let mut stream_options = StreamOptions::default().with_temperature(0.0);
    stream_options.api_key = live.api_key.clone();
    let mut options = AgentOptions::new(live.model.clone())
        .with_system_prompt(SYSTEM_PROMPT)
        .with_tool(read)
        .with_max_turns(6)
        .with_stream_options(stream_options);
    options.stream_fn = Some(requests.stream_fn());
    let agent = Agent::new(options);

    let events = trace.clone();
    let _subscription = agent.subscribe(move |event| print_event(event, &events));
    println!("model: {}/{}", live.model.provider, live.model.id);
    println!("input: {PROMPT}");
    agent.prompt(PROMPT).await.map_err(|e| e.to_string())?;

    let history = agent.messages();
    let mut trace = lock(&trace);
    trace.requests = requests.requests();
    let final_answer = match history.last() {
        Some(Message::Assistant(m)) => m.clone(),
        _ => return Err("the history does not end with an assistant message".to_string()),
    };
    if let Some(error) = provider_error(&final_answer) {
        return Err(format!("the model request failed: {error}"));
    }
    println!("final answer: {}", final_answer.text().trim());
    println!("history roles: {}", roles(&history).join(" -> "));
    check_facts(&trace, &history, &final_answer, &code, &note)
}

fn print_event(event: &AgentEvent, trace: &Mutex<Trace>) {
    match event {
        AgentEvent::TurnStart => {
            let mut trace = lock(trace);
            trace.turns += 1;
            println!("turn {}", trace.turns);
        }
        AgentEvent::MessageEnd {
            message: Message::Assistant(m),
        } => {
            let reason = serde_json::to_value(m.stop_reason).unwrap_or_default();
            println!("assistant stopReason: {}", reason.as_str().unwrap_or("?"));
            if let Some(error) = provider_error(m) {
                println!("provider error: {error}");
            }
        }
        other => print_tool_event(other),
    }
}

/// The `read` calls of the history in order: (path as given, result text, error).
fn read_calls(history: &[Message]) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for (i, message) in history.iter().enumerate() {
        let Message::Assistant(assistant) = message else {
            continue;
        };
        for call in assistant.tool_calls().filter(|c| c.name == "read") {
            let path = call
                .arguments
                .get("path")
                .and_then(|p| p.as_str())
                .unwrap_or("")
                .trim_start_matches("./")
                .to_string();
            let result = history[i + 1..].iter().find_map(|m| match m {
                Message::ToolResult(r) if r.tool_call_id == call.id => {
                    Some((r.text_content(), r.is_error))
                }
                _ => None,
            });
            let (text, is_error) = result.unwrap_or_default();
            out.push((path, text, is_error));
        }
    }
    out
}

fn check_facts(
    trace: &Trace,
    history: &[Message],
    final_answer: &AssistantMessage,
    code: &str,
    note: &str,
) -> Result<(), String> {
    let calls = read_calls(history);
    let paths: Vec<&str> = calls.iter().map(|(p, _, _)| p.as_str()).collect();
    if paths != ["note.txt", "notes/code.txt"] {
        return Err(format!(
            "read ran on {paths:?}, expected note.txt then notes/code.txt, each once"
        ));
    }
    if calls[0].2 || !calls[0].1.contains(POINTER) {
        return Err(format!("read note.txt returned {:?}", calls[0].1));
    }
    if calls[1].2 || !calls[1].1.contains(note) {
        return Err(format!("read notes/code.txt returned {:?}", calls[1].1));
    }
    let expected_requests: [&[&str]; 3] = [
        &["user"],
        &["user", "assistant", "toolResult"],
        &["user", "assistant", "toolResult", "assistant", "toolResult"],
    ];
    if trace.requests.len() != 3 {
        return Err(format!(
            "{} model requests, expected exactly 3",
            trace.requests.len()
        ));
    }
    for (k, (got, expected)) in trace.requests.iter().zip(expected_requests).enumerate() {
        if got.as_slice() != expected {
            return Err(format!(
                "request {} carried {}, expected {}",
                k + 1,
                got.join(" -> "),
                expected.join(" -> ")
            ));
        }
    }
    if !final_answer.text().contains(code) {
        return Err(format!(
            "the final answer {:?} does not contain {code}",
            final_answer.text()
        ));
    }
    let history_roles = roles(history);
    let expected = [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
    ];
    if history_roles != expected {
        return Err(format!(
            "the history is {}, expected {}",
            history_roles.join(" -> "),
            expected.join(" -> ")
        ));
    }
    check_pairing(history)
}
