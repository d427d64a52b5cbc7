//! Recorded traffic: every Responses stream replayed, and recorded request sequences rebuilt.

use super::*;

/// Every recorded Responses exchange: (provider folder, path stem, request body).
fn recorded_exchanges() -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for provider in ["openai", "xai", "copilot", "openrouter"] {
        let requests = recorded_requests(provider);
        for path in requests {
            let request: Value = serde_json::from_slice(&std::fs::read(&path).expect("test data"))
                .expect("test data");
            if !request["path"]
                .as_str()
                .unwrap_or("")
                .ends_with("/responses")
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
        // OpenRouter ends its Responses stream the Chat Completions way.
        .filter(|d| d.trim() != "[DONE]")
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
    assert!(checked >= 94, "only {checked} streams found");
    assert!(kinds.0 > 20 && kinds.1 > 20 && kinds.2 > 0, "{kinds:?}");
    assert!(
        failures.is_empty(),
        "{} of {checked} replays differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The recorded request body and response stream of `rel` (a cassette's exchange stem).
fn recorded(rel: &str) -> (Value, Vec<u8>) {
    let stem = fixtures_root().join(rel);
    let read = |suffix: &str| {
        let path = format!("{}.{suffix}", stem.display());
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let request: Value = serde_json::from_slice(&read("request.json")).expect("request JSON");
    (request["body"].clone(), read("response.sse"))
}

/// The recorded request as this provider sends it: the recorder's `instructions` become the
/// first (system or developer) message, `status` is not sent on input items (but on replayed
/// assistant messages), instructions and user turns carry no `type`, `store: false` is, and
/// tools say `strict: false`.
fn as_sent_here(mut recorded: Value, system_role: &str) -> Value {
    let body = recorded.as_object_mut().expect("test data");
    let mut input = body["input"].as_array().cloned().expect("test data");
    for item in &mut input {
        let item = item.as_object_mut().expect("test data");
        item.remove("status");
        // pi 1.6 sends instructions and user turns as bare `{role, content}` items.
        if item
            .get("role")
            .and_then(Value::as_str)
            .is_some_and(|role| role != "assistant")
        {
            item.remove("type");
        }
    }
    if let Some(instructions) = body.remove("instructions") {
        input.insert(0, json!({"role": system_role, "content": instructions}));
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
            constrained_sampling: None,
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
    let turns: Vec<(Value, Vec<u8>)> = (0..3)
        .map(|i| recorded(&format!("{cassette}/{i:02}")))
        .collect();
    let first = &turns[0].0;
    let instructions = first["instructions"].as_str().unwrap();
    let user_text = first["input"][0]["content"][0]["text"].as_str().unwrap();
    let mut context = Context::new(instructions).with_message(Message::user(user_text));
    context.tools = tools_of(first);
    for (turn, (request, reply)) in turns.iter().enumerate() {
        let server = TestServer::start(vec![Reply::sse_parts(vec![Part::Bytes(reply.clone())])])
            .await
            .unwrap();
        let mut model = model_for(&server, "openai", "gpt-4o");
        // As the catalogue's OpenAI models: tools carry `strict: false`.
        model.compat = Some(json!({"supportsStrictMode": true}));
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
    let (first, reply) = recorded(&format!("{cassette}/00"));
    let (second, _) = recorded(&format!("{cassette}/01"));
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
    model.compat = Some(json!({"supportsStrictMode": true}));
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
