//! `mistral-conversations`: Mistral's own chat API as pi drives it. The recorded Mistral streams
//! (fixtures/recorded/mistral) read the same through this provider as through the Chat
//! Completions one; the request is pi's shape; reasoning models' list content becomes thinking.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
mod common;

use std::time::Duration;

use common::{run, user_context};
use oxpi_ai::{
    AssistantContent, AssistantMessage, Context, Message, Model, ReasoningLevel, StopReason,
    StreamOptions, Tool, ToolCall, ToolChoice, ToolResultMessage, API_MISTRAL_CONVERSATIONS,
    API_OPENAI_COMPLETIONS,
};
use oxpi_testkit::{recorded_requests, Part, Reply, TestServer};
use serde_json::{json, Value};

fn model(server: &TestServer, id: &str) -> Model {
    // pi's catalogue gives the host without `/v1`.
    let mut model = Model::openai_compatible(server.base_url(), id);
    model.api = API_MISTRAL_CONVERSATIONS.into();
    model.provider = "mistral".to_string();
    model
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key("mistral-test-key")
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(10))
}

/// What a reply says, for comparing two providers' readings of one stream.
fn summary(
    message: &AssistantMessage,
) -> (Vec<AssistantContent>, StopReason, [u64; 4], Option<String>) {
    let u = message.usage;
    (
        message.content.clone(),
        message.stop_reason,
        [u.input, u.output, u.cache_read, u.total_tokens],
        message.error_message.clone(),
    )
}

#[tokio::test]
async fn every_recorded_mistral_stream_reads_as_through_chat_completions() {
    let mut checked = 0;
    for request in recorded_requests("mistral") {
        let stem = request
            .to_string_lossy()
            .trim_end_matches(".request.json")
            .to_string();
        let Ok(body) = std::fs::read(format!("{stem}.response.sse")) else {
            continue;
        };
        let meta: Value =
            serde_json::from_slice(&std::fs::read(format!("{stem}.response.meta.json")).unwrap())
                .unwrap();
        if meta["status"].as_u64() != Some(200) {
            continue;
        }
        let reply = || Reply::sse_parts(vec![Part::Bytes(body.clone())]);
        let server = TestServer::start(vec![reply(), reply()]).await.unwrap();
        let mistral = model(&server, "mistral-small-latest");
        let (_, ours) = run(&mistral, &user_context("replay"), options()).await;
        let mut completions = mistral.clone();
        completions.api = API_OPENAI_COMPLETIONS.into();
        completions.base_url = format!("{}/v1", server.base_url());
        let (_, reference) = run(&completions, &user_context("replay"), options()).await;
        assert_eq!(summary(&ours), summary(&reference), "{stem}");
        assert_eq!(ours.api, API_MISTRAL_CONVERSATIONS);
        assert_eq!(server.requests()[0].path, "/v1/chat/completions");
        checked += 1;
    }
    assert!(checked >= 50, "only {checked} recorded streams");
}

#[tokio::test]
async fn the_request_is_pis_shape() {
    let server = TestServer::start_fn(|_| {
        Reply::sse([
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        ])
    })
    .await
    .unwrap();
    let magistral = {
        let mut m = model(&server, "magistral-medium-latest");
        m.reasoning = true;
        m
    };
    let call = ToolCall::new(
        "call_abc-123|fc_9",
        "read",
        json!({"path": "a"}).as_object().unwrap().clone(),
    );
    let mut earlier = AssistantMessage::empty(&magistral.api, &magistral.provider, &magistral.id);
    earlier.content = vec![
        AssistantContent::thinking("look first"),
        AssistantContent::text("Reading."),
        AssistantContent::ToolCall(call.clone()),
    ];
    earlier.stop_reason = StopReason::ToolUse;
    let context = Context::new("Be brief.")
        .with_message(Message::user("read a"))
        .with_message(Message::Assistant(earlier))
        .with_message(ToolResultMessage::text(&call, "no such file", true))
        .with_tool(Tool {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            constrained_sampling: None,
        });
    let options = options()
        .with_session_id("s-1")
        .with_reasoning(ReasoningLevel::High)
        .with_tool_choice(ToolChoice::Required)
        .with_max_tokens(1000);
    run(&magistral, &context, options.clone()).await;
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some("Bearer mistral-test-key")
    );
    assert_eq!(request.header("x-affinity"), Some("s-1"));
    let body = request.json();
    let id = body["messages"][2]["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        id.len() == 9 && id.chars().all(|c| c.is_ascii_alphanumeric()),
        "{id}"
    );
    assert_eq!(
        body,
        json!({
            "model": "magistral-medium-latest",
            "stream": true,
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "read a"},
                {"role": "assistant", "prefix": false,
                 "content": [
                     {"type": "thinking", "thinking": [{"type": "text", "text": "look first"}]},
                     {"type": "text", "text": "Reading."},
                 ],
                 "tool_calls": [{"id": id, "type": "function", "index": 0,
                                 "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}]},
                {"role": "tool", "tool_call_id": id, "name": "read",
                 "content": [{"type": "text", "text": "[tool error] no such file"}]},
            ],
            "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file",
                        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                        "strict": false}}],
            "max_tokens": 1000,
            "tool_choice": "any",
            "prompt_mode": "reasoning",
            // The session id, for Mistral's prompt cache (pi 1.6).
            "prompt_cache_key": "s-1",
        })
    );
    // A model with a thinking level map (Mistral Small's, from the catalogue) takes an effort
    // instead of the reasoning prompt mode.
    let mut small = model(&server, "mistral-small-latest");
    small.reasoning = true;
    small.thinking_level_map = oxpi_ai::models::get_model("mistral", "mistral-small-latest")
        .and_then(|m| m.thinking_level_map);
    assert!(small.thinking_level_map.is_some());
    run(&small, &user_context("hi"), options).await;
    let body = server.requests()[1].json();
    assert_eq!(
        (body.get("prompt_mode"), body["reasoning_effort"].clone()),
        (None, json!("high"))
    );
}

#[tokio::test]
async fn list_content_with_thinking_becomes_a_thinking_block() {
    let chunk = |delta: Value, finish: Option<&str>| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let server = TestServer::start(vec![Reply::sse([
        chunk(json!({"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Two and "}]}]}), None),
        chunk(json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "two."}]}]}), None),
        chunk(json!({"content": [{"type": "text", "text": "Four"}]}), None),
        chunk(json!({"content": "."}), Some("stop")),
        "data: [DONE]\n\n".to_string(),
    ])])
    .await
    .unwrap();
    let (_, message) = run(
        &model(&server, "magistral-small-latest"),
        &user_context("2+2?"),
        options(),
    )
    .await;
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{:?}",
        message.error_message
    );
    assert_eq!(
        message.content,
        vec![
            AssistantContent::thinking("Two and two."),
            AssistantContent::text("Four.")
        ]
    );
}
