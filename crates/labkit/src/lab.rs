//! The frame every lab shares: parse the model flags, start the model, run the lab's body, print
//! one pass or fail line and return the exit code; and the small helpers lab bodies use.

use std::future::Future;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use oxpi_agent_core::StreamFn;
use oxpi_ai::{AssistantMessage, Message, StopReason};

use crate::{LiveModel, ModelArgs, MODEL_FLAGS_USAGE};

/// Runs a lab: `name` is its number (`"09"`), `passed` the words after `lab NN` on success
/// (`"agent loop passed"`), `body` the lab itself, which returns the first fact that did not
/// hold. Exit codes: 0 passed, 1 failed, 2 bad arguments.
pub async fn run_lab<F, Fut>(name: &str, passed: &str, body: F) -> ExitCode
where
    F: FnOnce(LiveModel) -> Fut,
    Fut: Future<Output = (LiveModel, Result<(), String>)>,
{
    let usage = |message: &str| {
        eprintln!("{message}\nusage: lab-{name} [options]\n{MODEL_FLAGS_USAGE}");
        ExitCode::from(2)
    };
    let (model_args, rest) = match ModelArgs::parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(e) => return usage(&e),
    };
    if let Some(arg) = rest.first() {
        if arg == "-h" || arg == "--help" {
            println!("usage: lab-{name} [options]\n{MODEL_FLAGS_USAGE}");
            return ExitCode::SUCCESS;
        }
        return usage(&format!("unknown argument {arg}"));
    }
    let choice = match model_args.with_env(|var| std::env::var(var).ok()).resolve() {
        Ok(choice) => choice,
        Err(e) => return usage(&e),
    };
    let live = match crate::start(choice).await {
        Ok(live) => live,
        Err(e) => {
            println!("lab {name} failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (live, outcome) = body(live).await;
    live.shutdown().await;
    match outcome {
        Ok(()) => {
            println!("lab {name} {passed}");
            ExitCode::SUCCESS
        }
        Err(fact) => {
            println!("lab {name} failed: {fact}");
            ExitCode::FAILURE
        }
    }
}

/// The roles of every model request an agent makes, printed as they go out
/// (`request 2 roles: user -> assistant -> toolResult`). Clones share the log.
#[derive(Debug, Clone, Default)]
pub struct RequestLog(Arc<Mutex<Vec<Vec<&'static str>>>>);

impl RequestLog {
    /// A stream function for `AgentOptions::stream_fn` that records and prints each request,
    /// then streams it as usual.
    pub fn stream_fn(&self) -> StreamFn {
        let log = self.clone();
        Arc::new(move |model, context, options| {
            let request_roles: Vec<&'static str> =
                context.messages.iter().map(request_role).collect();
            let count = {
                let mut requests = log.0.lock().unwrap_or_else(|p| p.into_inner());
                requests.push(request_roles.clone());
                requests.len()
            };
            println!("request {count} roles: {}", request_roles.join(" -> "));
            oxpi_ai::stream(model, context, options)
        })
    }

    /// The requests so far: the roles of each one's messages.
    pub fn requests(&self) -> Vec<Vec<&'static str>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A code `read-` plus six digits that differ from run to run.
pub fn fresh_code() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("read-{:06}", hasher.finish() % 1_000_000)
}

/// A request message's role, for the log (an app-defined message never reaches a request:
/// the agent leaves it out; it would be logged as `custom`).
fn request_role(message: &Message) -> &'static str {
    match message {
        Message::System(_) => "system",
        Message::User(_) => "user",
        Message::Assistant(_) => "assistant",
        Message::ToolResult(_) => "toolResult",
        Message::Custom(_) => "custom",
    }
}

/// The roles of `messages`, in order.
pub fn roles(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(Message::role).collect()
}

/// The error of a reply that failed or was aborted.
pub fn provider_error(message: &AssistantMessage) -> Option<String> {
    matches!(message.stop_reason, StopReason::Error | StopReason::Aborted).then(|| {
        message
            .error_message
            .clone()
            .unwrap_or_else(|| format!("stopReason {:?}", message.stop_reason))
    })
}

/// Prints a tool's start (`read args: {…}`) and end (`read result: …`, marked `(error)`) as a
/// lab's trace shows them; other events are left to the lab.
pub fn print_tool_event(event: &oxpi_agent_core::AgentEvent) {
    use oxpi_agent_core::AgentEvent;
    match event {
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => println!(
            "{tool_name} args: {}",
            serde_json::Value::Object(args.clone())
        ),
        AgentEvent::ToolExecutionEnd {
            tool_name,
            result,
            is_error,
            ..
        } => {
            let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
            println!(
                "{tool_name} result{}: {}",
                if *is_error { " (error)" } else { "" },
                text.join("\n")
            );
        }
        _ => {}
    }
}

/// Checks that every tool result follows the assistant message whose call it answers, by id and
/// in order, and that no call is left without a result.
pub fn check_pairing(history: &[Message]) -> Result<(), String> {
    let mut expected: Vec<String> = Vec::new();
    for message in history {
        match message {
            Message::Assistant(a) => {
                if let Some(id) = expected.first() {
                    return Err(format!("call {id} has no result before the next reply"));
                }
                expected = a.tool_calls().map(|c| c.id.clone()).collect();
            }
            Message::ToolResult(r) => {
                if expected.first() != Some(&r.tool_call_id) {
                    return Err(format!(
                        "tool result {} does not answer the call before it ({:?})",
                        r.tool_call_id,
                        expected.first()
                    ));
                }
                expected.remove(0);
            }
            Message::User(_) | Message::System(_) | Message::Custom(_) => {}
        }
    }
    match expected.first() {
        Some(id) => Err(format!("call {id} has no result")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_look_alike_and_errors_are_named() {
        let code = fresh_code();
        assert!(code.starts_with("read-") && code.len() == 11, "{code}");
        let mut failed = AssistantMessage::empty("a", "p", "m");
        failed.stop_reason = StopReason::Error;
        assert_eq!(provider_error(&failed), Some("stopReason Error".into()));
        failed.error_message = Some("boom".into());
        assert_eq!(provider_error(&failed), Some("boom".into()));
        failed.stop_reason = StopReason::Stop;
        assert_eq!(provider_error(&failed), None);
        assert_eq!(roles(&[Message::user("hi")]), ["user"]);
    }
}
