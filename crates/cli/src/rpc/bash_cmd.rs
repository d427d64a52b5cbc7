//! The RPC `bash` and `abort_bash` commands (pi's shapes, `docs/rpc-commands.md`): the command
//! runs with oxpi-tools' bash tool in the working directory under its sandbox, its output
//! streams as `bash_execution_update` records (`{id, delta}`), and the response is pi's
//! `BashResult` (`output`, `exitCode`, `cancelled`, `truncated`, `fullOutputPath`). The run is
//! recorded as a `bashExecution` message (pi's), so its output reaches the model with the next
//! prompt unless `excludeFromContext`; while a prompt runs it is recorded when the run ends.

use std::sync::{Arc, Mutex};

use oxpi_agent_core::{AgentTool, AgentToolResult, ToolUpdateFn};
use oxpi_tools::{BashArgs, BashDetails};
use serde_json::{json, Value};

use super::{failure, lock, success, Rpc};

/// The text blocks of a tool result, joined.
fn text_of(result: &AgentToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("")
}

/// `text` without the status line the tool ends it with (`\n\nCommand aborted`, …) and
/// without the model-facing truncation notice: pi's `output` is the output alone.
fn bare_output(text: &str, status_prefix: &str) -> String {
    let text = match text.rfind(status_prefix) {
        Some(i) => &text[..i],
        None => text,
    };
    let text = text.strip_suffix("\n\n").unwrap_or(text);
    let text = match text.rfind("\n\n[Showing ") {
        Some(i) if text.ends_with(']') => &text[..i],
        _ => text,
    };
    if text == "(no output)" {
        String::new()
    } else {
        text.to_string()
    }
}

/// pi's `BashResult` from what the tool returned.
pub(crate) fn bash_result(
    outcome: Result<AgentToolResult, oxpi_agent_core::ToolError>,
    cancelled: bool,
) -> Result<Value, String> {
    let (text, details) = match outcome {
        Ok(result) => (text_of(&result), result.details),
        Err(error) => (error.message, error.details),
    };
    let details: Option<BashDetails> = details.and_then(|d| serde_json::from_value(d).ok());
    let Some(details) = details else {
        if cancelled || text.ends_with("Command aborted") {
            return Ok(json!({
                "output": bare_output(&text, "Command aborted"),
                "cancelled": true,
                "truncated": false,
            }));
        }
        return Err(text);
    };
    let shown_cut = details.truncation.is_some();
    let output = if shown_cut {
        bare_output(&text, "Command exited with code ")
    } else {
        details.output.clone()
    };
    let mut result = json!({
        "output": output,
        "exitCode": details.exit_code,
        "cancelled": false,
        "truncated": shown_cut || details.truncated,
    });
    if let Some(path) = details.full_output_file.or(details.full_output_path) {
        result["fullOutputPath"] = json!(path);
    }
    Ok(result)
}

impl Rpc {
    /// Starts `bash`; the response is written when the command ends.
    pub(crate) fn start_bash(
        self: &Arc<Self>,
        id: Option<Value>,
        command: &Value,
    ) -> Result<(), String> {
        let text = command
            .get("command")
            .and_then(Value::as_str)
            .ok_or("the command needs a string field `command`")?
            .to_string();
        let exclude = command
            .get("excludeFromContext")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let cancel = lock(&self.bash_cancel).child_token();
        let rpc = self.clone();
        tokio::spawn(async move {
            let tool = crate::tool_choice::configured_bash(
                rpc.runtime.workspace.clone(),
                &rpc.runtime.bash,
            );
            let writer = rpc.clone();
            let update_id = id.clone();
            let seen = Mutex::new(String::new());
            let on_update: ToolUpdateFn = Arc::new(move |partial: AgentToolResult| {
                let now = text_of(&partial);
                let delta = {
                    let mut seen = lock(&seen);
                    let delta = now.strip_prefix(seen.as_str()).unwrap_or(&now).to_string();
                    *seen = now;
                    delta
                };
                if !delta.is_empty() {
                    let mut record = json!({"type": "bash_execution_update", "delta": delta});
                    if let Some(id) = &update_id {
                        record["id"] = id.clone();
                    }
                    writer.out.write(&record);
                }
            });
            let outcome = tool
                .execute(
                    "rpc-bash",
                    BashArgs::new(text.clone()),
                    cancel.clone(),
                    on_update,
                )
                .await;
            match bash_result(outcome, cancel.is_cancelled()) {
                Ok(result) => {
                    let mut message = result.clone();
                    message["role"] = json!("bashExecution");
                    message["command"] = json!(text);
                    message["timestamp"] = json!(oxpi_ai::now_millis());
                    if exclude {
                        message["excludeFromContext"] = json!(true);
                    }
                    rpc.record_bash(message);
                    rpc.out.write(&success(&id, "bash", Some(result)));
                }
                Err(error) => rpc.out.write(&failure(&id, Some("bash"), &error)),
            }
        });
        Ok(())
    }

    /// Cancels every running `bash` (later ones get a fresh parent token).
    pub(crate) fn abort_bash(&self) {
        let previous = std::mem::take(&mut *lock(&self.bash_cancel));
        previous.cancel();
    }

    /// Records a `bashExecution` message: at once when idle, else when the run ends.
    fn record_bash(&self, message: Value) {
        if self.is_busy() {
            lock(&self.pending_bash).push(message);
            return;
        }
        self.append_messages(vec![message]);
    }

    /// Appends pi-shaped `messages` to the session and gives the agent the new context.
    pub(crate) fn append_messages(&self, messages: Vec<Value>) {
        if messages.is_empty() {
            return;
        }
        let context = self.runtime.with_session(|s| {
            for message in messages {
                if let Err(e) = s.append_message_json(message) {
                    eprintln!("oxpi: the bash result could not be recorded: {e}");
                }
            }
            s.build_session_context().messages
        });
        let Some(context) = context else { return };
        match oxpi_session::to_llm_messages(&context) {
            Ok(history) => {
                if let Err(e) = self.runtime.agent.replace_messages(history) {
                    eprintln!("oxpi: the bash result could not reach the agent: {e}");
                }
            }
            Err(e) => eprintln!("oxpi: the bash result could not reach the agent: {e}"),
        }
    }

    /// Records the `bash` results that came while the run went on.
    pub(crate) fn flush_pending_bash(&self) {
        let pending = std::mem::take(&mut *lock(&self.pending_bash));
        self.append_messages(pending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_is_given_without_status_or_notice() {
        assert_eq!(
            bare_output("a\nb\n\nCommand aborted", "Command aborted"),
            "a\nb"
        );
        assert_eq!(bare_output("Command aborted", "Command aborted"), "");
        assert_eq!(
            bare_output(
                "x\n\n[Showing lines 2-3 of 3. Full output: /tmp/f]\n\nCommand exited with code 2",
                "Command exited with code "
            ),
            "x"
        );
        assert_eq!(bare_output("(no output)", "Command aborted"), "");
    }
}
