//! Failures: HTTP errors, retries, cut and stalled streams, cancellation.

use super::*;

const GOOGLE_401: &str = r#"{"error": {"code": 401, "message": "API key not valid. Please pass a valid API key: AIza-test-key-123.", "status": "UNAUTHENTICATED", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}"#;
const GOOGLE_403: &str = r#"{"error": {"code": 403, "message": "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.", "status": "PERMISSION_DENIED"}}"#;

#[tokio::test]
async fn auth_errors_show_status_and_google_message_without_retry_or_key() {
    let server = TestServer::start(vec![
        Reply::json_error(401, GOOGLE_401),
        Reply::json_error(403, GOOGLE_403),
    ])
    .await
    .unwrap();
    let (events, message) = run(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(events.len(), 2, "start, error");
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("401 API key not valid. Please pass a valid API key: <redacted>.")
    );
    let (_, message) = run(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("403 Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
    );
    assert_eq!(server.requests().len(), 2, "no retries");
}

#[tokio::test]
async fn a_missing_key_fails_before_any_request() {
    let server = TestServer::start(vec![]).await.unwrap();
    let mut opts = options();
    opts.api_key = None;
    let mut model = model(&server);
    // A provider name with no key variable of its own would be keyless; "google" is not.
    model.provider = "google".into();
    if std::env::var("GEMINI_API_KEY").is_ok() || std::env::var("GOOGLE_API_KEY").is_ok() {
        return; // the environment has a key: nothing to check here
    }
    let (_, message) = run(&model, &user_context("hi"), opts).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("Provider is not configured: google (set GEMINI_API_KEY or GOOGLE_API_KEY or pass StreamOptions::api_key)")
    );
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test]
async fn retries_429_then_503_then_succeeds() {
    let server = TestServer::start(vec![
        Reply::json_error(429, r#"{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}}"#),
        Reply::json_error(503, r#"{"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}"#)
            .with_header("retry-after", "0"),
        Reply::sse(sse(&[text_chunk("ok"), finish_chunk("STOP")])),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(message.text(), "ok");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(server.requests().len(), 3);
    let bodies: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert!(
        bodies.iter().all(|b| b == &bodies[0]),
        "the same request each time"
    );
}

#[tokio::test]
async fn persistent_503_reports_the_last_message() {
    let overloaded = r#"{"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}"#;
    let server = TestServer::start(vec![
        Reply::json_error(503, overloaded),
        Reply::json_error(503, overloaded),
        Reply::json_error(503, overloaded),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("503 The model is overloaded. (after 2 retries)")
    );
}

#[tokio::test]
async fn reset_before_headers_is_retried() {
    let server = TestServer::start(vec![
        Reply::Reset,
        Reply::sse(sse(&[text_chunk("after reset"), finish_chunk("STOP")])),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(message.text(), "after reset");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_cut_stream_keeps_partial_text_and_is_not_retried() {
    let parts = vec![
        Part::Bytes(sse(&[text_chunk("partial ")])[0].clone().into_bytes()),
        Part::Bytes(b"data: {\"candidates\": [{\"content\": {\"parts\": [{\"te".to_vec()),
        Part::Cut,
    ];
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "partial ");
    let error = message.error_message.unwrap();
    assert!(error.starts_with("The stream was interrupted"), "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_without_finish_reason_is_an_error() {
    let server = TestServer::start(vec![Reply::sse(sse(&[text_chunk("half")]))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "half");
    assert_eq!(
        message.error_message.as_deref(),
        Some("The stream ended without a finishReason: the response is incomplete")
    );
}

#[tokio::test]
async fn garbage_data_is_an_error_that_quotes_it() {
    let server = TestServer::start(vec![Reply::sse([
        format!("data: {}\n\n", text_chunk("ok")),
        "data: {\"candidates\": [oops\n\n".to_string(),
    ])])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "ok");
    let error = message.error_message.unwrap();
    assert!(
        error.starts_with("Could not parse a stream chunk")
            && error.ends_with(": {\"candidates\": [oops"),
        "{error}"
    );
}

#[tokio::test]
async fn an_error_object_in_the_stream_ends_it() {
    let error = json!({"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}});
    let server = TestServer::start(vec![Reply::sse(sse(&[text_chunk("so far"), error]))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(message.text(), "so far");
    assert_eq!(
        message.error_message.as_deref(),
        Some("Gemini sent an error: 500 INTERNAL: An internal error has occurred.")
    );
}

#[tokio::test]
async fn finish_reasons_map_to_stop_reasons_or_errors() {
    let blocked = json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 5}});
    let safety = json!({"candidates": [{"content": {"role": "model"}, "finishReason": "SAFETY", "index": 0}]});
    let malformed = json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL",
        "finishMessage": "Malformed function call: print(x", "index": 0}]});
    let server = TestServer::start(vec![
        Reply::sse(sse(&[text_chunk("a"), finish_chunk("MAX_TOKENS")])),
        Reply::sse(sse(&[text_chunk("b"), safety])),
        Reply::sse(sse(&[malformed])),
        Reply::sse(sse(&[blocked])),
        Reply::sse(sse(&[finish_chunk("RECITATION")])),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(message.usage.input, 7);
    let mut errors = Vec::new();
    for _ in 0..4 {
        let (_, message) = run(&model(&server), &user_context("hi"), options()).await;
        assert_eq!(message.stop_reason, StopReason::Error);
        errors.push(message.error_message.unwrap_or_default());
    }
    assert_eq!(
        errors,
        [
            "Gemini stopped the reply: SAFETY",
            "Gemini stopped the reply: MALFORMED_FUNCTION_CALL (Malformed function call: print(x)",
            "Gemini blocked the prompt: PROHIBITED_CONTENT",
            "Gemini stopped the reply: RECITATION",
        ]
    );
}

#[tokio::test]
async fn an_idle_stall_ends_in_an_error() {
    let parts = vec![
        Part::Bytes(sse(&[text_chunk("slow")])[0].clone().into_bytes()),
        Part::Stall,
    ];
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let mut opts = options();
    opts.idle_timeout = Duration::from_millis(200);
    let (_, message) = run(&model(&server), &user_context("hi"), opts).await;
    assert_eq!(message.text(), "slow");
    assert_eq!(
        message.error_message.as_deref(),
        Some("The stream stalled: no data for 0.2s (idle_timeout)")
    );
}

#[tokio::test]
async fn cancel_mid_stream_ends_as_aborted_with_partial_content() {
    let parts = vec![
        Part::Bytes(sse(&[text_chunk("first")])[0].clone().into_bytes()),
        Part::Stall,
    ];
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let message = cancel_at_first_text(&model(&server), &user_context("hi"), options()).await;
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(message.text(), "first");
    assert_eq!(
        message.error_message.as_deref(),
        Some("Request was aborted")
    );
}
