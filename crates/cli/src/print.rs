//! `-p`/`--print` and `--mode json`: run the prompts one after another, then exit. Each runs
//! through the session's recovery, as pi's command: a context overflow is compacted and the
//! turn retried once.
//!
//! Print mode writes the final assistant text to stdout (each text block on its own line, as
//! pi) and errors to stderr with exit code 1; while the model works, a status line naming the
//! tool being run goes to stderr, only when stderr is a terminal. JSON mode writes the session
//! header, then one record per event, on stdout only.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use oxpi_agent_core::AgentEvent;
use oxpi_ai::{Message, StopReason, UserContent};

use crate::json_event::{ended_aborted, settled, JsonEvents, RecordWriter};
use crate::runtime::Runtime;

/// The status line of a terminal: what the agent does now, rewritten in place.
fn status(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::TurnStart => Some("waiting for the model…".to_string()),
        AgentEvent::MessageUpdate { .. } => Some("the model is answering…".to_string()),
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => {
            let detail = ["command", "path", "pattern"]
                .iter()
                .find_map(|k| args.get(*k).and_then(|v| v.as_str()))
                .map(|d| format!(": {}", d.chars().take(60).collect::<String>()))
                .unwrap_or_default();
            Some(format!("running {tool_name}{detail}"))
        }
        _ => None,
    }
}

/// Runs `prompts` in print mode; returns the exit code.
pub(crate) async fn run_print(
    runtime: &Runtime,
    prompts: &[String],
    images: &[UserContent],
) -> i32 {
    let terminal = std::io::stderr().is_terminal();
    let last = Arc::new(Mutex::new(String::new()));
    let shown = last.clone();
    let _progress = terminal.then(|| {
        runtime.agent.subscribe(move |event| {
            let Some(text) = status(event) else { return };
            let mut shown = shown.lock().unwrap_or_else(|p| p.into_inner());
            if *shown != text {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K\u{280b} {text}");
                let _ = err.flush();
                *shown = text;
            }
        })
    });
    let mut code = 0;
    let mut failure = None;
    for (i, prompt) in prompts.iter().enumerate() {
        // A failed run is reported from the history below, as pi does.
        match runtime
            .prompt(runtime.prompt_messages(crate::runtime::user_message_with(
                &runtime.expand_prompt(prompt),
                if i == 0 { images } else { &[] },
            )))
            .await
        {
            Ok(()) => failure = None,
            Err(e) if e.is_run_failure() => failure = Some(e),
            Err(e) => {
                eprintln!("{e}");
                code = 1;
                break;
            }
        }
    }
    if terminal {
        eprint!("\r\x1b[2K");
    }
    if code != 0 {
        return code;
    }
    let messages = runtime.agent.messages();
    let Some(Message::Assistant(reply)) = messages.last() else {
        // A failure whose reply is not in the history (recovery left it out of the context).
        return match failure {
            Some(e) => {
                eprintln!("{e}");
                1
            }
            None => 0,
        };
    };
    match reply.stop_reason {
        StopReason::Error | StopReason::Aborted => {
            let fallback = format!("Request {}", stop_name(reply.stop_reason));
            eprintln!("{}", reply.error_message.clone().unwrap_or(fallback));
            1
        }
        reason => {
            let mut out = std::io::stdout().lock();
            for block in &reply.content {
                if let oxpi_ai::AssistantContent::Text(t) = block {
                    let _ = writeln!(out, "{}", t.text);
                }
            }
            let _ = out.flush();
            if reason == StopReason::Length {
                eprintln!("Response was truncated: the model reached its output token limit.");
                1
            } else {
                0
            }
        }
    }
}

fn stop_name(reason: StopReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Runs `prompts` in JSON mode; returns the exit code.
pub(crate) async fn run_json(runtime: &Runtime, prompts: &[String], images: &[UserContent]) -> i32 {
    let writer = RecordWriter::default();
    if let Some(header) = runtime.session_header() {
        writer.write(&header);
    }
    let events = Arc::new(Mutex::new(JsonEvents::default()));
    let sink = writer.clone();
    let _subscription = runtime.agent.subscribe(move |event| {
        let record = events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(event);
        if let Some(record) = record {
            sink.write(&record);
        }
    });
    for (i, prompt) in prompts.iter().enumerate() {
        // A failed run is reported from the history below, as pi does.
        if let Err(e) = runtime
            .prompt(runtime.prompt_messages(crate::runtime::user_message_with(
                &runtime.expand_prompt(prompt),
                if i == 0 { images } else { &[] },
            )))
            .await
            .map(drop)
            .or_else(|e| if e.is_run_failure() { Ok(()) } else { Err(e) })
        {
            eprintln!("{e}");
            return 1;
        }
        writer.write(&settled(ended_aborted(&runtime.agent.messages())));
    }
    0
}
