//! The Gemini provider over real HTTP: replays of every recorded `streamGenerateContent` stream,
//! the requests it builds (checked against recorded multi-turn conversations), thought-signature
//! round trips, tool-call ids, and every failure path.

mod failures;
mod recorded;
mod stream;

use std::time::Duration;

use futures::StreamExt;
use oxpi_ai::providers::google_generative_ai::models::builtin;
use oxpi_ai::providers::google_generative_ai::stream::GENERATED_ID_PREFIX;
use oxpi_ai::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Context, Message, Model,
    ReasoningLevel, StopReason, StreamOptions, TextContent, ThinkingContent, Tool, ToolCall,
    ToolResultMessage, UserContent, UserMessage, UserMessageContent,
};
use oxpi_testkit::{fixtures_root, Part, Reply, TestServer};
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
    model
}

fn model(server: &TestServer) -> Model {
    model_named(server, "gemini-2.5-flash")
}

fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some(KEY.into()),
        retry_base_delay: Duration::from_millis(5),
        request_timeout: Duration::from_secs(10),
        ..StreamOptions::default()
    }
}

fn user_context(text: &str) -> Context {
    Context::new("Be brief.").with_message(Message::user(text))
}

async fn run(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let mut stream = oxpi_ai::stream(model, context, options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let last = events
        .last()
        .and_then(|e| e.final_message())
        .cloned()
        .expect("a terminal event");
    assert_eq!(
        events.iter().filter(|e| e.is_terminal()).count(),
        1,
        "exactly one terminal event"
    );
    (events, last)
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

fn kind(event: &AssistantMessageEvent) -> &'static str {
    use AssistantMessageEvent as E;
    match event {
        E::Start { .. } => "start",
        E::TextStart { .. } => "text_start",
        E::TextDelta { .. } => "text_delta",
        E::TextEnd { .. } => "text_end",
        E::ThinkingStart { .. } => "thinking_start",
        E::ThinkingDelta { .. } => "thinking_delta",
        E::ThinkingEnd { .. } => "thinking_end",
        E::ToolcallStart { .. } => "toolcall_start",
        E::ToolcallDelta { .. } => "toolcall_delta",
        E::ToolcallEnd { .. } => "toolcall_end",
        E::Done { .. } => "done",
        E::Error { .. } => "error",
    }
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
