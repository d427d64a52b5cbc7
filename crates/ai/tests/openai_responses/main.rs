//! The Responses provider over real HTTP: replays of every recorded OpenAI and xAI Responses
//! stream, the request it builds (checked against recorded multi-turn conversations), and every
//! failure path.

#[path = "../common/mod.rs"]
mod common;
use common::{cancel_at_first_text, kind, run, user_context};

mod failures;
mod recorded;
mod stream;

use std::time::Duration;

use oxpi_ai::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Context, Message, Model,
    ReasoningLevel, StopReason, StreamOptions, ThinkingContent, Tool, ToolCall, ToolResultMessage,
    UserContent, API_OPENAI_RESPONSES,
};
use oxpi_testkit::{fixtures_root, recorded_requests, Part, Reply, TestServer};
use serde_json::{json, Value};

fn model_for(server: &TestServer, provider: &str, id: &str) -> Model {
    let mut model = Model::openai_compatible(format!("{}/v1", server.base_url()), id);
    model.api = API_OPENAI_RESPONSES.into();
    model.provider = provider.to_string();
    // No model limit, so no default `max_output_tokens` (pi's `min(max_tokens, 32000)`, tested
    // in `request_knobs.rs`): the bodies here compare with recorded ones that set none.
    model.max_tokens = 0;
    model
}

fn model(server: &TestServer) -> Model {
    model_for(server, "openai", "gpt-test")
}

fn fast_options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key("sk-test-key")
        .with_retry_base_delay(Duration::from_millis(5))
        .with_timeout(Duration::from_secs(10))
}

/// One SSE event, named like OpenAI names them.
fn ev(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or("message").to_string();
    format!("event: {name}\ndata: {data}\n\n")
}

fn created() -> Value {
    json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}})
}

fn message_added(id: &str) -> Value {
    json!({"type": "response.output_item.added", "item": {"type": "message", "id": id, "role": "assistant", "content": [], "status": "in_progress"}})
}

fn text_delta(text: &str) -> Value {
    json!({"type": "response.output_text.delta", "item_id": "msg_1", "content_index": 0, "delta": text})
}

fn message_done(id: &str, text: &str) -> Value {
    json!({"type": "response.output_item.done", "item": {"type": "message", "id": id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}})
}

fn completed(usage: Value) -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": usage}})
}

fn call_added(call_id: &str, item_id: &str, name: &str) -> Value {
    json!({"type": "response.output_item.added", "item": {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": "", "status": "in_progress"}})
}

fn call_done(call_id: &str, item_id: &str, name: &str, arguments: &str) -> Value {
    json!({"type": "response.output_item.done", "item": {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments, "status": "completed"}})
}

fn args_delta(item_id: &str, delta: &str) -> Value {
    json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "delta": delta})
}

fn text_reply(text: &str) -> Vec<String> {
    [
        created(),
        message_added("msg_1"),
        text_delta(text),
        message_done("msg_1", text),
        completed(json!({"input_tokens": 1, "output_tokens": 1})),
    ]
    .into_iter()
    .map(ev)
    .collect()
}

fn object(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}
