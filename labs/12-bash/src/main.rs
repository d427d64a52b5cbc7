//! Lab 12: a shell command. A live model runs `python3 count.py` with the `bash` tool (under the
//! default workspace sandbox) and answers with the code the script printed; the code is in no
//! file, so only running the script gives it.
//!
//! Checked on the trace, the history and the process table: `bash` ran once, with a command
//! that runs count.py, exit code 0 and the code in its result; two model requests, the second
//! carrying user → assistant → toolResult; the final answer contains the code; the history is
//! user → assistant → toolResult → assistant; the script's process (its pid written by itself)
//! is gone and no process is left working in the lab's directory.
//!
//! ```text
//! cargo run -p lab-12                                   # the embedded default model
//! cargo run -p lab-12 -- --provider openai              # OPENAI_API_KEY
//! cargo run -p lab-12 -- --base-url http://127.0.0.1:8080/v1 --model qwen
//! ```

use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use oxpi_agent_core::{Agent, AgentEvent, AgentOptions};
use oxpi_ai::{AssistantMessage, Message, StreamOptions};
use oxpi_labkit::lab::{check_pairing, fresh_code, provider_error, roles, run_lab, RequestLog};
use oxpi_labkit::LiveModel;
use oxpi_tools::{BashDetails, Sandbox};

const PROMPT: &str = "请用 bash 运行 python3 count.py，只回复它输出的验证代号。";
/// Measured on the embedded model (greedy): lab-08's system prompt, which names
/// `<tool_response>`, made it write a fake `<tool_response>` as its answer without calling the
/// tool (0/1); with only "To use a tool, reply with a tool call." it called bash three times and
/// answered nothing (0/1). Saying what to reply after the result passes.
const SYSTEM_PROMPT: &str =
    "You are a helpful assistant that can use tools. To use a tool, reply with a tool call. \
After the tool result, reply with the requested text only.";

/// One `bash` call as the events showed it: arguments, result text, error or not, details.
#[derive(Debug, Clone)]
struct BashCall {
    command: String,
    text: String,
    is_error: bool,
    details: Option<BashDetails>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[tokio::main]
async fn main() -> ExitCode {
    run_lab("12", "bash tool passed", |live| async move {
        let outcome = run(&live).await;
        (live, outcome)
    })
    .await
}

/// A script that prints `本次验证代号：<code>` without the code appearing in it, after writing
/// its own pid to `count.pid`.
fn script(code: &str) -> String {
    let digits: u64 = code.trim_start_matches("bash-").parse().unwrap_or(0);
    let offset = 7_919 * (digits % 97 + 1);
    format!(
        "import os\n\
         with open('count.pid', 'w') as f:\n    f.write(str(os.getpid()))\n\
         n = {} - {offset}\n\
         print('本次验证代号：bash-%06d' % n)\n",
        digits + offset
    )
}

async fn run(live: &LiveModel) -> Result<(), String> {
    let dir =
        tempfile::tempdir().map_err(|e| format!("could not create a temporary directory: {e}"))?;
    let root = std::fs::canonicalize(dir.path()).map_err(|e| format!("temporary dir: {e}"))?;
    let code = fresh_code().replace("read-", "bash-");
    std::fs::write(root.join("count.py"), script(&code))
        .map_err(|e| format!("could not write count.py: {e}"))?;
    let workspace = oxpi_tools::Workspace::new(&root).map_err(|e| format!("workspace: {e}"))?;
    let support = Sandbox::probe();
    println!(
        "sandbox: workspace (Landlock ABI {}, seccomp {})",
        support.landlock_abi, support.seccomp
    );
    let bash = oxpi_tools::bash_tool(workspace).map_err(|e| e.to_string())?;

    let calls = Arc::new(Mutex::new(Vec::<BashCall>::new()));
    let requests = RequestLog::default();
    let mut stream_options = StreamOptions::default().with_temperature(0.0);
    stream_options.api_key = live.api_key.clone();
    let mut options = AgentOptions::new(live.model.clone())
        .with_system_prompt(SYSTEM_PROMPT)
        .with_tool(bash)
        .with_max_turns(4)
        .with_stream_options(stream_options);
    options.stream_fn = Some(requests.stream_fn());
    let agent = Agent::new(options);
    let seen = calls.clone();
    let _subscription = agent.subscribe(move |event| print_event(event, &seen));
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
    let requests = requests.requests();
    for (i, request) in requests.iter().enumerate() {
        println!("request {} roles: {}", i + 1, request.join(" -> "));
    }
    println!("final answer: {}", final_answer.text().trim());
    println!("history roles: {}", roles(&history).join(" -> "));
    let calls = lock(&calls).clone();
    check_facts(&calls, &requests, &history, final_answer, &code)?;
    check_processes(&root)
}

fn print_event(event: &AgentEvent, calls: &Mutex<Vec<BashCall>>) {
    match event {
        AgentEvent::MessageEnd {
            message: Message::Assistant(m),
        } => {
            let reason = serde_json::to_value(m.stop_reason).unwrap_or_default();
            println!("assistant stopReason: {}", reason.as_str().unwrap_or("?"));
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
            println!("{tool_name} result: {}", text.trim_end());
            let details: Option<BashDetails> = result
                .details
                .clone()
                .and_then(|d| serde_json::from_value(d).ok());
            if let Some(d) = &details {
                println!(
                    "{tool_name} exit_code: {} wall_time_seconds: {}",
                    d.exit_code, d.wall_time_seconds
                );
            }
            lock(calls).push(BashCall {
                command: String::new(),
                text,
                is_error: *is_error,
                details,
            });
        }
        AgentEvent::TurnEnd {
            message: Message::Assistant(m),
            ..
        } => {
            let mut calls = lock(calls);
            let made: Vec<_> = m.tool_calls().collect();
            let start = calls.len().saturating_sub(made.len());
            for (slot, call) in calls[start..].iter_mut().zip(made) {
                slot.command = call
                    .arguments
                    .get("command")
                    .and_then(|c| c.as_str())
                    .unwrap_or("")
                    .to_string();
            }
        }
        _ => {}
    }
}

fn check_facts(
    calls: &[BashCall],
    requests: &[Vec<&'static str>],
    history: &[Message],
    final_answer: &AssistantMessage,
    code: &str,
) -> Result<(), String> {
    let call = match calls {
        [call] => call,
        calls => return Err(format!("bash ran {} times, expected once", calls.len())),
    };
    if !call.command.contains("count.py") {
        return Err(format!(
            "bash ran {:?}, not a command running count.py",
            call.command
        ));
    }
    if call.is_error {
        return Err(format!("bash failed: {}", call.text));
    }
    match &call.details {
        Some(d) if d.exit_code == 0 && d.output.contains(code) => {}
        other => return Err(format!("bash's details {other:?} lack exit 0 and the code")),
    }
    if !call.text.contains(code) {
        return Err(format!("bash returned {:?}, not the code", call.text));
    }
    if requests.len() != 2 {
        return Err(format!(
            "{} model requests, expected exactly 2",
            requests.len()
        ));
    }
    if requests[1] != ["user", "assistant", "toolResult"] {
        return Err(format!(
            "request 2 carried {}, expected user -> assistant -> toolResult",
            requests[1].join(" -> ")
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
    check_pairing(history)
}

/// The script's process is gone, and no process works in the lab's directory.
fn check_processes(root: &Path) -> Result<(), String> {
    let pid = std::fs::read_to_string(root.join("count.pid"))
        .map_err(|e| format!("count.py did not write count.pid (did it run?): {e}"))?;
    let pid = pid.trim();
    if running(pid) {
        return Err(format!("count.py's process {pid} still runs"));
    }
    let mut left = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let cwd = std::fs::read_link(entry.path().join("cwd"));
            if cwd.is_ok_and(|cwd| cwd.starts_with(root)) && running(&name) {
                left.push(name);
            }
        }
    }
    if !left.is_empty() {
        return Err(format!("processes left in the lab's directory: {left:?}"));
    }
    println!("process table: count.py ({pid}) exited, nothing left in the workspace");
    Ok(())
}

/// Whether process `pid` runs (a zombie does not).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next());
        !matches!(state, Some("Z" | "X") | None)
    })
}
