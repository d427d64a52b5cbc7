//! `!cmd` and `!!cmd`: the command runs with the bash tool (in the working directory, under its
//! sandbox), command and output are shown, and the run is recorded as pi's `bashExecution`
//! message (left out of the model's context with `!!`). Also `/copy`'s OSC 52.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use oxpi_agent_core::{AgentTool, AgentToolResult, ToolUpdateFn};
use oxpi_tools::{BashArgs, BashTool};
use serde_json::json;

use super::commands::Ctx;
use super::state::{App, Item, ToolView};
use super::Msg;

/// Puts `text` on the terminal's clipboard (OSC 52).
pub(crate) fn osc52(text: &str) {
    let encoded = base64(text.as_bytes());
    let mut out = std::io::stdout();
    let _ = write!(out, "\x1b]52;c;{encoded}\x07");
    let _ = out.flush();
}

/// Standard base64 with padding.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn text_of(result: &AgentToolResult) -> String {
    super::state::result_text(&result.content)
}

/// Runs `command`; its output streams into the view and is recorded when it ends.
pub(crate) fn run(ctx: &Ctx, app: &mut App, command: String, exclude: bool, now: Instant) {
    let id = format!("shell-{}", oxpi_ai::now_millis());
    app.tools.push(ToolView {
        id: id.clone(),
        name: "bash".into(),
        args: json!({"command": command})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        partial: None,
        result: None,
    });
    app.working = Some(now);
    let runtime = ctx.runtime.clone();
    let tx = ctx.tx.clone();
    let cancel = ctx.cancel.child_token();
    tokio::spawn(async move {
        let tool = BashTool::new(runtime.workspace.clone());
        let updates = tx.clone();
        let update_id = id.clone();
        let on_update: ToolUpdateFn = Arc::new(move |partial: AgentToolResult| {
            let _ = updates.send(Msg::Agent(Box::new(
                oxpi_agent_core::AgentEvent::ToolExecutionUpdate {
                    tool_call_id: update_id.clone(),
                    tool_name: "bash".into(),
                    args: serde_json::Map::new(),
                    partial_result: partial,
                },
            )));
        });
        let outcome = tool
            .execute(
                &id,
                BashArgs::new(command.clone()),
                cancel.clone(),
                on_update,
            )
            .await;
        let (text, is_error) = match &outcome {
            Ok(r) => (text_of(r), false),
            Err(e) => (e.message.clone(), true),
        };
        let _ = tx.send(Msg::Agent(Box::new(
            oxpi_agent_core::AgentEvent::ToolExecutionEnd {
                tool_call_id: id.clone(),
                tool_name: "bash".into(),
                result: AgentToolResult::text(text.clone()),
                is_error,
                duration_ms: None,
            },
        )));
        let mut message = match crate::rpc::bash_result(outcome, cancel.is_cancelled()) {
            Ok(result) => result,
            Err(e) => json!({"output": e, "cancelled": false, "truncated": false}),
        };
        message["role"] = json!("bashExecution");
        message["command"] = json!(command);
        message["timestamp"] = json!(oxpi_ai::now_millis());
        if exclude {
            message["excludeFromContext"] = json!(true);
        }
        let recorded = runtime.with_session(|s| {
            s.append_message_json(message)
                .map(|_| s.build_session_context().messages)
        });
        let error = match recorded {
            Some(Ok(context)) => oxpi_session::to_llm_messages(&context)
                .map_err(|e| e.to_string())
                .and_then(|h| runtime.agent.replace_messages(h).map_err(|e| e.to_string()))
                .err(),
            Some(Err(e)) => Some(e.to_string()),
            None => None,
        };
        let _ = tx.send(Msg::Done(
            error.map(|e| format!("The command was not recorded: {e}")),
        ));
        if exclude {
            let _ = tx.send(Msg::Show(Item::Info("(not sent to the model)".into())));
        }
    });
}

/// The text of the last assistant reply.
pub(crate) fn last_reply_text(runtime: &crate::runtime::Runtime) -> Option<String> {
    runtime.agent.messages().iter().rev().find_map(|m| match m {
        oxpi_ai::Message::Assistant(a) => {
            let text: Vec<&str> = a
                .content
                .iter()
                .filter_map(|b| match b {
                    oxpi_ai::AssistantContent::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            (!text.is_empty()).then(|| text.join("\n"))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_rfc_4648() {
        assert_eq!(
            [
                base64(b""),
                base64(b"f"),
                base64(b"fo"),
                base64(b"foo"),
                base64(b"foob")
            ],
            ["", "Zg==", "Zm8=", "Zm9v", "Zm9vYg=="]
        );
    }
}
