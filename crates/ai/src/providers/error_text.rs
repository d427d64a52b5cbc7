//! The text of an HTTP error: the status and the server's own message, taken from the error
//! body's usual shapes.

use reqwest::StatusCode;

/// `401 Incorrect API key provided…`: the status code and the server's own message.
pub fn http_error_text(status: StatusCode, body: &str) -> String {
    let message = error_message_from_body(body);
    if message.is_empty() {
        format!(
            "{} {} (no body)",
            status.as_u16(),
            status.canonical_reason().unwrap_or("error")
        )
    } else {
        format!("{} {}", status.as_u16(), message)
    }
}

/// The `error.message` (or `message`, or `error`) of a JSON error body, else the body itself,
/// shortened to 1,000 characters.
pub fn error_message_from_body(body: &str) -> String {
    let body = body.trim();
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let v = match &v {
                serde_json::Value::Array(items) => items.first().cloned().unwrap_or_default(),
                _ => v,
            };
            let error = v.get("error").cloned().unwrap_or_default();
            error
                .get("message")
                .and_then(|m| m.as_str())
                .or_else(|| error.as_str())
                .or_else(|| v.get("message").and_then(|m| m.as_str()))
                .or_else(|| v.get("detail").and_then(|m| m.as_str()))
                .map(str::to_string)
        });
    let text = from_json.unwrap_or_else(|| body.to_string());
    if text.chars().count() > 1000 {
        let cut: String = text.chars().take(1000).collect();
        format!("{cut}…")
    } else {
        text
    }
}
