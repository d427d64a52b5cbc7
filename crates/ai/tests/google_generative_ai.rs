//! The Gemini provider over real HTTP: replays of every recorded `streamGenerateContent` stream,
//! the requests it builds (checked against recorded multi-turn conversations), thought-signature
//! round trips, tool-call ids, and every failure path.

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

#[tokio::test]
async fn streams_thinking_text_and_usage_with_the_key_in_a_header() {
    let chunks = [
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me think.", "thought": true}]}, "index": 0}],
               "responseId": "resp-1"}),
        text_chunk("Hel"),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "lo"}]}, "finishReason": "STOP", "index": 0}],
               "responseId": "resp-1",
               "usageMetadata": {"promptTokenCount": 100, "cachedContentTokenCount": 40, "candidatesTokenCount": 10,
                                  "thoughtsTokenCount": 5, "totalTokenCount": 115}}),
    ];
    let server = TestServer::start(vec![Reply::sse(sse(&chunks))])
        .await
        .unwrap();
    let model = model(&server);
    let mut opts = options();
    opts.reasoning = Some(ReasoningLevel::Medium);
    opts.max_tokens = Some(1000);
    opts.temperature = Some(0.5);
    let (events, message) = run(&model, &user_context("hi"), opts).await;
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(
        message.content,
        [
            AssistantContent::thinking("Let me think."),
            AssistantContent::text("Hello")
        ]
    );
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.response_id.as_deref(), Some("resp-1"));
    let u = message.usage;
    assert_eq!(
        (u.input, u.output, u.cache_read, u.total_tokens),
        (60, 15, 40, 115)
    );
    let expected_cost = (60.0 * 0.30 + 15.0 * 2.50 + 40.0 * 0.075) / 1_000_000.0;
    assert!((u.cost.total - expected_cost).abs() < 1e-12);

    let request = &server.requests()[0];
    assert_eq!(
        request.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(request.header("x-goog-api-key"), Some(KEY));
    assert!(!request.path.contains(KEY) && !request.path.contains("key="));
    assert_eq!(
        request.json(),
        json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "generationConfig": {
                "maxOutputTokens": 1000,
                "temperature": 0.5,
                "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192},
            },
        })
    );
}

#[tokio::test]
async fn thinking_config_follows_the_model_family() {
    let server = TestServer::start(vec![
        Reply::sse(sse(&[finish_chunk("STOP")])),
        Reply::sse(sse(&[finish_chunk("STOP")])),
        Reply::sse(sse(&[finish_chunk("STOP")])),
        Reply::sse(sse(&[finish_chunk("STOP")])),
    ])
    .await
    .unwrap();
    let cases = [
        (
            "gemini-2.5-pro",
            ReasoningLevel::Xhigh,
            json!({"includeThoughts": true, "thinkingBudget": 32768}),
        ),
        (
            "gemini-2.5-flash-lite",
            ReasoningLevel::Minimal,
            json!({"includeThoughts": true, "thinkingBudget": 512}),
        ),
        (
            "gemini-3-pro-preview",
            ReasoningLevel::Medium,
            json!({"includeThoughts": true, "thinkingLevel": "HIGH"}),
        ),
        (
            "gemini-3-flash-preview",
            ReasoningLevel::Low,
            json!({"includeThoughts": true, "thinkingLevel": "LOW"}),
        ),
    ];
    for (i, (id, level, expected)) in cases.into_iter().enumerate() {
        let mut model = model_named(&server, id);
        model.reasoning = true;
        let mut opts = options();
        opts.reasoning = Some(level);
        run(&model, &user_context("hi"), opts).await;
        let body = server.requests()[i].json();
        assert_eq!(body["generationConfig"]["thinkingConfig"], expected, "{id}");
    }
    // A model without reasoning gets no thinking config, whatever the options say.
    let server = TestServer::start(vec![Reply::sse(sse(&[finish_chunk("STOP")]))])
        .await
        .unwrap();
    let mut opts = options();
    opts.reasoning = Some(ReasoningLevel::High);
    run(
        &model_named(&server, "gemini-2.0-flash"),
        &user_context("hi"),
        opts,
    )
    .await;
    assert_eq!(server.requests()[0].json().get("generationConfig"), None);
}

#[tokio::test]
async fn function_calls_are_complete_tool_calls_with_unique_ids() {
    let chunks = [
        text_chunk("Adding."),
        parts_chunk(json!([
            {"functionCall": {"name": "add", "args": {"x": 1, "y": 2}}, "thoughtSignature": "sig-a"},
            {"functionCall": {"name": "add", "args": {"x": 3, "y": 4}}},
        ])),
        parts_chunk(json!([
            {"functionCall": {"id": "call_7", "name": "ping"}},
            {"functionCall": {"id": "call_7", "name": "ping", "args": {}}},
        ])),
        finish_chunk("STOP"),
    ];
    let server = TestServer::start(vec![Reply::sse(sse(&chunks))])
        .await
        .unwrap();
    let (events, message) = run(&model(&server), &user_context("go"), options()).await;
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    let one_call = ["toolcall_start", "toolcall_delta", "toolcall_end"];
    let mut expected = vec!["start", "text_start", "text_delta", "text_end"];
    for _ in 0..4 {
        expected.extend(one_call);
    }
    expected.push("done");
    assert_eq!(kinds, expected);
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::ToolcallDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, [r#"{"x":1,"y":2}"#, r#"{"x":3,"y":4}"#, "{}", "{}"]);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert!(ids[0].starts_with(GENERATED_ID_PREFIX) && ids[1].starts_with(GENERATED_ID_PREFIX));
    assert_eq!(ids[2], "call_7", "an id Gemini sent is kept");
    assert!(
        ids[3].starts_with(GENERATED_ID_PREFIX),
        "a repeated id is replaced"
    );
    let unique: std::collections::HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), 4, "{ids:?}");
    assert_eq!(calls[0].thought_signature.as_deref(), Some("sig-a"));
    assert_eq!(calls[1].thought_signature, None);
    assert_eq!(
        calls
            .iter()
            .map(|c| (c.name.as_str(), Value::Object(c.arguments.clone())))
            .collect::<Vec<_>>(),
        [
            ("add", json!({"x": 1, "y": 2})),
            ("add", json!({"x": 3, "y": 4})),
            ("ping", json!({})),
            ("ping", json!({}))
        ]
    );
}

/// A reply of `model` with the given blocks, as a previous turn.
fn assistant(model: &Model, content: Vec<AssistantContent>, stop: StopReason) -> AssistantMessage {
    let mut message = AssistantMessage::empty(&model.api, &model.provider, &model.id);
    message.content = content;
    message.stop_reason = stop;
    message
}

fn result(call: &ToolCall, text: &str) -> ToolResultMessage {
    ToolResultMessage::text(call, text, false)
}

#[tokio::test]
async fn generated_ids_stay_local_and_results_follow_call_order() {
    let two_calls = [
        parts_chunk(json!([
            {"functionCall": {"name": "add", "args": {"x": 1}}},
            {"functionCall": {"name": "add", "args": {"x": 2}}},
        ])),
        finish_chunk("STOP"),
    ];
    let server = TestServer::start(vec![
        Reply::sse(sse(&two_calls)),
        Reply::sse(sse(&[text_chunk("3"), finish_chunk("STOP")])),
    ])
    .await
    .unwrap();
    let model = model(&server);
    let mut context = user_context("add");
    let (_, reply) = run(&model, &context, options()).await;
    let calls: Vec<ToolCall> = reply.tool_calls().cloned().collect();
    assert_ne!(calls[0].id, calls[1].id);
    context.push(reply);
    // Results arrive in the opposite order; one of them failed.
    context.push(ToolResultMessage::text(&calls[1], "two", true));
    context.push(result(&calls[0], "one"));
    context.push(Message::user("thanks"));
    let (_, reply) = run(&model, &context, options()).await;
    assert_eq!(reply.text(), "3");
    let body = server.requests()[1].json();
    assert_eq!(
        body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "add"}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "add", "args": {"x": 1}}},
                {"functionCall": {"name": "add", "args": {"x": 2}}},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "add", "response": {"output": "one"}}},
                {"functionResponse": {"name": "add", "response": {"error": "two"}}},
            ]},
            {"role": "user", "parts": [{"text": "thanks"}]},
        ])
    );
}

#[tokio::test]
async fn ids_issued_by_gemini_are_echoed_to_the_same_model_only() {
    let server = TestServer::start(vec![
        Reply::sse(sse(&[finish_chunk("STOP")])),
        Reply::sse(sse(&[finish_chunk("STOP")])),
    ])
    .await
    .unwrap();
    let flash3 = model_named(&server, "gemini-3-flash-preview");
    let call = ToolCall {
        thought_signature: Some("sig-3".into()),
        ..ToolCall::new("call_966934", "lookup", args(json!({})))
    };
    // Gemini 3 signs only the first of parallel calls.
    let parallel = ToolCall::new("call_966935", "lookup", args(json!({"n": 2})));
    let context = user_context("look")
        .with_message(assistant(
            &flash3,
            vec![
                AssistantContent::ToolCall(call.clone()),
                AssistantContent::ToolCall(parallel.clone()),
            ],
            StopReason::ToolUse,
        ))
        .with_message(result(&call, "harbor"))
        .with_message(result(&parallel, "orchard"));
    run(&flash3, &context, options()).await;
    let body = server.requests()[0].json();
    assert_eq!(
        body["contents"][1]["parts"],
        json!([
            {"functionCall": {"id": "call_966934", "name": "lookup", "args": {}}, "thoughtSignature": "sig-3"},
            {"functionCall": {"id": "call_966935", "name": "lookup", "args": {"n": 2}}},
        ])
    );
    assert_eq!(
        body["contents"][2]["parts"],
        json!([
            {"functionResponse": {"id": "call_966934", "name": "lookup", "response": {"output": "harbor"}}},
            {"functionResponse": {"id": "call_966935", "name": "lookup", "response": {"output": "orchard"}}},
        ])
    );
    // Another model: no ids, no signatures.
    run(&model(&server), &context, options()).await;
    let body = server.requests()[1].json();
    assert_eq!(
        body["contents"][1]["parts"],
        json!([
            {"functionCall": {"name": "lookup", "args": {}}},
            {"functionCall": {"name": "lookup", "args": {"n": 2}}},
        ])
    );
    assert_eq!(
        body["contents"][2]["parts"],
        json!([
            {"functionResponse": {"name": "lookup", "response": {"output": "harbor"}}},
            {"functionResponse": {"name": "lookup", "response": {"output": "orchard"}}},
        ])
    );
}

#[tokio::test]
async fn urls_take_plain_and_collection_ids() {
    let server = TestServer::start(vec![
        Reply::sse(sse(&[finish_chunk("STOP")])),
        Reply::sse(sse(&[finish_chunk("STOP")])),
    ])
    .await
    .unwrap();
    for id in ["models/gemini-2.5-flash", "tunedModels/my-tune"] {
        run(&model_named(&server, id), &user_context("hi"), options()).await;
    }
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            "/v1beta/tunedModels/my-tune:streamGenerateContent?alt=sse",
        ]
    );
}

#[tokio::test]
async fn thought_signatures_are_stored_and_replayed_to_the_same_model_only() {
    let chunks = [
        parts_chunk(json!([{"text": "Plan: ", "thought": true}])),
        parts_chunk(json!([{"text": "add.", "thought": true, "thoughtSignature": "sig-think"}])),
        parts_chunk(
            json!([{"text": "Calling ", "thoughtSignature": "sig-text"}, {"text": "add."}]),
        ),
        parts_chunk(
            json!([{"functionCall": {"name": "add", "args": {"x": 1}}, "thoughtSignature": "sig-call"}]),
        ),
        finish_chunk("STOP"),
    ];
    let server = TestServer::start(vec![
        Reply::sse(sse(&chunks)),
        Reply::sse(sse(&[finish_chunk("STOP")])),
        Reply::sse(sse(&[finish_chunk("STOP")])),
        Reply::sse(sse(&[finish_chunk("STOP")])),
    ])
    .await
    .unwrap();
    let flash = model(&server);
    let mut context = user_context("add one");
    let (_, reply) = run(&flash, &context, options()).await;
    let call = reply.tool_calls().next().cloned().unwrap();
    assert_eq!(
        reply.content,
        [
            AssistantContent::thinking("Plan: "),
            AssistantContent::Thinking(ThinkingContent {
                thinking: "add.".into(),
                thinking_signature: Some("sig-think".into()),
                redacted: None
            }),
            AssistantContent::Text(TextContent {
                text: "Calling ".into(),
                text_signature: Some("sig-text".into())
            }),
            AssistantContent::text("add."),
            AssistantContent::ToolCall(call.clone()),
        ]
    );
    assert_eq!(call.thought_signature.as_deref(), Some("sig-call"));
    context.push(reply);
    context.push(result(&call, "2"));

    // Same model: every signature goes back on its part; a signed part is never merged with
    // unsigned ones.
    run(&flash, &context, options()).await;
    let body = server.requests()[1].json();
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Plan: ", "thought": true},
            {"text": "add.", "thought": true, "thoughtSignature": "sig-think"},
            {"text": "Calling ", "thoughtSignature": "sig-text"},
            {"text": "add."},
            {"functionCall": {"name": "add", "args": {"x": 1}}, "thoughtSignature": "sig-call"},
        ]})
    );
    // Another model: thinking becomes text, signatures stay behind.
    run(&model_named(&server, "gemini-2.5-pro"), &context, options()).await;
    let body = server.requests()[2].json();
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Plan: "},
            {"text": "add."},
            {"text": "Calling "},
            {"text": "add."},
            {"functionCall": {"name": "add", "args": {"x": 1}}},
        ]})
    );
    // Gemini 3 needs a signature on every replayed call: Google's placeholder stands in.
    run(
        &model_named(&server, "gemini-3-pro-preview"),
        &context,
        options(),
    )
    .await;
    let body = server.requests()[3].json();
    assert_eq!(
        body["contents"][1]["parts"][4],
        json!({"functionCall": {"name": "add", "args": {"x": 1}}, "thoughtSignature": "skip_thought_signature_validator"})
    );
}

#[tokio::test]
async fn a_trailing_empty_part_signs_the_text_it_follows() {
    let chunks = [
        text_chunk("289"),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "", "thoughtSignature": "sig-end"}]},
               "finishReason": "STOP", "index": 0}]}),
    ];
    let server = TestServer::start(vec![Reply::sse(sse(&chunks))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("17²"), options()).await;
    assert_eq!(
        message.content,
        [AssistantContent::Text(TextContent {
            text: "289".into(),
            text_signature: Some("sig-end".into())
        })]
    );
}

#[tokio::test]
async fn request_carries_images_tools_and_tool_result_images() {
    let server = TestServer::start(vec![
        Reply::sse(sse(&[finish_chunk("STOP")])),
        Reply::sse(sse(&[finish_chunk("STOP")])),
    ])
    .await
    .unwrap();
    let flash = model(&server);
    let call = ToolCall::new("c1", "shot", args(json!({})));
    let mut shot = result(&call, "");
    shot.content = vec![UserContent::image("IMG", "image/png")];
    let tool = Tool {
        name: "shot".into(),
        description: "Take a screenshot".into(),
        parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
    };
    let context = Context::new("sys")
        .with_message(Message::User(UserMessage {
            content: UserMessageContent::Blocks(vec![
                UserContent::text("look"),
                UserContent::image("AAAA", "image/jpeg"),
            ]),
            timestamp: 0,
        }))
        .with_message(assistant(
            &flash,
            vec![AssistantContent::ToolCall(call)],
            StopReason::ToolUse,
        ))
        .with_message(shot)
        .with_tool(tool);
    let mut opts = options();
    opts.headers.insert("x-extra".into(), "1".into());
    run(&flash, &context, opts).await;
    let request = &server.requests()[0];
    assert_eq!(request.header("x-extra"), Some("1"));
    assert_eq!(
        request.json(),
        json!({
            "contents": [
                {"role": "user", "parts": [{"text": "look"}, {"inlineData": {"mimeType": "image/jpeg", "data": "AAAA"}}]},
                {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "shot", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "shot", "response": {"output": "(see attached image)"}}}]},
                {"role": "user", "parts": [{"text": "Tool result image:"}, {"inlineData": {"mimeType": "image/png", "data": "IMG"}}]},
            ],
            "systemInstruction": {"parts": [{"text": "sys"}]},
            "tools": [{"functionDeclarations": [{
                "name": "shot", "description": "Take a screenshot",
                "parametersJsonSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            }]}],
        })
    );
    // Gemini 3 takes the image inside the function response.
    let flash3 = model_named(&server, "gemini-3-flash-preview");
    run(&flash3, &context, options()).await;
    let body = server.requests()[1].json();
    assert_eq!(
        body["contents"][2]["parts"][0]["functionResponse"]["parts"],
        json!([{"inlineData": {"mimeType": "image/png", "data": "IMG"}}])
    );
    assert_eq!(body["contents"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn legacy_parameters_are_sanitised_or_refused_before_any_request() {
    let server = TestServer::start(vec![Reply::sse(sse(&[finish_chunk("STOP")]))])
        .await
        .unwrap();
    let mut legacy = model(&server);
    legacy.compat = Some(json!({"useLegacyParameters": true}));
    let tool = |parameters: Value| Tool {
        name: "t".into(),
        description: "d".into(),
        parameters,
    };
    let context = user_context("hi").with_tool(tool(json!({
        "type": "object",
        "properties": {"n": {"type": ["integer", "null"], "format": "uint32", "minimum": 0}},
        "additionalProperties": false,
    })));
    run(&legacy, &context, options()).await;
    assert_eq!(
        server.requests()[0].json()["tools"],
        json!([{"functionDeclarations": [{"name": "t", "description": "d", "parameters": {
            "type": "object", "properties": {"n": {"type": "integer", "nullable": true, "minimum": 0}},
        }}]}])
    );
    let recursive = user_context("hi").with_tool(tool(json!({
        "type": "object",
        "properties": {"next": {"$ref": "#"}},
    })));
    let (events, message) = run(&legacy, &recursive, options()).await;
    assert_eq!(events.len(), 2, "start, error");
    assert_eq!(
        message.error_message.as_deref(),
        Some("invalid schema for tool \"t\": Gemini's legacy `parameters` cannot express it: \
              parameters/next: recursive schema ($ref \"#\" refers to the root), which cannot be expressed")
    );
    assert_eq!(
        server.requests().len(),
        1,
        "nothing sent for the refused schema"
    );
}

// ---------------------------------------------------------------------------------------------
// Failures

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
        Some("No API key for provider google: set GEMINI_API_KEY or GOOGLE_API_KEY or pass StreamOptions::api_key")
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
    let opts = options();
    let cancel = opts.cancel.clone();
    let mut stream = oxpi_ai::stream(&model(&server), &user_context("hi"), opts);
    let mut last = None;
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            cancel.cancel();
        }
        last = event.final_message().cloned();
    }
    let message = last.unwrap();
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(message.text(), "first");
    assert_eq!(
        message.error_message.as_deref(),
        Some("Request was aborted")
    );
}

// ---------------------------------------------------------------------------------------------
// Recorded traffic

/// The recorded exchanges of `gemini/`: (path stem, request JSON), sorted.
fn recorded_exchanges() -> Vec<(String, Value)> {
    let Some(root) = fixtures_root() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for suite in std::fs::read_dir(root.join("gemini"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for cassette in std::fs::read_dir(suite.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            for file in std::fs::read_dir(cassette.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let path = file.path().to_string_lossy().to_string();
                if let Some(stem) = path.strip_suffix(".request.json") {
                    let bytes = std::fs::read(&path).expect("a readable fixture");
                    let request: Value = serde_json::from_slice(&bytes).expect("fixture JSON");
                    out.push((stem.to_string(), request));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn meta(stem: &str) -> Value {
    let bytes = std::fs::read(format!("{stem}.response.meta.json")).expect("a meta file");
    serde_json::from_slice(&bytes).expect("meta JSON")
}

/// What a recorded stream should produce, computed straight from its `data:` objects.
#[derive(Debug, PartialEq)]
struct Expected {
    text: String,
    thinking: String,
    tool_calls: Vec<(String, Value)>,
    stop: StopReason,
    usage: (u64, u64, u64),
    response_id: Option<String>,
}

fn expected_from_sse(body: &str) -> Expected {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut tool_calls = Vec::new();
    let mut finish = None;
    let mut usage = (0, 0, 0);
    let mut response_id = None;
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let chunk: Value = serde_json::from_str(data.trim()).expect("recorded JSON");
        if response_id.is_none() {
            response_id = chunk["responseId"].as_str().map(str::to_string);
        }
        let u = &chunk["usageMetadata"];
        if u.is_object() {
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            let cached = n("cachedContentTokenCount");
            usage = (
                n("promptTokenCount") - cached,
                n("candidatesTokenCount") + n("thoughtsTokenCount"),
                cached,
            );
        }
        let candidate = &chunk["candidates"][0];
        for part in candidate["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(call) = part.get("functionCall") {
                let args = call.get("args").cloned().unwrap_or(json!({}));
                tool_calls.push((call["name"].as_str().unwrap_or("").to_string(), args));
            } else if let Some(t) = part["text"].as_str() {
                if part["thought"] == json!(true) {
                    thinking.push_str(t);
                } else {
                    text.push_str(t);
                }
            }
        }
        if let Some(reason) = candidate["finishReason"].as_str() {
            finish = Some(reason.to_string());
        }
    }
    let stop = match finish.as_deref() {
        Some("STOP") if !tool_calls.is_empty() => StopReason::ToolUse,
        Some("STOP") => StopReason::Stop,
        Some("MAX_TOKENS") => StopReason::Length,
        _ => StopReason::Error,
    };
    Expected {
        text,
        thinking,
        tool_calls,
        stop,
        usage,
        response_id,
    }
}

fn actual(message: &AssistantMessage) -> Expected {
    let thinking = message
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantContent::Thinking(t) => Some(t.thinking.as_str()),
            _ => None,
        })
        .collect();
    Expected {
        text: message.text(),
        thinking,
        tool_calls: message
            .tool_calls()
            .map(|c| (c.name.clone(), Value::Object(c.arguments.clone())))
            .collect(),
        stop: message.stop_reason,
        usage: (
            message.usage.input,
            message.usage.output,
            message.usage.cache_read,
        ),
        response_id: message.response_id.clone(),
    }
}

fn model_id(request: &Value) -> String {
    let path = request["path"].as_str().unwrap_or("");
    let id = path.split("/models/").nth(1).unwrap_or("");
    id.split(':').next().unwrap_or("").to_string()
}

fn sse_reply(stem: &str) -> Reply {
    let body = std::fs::read(format!("{stem}.response.sse")).expect("an SSE body");
    Reply::sse_parts(vec![Part::Bytes(body)])
}

#[tokio::test]
async fn replays_every_recorded_gemini_stream() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for (stem, request) in recorded_exchanges() {
        let path = request["path"].as_str().unwrap_or("");
        if !path.contains(":streamGenerateContent") || meta(&stem)["status"] != json!(200) {
            continue;
        }
        let Ok(body) = std::fs::read_to_string(format!("{stem}.response.sse")) else {
            continue;
        };
        let expected = expected_from_sse(&body);
        let server = TestServer::start(vec![sse_reply(&stem)]).await.unwrap();
        let model = model_named(&server, &model_id(&request));
        let (events, message) = run(&model, &user_context("replay"), options()).await;
        assert!(matches!(events[0], AssistantMessageEvent::Start { .. }));
        let got = actual(&message);
        if got != expected {
            failures.push(format!(
                "{stem}:\n  expected {expected:?}\n  got      {got:?}\n  error {:?}",
                message.error_message
            ));
        }
        checked += 1;
    }
    eprintln!("replayed {checked} recorded Gemini streams");
    if fixtures_root().is_some() {
        assert!(checked >= 100, "only {checked} streams found");
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} replays differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn the_recorded_error_envelope_becomes_an_error_event() {
    let Some(root) = fixtures_root() else { return };
    let stem = root
        .join(
            "gemini/error_envelope/nonexistent_model_streaming_error_preserves_status_and_body/00",
        )
        .to_string_lossy()
        .to_string();
    let meta = meta(&stem);
    let status = meta["status"].as_u64().unwrap() as u16;
    let headers = meta["headers"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    let body = std::fs::read(format!("{stem}.response.sse")).unwrap();
    let server = TestServer::start(vec![Reply::Respond {
        status,
        headers,
        body: vec![Part::Bytes(body)],
    }])
    .await
    .unwrap();
    let (events, message) = run(
        &model_named(&server, "gemini-nonexistent-rig-test"),
        &user_context("Say hi."),
        options(),
    )
    .await;
    assert_eq!(events.len(), 2, "start, error");
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("404 models/gemini-nonexistent-rig-test is not found for API version v1beta, or is not supported for generateContent. Call ModelService.ListModels to see the list of available models and their supported methods.")
    );
    assert_eq!(server.requests().len(), 1, "404 is not retried");
}

/// A recorded request body as this provider would write it: rig's `"thought": false` markers,
/// `null` fields, empty objects, `toolConfig` (tool choice is not an option here) and the
/// `systemInstruction` role left out, function results `{"result": v}` written as
/// `{"output": text}`, and `thinkingConfig` kept only as `{"includeThoughts": true}` (budgets
/// come from reasoning levels here, not from raw numbers; thinking is never switched off).
fn normalise(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, v) in map {
                if v.is_null() || key == "toolConfig" || (key == "thought" && v == &json!(false)) {
                    continue;
                }
                if key == "thinkingConfig" && v["includeThoughts"] != json!(true) {
                    continue;
                }
                let v = match key.as_str() {
                    "response" if map.contains_key("name") => match v.get("result") {
                        Some(Value::String(s)) => json!({"output": s}),
                        Some(other) => json!({"output": other.to_string()}),
                        None => v.clone(),
                    },
                    "systemInstruction" => json!({"parts": v["parts"]}),
                    "thinkingConfig" => json!({"includeThoughts": true}),
                    _ => v.clone(),
                };
                let v = normalise(&v);
                if v.as_object().is_some_and(|o| o.is_empty())
                    && key != "args"
                    && key != "properties"
                {
                    continue;
                }
                out.insert(key.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalise).collect()),
        other => other.clone(),
    }
}

/// Text of a recorded function result, as a tool would have returned it.
fn result_text(response: &Value) -> String {
    match response.get("result").unwrap_or(response) {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Plays a recorded multi-turn conversation through the provider: each reply is the recorded
/// stream, each tool result the one recorded in the next request; every request built is
/// compared with the recorded one. Returns the number of requests compared.
async fn replay_conversation(exchanges: &[(String, Value)]) -> Result<usize, String> {
    let first = &exchanges[0].1["body"];
    let mut context = Context {
        system_prompt: first["systemInstruction"]["parts"][0]["text"]
            .as_str()
            .map(str::to_string),
        ..Context::default()
    };
    for declaration in first["tools"][0]["functionDeclarations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        context.tools.push(Tool {
            name: declaration["name"].as_str().unwrap_or("").to_string(),
            description: declaration["description"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            parameters: declaration["parameters"].clone(),
        });
    }
    let config = &first["generationConfig"];
    let mut opts = options();
    opts.temperature = config["temperature"].as_f64().map(|t| t as f32);
    opts.max_tokens = config["maxOutputTokens"].as_u64();
    if config["thinkingConfig"]["includeThoughts"] == json!(true) {
        opts.reasoning = Some(ReasoningLevel::Low);
    }
    let replies = exchanges.iter().map(|(stem, _)| sse_reply(stem)).collect();
    let server = TestServer::start(replies).await.expect("a test server");
    let mut model = model_named(&server, &model_id(&exchanges[0].1));
    model.compat = Some(json!({"useLegacyParameters": true}));
    if opts.reasoning.is_some() {
        model.reasoning = true;
    }
    let mut seen = 0;
    for (i, (stem, request)) in exchanges.iter().enumerate() {
        let body = &request["body"];
        let recorded: Vec<Value> = body["contents"].as_array().cloned().unwrap_or_default();
        // The user turns added since the previous request (after the model's reply): tool
        // results, answered in call order, and user text.
        let calls: Vec<ToolCall> = match context.messages.last() {
            Some(Message::Assistant(a)) => a.tool_calls().cloned().collect(),
            _ => Vec::new(),
        };
        let mut next_call = calls.iter();
        for content in recorded.iter().skip(seen) {
            for part in content["parts"].as_array().into_iter().flatten() {
                if let Some(response) = part.get("functionResponse") {
                    let call = next_call
                        .next()
                        .ok_or(format!("{stem}: no call to answer"))?;
                    if call.name != response["name"].as_str().unwrap_or("") {
                        return Err(format!(
                            "{stem}: result for {} answers {}",
                            response["name"], call.name
                        ));
                    }
                    let mut answer = result(call, &result_text(&response["response"]));
                    for image in response["parts"].as_array().into_iter().flatten() {
                        let data = &image["inlineData"];
                        answer.content.push(UserContent::image(
                            data["data"].as_str().unwrap_or(""),
                            data["mimeType"].as_str().unwrap_or(""),
                        ));
                    }
                    context.push(answer);
                } else if let Some(text) = part["text"].as_str() {
                    context.push(Message::user(text));
                }
            }
        }
        seen = recorded.len();
        let (_, reply) = run(&model, &context, opts.clone()).await;
        let ours = normalise(&server.requests()[i].json());
        let theirs = normalise(body);
        if ours != theirs {
            return Err(format!(
                "{stem}:\n  recorded {}\n  built    {}",
                serde_json::to_string(&theirs).unwrap_or_default(),
                serde_json::to_string(&ours).unwrap_or_default()
            ));
        }
        seen += 1; // the reply's model turn
        context.push(reply);
    }
    Ok(exchanges.len())
}

/// True when the cassette starts from one user turn, every request continues the previous one
/// (its turns, the model's reply, then new user turns), and it uses only what this provider
/// sends: function tools, no cached content, no structured output.
fn is_conversation(exchanges: &[(String, Value)]) -> bool {
    let plain = exchanges.iter().all(|(_, r)| {
        let body = &r["body"];
        let config_ok = body["generationConfig"].as_object().is_none_or(|c| {
            c.keys()
                .all(|k| ["temperature", "maxOutputTokens", "thinkingConfig"].contains(&k.as_str()))
        });
        body.get("cachedContent").is_none() && config_ok
    });
    let starts_fresh = exchanges[0].1["body"]["contents"].as_array().map(Vec::len) == Some(1);
    let contents: Vec<Vec<Value>> = exchanges
        .iter()
        .map(|(_, r)| {
            r["body"]["contents"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    let continues = contents
        .windows(2)
        .all(|w| w[1].len() >= w[0].len() + 2 && w[1].starts_with(&w[0]));
    let function_tools_only = exchanges.iter().all(|(_, r)| {
        r["body"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|tool| {
                tool.as_object().is_some_and(|t| {
                    t.iter()
                        .all(|(k, v)| k == "functionDeclarations" || v.is_null())
                })
            })
    });
    plain && starts_fresh && continues && function_tools_only
}

#[tokio::test]
async fn requests_match_the_recorded_conversations() {
    let mut by_cassette: std::collections::BTreeMap<String, Vec<(String, Value)>> =
        std::collections::BTreeMap::new();
    for (stem, request) in recorded_exchanges() {
        let path = request["path"].as_str().unwrap_or("");
        if !path.contains(":streamGenerateContent") || meta(&stem)["status"] != json!(200) {
            continue;
        }
        let cassette = stem
            .rsplit_once('/')
            .map(|(c, _)| c.to_string())
            .unwrap_or_default();
        by_cassette
            .entry(cassette)
            .or_default()
            .push((stem, request));
    }
    let mut compared = 0;
    let mut conversations = 0;
    let mut failures = Vec::new();
    for (cassette, exchanges) in &by_cassette {
        // rig's repair hook renamed the streamed call before replaying it: that history is not
        // what the model sent.
        if cassette.ends_with("streamed_repair_continues_the_same_stream")
            || !is_conversation(exchanges)
        {
            continue;
        }
        match replay_conversation(exchanges).await {
            Ok(n) => {
                compared += n;
                conversations += 1;
            }
            Err(e) => failures.push(e),
        }
    }
    eprintln!("compared {compared} requests of {conversations} recorded conversations");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    if fixtures_root().is_some() {
        assert!(conversations >= 50, "only {conversations} conversations");
    }
}
