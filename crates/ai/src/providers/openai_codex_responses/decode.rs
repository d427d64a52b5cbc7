//! The Codex backend's events → the Responses decoder: its `response.done` (and a
//! `response.completed` whose status is `incomplete`) end the stream as pi's `mapCodexEvents`
//! reads them; every other event is the Responses API's.

use serde_json::Value;

use crate::providers::openai_responses::decode::{ResponsesDecoder, ResponsesSeed};
use crate::reply::ReplyBuilder;
use crate::types::model::Model;

/// The Codex decoder: the Responses decoder with the backend's terminal events retyped.
pub(crate) struct CodexDecoder;

impl CodexDecoder {
    /// A decoder writing to `out`.
    #[allow(clippy::new_ret_no_self)]
    pub(crate) fn new(out: ReplyBuilder, model: &Model, seed: ResponsesSeed) -> ResponsesDecoder {
        ResponsesDecoder::new(out, model, seed).with_type_map(codex_type)
    }
}

/// `response.done`, `response.completed` and `response.incomplete` by the response's status:
/// `incomplete` is the Responses API's `response.incomplete`, any other a completion.
fn codex_type(type_: &str, event: &Value) -> Option<&'static str> {
    if !matches!(
        type_,
        "response.done" | "response.completed" | "response.incomplete"
    ) {
        return None;
    }
    let status = event
        .get("response")
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str);
    Some(match (type_, status) {
        (_, Some("incomplete")) => "response.incomplete",
        ("response.incomplete", None) => "response.incomplete",
        _ => "response.completed",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn terminal_events_are_retyped_by_status() {
        let done = |status: Value| json!({"response": {"status": status}});
        assert_eq!(
            codex_type("response.done", &done(json!("completed"))),
            Some("response.completed")
        );
        assert_eq!(
            codex_type("response.done", &done(json!("incomplete"))),
            Some("response.incomplete")
        );
        assert_eq!(
            codex_type("response.completed", &done(json!("incomplete"))),
            Some("response.incomplete")
        );
        assert_eq!(
            codex_type("response.incomplete", &json!({})),
            Some("response.incomplete")
        );
        assert_eq!(codex_type("response.output_text.delta", &json!({})), None);
    }
}
