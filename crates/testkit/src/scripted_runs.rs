//! A scripted model for multi-turn agent runs (durable-run tests and `cargo xtask chaos`): an
//! OpenAI Chat Completions stream computed from each request alone, so many runs, restarted
//! processes and replays all get the same answers.
//!
//! The run's first user message says what to do: `run <id>: <n> calls of <tool>`. Turn `t` (the
//! number of assistant messages in the request) gets a call of `<tool>` with id `call_<t>` and
//! arguments `{"line": "<id> turn <t>"}` while `t < n`, then the text `done: <id> after <n>
//! calls`.
//!
//! ```
//! use oxpi_testkit::scripted_runs::{prompt_text, reply_for};
//! let body = serde_json::json!({"messages": [{"role": "user", "content": prompt_text("r1", 2, "record")}]});
//! let (run, turn) = oxpi_testkit::scripted_runs::run_and_turn(&body).unwrap();
//! assert_eq!((run.as_str(), turn), ("r1", 0));
//! let _reply = reply_for(&body);
//! ```

use serde_json::{json, Value};

use crate::Reply;

/// The prompt that asks for `calls` calls of `tool` in run `run`.
pub fn prompt_text(run: &str, calls: u32, tool: &str) -> String {
    format!("run {run}: {calls} calls of {tool}")
}

/// The final text of a run that made `calls` calls.
pub fn final_text(run: &str, calls: u32) -> String {
    format!("done: {run} after {calls} calls")
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Parses the first user message: (run, calls, tool).
fn script_of(body: &Value) -> Option<(String, u32, String)> {
    let messages = body.get("messages")?.as_array()?;
    let user = messages
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    let text = text_of(user.get("content")?);
    let rest = text.strip_prefix("run ")?;
    let (run, rest) = rest.split_once(": ")?;
    let (calls, tool) = rest.split_once(" calls of ")?;
    Some((
        run.to_string(),
        calls.trim().parse().ok()?,
        tool.trim().to_string(),
    ))
}

/// The run id and the turn (assistant messages so far) of a request body.
pub fn run_and_turn(body: &Value) -> Option<(String, u32)> {
    let (run, _, _) = script_of(body)?;
    let turn = body
        .get("messages")?
        .as_array()?
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .count();
    Some((run, u32::try_from(turn).ok()?))
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let body = json!({
        "id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {body}\n\n")
}

/// The scripted reply to a request body (a 400 when the body is not a scripted run's).
pub fn reply_for(body: &Value) -> Reply {
    let (Some((run, calls, tool)), Some((_, turn))) = (script_of(body), run_and_turn(body)) else {
        return Reply::json_error(400, r#"{"error":{"message":"not a scripted run"}}"#);
    };
    if turn < calls {
        let args = json!({"line": format!("{run} turn {turn}")});
        let call = json!({"tool_calls": [{"index": 0, "id": format!("call_{turn}"), "type": "function",
            "function": {"name": tool, "arguments": args.to_string()}}]});
        Reply::sse([
            chunk(json!({"role": "assistant", "content": null}), None),
            chunk(call, None),
            chunk(json!({}), Some("tool_calls")),
            "data: [DONE]\n\n".to_string(),
        ])
    } else {
        Reply::sse([
            chunk(
                json!({"role": "assistant", "content": final_text(&run, calls)}),
                None,
            ),
            chunk(json!({}), Some("stop")),
            "data: [DONE]\n\n".to_string(),
        ])
    }
}
