//! The Responses provider over real HTTP: replays of every recorded OpenAI and xAI Responses
//! stream, the request it builds (checked against recorded multi-turn conversations), and every
//! failure path.

use std::time::Duration;

use futures::StreamExt;
use oxpi_ai::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Context, Message, Model,
    ReasoningLevel, StopReason, StreamOptions, ThinkingContent, Tool, ToolCall, ToolResultMessage,
    UserContent, API_OPENAI_RESPONSES,
};
use oxpi_testkit::{fixtures_root, Part, Reply, TestServer};
use serde_json::{json, Value};

fn model_for(server: &TestServer, provider: &str, id: &str) -> Model {
    let mut model = Model::openai_compatible(format!("{}/v1", server.base_url()), id);
    model.api = API_OPENAI_RESPONSES.to_string();
    model.provider = provider.to_string();
    model
}

fn model(server: &TestServer) -> Model {
    model_for(server, "openai", "gpt-test")
}

fn fast_options() -> StreamOptions {
    StreamOptions {
        api_key: Some("sk-test-key".into()),
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

/// One SSE event, named like OpenAI names them.
fn ev(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or("message").to_string();
    format!("event: {name}\ndata: {data}\n\n")
}

fn created() -> Value {
    json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}})
}

fn message_added(id: &str) -> Value {
    json!({"type": "response.output_item.added", "item": {"type": "message", "id": id, "role": "assistant", "content": [], "status": "in_progress"}})
}

fn text_delta(text: &str) -> Value {
    json!({"type": "response.output_text.delta", "item_id": "msg_1", "content_index": 0, "delta": text})
}

fn message_done(id: &str, text: &str) -> Value {
    json!({"type": "response.output_item.done", "item": {"type": "message", "id": id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}})
}

fn completed(usage: Value) -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": usage}})
}

fn call_added(call_id: &str, item_id: &str, name: &str) -> Value {
    json!({"type": "response.output_item.added", "item": {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": "", "status": "in_progress"}})
}

fn call_done(call_id: &str, item_id: &str, name: &str, arguments: &str) -> Value {
    json!({"type": "response.output_item.done", "item": {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments, "status": "completed"}})
}

fn args_delta(item_id: &str, delta: &str) -> Value {
    json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "delta": delta})
}

fn text_reply(text: &str) -> Vec<String> {
    [
        created(),
        message_added("msg_1"),
        text_delta(text),
        message_done("msg_1", text),
        completed(json!({"input_tokens": 1, "output_tokens": 1})),
    ]
    .into_iter()
    .map(ev)
    .collect()
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

fn object(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn streams_text_and_usage_from_a_minimal_request() {
    let events: Vec<String> = [
        created(),
        json!({"type": "response.in_progress", "response": {"id": "resp_1"}}),
        message_added("msg_1"),
        json!({"type": "response.content_part.added", "item_id": "msg_1", "part": {"type": "output_text", "text": ""}}),
        text_delta("Hel"),
        text_delta("lo"),
        json!({"type": "response.some_future_event", "whatever": [1, 2]}),
        message_done("msg_1", "Hello"),
        completed(json!({
            "input_tokens": 10, "input_tokens_details": {"cached_tokens": 4},
            "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 1}, "total_tokens": 13
        })),
    ]
    .into_iter()
    .map(ev)
    .collect();
    let server = TestServer::start(vec![Reply::sse(events)]).await.unwrap();
    let mut model = model(&server);
    model.cost.input = 1.0;
    model.cost.output = 2.0;
    model.cost.cache_read = 0.5;
    let (events, message) = run(&model, &user_context("hi"), fast_options()).await;
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(message.text(), "Hello");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.api, "openai-responses");
    assert_eq!(message.response_id.as_deref(), Some("resp_1"));
    let usage = message.usage;
    assert_eq!(
        (
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write,
            usage.total_tokens
        ),
        (6, 3, 4, 0, 13)
    );
    assert!((usage.cost.total - (6.0 + 6.0 + 2.0) / 1_000_000.0).abs() < 1e-12);

    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(
        request.json(),
        json!({
            "model": "gpt-test",
            "input": [
                {"type": "message", "role": "system", "content": "Be brief."},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            ],
            "stream": true,
            "store": false,
        })
    );
}

#[tokio::test]
async fn reasoning_summary_becomes_thinking_and_the_item_its_signature() {
    let reasoning_done = json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "ENC", "content": [],
        "summary": [{"type": "summary_text", "text": "First."}, {"type": "summary_text", "text": "Second."}]});
    let events: Vec<String> = [
        created(),
        json!({"type": "response.output_item.added", "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "summary_index": 0, "delta": "First."}),
        json!({"type": "response.reasoning_summary_part.done", "item_id": "rs_1", "summary_index": 0}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "summary_index": 1, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "summary_index": 1, "delta": "Second."}),
        json!({"type": "response.output_item.done", "item": reasoning_done.clone()}),
        call_added("call_1", "fc_1", "read"),
        args_delta("fc_1", "{\"path\":"),
        args_delta("fc_1", "\"a.txt\"}"),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": "{\"path\":\"a.txt\"}"}),
        call_done("call_1", "fc_1", "read", "{\"path\":\"a.txt\"}"),
        // Arguments only in the final item (no deltas).
        call_added("call_2", "fc_2", "list"),
        call_done("call_2", "fc_2", "list", "{\"dir\":\".\"}"),
        completed(json!({"input_tokens": 5, "output_tokens": 9})),
    ]
    .into_iter()
    .map(ev)
    .collect();
    let server = TestServer::start(vec![Reply::sse(events)]).await.unwrap();
    let (events, message) = run(&model(&server), &user_context("go"), fast_options()).await;
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "done"
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.content,
        vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "First.\n\nSecond.".into(),
                thinking_signature: Some(reasoning_done.to_string()),
                redacted: None,
            }),
            AssistantContent::ToolCall(ToolCall::new(
                "call_1|fc_1",
                "read",
                object(json!({"path": "a.txt"}))
            )),
            AssistantContent::ToolCall(ToolCall::new(
                "call_2|fc_2",
                "list",
                object(json!({"dir": "."}))
            )),
        ]
    );
}

#[tokio::test]
async fn reasoning_without_summary_is_kept_in_an_empty_thinking_block() {
    let events: Vec<String> = [
        created(),
        json!({"type": "response.output_item.added", "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.output_item.done", "item": {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ENC"}}),
        call_added("call_1", "fc_1", "read"),
        args_delta("fc_1", "{}"),
        call_done("call_1", "fc_1", "read", "{}"),
        completed(json!({"input_tokens": 5, "output_tokens": 9})),
    ]
    .into_iter()
    .map(ev)
    .collect();
    let server = TestServer::start(vec![Reply::sse(events)]).await.unwrap();
    let (_, message) = run(&model(&server), &user_context("go"), fast_options()).await;
    let item =
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ENC"});
    assert_eq!(
        message.content,
        vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: String::new(),
                thinking_signature: Some(item.to_string()),
                redacted: None,
            }),
            AssistantContent::ToolCall(ToolCall::new("call_1|fc_1", "read", object(json!({})))),
        ]
    );
}

#[tokio::test]
async fn reasoning_options_tools_and_limits_shape_the_request() {
    let server = TestServer::start(vec![
        Reply::sse(text_reply("ok")),
        Reply::sse(text_reply("ok")),
    ])
    .await
    .unwrap();
    let mut model = model(&server);
    model.reasoning = true;
    model.headers.insert("x-model-header".into(), "m".into());
    let tool = Tool {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    };
    let context = user_context("hi").with_tool(tool);
    let mut options = fast_options();
    options.reasoning = Some(ReasoningLevel::Xhigh);
    options.max_tokens = Some(100);
    options.temperature = Some(0.5);
    options.headers.insert("x-extra".into(), "1".into());
    run(&model, &context, options.clone()).await;
    let request = &server.requests()[0];
    assert_eq!(request.header("x-extra"), Some("1"));
    assert_eq!(request.header("x-model-header"), Some("m"));
    assert_eq!(
        request.json(),
        json!({
            "model": "gpt-test",
            "input": [
                {"type": "message", "role": "developer", "content": "Be brief."},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            ],
            "stream": true,
            "store": false,
            "max_output_tokens": 100,
            "temperature": 0.5,
            "tools": [{"type": "function", "name": "read", "description": "Read a file", "strict": false,
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}],
            "reasoning": {"effort": "high", "summary": "auto"},
            "include": ["reasoning.encrypted_content"],
        })
    );

    // xAI: a system message (no developer role), `xhigh` where the model says it takes it.
    let mut xai = model_for(&server, "xai", "grok-test");
    xai.reasoning = true;
    xai.compat = Some(json!({"supportsXhigh": true}));
    run(&xai, &user_context("hi"), options).await;
    let body = server.requests()[1].json();
    assert_eq!(
        body["input"][0],
        json!({"type": "message", "role": "system", "content": "Be brief."})
    );
    assert_eq!(
        body["reasoning"],
        json!({"effort": "xhigh", "summary": "auto"})
    );
    assert_eq!(server.requests()[1].path, "/v1/responses");
}

#[tokio::test]
async fn history_becomes_input_items() {
    let server = TestServer::start(vec![Reply::sse(text_reply("ok"))])
        .await
        .unwrap();
    let mut model = model(&server);
    model.input.push(oxpi_ai::InputKind::Image);
    let reasoning_item = json!({"type": "reasoning", "id": "rs_1", "status": "completed", "content": [],
        "summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": "ENC"});
    let read = ToolCall::new("call_1|fc_1", "read", object(json!({"path": "a"})));
    let mut own = AssistantMessage::empty(API_OPENAI_RESPONSES, "openai", "gpt-test");
    own.content = vec![
        AssistantContent::Thinking(ThinkingContent {
            thinking: "Plan.".into(),
            thinking_signature: Some(reasoning_item.to_string()),
            redacted: None,
        }),
        AssistantContent::text("Reading."),
        AssistantContent::ToolCall(read.clone()),
    ];
    own.stop_reason = StopReason::ToolUse;
    // A turn from another provider: its thinking becomes text, its ids are cleaned.
    let other_call = ToolCall::new("toolu 01/x", "read", object(json!({"path": "b"})));
    let mut other = AssistantMessage::empty("anthropic-messages", "anthropic", "claude");
    other.content = vec![
        AssistantContent::thinking("Hmm."),
        AssistantContent::ToolCall(other_call.clone()),
    ];
    other.stop_reason = StopReason::ToolUse;
    let mut failed = AssistantMessage::empty(API_OPENAI_RESPONSES, "openai", "gpt-test");
    failed.content = vec![AssistantContent::text("partial")];
    failed.stop_reason = StopReason::Error;
    let image_result = ToolResultMessage {
        content: vec![UserContent::image("AAAA", "image/png")],
        ..ToolResultMessage::text(&other_call, "", false)
    };
    let context = Context::new("sys")
        .with_message(Message::user("hi"))
        .with_message(own)
        .with_message(ToolResultMessage::text(&read, "content of a", false))
        .with_message(other)
        .with_message(image_result)
        .with_message(failed)
        .with_message(Message::User(oxpi_ai::UserMessage {
            content: oxpi_ai::UserMessageContent::Blocks(vec![
                UserContent::text("look"),
                UserContent::image("BBBB", "image/jpeg"),
            ]),
            timestamp: 0,
        }));
    run(&model, &context, fast_options()).await;
    assert_eq!(
        server.requests()[0].json()["input"],
        json!([
            {"type": "message", "role": "system", "content": "sys"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": "ENC"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
            {"type": "function_call", "call_id": "call_1", "id": "fc_1", "name": "read", "arguments": "{\"path\":\"a\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "content of a"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hmm."}]},
            {"type": "function_call", "call_id": "toolu_01_x", "name": "read", "arguments": "{\"path\":\"b\"}"},
            {"type": "function_call_output", "call_id": "toolu_01_x", "output": "(see attached image)"},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Attached image(s) from tool result:"},
                {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AAAA"},
            ]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "detail": "auto", "image_url": "data:image/jpeg;base64,BBBB"},
            ]},
        ])
    );
}

#[tokio::test]
async fn strict_tools_send_strict_schemas_and_drop_forced_nulls() {
    let args = r#"{"path":"a.txt","limit":null,"note":null}"#;
    let events: Vec<String> = [
        created(),
        call_added("call_1", "fc_1", "read"),
        args_delta("fc_1", &args[..10]),
        args_delta("fc_1", &args[10..]),
        call_done("call_1", "fc_1", "read", args),
        completed(json!({"input_tokens": 1, "output_tokens": 1})),
    ]
    .into_iter()
    .map(ev)
    .collect();
    let server = TestServer::start(vec![Reply::sse(events)]).await.unwrap();
    let mut model = model(&server);
    model.compat = Some(json!({"supportsStrictMode": true}));
    // `limit` may be absent but not null; `note` may be null.
    let parameters = json!({"type": "object", "properties": {
        "path": {"type": "string"},
        "limit": {"type": "integer", "format": "uint32", "minimum": 0},
        "note": {"type": ["string", "null"]},
    }, "required": ["path"]});
    let tool = Tool {
        name: "read".into(),
        description: "Read".into(),
        parameters,
    };
    let (events, message) = run(&model, &user_context("go").with_tool(tool), fast_options()).await;
    assert_eq!(
        message
            .tool_calls()
            .next()
            .map(|c| Value::Object(c.arguments.clone())),
        Some(json!({"path": "a.txt", "note": null}))
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| kind(e) == "toolcall_delta")
            .count(),
        1,
        "strict arguments are released once, cleaned"
    );
    assert_eq!(
        server.requests()[0].json()["tools"],
        json!([{"type": "function", "name": "read", "description": "Read", "strict": true, "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": ["integer", "null"], "minimum": 0},
                "note": {"type": ["string", "null"]},
            },
            "required": ["limit", "note", "path"],
            "additionalProperties": false,
        }}])
    );
}

#[tokio::test]
async fn a_schema_strict_mode_cannot_express_fails_before_any_request() {
    let server = TestServer::start(vec![Reply::sse(text_reply("never"))])
        .await
        .unwrap();
    let mut model = model(&server);
    model.compat = Some(json!({"supportsStrictMode": true}));
    let tool = Tool {
        name: "tag".into(),
        description: "Tag".into(),
        parameters: json!({"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}}),
    };
    let (_, message) = run(&model, &user_context("go").with_tool(tool), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.unwrap();
    assert!(
        error.starts_with(
            "invalid schema for tool \"tag\": cannot be sent in OpenAI strict mode: maps"
        ) && error.ends_with("(at /properties/tags)"),
        "{error}"
    );
    assert!(server.requests().is_empty());
}

// ---- Failures -------------------------------------------------------------------------------

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
    let options = fast_options();
    let cancel = options.cancel.clone();
    let mut stream = oxpi_ai::stream(&model(&server), &user_context("hi"), options);
    let mut last = None;
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            cancel.cancel();
        }
        last = event.final_message().cloned();
    }
    let message = last.unwrap();
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

// ---- Recorded traffic -----------------------------------------------------------------------

/// Every recorded Responses exchange: (provider folder, path stem, request body).
fn recorded_exchanges() -> Vec<(String, String, Value)> {
    let Some(root) = fixtures_root() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for provider in ["openai", "xai"] {
        let mut requests: Vec<std::path::PathBuf> = Vec::new();
        for suite in std::fs::read_dir(root.join(provider))
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
                    if file
                        .file_name()
                        .to_string_lossy()
                        .ends_with(".request.json")
                    {
                        requests.push(file.path());
                    }
                }
            }
        }
        requests.sort();
        for path in requests {
            let request: Value = serde_json::from_slice(&std::fs::read(&path).expect("test data"))
                .expect("test data");
            if !request["path"]
                .as_str()
                .unwrap_or("")
                .ends_with("/v1/responses")
            {
                continue;
            }
            let stem = path
                .to_string_lossy()
                .trim_end_matches(".request.json")
                .to_string();
            out.push((provider.to_string(), stem, request["body"].clone()));
        }
    }
    out
}

/// What a recorded stream should produce, computed straight from its events.
#[derive(Debug, PartialEq)]
struct Expected {
    text: String,
    thinking: String,
    /// The reasoning items kept as thinking signatures.
    signatures: Vec<Value>,
    /// (id, name, arguments; `null` when they are not a JSON object).
    tool_calls: Vec<(String, String, Value)>,
    stop: StopReason,
    usage: (u64, u64, u64),
}

fn expected_from_sse(body: &str) -> Expected {
    let events: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).expect("test data"))
        .collect();
    let mut text = String::new();
    let mut thinking = String::new();
    let mut signatures = Vec::new();
    // item id → summary parts
    let mut summaries: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    // (item id, call id, name, streamed arguments, final arguments)
    let mut calls: Vec<(String, String, String, String, String)> = Vec::new();
    let mut stop = StopReason::Error;
    let mut usage = (0, 0, 0);
    for e in &events {
        let item_id = e["item_id"].as_str().unwrap_or("").to_string();
        match e["type"].as_str().unwrap_or("") {
            "response.output_text.delta" | "response.refusal.delta" => {
                text.push_str(e["delta"].as_str().expect("test data"))
            }
            "response.reasoning_summary_text.delta" => {
                let parts = summaries.entry(item_id).or_default();
                let index = e["summary_index"].as_u64().expect("test data") as usize;
                parts.resize(parts.len().max(index + 1), String::new());
                parts[index].push_str(e["delta"].as_str().expect("test data"));
            }
            "response.output_item.added" if e["item"]["type"] == "function_call" => {
                let item = &e["item"];
                calls.push((
                    item["id"].as_str().expect("test data").into(),
                    item["call_id"].as_str().expect("test data").into(),
                    item["name"].as_str().expect("test data").into(),
                    item["arguments"].as_str().unwrap_or("").into(),
                    String::new(),
                ));
            }
            "response.function_call_arguments.delta" => {
                let call = calls
                    .iter_mut()
                    .find(|c| c.0 == item_id)
                    .expect("test data");
                call.3.push_str(e["delta"].as_str().expect("test data"));
            }
            "response.output_item.done" if e["item"]["type"] == "function_call" => {
                let item = &e["item"];
                let call = calls
                    .iter_mut()
                    .find(|c| c.0 == item["id"])
                    .expect("test data");
                call.4 = item["arguments"].as_str().unwrap_or("").into();
            }
            "response.output_item.done" if e["item"]["type"] == "reasoning" => {
                let id = e["item"]["id"].as_str().expect("test data");
                let parts: Vec<&String> = summaries
                    .get(id)
                    .map(|p| p.iter().filter(|t| !t.is_empty()).collect())
                    .unwrap_or_default();
                let joined: Vec<&str> = parts.iter().map(|s| s.as_str()).collect();
                thinking.push_str(&joined.join("\n\n"));
                signatures.push(e["item"].clone());
            }
            t @ ("response.completed" | "response.incomplete" | "response.failed") => {
                stop = match t {
                    "response.failed" => StopReason::Error,
                    "response.incomplete" => {
                        match e["response"]["incomplete_details"]["reason"].as_str() {
                            Some("content_filter") => StopReason::Error,
                            _ => StopReason::Length,
                        }
                    }
                    _ if calls.is_empty() => StopReason::Stop,
                    _ => StopReason::ToolUse,
                };
                let u = &e["response"]["usage"];
                let cached = u["input_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0);
                usage = (
                    u["input_tokens"].as_u64().unwrap_or(0) - cached,
                    u["output_tokens"].as_u64().unwrap_or(0),
                    cached,
                );
            }
            _ => {}
        }
    }
    let tool_calls = calls
        .into_iter()
        .map(|(item_id, call_id, name, streamed, last)| {
            let args = if streamed.is_empty() { last } else { streamed };
            let value = if args.trim().is_empty() {
                json!({})
            } else {
                match serde_json::from_str::<Value>(&args) {
                    Ok(v) if v.is_object() => v,
                    _ => Value::Null,
                }
            };
            let id = format!("{call_id}|{item_id}");
            (id, name, value)
        })
        .collect();
    Expected {
        text,
        thinking,
        signatures,
        tool_calls,
        stop,
        usage,
    }
}

fn actual(message: &AssistantMessage) -> Expected {
    let mut thinking = String::new();
    let mut signatures = Vec::new();
    for block in &message.content {
        if let AssistantContent::Thinking(t) = block {
            thinking.push_str(&t.thinking);
            if let Some(signature) = &t.thinking_signature {
                signatures.push(serde_json::from_str(signature).unwrap_or(Value::Null));
            }
        }
    }
    Expected {
        text: message.text(),
        thinking,
        signatures,
        tool_calls: message
            .tool_calls()
            .map(|c| {
                let args = if c.arguments_error.is_some() {
                    Value::Null
                } else {
                    Value::Object(c.arguments.clone())
                };
                (c.id.clone(), c.name.clone(), args)
            })
            .collect(),
        stop: message.stop_reason,
        usage: (
            message.usage.input,
            message.usage.output,
            message.usage.cache_read,
        ),
    }
}

#[tokio::test]
async fn replays_every_recorded_responses_stream() {
    let exchanges = recorded_exchanges();
    if exchanges.is_empty() {
        return;
    }
    let mut checked = 0;
    let mut per_provider = std::collections::BTreeMap::<String, usize>::new();
    // Streams with tool calls, with thinking, stopped by the length limit.
    let mut kinds = (0, 0, 0);
    let mut failures = Vec::new();
    for (provider, stem, request) in exchanges {
        let meta: Value =
            serde_json::from_slice(&std::fs::read(format!("{stem}.response.meta.json")).unwrap())
                .unwrap();
        let Ok(body) = std::fs::read(format!("{stem}.response.sse")) else {
            continue;
        };
        assert_eq!(meta["status"].as_u64(), Some(200), "{stem}");
        let expected = expected_from_sse(&String::from_utf8_lossy(&body));
        let server = TestServer::start(vec![Reply::sse_parts(vec![Part::Bytes(body)])])
            .await
            .unwrap();
        let id = request["model"].as_str().unwrap_or("m");
        let (events, message) = run(
            &model_for(&server, &provider, id),
            &user_context("replay"),
            fast_options(),
        )
        .await;
        assert!(matches!(events[0], AssistantMessageEvent::Start { .. }));
        let got = actual(&message);
        kinds.0 += usize::from(!expected.tool_calls.is_empty());
        kinds.1 += usize::from(!expected.thinking.is_empty());
        kinds.2 += usize::from(expected.stop == StopReason::Length);
        if got != expected {
            failures.push(format!(
                "{stem}:\n  expected {expected:?}\n  got      {got:?}\n  error {:?}",
                message.error_message
            ));
        }
        checked += 1;
        *per_provider.entry(provider).or_default() += 1;
    }
    eprintln!(
        "replayed {checked} recorded Responses streams {per_provider:?}: {} with tool calls, {} with thinking, {} cut by the length limit",
        kinds.0, kinds.1, kinds.2
    );
    assert!(checked >= 91, "only {checked} streams found");
    assert!(kinds.0 > 20 && kinds.1 > 20 && kinds.2 > 0, "{kinds:?}");
    assert!(
        failures.is_empty(),
        "{} of {checked} replays differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn recorded(rel: &str) -> Option<(Value, Vec<u8>)> {
    let root = fixtures_root()?;
    let stem = root.join(rel);
    let request: Value =
        serde_json::from_slice(&std::fs::read(format!("{}.request.json", stem.display())).ok()?)
            .ok()?;
    let body = std::fs::read(format!("{}.response.sse", stem.display())).ok()?;
    Some((request["body"].clone(), body))
}

/// The recorded request as this provider sends it: the recorder's `instructions` become the
/// first (system or developer) message, `status` is not sent on input items, `store: false`
/// is, and tools say `strict: false`.
fn as_sent_here(mut recorded: Value, system_role: &str) -> Value {
    let body = recorded.as_object_mut().expect("test data");
    let mut input = body["input"].as_array().cloned().expect("test data");
    for item in &mut input {
        item.as_object_mut().expect("test data").remove("status");
    }
    if let Some(instructions) = body.remove("instructions") {
        input.insert(
            0,
            json!({"type": "message", "role": system_role, "content": instructions}),
        );
    }
    body.insert("input".into(), Value::Array(input));
    body.insert("store".into(), Value::Bool(false));
    if let Some(Value::Array(tools)) = body.get_mut("tools") {
        for tool in tools {
            tool["strict"] = Value::Bool(false);
        }
    }
    recorded
}

fn tools_of(body: &Value) -> Vec<Tool> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| Tool {
            name: t["name"].as_str().expect("test data").into(),
            description: t["description"].as_str().expect("test data").into(),
            parameters: t["parameters"].clone(),
        })
        .collect()
}

fn outputs_of(body: &Value) -> Vec<(String, String)> {
    body["input"]
        .as_array()
        .expect("input items")
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| {
            (
                i["call_id"].as_str().expect("test data").into(),
                i["output"].as_str().expect("test data").into(),
            )
        })
        .collect()
}

/// A three-turn tool conversation (gpt-4o, no reasoning) run through this provider against the
/// recorded replies: each request it sends equals the recorded one, item for item.
#[tokio::test]
async fn a_recorded_multi_turn_tool_conversation_is_sent_as_recorded() {
    let cassette = "openai/responses_sessions/sequential_tool_calls_streaming";
    let Some(turns) = (0..3)
        .map(|i| recorded(&format!("{cassette}/{i:02}")))
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let first = &turns[0].0;
    let instructions = first["instructions"].as_str().unwrap();
    let user_text = first["input"][0]["content"][0]["text"].as_str().unwrap();
    let mut context = Context::new(instructions).with_message(Message::user(user_text));
    context.tools = tools_of(first);
    for (turn, (request, reply)) in turns.iter().enumerate() {
        let server = TestServer::start(vec![Reply::sse_parts(vec![Part::Bytes(reply.clone())])])
            .await
            .unwrap();
        let model = model_for(&server, "openai", "gpt-4o");
        let (_, message) = run(&model, &context, fast_options()).await;
        assert_eq!(
            server.requests()[0].json(),
            as_sent_here(request.clone(), "system"),
            "turn {turn}"
        );
        let Some((next, _)) = turns.get(turn + 1) else {
            assert_eq!(message.stop_reason, StopReason::Stop);
            assert_eq!(message.text(), "The final number is 2.");
            break;
        };
        assert_eq!(message.stop_reason, StopReason::ToolUse);
        let outputs = outputs_of(next);
        let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
        context.push(message);
        for call in calls {
            let (call_id, _) = call.id.split_once('|').unwrap();
            let output = &outputs.iter().find(|(id, _)| id == call_id).unwrap().1;
            context.push(ToolResultMessage::text(&call, output.clone(), false));
        }
    }
}

/// A reasoning model's turn with two calls (gpt-5.2, encrypted reasoning without summary).
/// Stored as pi-ai stores it (a thinking block holding the reasoning item), it is replayed as
/// recorded. Streamed through this provider, the reasoning item has no summary text and so no
/// block to live in: the request then goes without it and without the `fc_` item ids.
#[tokio::test]
async fn a_recorded_reasoning_turn_is_replayed_from_its_thinking_signature() {
    let cassette = "openai/responses_sessions/reasoning_session_two_tool_calls_streaming";
    let (Some((first, reply)), Some((second, _))) = (
        recorded(&format!("{cassette}/00")),
        recorded(&format!("{cassette}/01")),
    ) else {
        return;
    };
    let instructions = first["instructions"].as_str().unwrap();
    let user_text = first["input"][0]["content"][0]["text"].as_str().unwrap();
    let mut base = Context::new(instructions).with_message(Message::user(user_text));
    base.tools = tools_of(&first);
    let server = TestServer::start(vec![
        Reply::sse_parts(vec![Part::Bytes(reply.clone())]),
        Reply::sse(text_reply("ok")),
        Reply::sse(text_reply("ok")),
    ])
    .await
    .unwrap();
    let mut model = model_for(&server, "openai", "gpt-5.2");
    model.reasoning = true;
    let mut options = fast_options();
    options.reasoning = Some(ReasoningLevel::Low);
    options.max_tokens = Some(6000);
    let (_, streamed) = run(&model, &base, options.clone()).await;
    assert_eq!(streamed.stop_reason, StopReason::ToolUse);
    let outputs = outputs_of(&second);

    let with_turn = |assistant: AssistantMessage| {
        let mut context = base.clone();
        let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
        context.push(assistant);
        for (call, (_, output)) in calls.iter().zip(&outputs) {
            context.push(ToolResultMessage::text(call, output.clone(), false));
        }
        context
    };
    let mut expected = as_sent_here(second.clone(), "developer");
    expected["reasoning"]["summary"] = json!("auto");

    // As pi-ai stores the turn: the reasoning item in a thinking block's signature.
    let reasoning_done: Value = String::from_utf8_lossy(&reply)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
        .unwrap()["item"]
        .clone();
    let mut stored = streamed.clone();
    stored.content = vec![AssistantContent::Thinking(ThinkingContent {
        thinking: String::new(),
        thinking_signature: Some(reasoning_done.to_string()),
        redacted: None,
    })];
    for (i, call) in streamed.tool_calls().enumerate() {
        let mut call = call.clone();
        call.id = format!("call_REDACTED_{}|fc_REDACTED_{}", i + 1, i + 1);
        stored.content.push(AssistantContent::ToolCall(call));
    }
    // The provider stores the streamed turn exactly that way, even though the reasoning item
    // streamed no summary text.
    assert_eq!(streamed.content, stored.content);
    run(&model, &with_turn(streamed), options).await;
    assert_eq!(server.requests()[1].json(), expected);
}
