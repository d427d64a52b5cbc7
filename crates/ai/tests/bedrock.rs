//! `bedrock-converse-stream` against a local server that frames its events with AWS's own
//! event-stream encoder (`aws-smithy-eventstream`). The SigV4 `Authorization` header is checked
//! by recomputing the signature here, with ring's HMAC and SHA-256 (not aws-sigv4), from the
//! same credentials and the request's own `x-amz-date`. Without the feature `bedrock`, a Bedrock
//! model fails with a text naming it.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
mod common;

use common::user_context;
use oxpi_ai::{Model, StopReason, StreamOptions, API_BEDROCK_CONVERSE_STREAM};
use oxpi_testkit::TestServer;

fn model(server: &TestServer, id: &str) -> Model {
    let mut model = Model::openai_compatible(server.base_url(), id);
    model.api = API_BEDROCK_CONVERSE_STREAM.into();
    model.provider = "amazon-bedrock".to_string();
    model
}

#[cfg(not(feature = "bedrock"))]
#[tokio::test]
async fn without_the_feature_a_bedrock_model_names_it() {
    let server = TestServer::start(vec![]).await.unwrap();
    let (_, message) = common::run(
        &model(&server, "amazon.nova-lite-v1:0"),
        &user_context("hi"),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("bedrock-converse-stream needs oxpi-ai's feature \"bedrock\", which this build does not have")
    );
    assert!(server.requests().is_empty());
}

#[cfg(feature = "bedrock")]
#[path = "bedrock/hostile.rs"]
mod hostile;

#[cfg(feature = "bedrock")]
mod with_feature {
    use super::*;

    use std::time::Duration;

    use aws_credential_types::Credentials;
    use aws_smithy_eventstream::frame::write_message_to;
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    use oxpi_ai::providers::bedrock_converse_stream::BedrockConverseStreamProvider;
    use oxpi_ai::{AssistantContent, AssistantMessage, ProviderRegistry, Tool, ToolChoice};
    use oxpi_testkit::{Part, Recorded, Reply};
    use serde_json::{json, Value};

    const KEY_ID: &str = "AKIDOXPITEST";
    const SECRET: &str = "oxpi/test/secret/key/that/is/not/real";
    pub(crate) const SESSION: &str = "oxpi-session-token";

    pub(crate) fn frame(message_type: &str, kind: &str, payload: Value) -> Vec<u8> {
        let kind_header = if message_type == "exception" {
            ":exception-type"
        } else {
            ":event-type"
        };
        let message = Message::new(serde_json::to_vec(&payload).unwrap())
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String(message_type.to_string().into()),
            ))
            .add_header(Header::new(
                kind_header,
                HeaderValue::String(kind.to_string().into()),
            ))
            .add_header(Header::new(
                ":content-type",
                HeaderValue::String("application/json".to_string().into()),
            ));
        let mut out = Vec::new();
        write_message_to(&message, &mut out).unwrap();
        out
    }

    pub(crate) fn event(kind: &str, payload: Value) -> Vec<u8> {
        frame("event", kind, payload)
    }

    pub(crate) fn reply(frames: Vec<Vec<u8>>) -> Reply {
        Reply::Respond {
            status: 200,
            headers: vec![(
                "content-type".into(),
                "application/vnd.amazon.eventstream".into(),
            )],
            body: frames.into_iter().map(Part::Bytes).collect(),
        }
    }

    /// A reply with thinking (signed), text and a tool call, then its stop and usage.
    fn full_reply() -> Vec<Vec<u8>> {
        vec![
            event("messageStart", json!({"role": "assistant"})),
            event(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Check the file."}}}),
            ),
            event(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig-abc"}}}),
            ),
            event("contentBlockStop", json!({"contentBlockIndex": 0})),
            event(
                "contentBlockDelta",
                json!({"contentBlockIndex": 1, "delta": {"text": "Reading it."}}),
            ),
            event("contentBlockStop", json!({"contentBlockIndex": 1})),
            event(
                "contentBlockStart",
                json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "read"}}}),
            ),
            event(
                "contentBlockDelta",
                json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"path\":"}}}),
            ),
            event(
                "contentBlockDelta",
                json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "\"a.txt\"}"}}}),
            ),
            event("contentBlockStop", json!({"contentBlockIndex": 2})),
            event("messageStop", json!({"stopReason": "tool_use"})),
            event(
                "metadata",
                json!({"usage": {"inputTokens": 100, "outputTokens": 20, "totalTokens": 2120,
                "cacheReadInputTokens": 2000, "cacheWriteInputTokens": 0}, "metrics": {"latencyMs": 5}}),
            ),
        ]
    }

    fn registry() -> ProviderRegistry {
        let provider = BedrockConverseStreamProvider::new()
            .with_region("us-east-1")
            .with_credentials_provider(Credentials::new(
                KEY_ID,
                SECRET,
                Some(SESSION.into()),
                None,
                "test",
            ));
        let mut registry = ProviderRegistry::new();
        registry.register(provider);
        registry
    }

    pub(crate) fn options() -> StreamOptions {
        StreamOptions::default()
            .with_max_retries(0)
            .with_timeout(Duration::from_secs(10))
    }

    pub(crate) async fn stream(
        model: &Model,
        context: &oxpi_ai::Context,
        options: StreamOptions,
    ) -> AssistantMessage {
        let mut events = registry().stream(model, context, options);
        let mut last = None;
        while let Some(event) = futures::StreamExt::next(&mut events).await {
            last = event.final_message().cloned();
        }
        last.unwrap()
    }

    pub(crate) const CLAUDE: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

    #[tokio::test]
    async fn a_signed_request_streams_thinking_text_and_a_tool_call() {
        let server = TestServer::start(vec![reply(full_reply())]).await.unwrap();
        let mut model = model(&server, CLAUDE);
        model.cost.input = 3.0;
        model.cost.cache_read = 0.3;
        let context = user_context("read a.txt").with_tool(Tool {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            constrained_sampling: None,
        });
        let options = options().with_tool_choice(ToolChoice::Auto);
        let message = stream(&model, &context, options).await;
        assert_eq!(
            message.stop_reason,
            StopReason::ToolUse,
            "{:?}",
            message.error_message
        );
        assert_eq!(message.content.len(), 3);
        let AssistantContent::Thinking(thinking) = &message.content[0] else {
            panic!("thinking first")
        };
        assert_eq!(
            (
                thinking.thinking.as_str(),
                thinking.thinking_signature.as_deref()
            ),
            ("Check the file.", Some("sig-abc"))
        );
        assert_eq!(message.content[1], AssistantContent::text("Reading it."));
        let call = message.tool_calls().next().unwrap();
        assert_eq!(
            (
                call.id.as_str(),
                call.name.as_str(),
                Value::Object(call.arguments.clone())
            ),
            ("tooluse_1", "read", json!({"path": "a.txt"}))
        );
        let u = message.usage;
        assert_eq!(
            (u.input, u.output, u.cache_read, u.total_tokens),
            (100, 20, 2000, 2120)
        );
        assert!((u.cost.total - (100.0 * 3.0 + 2000.0 * 0.3) / 1e6).abs() < 1e-12);

        let request = &server.requests()[0];
        assert_eq!(
            request.path,
            "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
        );
        assert_eq!(request.header("x-amz-security-token"), Some(SESSION));
        verify_sigv4(request, "us-east-1");
        assert_eq!(
            request.json(),
            json!({
                "messages": [{"role": "user", "content": [{"text": "read a.txt"}, {"cachePoint": {"type": "default"}}]}],
                "system": [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
                "inferenceConfig": {"maxTokens": 4096},
                "toolConfig": {"tools": [{"toolSpec": {"name": "read", "description": "Read a file",
                    "inputSchema": {"json": {"type": "object", "properties": {"path": {"type": "string"}}}}}}],
                    "toolChoice": {"auto": {}}},
            })
        );
    }

    #[tokio::test]
    async fn a_bedrock_api_key_is_sent_as_a_bearer_token_unsigned() {
        let server = TestServer::start(vec![reply(vec![
            event(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": "ok"}}),
            ),
            event("messageStop", json!({"stopReason": "end_turn"})),
            event(
                "metadata",
                json!({"usage": {"inputTokens": 1, "outputTokens": 1}}),
            ),
        ])])
        .await
        .unwrap();
        let options = options().with_api_key("bedrock-api-key-123");
        let message = stream(
            &model(&server, "amazon.nova-lite-v1:0"),
            &user_context("hi"),
            options,
        )
        .await;
        assert_eq!(
            (message.stop_reason, message.text()),
            (StopReason::Stop, "ok".to_string())
        );
        let request = &server.requests()[0];
        assert_eq!(
            request.header("authorization"),
            Some("Bearer bedrock-api-key-123")
        );
        assert_eq!(request.header("x-amz-date"), None);
        // Nova takes no cache points.
        assert!(!request.json().to_string().contains("cachePoint"));
    }

    #[tokio::test]
    async fn a_throttling_exception_mid_stream_keeps_the_text_and_says_so() {
        let mut frames = vec![event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Part"}}),
        )];
        frames.push(frame(
            "exception",
            "throttlingException",
            json!({"message": "Too many tokens, please wait before trying again."}),
        ));
        let server = TestServer::start(vec![reply(frames)]).await.unwrap();
        let message = stream(&model(&server, CLAUDE), &user_context("hi"), options()).await;
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(message.text(), "Part");
        assert_eq!(
            message.error_message.as_deref(),
            Some("Throttling error: Too many tokens, please wait before trying again.")
        );
        assert!(
            !oxpi_ai::is_context_overflow(&message, None),
            "throttling is not an overflow"
        );
    }

    #[tokio::test]
    async fn a_cut_frame_and_a_bad_checksum_are_errors() {
        let mut frames = full_reply();
        let last = frames.pop().unwrap();
        let mut cut = frames.clone();
        cut.push(last[..last.len() / 2].to_vec());
        let mut corrupt = frames.clone();
        let mut bad = last.clone();
        let middle = bad.len() / 2;
        bad[middle] ^= 0xff;
        corrupt.push(bad);
        for (frames, expected) in [
            (
                cut,
                "The stream was interrupted: it ended in the middle of an event-stream frame",
            ),
            (
                corrupt,
                "The stream was interrupted: an event-stream frame is invalid",
            ),
        ] {
            let server = TestServer::start(vec![reply(frames)]).await.unwrap();
            let message = stream(&model(&server, CLAUDE), &user_context("hi"), options()).await;
            assert_eq!(message.stop_reason, StopReason::Error);
            let text = message.error_message.unwrap();
            assert!(text.starts_with(expected), "{text}");
            // What arrived before the damage is kept.
            assert_eq!(message.content.len(), 3);
        }
    }

    #[tokio::test]
    async fn http_errors_stop_reasons_and_a_missing_stop() {
        let server = TestServer::start(vec![Reply::json_error(
            403,
            r#"{"message":"The security token included in the request is expired"}"#,
        )
        .with_header(
            "x-amzn-errortype",
            "ExpiredTokenException:http://internal.amazon.com/coral/com.amazon.coral.service/",
        )])
        .await
        .unwrap();
        let message = stream(&model(&server, CLAUDE), &user_context("hi"), options()).await;
        assert_eq!(
            message.error_message.as_deref(),
            Some("403 The security token included in the request is expired")
        );
        assert!(!format!("{message:?}").contains(SECRET));

        for (stop, expected, error) in [
            ("max_tokens", StopReason::Length, None),
            ("model_context_window_exceeded", StopReason::Length, None),
            (
                "guardrail_intervened",
                StopReason::Error,
                Some("The provider stopped the reply: guardrail_intervened"),
            ),
        ] {
            let server = TestServer::start(vec![reply(vec![
                event(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": 0, "delta": {"text": "x"}}),
                ),
                event("messageStop", json!({"stopReason": stop})),
                event(
                    "metadata",
                    json!({"usage": {"inputTokens": 1, "outputTokens": 1}}),
                ),
            ])])
            .await
            .unwrap();
            let message = stream(&model(&server, CLAUDE), &user_context("hi"), options()).await;
            assert_eq!(
                (message.stop_reason, message.error_message.as_deref()),
                (expected, error),
                "{stop}"
            );
        }

        let server = TestServer::start(vec![reply(vec![event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "x"}}),
        )])])
        .await
        .unwrap();
        let message = stream(&model(&server, CLAUDE), &user_context("hi"), options()).await;
        assert_eq!(
            message.error_message.as_deref(),
            Some("The stream ended without a messageStop event: the response is incomplete")
        );
    }

    #[tokio::test]
    async fn thinking_is_replayed_with_its_signature_and_results_share_a_turn() {
        let server = TestServer::start(vec![reply(full_reply()), reply(full_reply())])
            .await
            .unwrap();
        let mut claude = model(&server, CLAUDE);
        claude.reasoning = true;
        claude.max_tokens = 64_000;
        let first = stream(&claude, &user_context("read a.txt"), options()).await;
        let call = first.tool_calls().next().unwrap().clone();
        let context = user_context("read a.txt")
            .with_message(oxpi_ai::Message::Assistant(first))
            .with_message(oxpi_ai::ToolResultMessage::text(&call, "hello", false));
        let options = options()
            .with_reasoning(oxpi_ai::ReasoningLevel::Low)
            .with_cache_retention(oxpi_ai::CacheRetention::Long);
        stream(&claude, &context, options).await;
        let body = server.requests()[1].json();
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"reasoningContent": {"reasoningText": {"text": "Check the file.", "signature": "sig-abc"}}},
                {"text": "Reading it."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "read", "input": {"path": "a.txt"}}},
            ])
        );
        assert_eq!(
            body["messages"][2]["content"],
            json!([
                {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "hello"}], "status": "success"}},
                {"cachePoint": {"type": "default", "ttl": "1h"}},
            ])
        );
        // Budget-based thinking: the model's limit (pi 1.6: no 32,000 cap), the low budget
        // inside it, as pi sends it.
        assert_eq!(body["inferenceConfig"]["maxTokens"], 64_000);
        assert_eq!(
            body["additionalModelRequestFields"],
            json!({"thinking": {"type": "enabled", "budget_tokens": 2048, "display": "summarized"},
                   "anthropic_beta": ["interleaved-thinking-2025-05-14"]})
        );
    }

    #[tokio::test]
    async fn a_503_is_retried_and_a_cancel_mid_stream_ends_as_aborted() {
        let server = TestServer::start(vec![
            Reply::json_error(503, r#"{"message":"Bedrock is unavailable"}"#),
            reply(full_reply()),
        ])
        .await
        .unwrap();
        let options = options()
            .with_max_retries(1)
            .with_retry_base_delay(Duration::from_millis(5));
        let message = stream(&model(&server, CLAUDE), &user_context("hi"), options).await;
        assert_eq!(message.stop_reason, StopReason::ToolUse);
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        // Each attempt carries a valid signature.
        verify_sigv4(&requests[1], "us-east-1");

        // Text arrives, then the server goes quiet; the caller cancels.
        let server = TestServer::start(vec![Reply::Respond {
            status: 200,
            headers: vec![(
                "content-type".into(),
                "application/vnd.amazon.eventstream".into(),
            )],
            body: vec![
                Part::Bytes(event(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": 0, "delta": {"text": "Hel"}}),
                )),
                Part::Stall,
            ],
        }])
        .await
        .unwrap();
        let quiet = self::options();
        let cancel = quiet.cancel.clone();
        let mut events = registry().stream(&model(&server, CLAUDE), &user_context("hi"), quiet);
        let mut last = None;
        while let Some(event) = futures::StreamExt::next(&mut events).await {
            if matches!(event, oxpi_ai::AssistantMessageEvent::TextDelta { .. }) {
                cancel.cancel();
            }
            last = event.final_message().cloned();
        }
        let message = last.unwrap();
        assert_eq!(
            (
                message.stop_reason,
                message.text(),
                message.error_message.as_deref()
            ),
            (
                StopReason::Aborted,
                "Hel".to_string(),
                Some("Request was aborted")
            )
        );
    }

    #[tokio::test]
    async fn a_stalled_stream_ends_on_the_idle_timer_with_what_arrived() {
        let server = TestServer::start(vec![Reply::Respond {
            status: 200,
            headers: vec![(
                "content-type".into(),
                "application/vnd.amazon.eventstream".into(),
            )],
            body: vec![
                Part::Bytes(event(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": 0, "delta": {"text": "Hel"}}),
                )),
                Part::Stall,
            ],
        }])
        .await
        .unwrap();
        let options = options().with_idle_timeout(Duration::from_millis(200));
        let message = stream(&model(&server, CLAUDE), &user_context("hi"), options).await;
        assert_eq!(
            (
                message.stop_reason,
                message.text(),
                message.error_message.as_deref()
            ),
            (
                StopReason::Error,
                "Hel".to_string(),
                Some("The stream stalled: no data for 0.2s (idle_timeout)")
            )
        );
    }

    #[tokio::test]
    async fn a_budget_that_does_not_fit_leaves_thinking_off() {
        let server = TestServer::start(vec![reply(full_reply()), reply(full_reply())])
            .await
            .unwrap();
        let mut claude = model(&server, CLAUDE);
        claude.reasoning = true;
        let thinking = || options().with_reasoning(oxpi_ai::ReasoningLevel::High);
        // 2,000 tokens of output: a 16,384 budget shrinks to 976, below Anthropic's 1,024.
        claude.max_tokens = 2_000;
        stream(&claude, &user_context("hi"), thinking()).await;
        let body = server.requests()[0].json();
        assert_eq!(body.get("additionalModelRequestFields"), None, "{body}");
        assert_eq!(body["inferenceConfig"]["maxTokens"], 2_000);
        // With room, the budget is sent.
        claude.max_tokens = 64_000;
        stream(&claude, &user_context("hi"), thinking()).await;
        let body = server.requests()[1].json();
        assert_eq!(
            body["additionalModelRequestFields"]["thinking"]["budget_tokens"],
            16_384
        );
    }

    /// Recomputes the SigV4 signature of `request` and compares it with its `Authorization`.
    fn verify_sigv4(request: &Recorded, region: &str) {
        use ring::{digest, hmac};
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let authorization = request.header("authorization").unwrap();
        let (credential, rest) = authorization
            .strip_prefix("AWS4-HMAC-SHA256 Credential=")
            .unwrap()
            .split_once(", SignedHeaders=")
            .unwrap();
        let (signed_headers, signature) = rest.split_once(", Signature=").unwrap();
        let amz_date = request.header("x-amz-date").unwrap();
        let date = &amz_date[..8];
        let scope = format!("{date}/{region}/bedrock/aws4_request");
        assert_eq!(credential, format!("{KEY_ID}/{scope}"));
        // Non-S3 services sign each path segment encoded once more.
        let canonical_uri: String = request
            .path
            .split('/')
            .map(|segment| segment.replace('%', "%25"))
            .collect::<Vec<_>>()
            .join("/");
        let canonical_headers: String = signed_headers
            .split(';')
            .map(|name| format!("{name}:{}\n", request.header(name).unwrap().trim()))
            .collect();
        let canonical_request = format!(
            "POST\n{canonical_uri}\n\n{canonical_headers}\n{signed_headers}\n{}",
            hex(digest::digest(&digest::SHA256, &request.body).as_ref())
        );
        let string_to_sign = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
            hex(digest::digest(&digest::SHA256, canonical_request.as_bytes()).as_ref())
        );
        let mac = |key: &[u8], data: &str| {
            hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes())
                .as_ref()
                .to_vec()
        };
        let key = mac(format!("AWS4{SECRET}").as_bytes(), date);
        let key = mac(&key, region);
        let key = mac(&key, "bedrock");
        let key = mac(&key, "aws4_request");
        assert_eq!(
            signature,
            hex(&mac(&key, &string_to_sign)),
            "SigV4 signature"
        );
        assert!(signed_headers.split(';').any(|h| h == "host"));
        assert!(signed_headers
            .split(';')
            .any(|h| h == "x-amz-security-token"));
    }
}
