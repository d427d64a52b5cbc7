//! Failures: HTTP errors, retries, cut and stalled streams, cancellation.

use super::*;

#[tokio::test]
async fn http_error_shows_status_and_server_message_without_retry() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-test-key.","type":"invalid_request_error"}}"#;
    let server = TestServer::start(vec![Reply::json_error(401, body)])
        .await
        .unwrap();
    let (events, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(events.len(), 2, "start, error");
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("401 Incorrect API key provided: <redacted>.")
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retries_429_then_503_with_retry_after_then_succeeds() {
    let server = TestServer::start(vec![
        Reply::json_error(429, r#"{"error":{"message":"Rate limit"}}"#),
        Reply::json_error(503, "overloaded").with_header("retry-after", "0"),
        Reply::sse(text_reply("ok")),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.text(), "ok");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn reset_before_headers_is_retried() {
    let server = TestServer::start(vec![Reply::Reset, Reply::sse(text_reply("after reset"))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.text(), "after reset");
    assert_eq!(server.requests().len(), 2);
}

fn partial_text_parts() -> Vec<Part> {
    [created(), message_added("msg_1"), text_delta("partial ")]
        .into_iter()
        .map(|e| Part::Bytes(ev(e).into_bytes()))
        .collect()
}

#[tokio::test]
async fn a_cut_stream_keeps_partial_text_and_is_not_retried() {
    let mut parts = partial_text_parts();
    parts.push(Part::Cut);
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "partial ");
    let error = message.error_message.unwrap();
    assert!(error.starts_with("The stream was interrupted"), "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn garbage_data_is_an_error_that_quotes_it() {
    let mut events = text_reply("ok");
    events.truncate(3);
    events.push("event: response.output_text.delta\ndata: {not json\n\n".to_string());
    let server = TestServer::start(vec![Reply::sse(events)]).await.unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "ok");
    let error = message.error_message.unwrap();
    assert!(
        error.starts_with("Could not parse a stream event") && error.ends_with(": {not json"),
        "{error}"
    );
}

#[tokio::test]
async fn a_known_event_with_an_impossible_shape_is_an_error_that_quotes_it() {
    let events = vec![
        ev(created()),
        "data: {\"type\":\"response.output_text.delta\",\"delta\":42}\n\n".to_string(),
    ];
    let server = TestServer::start(vec![Reply::sse(events)]).await.unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    let error = message.error_message.unwrap();
    assert!(
        error.starts_with("Unexpected shape of a response.output_text.delta event")
            && error.ends_with("{\"type\":\"response.output_text.delta\",\"delta\":42}"),
        "{error}"
    );
}

#[tokio::test]
async fn an_idle_stall_ends_in_an_error_keeping_the_text() {
    let mut parts = partial_text_parts();
    parts.push(Part::Stall);
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let mut options = fast_options();
    options.idle_timeout = Duration::from_millis(200);
    let (_, message) = run(&model(&server), &user_context("hi"), options).await;
    assert_eq!(message.text(), "partial ");
    assert_eq!(
        message.error_message.as_deref(),
        Some("The stream stalled: no data for 0.2s (idle_timeout)")
    );
}

#[tokio::test]
async fn cancel_mid_stream_ends_as_aborted_with_partial_content() {
    let mut parts = partial_text_parts();
    parts.push(Part::Stall);
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let message = cancel_at_first_text(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(message.text(), "partial ");
    assert_eq!(
        message.error_message.as_deref(),
        Some("Request was aborted")
    );
}

async fn ends_with(terminal: Vec<Value>) -> AssistantMessage {
    let mut events: Vec<Value> = vec![created(), message_added("msg_1"), text_delta("so far")];
    events.extend(terminal);
    let server = TestServer::start(vec![Reply::sse(events.into_iter().map(ev))])
        .await
        .expect("server");
    run(&model(&server), &user_context("hi"), fast_options())
        .await
        .1
}

#[tokio::test]
async fn response_failed_is_an_error_with_the_response_message() {
    let message = ends_with(vec![
        json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
        "error": {"code": "server_error", "message": "The model crashed."},
        "usage": {"input_tokens": 7, "output_tokens": 2}}}),
    ])
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "so far");
    assert_eq!(
        message.error_message.as_deref(),
        Some("The response failed: server_error: The model crashed.")
    );
    assert_eq!((message.usage.input, message.usage.output), (7, 2));
}

#[tokio::test]
async fn an_error_event_is_an_error() {
    let message = ends_with(vec![json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down.", "param": null})]).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("The server sent an error: rate_limit_exceeded: Slow down.")
    );
    let nested = ends_with(vec![
        json!({"type": "error", "error": {"message": "Nested."}}),
    ])
    .await;
    assert_eq!(
        nested.error_message.as_deref(),
        Some("The server sent an error: Nested.")
    );
}

#[tokio::test]
async fn a_stream_without_a_terminal_event_is_an_error() {
    let message = ends_with(vec![message_done("msg_1", "so far")]).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "so far");
    assert_eq!(
        message.error_message.as_deref(),
        Some("The stream ended without a response.completed event: the response is incomplete")
    );
}

#[tokio::test]
async fn incomplete_responses_map_to_length_or_an_error() {
    let incomplete = |reason: &str| json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": reason}}});
    let message = ends_with(vec![incomplete("max_output_tokens")]).await;
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(message.text(), "so far");
    let message = ends_with(vec![incomplete("content_filter")]).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("The provider stopped the reply: content_filter")
    );
}

#[tokio::test]
async fn nulls_and_unexpected_values_in_lenient_fields_are_tolerated() {
    let message = ends_with(vec![json!({"type": "response.completed", "response": {
        "id": null, "status": "completed", "incomplete_details": null, "error": null, "extra": {"x": 1},
        "usage": {"input_tokens": null, "output_tokens": 2, "total_tokens": null,
            "input_tokens_details": null, "output_tokens_details": {"reasoning_tokens": null}}}})])
    .await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.total_tokens
        ),
        (0, 2, 2)
    );
    let failed = ends_with(vec![json!({"type": "response.failed", "response": {
        "error": {"code": 500, "message": "boom"}}})])
    .await;
    assert_eq!(
        failed.error_message.as_deref(),
        Some("The response failed: 500: boom")
    );
}

#[tokio::test]
async fn arguments_for_a_call_that_is_not_open_are_an_error() {
    let message = ends_with(vec![args_delta("fc_9", "{}")]).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("function call arguments arrived for item fc_9 while another item was open")
    );
}
