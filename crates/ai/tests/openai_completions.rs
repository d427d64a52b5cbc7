//! The Chat Completions provider over real HTTP: replays of recorded streams from many
//! OpenAI-compatible servers, the request it builds, and every failure path.

mod common;
use common::{cancel_at_first_text, kind, run, user_context};

use std::time::Duration;

use oxpi_ai::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Context, Message, Model, StopReason,
    StreamOptions, Tool, ToolCall, ToolResultMessage, UserContent,
};
use oxpi_testkit::{recorded_requests, Part, Reply, TestServer};
use serde_json::{json, Value};

fn model(server: &TestServer) -> Model {
    Model::openai_compatible(format!("{}/v1", server.base_url()), "test-model")
}

fn fast_options() -> StreamOptions {
    StreamOptions::default()
        .with_retry_base_delay(Duration::from_millis(5))
        .with_timeout(Duration::from_secs(10))
}

fn sse(chunks: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    out.push("data: [DONE]\n\n".to_string());
    out
}

fn text_chunk(text: &str) -> Value {
    json!({"id": "c1", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
}

fn finish_chunk(reason: &str) -> Value {
    json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

#[tokio::test]
async fn streams_text_and_usage() {
    let mut chunks = vec![text_chunk("Hel"), text_chunk("lo")];
    chunks.push(finish_chunk("stop"));
    chunks.push(json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}}}));
    let server = TestServer::start(vec![Reply::sse(sse(&chunks))])
        .await
        .unwrap();
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
    assert_eq!(message.response_id.as_deref(), Some("c1"));
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.cache_read
        ),
        (6, 2, 4)
    );
    assert_eq!(message.usage.total_tokens, 12);
    assert!((message.usage.cost.total - (6.0 + 4.0 + 2.0) / 1_000_000.0).abs() < 1e-12);

    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        None,
        "no key for a keyless local server"
    );
    assert_eq!(
        request.json(),
        json!({
            "model": "test-model",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
            "stream": true,
            "stream_options": {"include_usage": true},
            // pi 1.6's defaults for any server: `store: false`, `max_completion_tokens`, the
            // model's limit (4,096 for `openai_compatible`) fitted into the window.
            "max_completion_tokens": 4096,
            "store": false,
        })
    );
}

#[tokio::test]
async fn assembles_tool_calls_of_every_server_flavour() {
    let tc = |index: u64, id: Option<&str>, name: Option<&str>, args: Value| {
        let mut call = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    };
    let chunks = vec![
        json!({"choices": [{"index": 0, "delta": {"reasoning_content": "think"}}]}),
        // Fragments.
        tc(0, Some("call_a"), Some("read"), json!("")),
        tc(0, None, None, json!("{\"path\":")),
        tc(0, None, None, json!("\"a.txt\"}")),
        // Whole arguments in one chunk.
        tc(
            1,
            Some("call_b"),
            Some("read"),
            json!("{\"path\":\"b.txt\"}"),
        ),
        // Arguments as an object.
        tc(2, Some("call_c"), Some("read"), json!({"path": "c.txt"})),
        // Empty-string arguments and a missing id.
        tc(3, None, Some("list"), json!("")),
        finish_chunk("tool_calls"),
    ];
    let server = TestServer::start(vec![Reply::sse(sse(&chunks))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("go"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    // The block names the field its reasoning came in (pi's replay key).
    assert_eq!(
        message.content[0],
        AssistantContent::Thinking(oxpi_ai::ThinkingContent {
            thinking: "think".into(),
            thinking_signature: Some("reasoning_content".into()),
            redacted: None,
        })
    );
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    let summary: Vec<(String, Value)> = calls
        .iter()
        .map(|c| (c.name.clone(), Value::Object(c.arguments.clone())))
        .collect();
    assert_eq!(
        summary,
        [
            ("read".to_string(), json!({"path": "a.txt"})),
            ("read".to_string(), json!({"path": "b.txt"})),
            ("read".to_string(), json!({"path": "c.txt"})),
            ("list".to_string(), json!({})),
        ]
    );
    assert_eq!(
        calls
            .iter()
            .take(3)
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        ["call_a", "call_b", "call_c"]
    );
    assert!(
        calls[3].id.starts_with("call_") && calls[3].id.len() > 10,
        "generated id {}",
        calls[3].id
    );
    assert!(calls.iter().all(|c| c.arguments_error.is_none()));
}

#[tokio::test]
async fn malformed_arguments_are_reported_not_emptied() {
    let chunks = vec![
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_x", "function": {"name": "read", "arguments": "{\"path\": \"a"}}]}}]}),
        finish_chunk("tool_calls"),
    ];
    let server = TestServer::start(vec![Reply::sse(sse(&chunks))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("go"), fast_options()).await;
    let call = message.tool_calls().next().unwrap();
    assert!(call.arguments.is_empty());
    let error = call.arguments_error.as_deref().unwrap();
    assert!(
        error.contains("not valid JSON") && error.contains("{\"path\": \"a"),
        "{error}"
    );
}

/// Groq sends `"arguments":"null"` for a tool whose schema has no properties: no arguments.
#[tokio::test]
async fn null_arguments_are_no_arguments() {
    let chunks = vec![
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_x", "function": {"name": "lookup", "arguments": "null"}}]}}]}),
        finish_chunk("tool_calls"),
    ];
    let server = TestServer::start(vec![Reply::sse(sse(&chunks))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("go"), fast_options()).await;
    assert_eq!(
        message.tool_calls().cloned().collect::<Vec<_>>(),
        vec![oxpi_ai::ToolCall::new(
            "call_x",
            "lookup",
            serde_json::Map::new()
        )]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn request_carries_history_tools_and_options() {
    let server = TestServer::start(vec![Reply::sse(sse(&[finish_chunk("stop")]))])
        .await
        .unwrap();
    let mut model = model(&server);
    model.provider = "mistral".into();
    model.headers.insert("x-model-header".into(), "m".into());
    let call = ToolCall::new(
        "call_1",
        "read",
        json!({"path": "a"}).as_object().unwrap().clone(),
    );
    let mut assistant = AssistantMessage::empty("openai-completions", "mistral", "test-model");
    assistant.content = vec![
        AssistantContent::text("Reading."),
        AssistantContent::ToolCall(call.clone()),
    ];
    assistant.stop_reason = StopReason::ToolUse;
    let mut failed = AssistantMessage::empty("openai-completions", "mistral", "test-model");
    failed.stop_reason = StopReason::Error;
    failed.content = vec![AssistantContent::text("partial")];
    let context = Context::new("sys")
        .with_message(Message::user("hi"))
        .with_message(assistant)
        .with_message(ToolResultMessage::text(&call, "content of a", false))
        .with_message(failed)
        .with_message(Message::User(oxpi_ai::UserMessage {
            content: oxpi_ai::UserMessageContent::Blocks(vec![UserContent::text("look"), UserContent::image("AAAA", "image/png")]),
            timestamp: 0,
        }))
        .with_tool(Tool {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            constrained_sampling: None,
        });
    let mut options = fast_options();
    options.api_key = Some("sk-secret-key".into());
    options.max_tokens = Some(100);
    options.temperature = Some(0.0);
    options.headers.insert("x-extra".into(), "1".into());
    let (_, message) = run(&model, &context, options).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    let request = &server.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-secret-key")
    );
    assert_eq!(request.header("x-extra"), Some("1"));
    assert_eq!(request.header("x-model-header"), Some("m"));
    let body = request.json();
    let mapped_id = body["messages"][2]["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        mapped_id.len(),
        9,
        "mistral ids are 9 alphanumerics: {mapped_id}"
    );
    assert_eq!(
        body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Reading.", "tool_calls": [
                    {"id": mapped_id, "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}
                ]},
                {"role": "tool", "tool_call_id": mapped_id, "content": "content of a", "name": "read"},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "text", "text": "(image omitted: model does not support images)"}
                ]},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 100,
            "temperature": 0.0,
            "tools": [{"type": "function", "function": {
                "name": "read", "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
            }}],
        })
    );
}

#[tokio::test]
async fn tool_calls_written_as_text_become_tool_calls_when_enabled() {
    let text = "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}\n```";
    let chunks: Vec<Value> = text
        .as_bytes()
        .chunks(7)
        .map(|c| text_chunk(std::str::from_utf8(c).unwrap()))
        .chain([finish_chunk("stop")])
        .collect();
    let read_tool = Tool {
        name: "read".into(),
        description: "Read".into(),
        parameters: json!({"type": "object"}),
        constrained_sampling: None,
    };
    let context = user_context("read it").with_tool(read_tool);

    let server = TestServer::start(vec![Reply::sse(sse(&chunks)), Reply::sse(sse(&chunks))])
        .await
        .unwrap();
    let mut on = model(&server);
    on.compat = Some(json!({"toolCallsInText": true}));
    let (events, message) = run(&on, &context, fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.content.len(), 1);
    let call = message.tool_calls().next().unwrap();
    assert_eq!(
        (call.name.as_str(), Value::Object(call.arguments.clone())),
        ("read", json!({"path": "note.txt"}))
    );
    assert!(
        !events.iter().any(|e| kind(e) == "text_delta"),
        "held text is not streamed"
    );

    let off = model(&server);
    let (_, message) = run(&off, &context, fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.text(), text);
}

#[tokio::test]
async fn http_error_shows_status_and_server_message_without_retry() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-secret-key.","type":"invalid_request_error"}}"#;
    let server = TestServer::start(vec![Reply::json_error(401, body)])
        .await
        .unwrap();
    let mut options = fast_options();
    options.api_key = Some("sk-secret-key".into());
    let (events, message) = run(&model(&server), &user_context("hi"), options).await;
    assert_eq!(events.len(), 2, "start, error");
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("401 Incorrect API key provided: <redacted>.")
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retries_429_and_503_then_succeeds() {
    let ok = Reply::sse(sse(&[text_chunk("ok"), finish_chunk("stop")]));
    let server = TestServer::start(vec![
        Reply::json_error(429, r#"{"error":{"message":"Rate limit"}}"#),
        Reply::json_error(503, "overloaded").with_header("retry-after", "0"),
        ok,
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.text(), "ok");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retries_are_bounded() {
    let server = TestServer::start(vec![
        Reply::json_error(500, "a"),
        Reply::json_error(502, "b"),
        Reply::json_error(503, r#"{"error":{"message":"still down"}}"#),
        Reply::json_error(503, "never reached"),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("503 still down (after 2 retries)")
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retry_after_beyond_the_cap_fails_at_once() {
    let server = TestServer::start(vec![
        Reply::json_error(429, "slow down").with_header("retry-after", "3600")
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    let error = message.error_message.unwrap();
    assert!(
        error.starts_with("429 slow down (the server asked to retry after 3600.0s"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn reset_before_headers_is_retried() {
    let server = TestServer::start(vec![
        Reply::Reset,
        Reply::sse(sse(&[text_chunk("after reset"), finish_chunk("stop")])),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.text(), "after reset");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn connection_refused_is_an_error_event() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let model = Model::openai_compatible(format!("http://127.0.0.1:{port}/v1"), "m");
    let mut options = fast_options();
    options.max_retries = 1;
    let (_, message) = run(&model, &user_context("hi"), options).await;
    let error = message.error_message.unwrap();
    assert!(
        error.starts_with("connection error:") && error.ends_with("(after 1 retries)"),
        "{error}"
    );
}

#[tokio::test]
async fn a_cut_stream_keeps_partial_content_and_is_not_retried() {
    let mut parts: Vec<Part> = sse(&[text_chunk("partial ")])
        .into_iter()
        .take(1)
        .map(|s| Part::Bytes(s.into_bytes()))
        .collect();
    parts.push(Part::Cut);
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "partial ");
    assert!(message
        .error_message
        .unwrap()
        .starts_with("The stream was interrupted"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_without_finish_reason_is_an_error() {
    let server = TestServer::start(vec![Reply::sse(sse(&[text_chunk("half")]))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "half");
    assert_eq!(
        message.error_message.as_deref(),
        Some("The stream ended without a finish_reason: the response is incomplete")
    );
}

#[tokio::test]
async fn a_garbage_chunk_is_an_error_that_quotes_it() {
    let server = TestServer::start(vec![Reply::sse([
        format!("data: {}\n\n", text_chunk("ok")),
        "data: {not json\n\n".to_string(),
    ])])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "ok");
    let error = message.error_message.unwrap();
    assert!(
        error.starts_with("Could not parse a stream chunk") && error.ends_with(": {not json"),
        "{error}"
    );
}

#[tokio::test]
async fn an_idle_stall_ends_in_an_error() {
    let mut parts = vec![Part::Bytes(
        format!("data: {}\n\n", text_chunk("slow")).into_bytes(),
    )];
    parts.push(Part::Stall);
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let mut options = fast_options();
    options.idle_timeout = Duration::from_millis(200);
    let (_, message) = run(&model(&server), &user_context("hi"), options).await;
    assert_eq!(message.text(), "slow");
    assert_eq!(
        message.error_message.as_deref(),
        Some("The stream stalled: no data for 0.2s (idle_timeout)")
    );
}

#[tokio::test]
async fn headers_then_nothing_times_out_on_the_idle_timer() {
    let server = TestServer::start(vec![Reply::StallAfterHeaders { status: 200 }])
        .await
        .unwrap();
    let mut options = fast_options();
    options.idle_timeout = Duration::from_millis(200);
    let (_, message) = run(&model(&server), &user_context("hi"), options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(message
        .error_message
        .unwrap()
        .starts_with("The stream stalled"));
}

#[tokio::test]
async fn cancel_mid_stream_ends_as_aborted_with_partial_content() {
    let parts = vec![
        Part::Bytes(format!("data: {}\n\n", text_chunk("first")).into_bytes()),
        Part::Stall,
    ];
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let message = cancel_at_first_text(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(message.text(), "first");
    assert_eq!(
        message.error_message.as_deref(),
        Some("Request was aborted")
    );
}

#[tokio::test]
async fn cancel_during_a_retry_wait_returns_promptly() {
    let server = TestServer::start(vec![
        Reply::json_error(503, "down").with_header("retry-after", "30")
    ])
    .await
    .unwrap();
    let options = fast_options().with_max_retry_delay(Duration::from_secs(60));
    let cancel = options.cancel.clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
        std::time::Instant::now()
    });
    let (_, message) = run(&model(&server), &user_context("hi"), options).await;
    let ended = std::time::Instant::now();
    let cancelled_at = canceller.await.unwrap();
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(
        server.requests().len(),
        1,
        "the cancelled wait sent nothing more"
    );
    // The guarantee of the retry loop: an abort during a backoff wait ends the stream within
    // 100 ms (the wait itself was 30 s).
    let latency = ended.saturating_duration_since(cancelled_at);
    assert!(
        latency < Duration::from_millis(100),
        "abort took {latency:?}"
    );
}

#[tokio::test]
async fn content_filter_and_length_map_to_stop_reasons() {
    let server = TestServer::start(vec![
        Reply::sse(sse(&[text_chunk("a"), finish_chunk("length")])),
        Reply::sse(sse(&[text_chunk("b"), finish_chunk("content_filter")])),
    ])
    .await
    .unwrap();
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Length);
    let (_, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("The provider stopped the reply: content_filter")
    );
}

/// OpenRouter says `tool_calls` for a reply whose upstream model hit its output limit; its
/// `native_finish_reason` tells, and the reply is `length` (the agent then refuses the cut call).
#[tokio::test]
async fn openrouter_native_finish_reason_marks_a_cut_reply() {
    let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_x", "function": {"name": "file_report", "arguments": "{\"summary\": \"The cache"}}]}}]});
    let finish = |native: &str| json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls", "native_finish_reason": native}]});
    let mut stops = Vec::new();
    for native in [
        "length",
        "max_output_tokens",
        "max_tokens",
        "tool_calls",
        "stop",
    ] {
        let server = TestServer::start(vec![Reply::sse(sse(&[call.clone(), finish(native)]))])
            .await
            .unwrap();
        let (_, message) = run(&model(&server), &user_context("go"), fast_options()).await;
        stops.push((native, message.stop_reason));
    }
    assert_eq!(
        stops,
        [
            ("length", StopReason::Length),
            ("max_output_tokens", StopReason::Length),
            ("max_tokens", StopReason::Length),
            ("tool_calls", StopReason::ToolUse),
            ("stop", StopReason::ToolUse),
        ]
    );
}

/// What a recorded stream should produce, computed straight from its chunks.
#[derive(Debug, PartialEq)]
struct Expected {
    text: String,
    thinking: String,
    tool_calls: Vec<(String, Value)>,
    stop: StopReason,
}

fn expected_from_sse(body: &str) -> Option<Expected> {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut calls: Vec<(Option<String>, u64, String, String)> = Vec::new();
    let mut finish = None;
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let data = data.trim();
        if data == "[DONE]" || data.is_empty() {
            continue;
        }
        let chunk: Value = serde_json::from_str(data).ok()?;
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        let delta = &choice["delta"];
        text.push_str(delta["content"].as_str().unwrap_or(""));
        thinking.push_str(
            delta["reasoning_content"]
                .as_str()
                .or(delta["reasoning"].as_str())
                .unwrap_or(""),
        );
        for (i, call) in delta["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = call["index"].as_u64().unwrap_or(i as u64);
            let id = call["id"].as_str().map(str::to_string);
            let args = match &call["function"]["arguments"] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            let same = calls.last().is_some_and(|(last_id, last_index, _, _)| {
                *last_index == index && (id.is_none() || id == *last_id)
            });
            if same {
                calls.last_mut()?.3.push_str(&args);
            } else {
                let name = call["function"]["name"].as_str().unwrap_or("").to_string();
                calls.push((id, index, name, args));
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            // OpenRouter: the upstream model's own reason tells a cut reply (see
            // tool_truncation_contract_matrix, where finish_reason says tool_calls).
            let native = choice["native_finish_reason"].as_str().unwrap_or("");
            let cut = matches!(native, "length" | "max_tokens" | "max_output_tokens");
            finish = Some(if cut { "length" } else { reason }.to_string());
        }
    }
    let tool_calls: Vec<(String, Value)> = calls
        .into_iter()
        .map(|(_, _, name, args)| {
            // No text and JSON `null` both mean no arguments; unparsable text is `Null` here.
            let value = match serde_json::from_str(&args) {
                _ if args.trim().is_empty() => json!({}),
                Ok(Value::Null) => json!({}),
                Ok(value) => value,
                Err(_) => Value::Null,
            };
            (name, value)
        })
        .collect();
    let stop = match finish.as_deref() {
        None => StopReason::Error,
        Some("length") => StopReason::Length,
        Some("content_filter") => StopReason::Error,
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some(_) if !tool_calls.is_empty() => StopReason::ToolUse,
        Some(_) => StopReason::Stop,
    };
    Some(Expected {
        text,
        thinking,
        tool_calls,
        stop,
    })
}

fn actual(message: &AssistantMessage) -> Expected {
    let mut thinking = String::new();
    for block in &message.content {
        if let AssistantContent::Thinking(t) = block {
            thinking.push_str(&t.thinking);
        }
    }
    Expected {
        text: message.text(),
        thinking,
        tool_calls: message
            .tool_calls()
            .map(|c| {
                let args = if c.arguments_error.is_some() {
                    Value::Null
                } else {
                    Value::Object(c.arguments.clone())
                };
                (c.name.clone(), args)
            })
            .collect(),
        stop: message.stop_reason,
    }
}

#[tokio::test]
async fn replays_every_recorded_chat_completions_stream() {
    let providers = [
        "openai",
        "openrouter",
        "deepseek",
        "mistral",
        "groq",
        "llamacpp",
        "copilot",
        "venice",
        "perplexity",
        "doubleword",
        "mistralrs",
    ];
    let mut checked = 0;
    let mut failures = Vec::new();
    for provider in providers {
        let requests = recorded_requests(provider);
        for request_path in requests {
            let request: Value =
                serde_json::from_slice(&std::fs::read(&request_path).unwrap()).unwrap();
            if !request["path"]
                .as_str()
                .unwrap_or("")
                .ends_with("/chat/completions")
            {
                continue;
            }
            let stem = request_path
                .to_string_lossy()
                .trim_end_matches(".request.json")
                .to_string();
            let Ok(body) = std::fs::read(format!("{stem}.response.sse")) else {
                continue;
            };
            let meta: Value = serde_json::from_slice(
                &std::fs::read(format!("{stem}.response.meta.json")).unwrap(),
            )
            .unwrap();
            if meta["status"].as_u64() != Some(200) {
                continue;
            }
            let Some(expected) = expected_from_sse(&String::from_utf8_lossy(&body)) else {
                continue;
            };
            let server = TestServer::start(vec![Reply::sse_parts(vec![Part::Bytes(body.clone())])])
                .await
                .unwrap();
            let (events, message) =
                run(&model(&server), &user_context("replay"), fast_options()).await;
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
    }
    eprintln!("replayed {checked} recorded Chat Completions streams");
    assert!(checked > 200, "only {checked} streams found");
    assert!(
        failures.is_empty(),
        "{} of {checked} replays differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn done_twice_ends_at_the_first() {
    let mut body = sse(&[text_chunk("once"), finish_chunk("stop")]);
    body.push("data: [DONE]\n\n".to_string());
    let server = TestServer::start(vec![Reply::sse(body)]).await.unwrap();
    let (events, message) = run(&model(&server), &user_context("hi"), fast_options()).await;
    assert_eq!(
        (message.stop_reason, message.text()),
        (StopReason::Stop, "once".to_string())
    );
    assert_eq!(events.iter().filter(|e| e.is_terminal()).count(), 1);
}

#[tokio::test]
async fn a_fragment_for_a_finished_tool_call_is_an_error() {
    let frag = |index: u64, id: Option<&str>, args: &str| {
        let mut call = json!({"index": index, "function": {"name": "read", "arguments": args}});
        if let Some(id) = id {
            call["id"] = json!(id);
        }
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    };
    let chunks = vec![
        frag(0, Some("call_a"), "{\"path\":"),
        frag(1, Some("call_b"), "{}"),
        frag(0, None, "\"a\"}"),
        finish_chunk("tool_calls"),
    ];
    let server = TestServer::start(vec![Reply::sse(sse(&chunks))])
        .await
        .unwrap();
    let (_, message) = run(&model(&server), &user_context("go"), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("a tool-call fragment for index 0 arrived after that call had ended")
    );
}

/// A long reply (text, then two tool calls of many fragments with escapes) read through the
/// decoder's per-event path: every fragment is one delta event, in order, for its block.
/// (The full-batch fallback of that path is tested in `reply`.)
#[tokio::test]
async fn every_fragment_of_a_long_reply_is_one_delta_in_order() {
    let texts: Vec<String> = (0..600).map(|i| format!("t{i} \"q\"\n")).collect();
    let fragments = |call: usize| -> Vec<String> {
        let mut out = vec![format!("{{\"n\":{call},\"s\":\"")];
        out.extend((0..700).map(|i| format!("{call}.{i}\\n\\\"")));
        out.push("\"}".to_string());
        out
    };
    let mut chunks: Vec<Value> = texts.iter().map(|t| text_chunk(t)).collect();
    let mut expected_args = Vec::new();
    for call in 0..2u64 {
        chunks.push(
            json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": call, "id": format!("call_{call}"), "type": "function",
             "function": {"name": "write", "arguments": ""}}]}}]}),
        );
        let parts = fragments(call as usize);
        for part in &parts {
            chunks.push(
                json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": call, "function": {"arguments": part}}]}}]}),
            );
        }
        expected_args.push(parts);
    }
    chunks.push(finish_chunk("tool_calls"));
    // One write: network reads of many events each.
    let server = TestServer::start(vec![Reply::sse([sse(&chunks).concat()])])
        .await
        .unwrap();
    let (events, message) = run(&model(&server), &user_context("go"), fast_options()).await;
    let text_deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta,
            } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        text_deltas,
        texts.iter().map(String::as_str).collect::<Vec<_>>()
    );
    for (call, parts) in expected_args.iter().enumerate() {
        let deltas: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                AssistantMessageEvent::ToolcallDelta {
                    content_index,
                    delta,
                } if *content_index == call + 1 => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, parts.iter().map(String::as_str).collect::<Vec<_>>());
    }
    assert_eq!(message.text(), texts.concat());
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    for (call, parts) in calls.iter().zip(&expected_args) {
        let expected: Value = serde_json::from_str(&parts.concat()).expect("arguments");
        assert_eq!(Value::Object(call.arguments.clone()), expected);
    }
}
