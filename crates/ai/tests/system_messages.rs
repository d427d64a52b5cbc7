//! A conversation that carries its prompt and tools as pi 1.6 system messages, sent over real
//! HTTP: every provider builds its request from the replayed prompt and tools (pi's rule for APIs
//! without mid-conversation system messages) and never sends a system message in the middle of
//! the conversation, nor as a user turn.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

#[allow(dead_code)]
mod common;
use common::run;

use std::time::Duration;

use oxpi_ai::{Context, Message, Model, StopReason, StreamOptions, SystemMessage, Tool};
use oxpi_testkit::{Reply, TestServer};
use serde_json::{json, Value};

fn tool(name: &str) -> Tool {
    Tool::new(
        name,
        format!("The {name} tool"),
        json!({"type": "object", "properties": {}}),
    )
}

/// Old-style prompt and tools, then a conversation in which system messages add instructions,
/// a section, and change the tools.
fn context() -> Context {
    Context::new("Base prompt.")
        .with_tool(tool("read"))
        .with_tool(tool("bash"))
        .with_message(Message::user("first"))
        .with_message(
            SystemMessage::text("Extra instruction.")
                .with_section("skills", Some("<skills>a</skills>".into()))
                .with_tools_removed(["bash"])
                .with_tools_added(vec![tool("write")]),
        )
        .with_message(Message::user("second"))
}

const PROMPT: &str = "Base prompt.\n\nExtra instruction.\n\n<skills>a</skills>";

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key("k")
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(10))
}

fn names(tools: &Value, pointer: &str) -> Vec<String> {
    tools
        .as_array()
        .expect("a tool list")
        .iter()
        .map(|t| {
            t.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn chat_completions_gets_one_leading_system_message_and_the_current_tools() {
    let chunks = [
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    ];
    let server = TestServer::start(vec![Reply::sse(chunks)]).await.unwrap();
    let model = Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
    let (_, message) = run(&model, &context(), options()).await;
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{:?}",
        message.error_message
    );
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": PROMPT},
            {"role": "user", "content": "first"},
            {"role": "user", "content": "second"},
        ])
    );
    assert_eq!(names(&body["tools"], "/function/name"), ["read", "write"]);
}

#[tokio::test]
async fn anthropic_gets_the_replayed_prompt_as_its_system_field() {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null, "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ];
    let sse: Vec<String> = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    let server = TestServer::start(vec![Reply::sse(sse)]).await.unwrap();
    let mut model = Model::openai_compatible(format!("{}/v1", server.base_url()), "claude-test");
    model.api = "anthropic-messages".into();
    model.provider = "anthropic".into();
    let options = options().with_cache_retention(oxpi_ai::CacheRetention::None);
    let (_, message) = run(&model, &context(), options).await;
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{:?}",
        message.error_message
    );
    let body = server.requests()[0].json();
    let system: Vec<&str> = body["system"]
        .as_array()
        .expect("system blocks")
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(system, [PROMPT]);
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert!(
        !roles.is_empty() && roles.iter().all(|r| *r == "user"),
        "user turns only, no system turn: {roles:?}"
    );
    let texts = body["messages"].to_string();
    assert!(!texts.contains("Extra instruction"), "{texts}");
    assert_eq!(names(&body["tools"], "/name"), ["read", "write"]);
}

#[test]
fn a_context_without_system_messages_is_sent_as_it_is() {
    let plain = Context::new("p").with_tool(tool("a"));
    assert!(matches!(plain.for_request(), std::borrow::Cow::Borrowed(_)));
    let only_tools = Context::default()
        .with_message(SystemMessage::text("").with_tools_added(vec![tool("a")]))
        .with_message(Message::user("hi"));
    let request = only_tools.for_request();
    assert_eq!(request.system_prompt, None, "an empty prompt is no prompt");
    assert_eq!(request.tools, [tool("a")]);
}
