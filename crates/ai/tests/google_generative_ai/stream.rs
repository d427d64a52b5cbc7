//! Streams and requests: events, usage, thinking, tool-call ids and signatures, the request body.

use super::*;

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
    // At the catalogue's prices for gemini-2.5-flash.
    let c = model.cost;
    let expected_cost = (60.0 * c.input + 15.0 * c.output + 40.0 * c.cache_read) / 1_000_000.0;
    assert!(expected_cost > 0.0);
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
            "systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}]},
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
            // pi 1.6: the level itself (the model's level map, when it has one, says which
            // levels it takes), no longer Pro's low/high only.
            "gemini-3-pro-preview",
            ReasoningLevel::Medium,
            json!({"includeThoughts": true, "thinkingLevel": "MEDIUM"}),
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
    // (pi 1.6's catalogue no longer lists gemini-2.0-flash, which had no reasoning.)
    let mut plain = model_named(&server, "gemini-2.0-flash");
    plain.reasoning = false;
    run(&plain, &user_context("hi"), opts).await;
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

#[tokio::test]
async fn results_follow_call_order_and_gemini_2_gets_no_ids() {
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
async fn call_ids_are_sent_to_gemini_3_and_later_only() {
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
    // Gemini 2.5 (another model): no ids, no signatures.
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
    // Another model: thinking is dropped (pi 1.6), signatures stay behind.
    run(&model_named(&server, "gemini-2.5-pro"), &context, options()).await;
    let body = server.requests()[2].json();
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Calling "},
            {"text": "add."},
            {"functionCall": {"name": "add", "args": {"x": 1}}},
        ]})
    );
    // Gemini 3 needs a signature on every replayed call: Google's placeholder stands in. It
    // also gets the call's id (pi 1.6 sends ids to Gemini 3 and later).
    run(
        &model_named(&server, "gemini-3-pro-preview"),
        &context,
        options(),
    )
    .await;
    let body = server.requests()[3].json();
    assert_eq!(
        body["contents"][1]["parts"][2],
        json!({"functionCall": {"id": call.id, "name": "add", "args": {"x": 1}}, "thoughtSignature": "skip_thought_signature_validator"})
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
        constrained_sampling: None,
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
                // No call ids before Gemini 3 (pi 1.6).
                {"role": "model", "parts": [{"functionCall": {"name": "shot", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "shot", "response": {"output": "(see attached image)"}}}]},
                {"role": "user", "parts": [{"text": "Tool result image:"}, {"inlineData": {"mimeType": "image/png", "data": "IMG"}}]},
            ],
            // A reasoning model asked for no level: thinking off, as pi 1.6 sends it.
            "generationConfig": {"thinkingConfig": {"thinkingBudget": 0}},
            "systemInstruction": {"role": "user", "parts": [{"text": "sys"}]},
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
    assert_eq!(
        body["contents"][2]["parts"][0]["functionResponse"]["id"],
        "c1"
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
        constrained_sampling: None,
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
