//! The Gemini provider over real HTTP: replays of every recorded `streamGenerateContent` stream,
//! the requests it builds (checked against recorded multi-turn conversations), thought-signature
//! round trips, tool-call ids, and every failure path.

#[path = "../common/mod.rs"]
mod common;
use common::{cancel_at_first_text, kind, run, user_context};

mod failures;
mod recorded;
mod stream;

use std::time::Duration;

use oxpi_ai::internals::GENERATED_ID_PREFIX;
use oxpi_ai::providers::google_generative_ai::models::builtin;
use oxpi_ai::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Context, Message, Model,
    ReasoningLevel, StopReason, StreamOptions, TextContent, ThinkingContent, Tool, ToolCall,
    ToolResultMessage, UserContent, UserMessage, UserMessageContent,
};
use oxpi_testkit::{fixtures_root, recorded_requests, Part, Reply, TestServer};
use serde_json::{json, Value};

const KEY: &str = "AIza-test-key-123";

fn model_named(server: &TestServer, id: &str) -> Model {
    let mut model = builtin()
        .into_iter()
        .find(|m| m.id == id)
        .unwrap_or_else(|| {
            let mut m = builtin().remove(0);
            m.id = id.to_string();
            m.name = id.to_string();
            m
        });
    model.base_url = format!("{}/v1beta", server.base_url());
    // No model limit, so no default `maxOutputTokens` (pi's `min(max_tokens, 32000)`, tested in
    // `request_knobs.rs`): the bodies here compare with recorded ones that set none.
    model.max_tokens = 0;
    model
}

fn model(server: &TestServer) -> Model {
    model_named(server, "gemini-2.5-flash")
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key(KEY)
        .with_retry_base_delay(Duration::from_millis(5))
        .with_timeout(Duration::from_secs(10))
}

/// One `data:` line per object.
fn sse(chunks: &[Value]) -> Vec<String> {
    chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect()
}

fn parts_chunk(parts: Value) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]})
}

fn text_chunk(text: &str) -> Value {
    parts_chunk(json!([{"text": text}]))
}

fn finish_chunk(reason: &str) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": reason, "index": 0}],
           "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}})
}

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

// Used by the request tests and by the rebuilt recorded conversations.

fn assistant(model: &Model, content: Vec<AssistantContent>, stop: StopReason) -> AssistantMessage {
    let mut message = AssistantMessage::empty(&model.api, &model.provider, &model.id);
    message.content = content;
    message.stop_reason = stop;
    message
}

fn result(call: &ToolCall, text: &str) -> ToolResultMessage {
    ToolResultMessage::text(call, text, false)
}
