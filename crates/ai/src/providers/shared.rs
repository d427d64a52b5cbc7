//! Small conversions that more than one wire API makes the same way: a tool-call id limited to
//! `[A-Za-z0-9_-]` and 64 characters, a tool result's text with whether it holds images, and
//! the leading system (or developer) message of the OpenAI APIs.

use serde_json::{json, Value};

use crate::types::content::UserContent;
use crate::types::message::ToolResultMessage;
use crate::types::model::Model;

/// `id` with each character outside `[A-Za-z0-9_-]` made `_`, at most 64 characters (Google's
/// and Bedrock's rule for call ids).
pub(crate) fn safe_call_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// A tool result's text blocks joined by newlines, and whether it holds an image.
pub(crate) fn result_text_and_images(result: &ToolResultMessage) -> (String, bool) {
    let text = result
        .content
        .iter()
        .filter_map(|c| match c {
            UserContent::Text(t) => Some(t.text.as_str()),
            UserContent::Image(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let has_images = result
        .content
        .iter()
        .any(|c| matches!(c, UserContent::Image(_)));
    (text, has_images)
}

/// The system prompt as the OpenAI APIs' first message (`None` without one): role `developer`
/// for a reasoning model when the endpoint takes it, else `system`.
pub(crate) fn system_message(
    model: &Model,
    prompt: Option<&str>,
    supports_developer_role: bool,
) -> Option<Value> {
    let system = prompt.filter(|s| !s.is_empty())?;
    let role = if model.reasoning && supports_developer_role {
        "developer"
    } else {
        "system"
    };
    Some(json!({"role": role, "content": system}))
}
