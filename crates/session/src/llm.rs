//! A session context's messages as `oxpi_ai` messages, as pi's `convertToLlm`: `custom`,
//! `branchSummary`, `compactionSummary` and `bashExecution` messages become user messages.

use serde_json::{json, Value};

use crate::message::ContextMessage;

use crate::context::{
    content_text, BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
};

/// A message of the context that `oxpi_ai::Message` cannot hold.
#[derive(Debug, thiserror::Error)]
#[error("message {index} of the context (role {role:?}) is not an oxpi-ai message: {reason}")]
pub struct ConvertError {
    /// Its index in the context's messages.
    pub index: usize,
    /// Its role.
    pub role: String,
    /// Why.
    pub reason: String,
}

/// The messages sent to a model, of a context's agent messages. `system`, `user`, `assistant`
/// and `toolResult` messages pass through as they are (pi 1.6 keeps the system prompt and the
/// tool loadout in the transcript; a provider request replays them); a `bashExecution`
/// excluded from the context, and a message of a role pi does not know, are left out (they
/// stay in the session file). A message of a known role that `oxpi_ai::Message` cannot read
/// is an error. A message read from the session file is read straight from its text.
pub fn to_llm_messages(messages: &[ContextMessage]) -> Result<Vec<oxpi_ai::Message>, ConvertError> {
    let mut out = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        let role = message.role().unwrap_or("");
        let error = |e: serde_json::Error| ConvertError {
            index,
            role: role.into(),
            reason: e.to_string(),
        };
        if matches!(role, "system" | "user" | "assistant" | "toolResult") {
            out.push(message.deserialize().map_err(error)?);
            continue;
        }
        let timestamp = message.get("timestamp").cloned().unwrap_or(Value::from(0));
        let user_text = |text: String| json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp});
        let value = match role {
            "custom" => {
                let content = match message.get("content") {
                    Some(Value::String(s)) => json!([{"type": "text", "text": s}]),
                    Some(c) => c.clone(),
                    None => json!([]),
                };
                json!({"role": "user", "content": content, "timestamp": timestamp})
            }
            "branchSummary" => user_text(format!(
                "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
                message.get("summary").and_then(Value::as_str).unwrap_or("")
            )),
            "compactionSummary" => user_text(format!(
                "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
                message.get("summary").and_then(Value::as_str).unwrap_or("")
            )),
            "bashExecution" => {
                if message.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                    continue;
                }
                user_text(bash_text(message))
            }
            // A role pi 1.6 does not know (an extension's, a newer pi's): left out of the
            // request, as pi's `convertToLlm` does; the session file keeps it.
            _ => continue,
        };
        let converted = serde_json::from_value(value).map_err(error)?;
        out.push(converted);
    }
    Ok(out)
}

/// pi's `bashExecutionToText`.
fn bash_text(m: &Value) -> String {
    let command = m.get("command").and_then(Value::as_str).unwrap_or("");
    let output = content_text(m.get("output"));
    let mut text = format!("Ran `{command}`\n");
    if output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{output}\n```"));
    }
    if m.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = m
        .get("exitCode")
        .and_then(Value::as_i64)
        .filter(|c| *c != 0)
    {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if m.get("truncated").and_then(Value::as_bool) == Some(true) {
        if let Some(path) = m.get("fullOutputPath").and_then(Value::as_str) {
            text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
        }
    }
    text
}
