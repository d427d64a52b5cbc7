//! Lab 08: one `agent.prompt()` against a live model that must read `note.txt` through the
//! `read` tool and answer with the code inside it.
//!
//! Checks four facts: `read` ran once with `path` note.txt and returned the code; exactly two
//! model requests; request 2 carried user → assistant → toolResult; the final answer contains
//! the code and the history is user → assistant → toolResult → assistant.
//!
//! ```text
//! cargo run -p lab-08                                   # the embedded default model
//! cargo run -p lab-08 -- --provider openai              # OPENAI_API_KEY
//! cargo run -p lab-08 -- --base-url http://127.0.0.1:8080/v1 --model qwen
//! ```

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use oxpi_agent_core::{Agent, AgentEvent, AgentOptions};
use oxpi_ai::{AssistantMessage, Message, StreamOptions};
use oxpi_labkit::lab::{fresh_code, provider_error, roles, run_lab, RequestLog};
use oxpi_labkit::LiveModel;

const PROMPT: &str = "请用 read 读取 note.txt，只回复其中的验证代号。";
const SYSTEM_PROMPT: &str = "You are a helpful assistant that can use tools. To use a tool, reply with a tool call. \
When a tool result (<tool_response>) is present, do not call the tool again: reply with exactly the requested \
text from the result, nothing else, and never shorten it.";

/// What the run showed, gathered from the agent's events and the requests it made.
#[derive(Debug, Default)]
struct Trace {
    requests: Vec<Vec<&'static str>>,
    read_calls: Vec<(serde_json::Map<String, serde_json::Value>, String, bool)>,
}

fn lock(trace: &Mutex<Trace>) -> std::sync::MutexGuard<'_, Trace> {
    trace.lock().unwrap_or_else(|p| p.into_inner())
}

#[tokio::main]
async fn main() -> ExitCode {
    run_lab("08", "native read tool passed", |live| async move {
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
    std::fs::write(dir.path().join("note.txt"), &note)
        .map_err(|e| format!("could not write note.txt: {e}"))?;
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
        .with_max_turns(4)
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
        AgentEvent::MessageEnd {
            message: Message::Assistant(m),
        } => {
            let reason = serde_json::to_value(m.stop_reason).unwrap_or_default();
            println!("assistant stopReason: {}", reason.as_str().unwrap_or("?"));
            if let Some(error) = provider_error(m) {
                println!("provider error: {error}");
            }
        }
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => {
            println!("tool_execution_start: {tool_name}");
            println!(
                "{tool_name} args: {}",
                serde_json::Value::Object(args.clone())
            );
        }
        AgentEvent::ToolExecutionEnd {
            tool_name,
            result,
            is_error,
            ..
        } => {
            let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
            let text = text.join("\n");
            println!(
                "tool_execution_end: {tool_name}{}",
                if *is_error { " (error)" } else { "" }
            );
            println!("{tool_name} result: {text}");
            if tool_name == "read" {
                lock(trace)
                    .read_calls
                    .push((Default::default(), text, *is_error));
            }
        }
        AgentEvent::TurnEnd { tool_results, .. } => {
            // Attach the arguments of each read call from the assistant message of this turn.
            let _ = tool_results;
        }
        _ => {}
    }
    if let AgentEvent::TurnEnd {
        message: Message::Assistant(m),
        ..
    } = event
    {
        let mut trace = lock(trace);
        let reads: Vec<_> = m.tool_calls().filter(|c| c.name == "read").collect();
        let start = trace.read_calls.len().saturating_sub(reads.len());
        for (slot, call) in trace.read_calls[start..].iter_mut().zip(reads) {
            slot.0 = call.arguments.clone();
        }
    }
}

fn check_facts(
    trace: &Trace,
    history: &[Message],
    final_answer: &AssistantMessage,
    code: &str,
    note: &str,
) -> Result<(), String> {
    match trace.read_calls.as_slice() {
        [(args, result, false)] => {
            if args.get("path").and_then(|p| p.as_str()) != Some("note.txt") {
                return Err(format!("read ran with {args:?}, not path note.txt"));
            }
            if !result.contains(note) {
                return Err(format!("read returned {result:?}, not the note"));
            }
        }
        [(_, result, true)] => return Err(format!("read ran once but failed: {result}")),
        calls => return Err(format!("read ran {} times, expected once", calls.len())),
    }
    if trace.requests.len() != 2 {
        return Err(format!(
            "{} model requests, expected exactly 2",
            trace.requests.len()
        ));
    }
    if trace.requests[1] != ["user", "assistant", "toolResult"] {
        return Err(format!(
            "request 2 carried {}, expected user -> assistant -> toolResult",
            trace.requests[1].join(" -> ")
        ));
    }
    if !final_answer.text().contains(code) {
        return Err(format!(
            "the final answer {:?} does not contain {code}",
            final_answer.text()
        ));
    }
    let history_roles = roles(history);
    if history_roles != ["user", "assistant", "toolResult", "assistant"] {
        return Err(format!(
            "the history is {}, expected user -> assistant -> toolResult -> assistant",
            history_roles.join(" -> ")
        ));
    }
    Ok(())
}
