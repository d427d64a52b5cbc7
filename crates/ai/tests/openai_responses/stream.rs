//! Streams and requests: events, reasoning, tools, history as input items.

use super::*;

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
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
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
    // pi 1.6: `strict: false` where the model takes the field, no `strict` elsewhere.
    model.compat = Some(json!({"supportsStrictMode": true}));
    model.headers.insert("x-model-header".into(), "m".into());
    let tool = Tool {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        constrained_sampling: None,
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
                {"role": "developer", "content": "Be brief."},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
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

    // xAI: the developer role too (pi 1.6), `xhigh` where the model says it takes it.
    let mut xai = model_for(&server, "xai", "grok-test");
    xai.reasoning = true;
    xai.compat = Some(json!({"supportsXhigh": true}));
    run(&xai, &user_context("hi"), options).await;
    let body = server.requests()[1].json();
    assert_eq!(
        body["input"][0],
        json!({"role": "developer", "content": "Be brief."})
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
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": "ENC"},
            {"type": "message", "role": "assistant", "status": "completed", "id": "msg_pi_1",
                "content": [{"type": "output_text", "text": "Reading.", "annotations": []}]},
            {"type": "function_call", "call_id": "call_1", "id": "fc_1", "name": "read", "arguments": "{\"path\":\"a\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "content of a"},
            // Another model's thinking ("Hmm.") is dropped (pi 1.6).
            {"type": "function_call", "call_id": "toolu_01_x", "name": "read", "arguments": "{\"path\":\"b\"}"},
            // pi 1.6: a tool result's images go in its output, after its text (none here).
            {"type": "function_call_output", "call_id": "toolu_01_x", "output": [
                {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AAAA"},
            ]},
            {"role": "user", "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "detail": "auto", "image_url": "data:image/jpeg;base64,BBBB"},
            ]},
        ])
    );
}

#[tokio::test]
async fn strict_mode_models_get_the_schema_as_given_with_strict_false() {
    // pi 1.6 sends every schema as given, `strict: false` where the model takes the field (a
    // map-valued `additionalProperties`, which strict mode cannot express, included), and
    // streams the arguments as they come.
    let args = r#"{"path":"a.txt","limit":null}"#;
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
    let parameters = json!({"type": "object", "properties": {
        "path": {"type": "string"},
        "limit": {"type": "integer", "minimum": 0},
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
    }, "required": ["path"]});
    let tool = Tool {
        name: "read".into(),
        description: "Read".into(),
        parameters: parameters.clone(),
        constrained_sampling: None,
    };
    let (events, message) = run(&model, &user_context("go").with_tool(tool), fast_options()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message
            .tool_calls()
            .next()
            .map(|c| Value::Object(c.arguments.clone())),
        Some(json!({"path": "a.txt", "limit": null}))
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| kind(e) == "toolcall_delta")
            .count(),
        2,
        "arguments are streamed as they come"
    );
    assert_eq!(
        server.requests()[0].json()["tools"],
        json!([{"type": "function", "name": "read", "description": "Read", "strict": false,
            "parameters": parameters}])
    );
}
