//! The Anthropic Messages provider over real HTTP: replays of every recorded Anthropic stream,
//! the request it builds (against a recorded multi-turn tool conversation and for each kind of
//! content), and every failure path.

#[path = "../common/mod.rs"]
mod common;
use common::{cancel_at_first_text, kind, run, user_context};

mod convert;
mod recorded;
mod stream;

use std::time::Duration;

use oxpi_ai::internals::anthropic_build_request as build_request;
use oxpi_ai::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Context, Message, Model, ModelCost,
    ReasoningLevel, StopReason, StreamOptions, ThinkingContent, Tool, ToolCall, ToolResultMessage,
    UserContent, UserMessage, UserMessageContent,
};
use oxpi_testkit::{recorded_requests, Part, Reply, TestServer};
use serde_json::{json, Value};

const KEY: &str = "sk-ant-test-key-123";

fn model_at(base_url: &str) -> Model {
    let mut model = Model::openai_compatible(base_url, "claude-test");
    model.api = "anthropic-messages".into();
    model.provider = "anthropic".into();
    model.reasoning = true;
    model.input = vec![oxpi_ai::InputKind::Text, oxpi_ai::InputKind::Image];
    model.max_tokens = 8192;
    model.cost = ModelCost::new(3.0, 15.0).with_cache(0.3, 3.75);
    model
}

fn model(server: &TestServer) -> Model {
    model_at(&format!("{}/v1", server.base_url()))
}

fn fast_options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key(KEY)
        .with_retry_base_delay(Duration::from_millis(5))
        .with_timeout(Duration::from_secs(10))
        // Cache markers have their own tests (`convert::cache_markers_follow_cache_retention`);
        // the rest compare bodies without them, as the recorded (uncached) requests have none.
        .with_cache_retention(oxpi_ai::CacheRetention::None)
}

/// One SSE event as Anthropic writes it: `event: <type>` then `data: <json>`.
fn ev(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().expect("an event type")
    )
}

fn message_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_01", "type": "message", "role": "assistant",
        "content": [], "model": "claude-test", "stop_reason": null,
        "usage": {"input_tokens": 20, "output_tokens": 1, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100}}})
}

fn text_block(index: u64, parts: &[&str]) -> Vec<Value> {
    let mut out = vec![
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    ];
    for part in parts {
        out.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": part}}));
    }
    out.push(json!({"type": "content_block_stop", "index": index}));
    out
}

fn end(reason: &str) -> Vec<Value> {
    vec![
        json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": 30}}),
        json!({"type": "message_stop"}),
    ]
}

fn stream(events: Vec<Value>) -> Vec<String> {
    events.into_iter().map(ev).collect()
}

fn text_reply(text: &str, reason: &str) -> Vec<String> {
    let mut events = vec![message_start()];
    events.extend(text_block(0, &[text]));
    events.extend(end(reason));
    stream(events)
}

fn object(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().expect("a JSON object")
}

// Used by the conversion tests and by the rebuilt recorded requests.

fn request_json(model: &Model, context: &Context, options: &StreamOptions) -> Value {
    serde_json::to_value(build_request(model, context, options).expect("a valid request"))
        .expect("serializable")
}

fn assistant(model: &Model, content: Vec<AssistantContent>, stop: StopReason) -> Message {
    let mut message = AssistantMessage::empty(&model.api, &model.provider, &model.id);
    message.content = content;
    message.stop_reason = stop;
    Message::Assistant(message)
}

fn user_blocks(blocks: Vec<UserContent>) -> Message {
    Message::User(UserMessage {
        content: UserMessageContent::Blocks(blocks),
        timestamp: 0,
    })
}
