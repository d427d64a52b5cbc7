//! Streaming over HTTP: events, stop reasons, and every failure path.

use super::*;

#[tokio::test]
async fn streams_thinking_text_and_tool_calls_with_usage() {
    let mut events = vec![
        message_start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "read it."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}}),
        json!({"type": "content_block_stop", "index": 0}),
    ];
    events.extend(text_block(1, &["Read", "ing."]));
    events.extend([
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"a"}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": ".txt\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "some_future_event", "x": 1}),
    ]);
    events.extend(end("tool_use"));
    let server = TestServer::start(vec![Reply::sse(stream(events))])
        .await
        .unwrap();
    let (events, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_end",
            "done"
        ]
    );
    assert_eq!(
        message.content,
        vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "Let me read it.".into(),
                thinking_signature: Some("sig==".into()),
                redacted: None,
            }),
            AssistantContent::text("Reading."),
            AssistantContent::ToolCall(ToolCall::new(
                "toolu_01",
                "read",
                object(json!({"path": "a.txt"}))
            )),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.response_id.as_deref(), Some("msg_01"));
    let usage = message.usage;
    assert_eq!(
        (
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write,
            usage.total_tokens
        ),
        (20, 30, 100, 5, 155)
    );
    let cost = (20.0 * 3.0 + 30.0 * 15.0 + 100.0 * 0.3 + 5.0 * 3.75) / 1_000_000.0;
    assert!((usage.cost.total - cost).abs() < 1e-12, "{:?}", usage.cost);

    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/messages?beta=true");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(
        request.json(),
        json!({
            "model": "claude-test",
            "max_tokens": 8192,
            "system": [{"type": "text", "text": "Be brief."}],
            // A user's plain text stays a string (pi 1.6).
            "messages": [{"role": "user", "content": "hi"}],
            "stream": true,
            // A reasoning model asked for no level: thinking off, said so (pi 1.6).
            "thinking": {"type": "disabled"},
        })
    );
}

#[tokio::test]
async fn redacted_thinking_keeps_its_data() {
    let mut events = vec![
        message_start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "EncryptedBlob"}}),
        json!({"type": "content_block_stop", "index": 0}),
    ];
    events.extend(text_block(1, &["OK"]));
    events.extend(end("end_turn"));
    let server = TestServer::start(vec![Reply::sse(stream(events))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(
        message.content,
        vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "[Reasoning redacted]".into(),
                thinking_signature: Some("EncryptedBlob".into()),
                redacted: Some(true),
            }),
            AssistantContent::text("OK"),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::Stop);
}

#[tokio::test]
async fn tool_input_given_whole_at_block_start_is_kept() {
    let mut events = vec![
        message_start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_9", "name": "ls", "input": {"dir": "src"}}}),
        json!({"type": "content_block_stop", "index": 0}),
    ];
    events.extend(end("tool_use"));
    let server = TestServer::start(vec![Reply::sse(stream(events))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(
        message.content,
        vec![AssistantContent::ToolCall(ToolCall::new(
            "toolu_9",
            "ls",
            object(json!({"dir": "src"}))
        ))]
    );
}

#[tokio::test]
async fn stop_reasons_map_like_pi() {
    let cases = [
        ("end_turn", StopReason::Stop, None),
        ("stop_sequence", StopReason::Stop, None),
        ("pause_turn", StopReason::Stop, None),
        ("a_future_reason", StopReason::Stop, None),
        ("max_tokens", StopReason::Length, None),
        (
            "refusal",
            StopReason::Error,
            Some("The model refused to answer (stop_reason: refusal)"),
        ),
    ];
    let server = TestServer::start(
        cases
            .iter()
            .map(|(reason, _, _)| Reply::sse(text_reply("x", reason)))
            .collect(),
    )
    .await
    .unwrap();
    for (reason, stop, error) in cases {
        let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
        assert_eq!(
            (message.stop_reason, message.error_message.as_deref()),
            (stop, error),
            "{reason}"
        );
        assert_eq!(message.text(), "x", "{reason}: content is kept");
    }
}

#[tokio::test]
async fn a_missing_key_names_the_variable() {
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        eprintln!("ANTHROPIC_API_KEY is set; skipping");
        return;
    }
    let server = TestServer::start(vec![]).await.unwrap();
    let mut options = fast_options();
    options.api_key = None;
    let (events, message) = run(&model(&server), &user_context("hi"), options).await;
    assert_eq!(events.len(), 2, "start, error");
    assert_eq!(
        message.error_message.as_deref(),
        Some("Provider is not configured: anthropic (set ANTHROPIC_API_KEY or pass StreamOptions::api_key)")
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_schema_anthropic_refuses_fails_before_the_request() {
    let server = TestServer::start(vec![]).await.unwrap();
    let context = user_context("hi").with_tool(Tool {
        name: "pick".into(),
        description: "Pick one".into(),
        parameters: json!({"anyOf": [{"type": "object"}, {"type": "object"}]}),
        constrained_sampling: None,
    });
    let (_, message) = run(&model(&server), &context, fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.unwrap();
    assert!(
        error.starts_with("invalid schema for tool \"pick\": Anthropic does not accept anyOf"),
        "{error}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn http_error_shows_status_and_anthropic_message_without_retry() {
    let body = format!(
        r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {KEY}"}}}}"#
    );
    let server = TestServer::start(vec![Reply::json_error(401, &body)])
        .await
        .unwrap();
    let (events, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(events.len(), 2, "start, error");
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("401 invalid x-api-key <redacted>")
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn rate_limit_and_overload_are_retried() {
    let server = TestServer::start(vec![
        Reply::json_error(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}"#,
        ),
        Reply::json_error(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .with_header("retry-after", "0"),
        Reply::sse(text_reply("ok", "end_turn")),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(
        (message.text().as_str(), message.stop_reason),
        ("ok", StopReason::Stop)
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn overload_beyond_the_retries_reports_anthropic_message() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = TestServer::start(vec![
        Reply::json_error(529, overloaded).with_header("retry-after", "0"),
        Reply::json_error(529, overloaded).with_header("retry-after", "0"),
        Reply::json_error(529, overloaded).with_header("retry-after", "0"),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("529 Overloaded (after 2 retries)")
    );
}

#[tokio::test]
async fn reset_before_headers_is_retried() {
    let server = TestServer::start(vec![
        Reply::Reset,
        Reply::sse(text_reply("after reset", "end_turn")),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.text(), "after reset");
    assert_eq!(server.requests().len(), 2);
}

fn partial_text_parts() -> Vec<Part> {
    let mut events = vec![message_start()];
    events.extend(text_block(0, &["partial "]).into_iter().take(2));
    stream(events)
        .into_iter()
        .map(|s| Part::Bytes(s.into_bytes()))
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
    assert_eq!(message.usage.input, 20, "usage from message_start is kept");
    let error = message.error_message.unwrap();
    assert!(error.starts_with("The stream was interrupted"), "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_garbage_data_line_is_an_error_that_quotes_it() {
    let mut events = stream(vec![message_start()]);
    events.extend(stream(text_block(0, &["ok"])).into_iter().take(2));
    events.push("event: content_block_delta\ndata: {not json\n\n".to_string());
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
async fn an_idle_stall_ends_in_an_error() {
    let mut parts = partial_text_parts();
    parts.push(Part::Stall);
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let options = fast_options().with_idle_timeout(Duration::from_millis(200));
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

#[tokio::test]
async fn an_error_event_mid_stream_ends_with_its_message() {
    let mut events = vec![message_start()];
    events.extend(text_block(0, &["Half an ans"]).into_iter().take(2));
    events.push(
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    events.extend(end("end_turn"));
    let server = TestServer::start(vec![Reply::sse(stream(events))])
        .await
        .unwrap();
    let (events, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "Half an ans");
    assert_eq!(
        message.error_message.as_deref(),
        Some("overloaded_error: Overloaded")
    );
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(
        kinds,
        ["start", "text_start", "text_delta", "text_end", "error"]
    );
}

#[tokio::test]
async fn a_stream_without_message_stop_is_an_error() {
    // The body ends after the last block: no stop reason, no message_stop.
    let mut events = vec![message_start()];
    events.extend(text_block(0, &["all of it"]));
    // The same, with message_delta (stop reason and final usage) but no message_stop, and the
    // last event not terminated by a blank line, as in one recorded stream: complete.
    let mut unterminated = stream(events.clone());
    unterminated.extend(stream(end("max_tokens").into_iter().take(1).collect()));
    unterminated.push("event: message_stop\ndata: {\"type\": \"message_stop\"}\n".into());
    let server = TestServer::start(vec![Reply::sse(stream(events)), Reply::sse(unterminated)])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "all of it");
    assert_eq!(
        message.error_message.as_deref(),
        Some("The stream ended before message_stop: the response is incomplete")
    );
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(
        (
            message.stop_reason,
            message.text().as_str(),
            message.usage.output
        ),
        (StopReason::Length, "all of it", 30)
    );
}

#[tokio::test]
async fn a_delta_for_a_block_that_is_not_open_is_an_error() {
    let events = vec![
        message_start(),
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "stray"}}),
    ];
    let server = TestServer::start(vec![Reply::sse(stream(events))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("a content_block_delta arrived for block 3, which is not open")
    );
}
