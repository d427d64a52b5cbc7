//! Recorded traffic: every Anthropic stream replayed, and recorded requests rebuilt.

use super::*;

/// `(request json, response sse)` of every recorded 200 streaming exchange on `/v1/messages`.
fn recorded_exchanges() -> Vec<(String, Value, Vec<u8>)> {
    let requests = recorded_requests("anthropic");
    let mut out = Vec::new();
    for path in requests {
        let request: Value =
            serde_json::from_slice(&std::fs::read(&path).expect("readable fixture"))
                .expect("JSON fixture");
        if !request["path"]
            .as_str()
            .unwrap_or("")
            .ends_with("/v1/messages")
        {
            continue;
        }
        let stem = path
            .to_string_lossy()
            .trim_end_matches(".request.json")
            .to_string();
        let Ok(body) = std::fs::read(format!("{stem}.response.sse")) else {
            continue;
        };
        let meta: Value = serde_json::from_slice(
            &std::fs::read(format!("{stem}.response.meta.json")).expect("readable fixture"),
        )
        .expect("JSON meta");
        if meta["status"].as_u64() == Some(200) {
            out.push((stem, request, body));
        }
    }
    out
}

/// What a recorded stream should produce, computed straight from its SSE text.
#[derive(Debug, PartialEq)]
struct Expected {
    response_id: Option<String>,
    text: String,
    thinking: String,
    signatures: Vec<String>,
    redacted: Vec<String>,
    tool_calls: Vec<(String, String, Value)>,
    stop: StopReason,
    usage: [u64; 4],
}

fn expected_from_sse(body: &str) -> Expected {
    let mut expected = Expected {
        response_id: None,
        text: String::new(),
        thinking: String::new(),
        signatures: Vec::new(),
        redacted: Vec::new(),
        tool_calls: Vec::new(),
        stop: StopReason::Error,
        usage: [0; 4],
    };
    // Per block index: its type and the position of its tool call or signature.
    let mut kinds: std::collections::HashMap<u64, (String, usize)> = Default::default();
    let mut raw_args: Vec<String> = Vec::new();
    let mut stop_reason: Option<String> = None;
    let mut complete = false;
    let counters = [
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ];
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        let index = event["index"].as_u64().unwrap_or(u64::MAX);
        let usage = match event["type"].as_str().unwrap_or("") {
            "message_start" => {
                expected.response_id = event["message"]["id"].as_str().map(str::to_string);
                &event["message"]["usage"]
            }
            "message_delta" => {
                if let Some(reason) = event["delta"]["stop_reason"].as_str() {
                    stop_reason = Some(reason.to_string());
                }
                &event["usage"]
            }
            "message_stop" => {
                complete = true;
                break;
            }
            "content_block_start" => {
                let block = &event["content_block"];
                let kind = block["type"].as_str().unwrap_or("").to_string();
                let position = match kind.as_str() {
                    "tool_use" => {
                        expected.tool_calls.push((
                            block["id"].as_str().unwrap_or("").into(),
                            block["name"].as_str().unwrap_or("").into(),
                            Value::Null,
                        ));
                        raw_args.push(String::new());
                        raw_args.len() - 1
                    }
                    "thinking" => {
                        expected.signatures.push(String::new());
                        expected.signatures.len() - 1
                    }
                    "redacted_thinking" => {
                        expected
                            .redacted
                            .push(block["data"].as_str().unwrap_or("").into());
                        0
                    }
                    _ => 0,
                };
                kinds.insert(index, (kind, position));
                continue;
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                let (kind, position) = kinds.get(&index).cloned().unwrap_or_default();
                let text = |field: &str| delta[field].as_str().unwrap_or("").to_string();
                match (kind.as_str(), delta["type"].as_str().unwrap_or("")) {
                    ("text", "text_delta") => expected.text.push_str(&text("text")),
                    ("thinking", "thinking_delta") => expected.thinking.push_str(&text("thinking")),
                    ("thinking", "signature_delta") => {
                        expected.signatures[position].push_str(&text("signature"))
                    }
                    ("tool_use", "input_json_delta") => {
                        raw_args[position].push_str(&text("partial_json"))
                    }
                    _ => {}
                }
                continue;
            }
            _ => continue,
        };
        for (slot, name) in counters.iter().enumerate() {
            if let Some(n) = usage[name].as_u64() {
                expected.usage[slot] = n;
            }
        }
    }
    expected.signatures.retain(|s| !s.is_empty());
    for (call, raw) in expected.tool_calls.iter_mut().zip(raw_args) {
        call.2 = if raw.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(&raw).unwrap_or(Value::Null)
        };
    }
    // Complete at message_stop, or at the end of the body once message_delta gave the reason.
    let complete = complete || stop_reason.is_some();
    expected.stop = match (complete, stop_reason.as_deref()) {
        (false, _) | (true, Some("refusal")) => StopReason::Error,
        (true, Some("max_tokens")) => StopReason::Length,
        (true, Some("tool_use")) => StopReason::ToolUse,
        (true, _) => StopReason::Stop,
    };
    expected
}

fn actual(message: &AssistantMessage) -> Expected {
    let mut got = Expected {
        response_id: message.response_id.clone(),
        text: message.text(),
        thinking: String::new(),
        signatures: Vec::new(),
        redacted: Vec::new(),
        tool_calls: Vec::new(),
        stop: message.stop_reason,
        usage: [
            message.usage.input,
            message.usage.output,
            message.usage.cache_read,
            message.usage.cache_write,
        ],
    };
    for block in &message.content {
        match block {
            AssistantContent::Thinking(t) if t.redacted == Some(true) => got
                .redacted
                .push(t.thinking_signature.clone().unwrap_or_default()),
            AssistantContent::Thinking(t) => {
                got.thinking.push_str(&t.thinking);
                got.signatures.extend(t.thinking_signature.clone());
            }
            AssistantContent::ToolCall(c) => got.tool_calls.push((
                c.id.clone(),
                c.name.clone(),
                match c.arguments_error {
                    Some(_) => Value::Null,
                    None => Value::Object(c.arguments.clone()),
                },
            )),
            AssistantContent::Text(_) => {}
        }
    }
    got
}

#[tokio::test]
async fn replays_every_recorded_anthropic_stream() {
    let exchanges = recorded_exchanges();
    let mut failures = Vec::new();
    let (mut thinking, mut redacted, mut tools) = (0, 0, 0);
    for (stem, _, body) in &exchanges {
        let expected = expected_from_sse(&String::from_utf8_lossy(body));
        thinking += usize::from(!expected.thinking.is_empty());
        redacted += usize::from(!expected.redacted.is_empty());
        tools += usize::from(!expected.tool_calls.is_empty());
        let server = TestServer::start(vec![Reply::sse_parts(vec![Part::Bytes(body.clone())])])
            .await
            .unwrap();
        let (events, message) = run(&model(&server), &user_context("replay"), fast_options()).await;
        assert!(matches!(events[0], AssistantMessageEvent::Start { .. }));
        let got = actual(&message);
        if got != expected || message.error_message.is_some() {
            failures.push(format!(
                "{stem}:\n  expected {expected:?}\n  got      {got:?}\n  error {:?}",
                message.error_message
            ));
        }
    }
    eprintln!(
        "replayed {} recorded Anthropic streams ({thinking} with thinking, {redacted} with redacted thinking, {tools} with tool calls)",
        exchanges.len()
    );
    assert!(
        exchanges.len() >= 170,
        "only {} streams found",
        exchanges.len()
    );
    assert!(thinking > 0 && redacted > 0 && tools > 0);
    assert!(
        failures.is_empty(),
        "{} of {} replays differ:\n{}",
        failures.len(),
        exchanges.len(),
        failures.join("\n")
    );
}

/// Rebuilds the conversation of a recorded request body as oxpi messages from `model`.
fn context_from_recorded(body: &Value, model: &Model) -> Context {
    let text_of = |content: &Value| -> Vec<UserContent> {
        match content {
            Value::String(s) => vec![UserContent::text(s.clone())],
            Value::Array(blocks) => blocks
                .iter()
                .map(|b| match b["type"].as_str() {
                    Some("image") => UserContent::image(
                        b["source"]["data"].as_str().expect("recorded field"),
                        b["source"]["media_type"].as_str().expect("recorded field"),
                    ),
                    _ => UserContent::text(b["text"].as_str().expect("recorded field")),
                })
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut context = Context::default();
    if let Some(system) = body["system"].as_array() {
        context.system_prompt = Some(
            system[0]["text"]
                .as_str()
                .expect("recorded field")
                .to_string(),
        );
    }
    for tool in body["tools"].as_array().into_iter().flatten() {
        context.tools.push(Tool {
            name: tool["name"].as_str().expect("recorded field").into(),
            description: tool["description"].as_str().expect("recorded field").into(),
            parameters: tool["input_schema"].clone(),
            constrained_sampling: None,
        });
    }
    let mut names = std::collections::HashMap::new();
    for message in body["messages"].as_array().expect("recorded field") {
        let blocks = message["content"].as_array().cloned().unwrap_or_default();
        if message["role"] == "assistant" {
            let content: Vec<AssistantContent> = blocks
                .iter()
                .map(|b| match b["type"].as_str().expect("recorded field") {
                    "text" => AssistantContent::text(b["text"].as_str().expect("recorded field")),
                    "thinking" => AssistantContent::Thinking(ThinkingContent {
                        thinking: b["thinking"].as_str().expect("recorded field").into(),
                        thinking_signature: b["signature"].as_str().map(str::to_string),
                        redacted: None,
                    }),
                    "tool_use" => {
                        let id = b["id"].as_str().expect("recorded field");
                        names.insert(
                            id.to_string(),
                            b["name"].as_str().expect("recorded field").to_string(),
                        );
                        AssistantContent::ToolCall(ToolCall::new(
                            id,
                            b["name"].as_str().expect("recorded field"),
                            object(b["input"].clone()),
                        ))
                    }
                    other => panic!("unexpected assistant block {other}"),
                })
                .collect();
            let stop = if content
                .iter()
                .any(|c| matches!(c, AssistantContent::ToolCall(_)))
            {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            };
            context.push(assistant(model, content, stop));
        } else if blocks.iter().all(|b| b["type"] == "tool_result") && !blocks.is_empty() {
            for b in &blocks {
                let id = b["tool_use_id"].as_str().expect("recorded field");
                context.push(ToolResultMessage {
                    tool_call_id: id.into(),
                    tool_name: names.get(id).cloned().unwrap_or_default(),
                    content: text_of(&b["content"]),
                    details: None,
                    is_error: b["is_error"].as_bool().unwrap_or(false),
                    timestamp: 0,
                    usage: None,
                    nested_calls: None,
                    duration_ms: None,
                });
            }
        } else {
            context.push(user_blocks(text_of(&message["content"])));
        }
    }
    context
}

#[tokio::test]
async fn rebuilds_a_recorded_multi_turn_tool_conversation() {
    let Some((stem, recorded, response)) = recorded_exchanges()
        .into_iter()
        .find(|(stem, _, _)| stem.ends_with("multi_turn_streaming/multi_turn_streaming_tools/03"))
    else {
        return;
    };
    let body = &recorded["body"];
    let server = TestServer::start(vec![Reply::sse_parts(vec![Part::Bytes(response.clone())])])
        .await
        .unwrap();
    let mut model = model(&server);
    model.id = body["model"].as_str().unwrap().into();
    model.max_tokens = body["max_tokens"].as_u64().unwrap();
    let context = context_from_recorded(body, &model);
    assert_eq!(
        context.messages.len(),
        8,
        "{stem}: user, then 3 assistant turns with 2, 1 and 1 results"
    );
    // The recorded client asked for the model's whole limit; oxpi's default is capped at 32,000.
    let options = fast_options().with_max_tokens(model.max_tokens);
    let (_, message) = run(&model, &context, options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{stem}");
    assert_eq!(
        message.text(),
        expected_from_sse(&String::from_utf8_lossy(&response)).text
    );

    // The recorded body, less what this provider leaves at its default: `tool_choice: auto` and
    // the `$schema` meta-schema URI of each tool.
    let mut expected = body.clone();
    expected.as_object_mut().unwrap().remove("tool_choice");
    for tool in expected["tools"].as_array_mut().unwrap() {
        tool["input_schema"]
            .as_object_mut()
            .unwrap()
            .remove("$schema");
    }
    let mut sent = server.requests()[0].json();
    strip_pi16_additions(&mut sent);
    assert_eq!(sent["messages"], expected["messages"], "{stem}: messages");
    assert_eq!(sent, expected, "{stem}: whole body");
}

/// True when every block of a recorded request is one this provider writes (no documents or
/// server tools), so its conversation can be rebuilt exactly.
fn rebuildable(body: &Value) -> bool {
    let supported = [
        "text",
        "image",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
    ];
    let messages_ok = body["messages"].as_array().into_iter().flatten().all(|m| {
        let blocks = m["content"].as_array().cloned().unwrap_or_default();
        let results = blocks.iter().filter(|b| b["type"] == "tool_result").count();
        (results == 0 || results == blocks.len())
            && blocks
                .iter()
                .all(|b| supported.contains(&b["type"].as_str().unwrap_or("")))
    });
    let tools_ok = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|t| t["description"].is_string() && t["input_schema"].is_object());
    let system_ok = match &body["system"] {
        Value::Null => true,
        Value::Array(blocks) => blocks.len() == 1,
        _ => false,
    };
    messages_ok && tools_ok && system_ok
}

#[test]
fn every_rebuildable_recorded_request_has_the_same_shape() {
    let exchanges = recorded_exchanges();
    let mut checked = 0;
    let mut failures = Vec::new();
    for (stem, request, _) in &exchanges {
        let body = &request["body"];
        if !rebuildable(body) {
            continue;
        }
        let mut model = model_at("http://unused/v1");
        model.id = body["model"].as_str().unwrap().into();
        let context = context_from_recorded(body, &model);
        let mut ours = request_json(&model, &context, &fast_options());
        strip_pi16_additions(&mut ours);
        // Cache markers are a placement policy (rig's recordings try several; this provider's is
        // tested on its own above), so they are left out of the comparison.
        let mut body = body.clone();
        strip_cache_control(&mut body);
        // Left out by this provider: the `$schema` URI and Anthropic's `strict` tool flag.
        let mut tools = body["tools"].clone();
        for tool in tools.as_array_mut().into_iter().flatten() {
            tool["input_schema"]
                .as_object_mut()
                .unwrap()
                .remove("$schema");
            tool.as_object_mut().unwrap().remove("strict");
        }
        let pick = |v: &Value| json!({"messages": v["messages"], "system": v["system"], "tools": v["tools"]});
        let expected =
            pick(&json!({"messages": body["messages"], "system": body["system"], "tools": tools}));
        if let Some(difference) = first_difference(&expected, &pick(&ours), String::new()) {
            failures.push(format!("{stem}: {difference}"));
        }
        checked += 1;
    }
    eprintln!("rebuilt {checked} of {} recorded requests", exchanges.len());
    assert!(checked >= 170, "only {checked} rebuildable requests");
    assert!(
        failures.is_empty(),
        "{} of {checked} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Where two JSON values first differ: the JSON pointer and both sides (cut short).
fn first_difference(expected: &Value, got: &Value, path: String) -> Option<String> {
    let cut = |v: &Value| v.to_string().chars().take(300).collect::<String>();
    match (expected, got) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let (x, y) = (
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                );
                first_difference(x, y, format!("{path}/{k}"))
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, format!("{path}/{i}"))),
        _ if expected == got => None,
        _ => Some(format!(
            "{path}: expected {} got {}",
            cut(expected),
            cut(got)
        )),
    }
}

/// What pi 1.6 adds that the recordings (another client's) do not have: thinking turned off
/// on a reasoning model asked for no level, `eager_input_streaming` on each tool, `is_error:
/// false` and string contents (a user's text, a tool result without images) where the
/// recordings have one text block (tested in `anthropic_requests_pi16.rs`).
fn strip_pi16_additions(body: &mut Value) {
    let Some(map) = body.as_object_mut() else {
        return;
    };
    let as_block = |content: &mut Value| {
        if let Some(text) = content.as_str() {
            *content = json!([{"type": "text", "text": text}]);
        }
    };
    for message in map
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        as_block(&mut message["content"]);
        for block in message["content"].as_array_mut().into_iter().flatten() {
            if block["type"] == "tool_result" {
                as_block(&mut block["content"]);
                if let Some(block) = block.as_object_mut() {
                    if block.get("is_error") == Some(&json!(false)) {
                        block.remove("is_error");
                    }
                }
            }
        }
    }
    if map.get("thinking") == Some(&json!({"type": "disabled"})) {
        map.remove("thinking");
    }
    for tool in map
        .get_mut("tools")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(tool) = tool.as_object_mut() {
            tool.remove("eager_input_streaming");
        }
    }
}

fn strip_cache_control(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_cache_control);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}
