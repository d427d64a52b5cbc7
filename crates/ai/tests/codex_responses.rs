//! The ChatGPT (Codex) backend's Responses API over real HTTP: the request as pi 1.6 sends it
//! (path, headers with the account id from the token, body) and the backend's stream read to
//! the reply.

use std::time::Duration;

use oxpi_ai::{
    AssistantContent, Context, Message, Model, ReasoningLevel, StopReason, StreamOptions,
};
use oxpi_testkit::{Reply, TestServer};
use serde_json::{json, Value};

/// {"alg":"none"} . {"https://api.openai.com/auth":{"chatgpt_account_id":"acct-conformance"}} . "test-key"
const TOKEN: &str = "eyJhbGciOiJub25lIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdC1jb25mb3JtYW5jZSJ9fQ.dGVzdC1rZXk";

fn model(server: &TestServer, id: &str) -> Model {
    let mut model = oxpi_ai::models::get_model("openai-codex", id).expect("a Codex model");
    model.base_url = format!("{}/backend-api", server.base_url());
    model
}

fn sse(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap_or("")
    )
}

fn stream_of(text: &str, terminal: &str, status: &str) -> Reply {
    Reply::sse([
        sse(
            json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        ),
        sse(
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}}),
        ),
        sse(
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
        ),
        sse(
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text}]}}),
        ),
        sse(
            json!({"type": terminal, "response": {"id": "resp_1", "status": status, "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 12, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 4}}}}),
        ),
    ])
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key(TOKEN)
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(20))
}

#[tokio::test]
async fn the_request_is_pi_1_6s_and_response_done_ends_the_reply() {
    let server = TestServer::start(vec![stream_of("Hi there", "response.done", "completed")])
        .await
        .unwrap();
    let model = model(&server, "gpt-5.6-luna");
    let context = Context::new("Be brief.").with_message(Message::user("Say hi."));
    let options = options()
        .with_session_id("session-1")
        .with_reasoning(ReasoningLevel::Minimal)
        .with_max_tokens(1000);
    let reply = oxpi_ai::complete(&model, &context, options).await;
    assert_eq!(
        (reply.stop_reason, reply.text(), reply.error_message.clone()),
        (StopReason::Stop, "Hi there".to_string(), None)
    );
    assert_eq!(
        (
            reply.usage.input,
            reply.usage.output,
            reply.usage.cache_read
        ),
        (8, 3, 4)
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/backend-api/codex/responses")
    );
    let header = |name: &str| request.header(name).map(str::to_string);
    assert_eq!(
        [
            "authorization",
            "chatgpt-account-id",
            "originator",
            "openai-beta",
            "accept",
            "content-type",
            "session-id",
            "x-client-request-id",
        ]
        .map(header),
        [
            Some(format!("Bearer {TOKEN}")),
            Some("acct-conformance".into()),
            Some("pi".into()),
            Some("responses=experimental".into()),
            Some("text/event-stream".into()),
            Some("application/json".into()),
            Some("session-1".into()),
            Some("session-1".into()),
        ]
    );
    assert_eq!(
        request.json(),
        json!({
            "model": "gpt-5.6-luna",
            "store": false,
            "stream": true,
            "input": [
                {"role": "developer", "content": "Be brief."},
                {"role": "user", "content": [{"type": "input_text", "text": "Say hi."}]}
            ],
            "text": {"verbosity": "low"},
            "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": "session-1",
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "max_output_tokens": 1000,
            // The model maps `minimal` to `low`.
            "reasoning": {"effort": "low", "summary": "auto"}
        })
    );
}

#[tokio::test]
async fn an_incomplete_status_is_a_length_stop_and_off_is_effort_none() {
    let server = TestServer::start(vec![stream_of("Hi", "response.done", "incomplete")])
        .await
        .unwrap();
    let model = model(&server, "gpt-5.6-luna");
    let context = Context::new("Be brief.").with_message(Message::user("Say hi."));
    let reply = oxpi_ai::complete(&model, &context, options()).await;
    assert_eq!(
        (reply.stop_reason, reply.text()),
        (StopReason::Length, "Hi".to_string())
    );
    let body = server.requests()[0].json();
    assert_eq!(
        body["reasoning"],
        json!({"effort": "none", "summary": "auto"})
    );
    assert_eq!(body.get("prompt_cache_key"), None);
    assert!(matches!(
        reply.content.first(),
        Some(AssistantContent::Text(_))
    ));
}

#[tokio::test]
async fn the_backends_errors_end_the_reply_without_the_token() {
    // An HTTP error, then an error event mid-stream; neither text shows the token.
    let server = TestServer::start(vec![Reply::json_error(
        429,
        &json!({"error": {"code": "usage_limit_reached", "message": format!("limit for {TOKEN}")}})
            .to_string(),
    )])
    .await
    .unwrap();
    let model = model(&server, "gpt-5.6-luna");
    let context = Context::new("Be brief.").with_message(Message::user("Say hi."));
    let reply = oxpi_ai::complete(&model, &context, options()).await;
    let text = reply.error_message.clone().unwrap_or_default();
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert!(
        text.contains("429") && !text.contains("dGVzdC1rZXk"),
        "{text}"
    );
}
