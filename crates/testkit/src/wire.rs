//! Model replies rendered in each wire API's streaming format, for scripted servers: what the
//! model "says" ([`Script`]: thinking, text, tool calls, a length stop) as OpenAI Chat
//! Completions chunks, OpenAI Responses events, Anthropic Messages events or Gemini chunks.
//!
//! ```
//! use oxpi_testkit::wire::{anthropic, reply, Script};
//! let events = reply(anthropic(&Script::text("Hello there")));
//! assert!(matches!(events, oxpi_testkit::Reply::Respond { status: 200, .. }));
//! ```

use serde_json::{json, Value};

use crate::Reply;

/// A 200 event stream of `(content events, terminal events)`.
pub fn reply((body, end): (Vec<String>, Vec<String>)) -> Reply {
    Reply::sse(body.into_iter().chain(end))
}

/// What the model "says" in a scenario.
#[derive(Clone, Debug, Default)]
pub struct Script {
    /// Reasoning text, first.
    pub thinking: Option<&'static str>,
    /// Text deltas, in order.
    pub text: Vec<&'static str>,
    /// Tool calls `(name, arguments)`, in one batch after the text.
    pub calls: Vec<(&'static str, Value)>,
    /// End as cut by the output limit.
    pub length: bool,
}

impl Script {
    /// A reply of this text (one delta per word).
    pub fn text(text: &'static str) -> Self {
        Self {
            text: text.split_inclusive(' ').collect(),
            ..Self::default()
        }
    }

    /// A reply calling each `(name, arguments)` in one batch.
    pub fn calls(calls: &[(&'static str, Value)]) -> Self {
        Self {
            calls: calls.to_vec(),
            ..Self::default()
        }
    }
}

/// One SSE event: `event: NAME` (when given) and `data: JSON`.
pub fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// `script` as OpenAI Chat Completions chunks: (content events, terminal events).
pub fn completions(script: &Script) -> (Vec<String>, Vec<String>) {
    let chunk = |delta: Value| {
        sse(
            None,
            &json!({"id": "c1", "choices": [{"index": 0, "delta": delta}]}),
        )
    };
    let mut body = Vec::new();
    if let Some(t) = script.thinking {
        body.push(chunk(json!({"reasoning_content": t})));
    }
    for t in &script.text {
        body.push(chunk(json!({"content": t})));
    }
    for (i, (name, args)) in script.calls.iter().enumerate() {
        let raw = args.to_string();
        let (a, b) = raw.split_at(raw.len() / 2);
        body.push(chunk(json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function", "function": {"name": name, "arguments": a}}]})));
        body.push(chunk(
            json!({"tool_calls": [{"index": i, "function": {"arguments": b}}]}),
        ));
    }
    let reason = if script.length {
        "length"
    } else if script.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let end = vec![
        sse(
            None,
            &json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
        ),
        sse(
            None,
            &json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}}),
        ),
        "data: [DONE]\n\n".to_string(),
    ];
    (body, end)
}

/// `script` as OpenAI Responses events: (content events, terminal events).
pub fn responses(script: &Script) -> (Vec<String>, Vec<String>) {
    let ev = |data: Value| sse(data["type"].as_str(), &data);
    let mut body = vec![ev(
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
    )];
    if let Some(t) = script.thinking {
        body.push(ev(json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}})));
        body.push(ev(json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": t})));
        body.push(ev(json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": t}]}})));
    }
    if !script.text.is_empty() {
        body.push(ev(json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}})));
        for t in &script.text {
            body.push(ev(json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": t})));
        }
        let all: String = script.text.concat();
        body.push(ev(json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": all}]}})));
    }
    for (i, (name, args)) in script.calls.iter().enumerate() {
        let (item, call, raw) = (format!("fc_{i}"), format!("call_{i}"), args.to_string());
        body.push(ev(json!({"type": "response.output_item.added", "output_index": 2 + i, "item": {"type": "function_call", "id": item, "call_id": call, "name": name, "arguments": "", "status": "in_progress"}})));
        body.push(ev(json!({"type": "response.function_call_arguments.delta", "item_id": item, "output_index": 2 + i, "delta": raw})));
        body.push(ev(json!({"type": "response.function_call_arguments.done", "item_id": item, "output_index": 2 + i, "arguments": raw})));
        body.push(ev(json!({"type": "response.output_item.done", "output_index": 2 + i, "item": {"type": "function_call", "id": item, "call_id": call, "name": name, "arguments": raw, "status": "completed"}})));
    }
    let usage = json!({"input_tokens": 5, "output_tokens": 7, "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}});
    let end = if script.length {
        ev(
            json!({"type": "response.incomplete", "response": {"id": "resp_1", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "usage": usage}}),
        )
    } else {
        ev(
            json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": usage}}),
        )
    };
    (body, vec![end])
}

/// `script` as Anthropic Messages events: (content events, terminal events).
pub fn anthropic(script: &Script) -> (Vec<String>, Vec<String>) {
    let ev = |data: Value| sse(data["type"].as_str(), &data);
    let mut body = vec![ev(
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "conformance-model", "content": [], "stop_reason": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if let Some(t) = script.thinking {
        body.push(ev(json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})));
        body.push(ev(json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": t}})));
        body.push(ev(json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": "sig"}})));
        body.push(ev(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    if !script.text.is_empty() {
        body.push(ev(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
        for t in &script.text {
            body.push(ev(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": t}})));
        }
        body.push(ev(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for (i, (name, args)) in script.calls.iter().enumerate() {
        let raw = args.to_string();
        let (a, b) = raw.split_at(raw.len() / 2);
        body.push(ev(json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": name, "input": {}}})));
        body.push(ev(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": a}})));
        body.push(ev(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": b}})));
        body.push(ev(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    let reason = if script.length {
        "max_tokens"
    } else if script.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    let end = vec![
        ev(
            json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": 7}}),
        ),
        ev(json!({"type": "message_stop"})),
    ];
    (body, end)
}

/// `script` as Gemini `streamGenerateContent?alt=sse` chunks: (content events, terminal events).
pub fn gemini(script: &Script) -> (Vec<String>, Vec<String>) {
    let chunk = |parts: Value| {
        sse(
            None,
            &json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], "responseId": "g1"}),
        )
    };
    let mut body = Vec::new();
    if let Some(t) = script.thinking {
        body.push(chunk(json!([{"text": t, "thought": true}])));
    }
    for t in &script.text {
        body.push(chunk(json!([{"text": t}])));
    }
    if !script.calls.is_empty() {
        let parts: Vec<Value> = script
            .calls
            .iter()
            .map(|(name, args)| json!({"functionCall": {"name": name, "args": args}}))
            .collect();
        body.push(chunk(Value::Array(parts)));
    }
    let reason = if script.length { "MAX_TOKENS" } else { "STOP" };
    let end = vec![sse(
        None,
        &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": reason, "index": 0}], "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 7, "totalTokenCount": 12}, "responseId": "g1"}),
    )];
    (body, end)
}
