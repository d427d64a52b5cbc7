//! Recorded traffic: every Gemini stream replayed, and recorded requests rebuilt.

use super::*;

/// The recorded exchanges of `gemini/`: (path stem, request JSON), sorted.
fn recorded_exchanges() -> Vec<(String, Value)> {
    recorded_requests("gemini")
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).expect("a readable fixture");
            let request: Value = serde_json::from_slice(&bytes).expect("fixture JSON");
            let path = path.to_string_lossy().to_string();
            let stem = path.trim_end_matches(".request.json").to_string();
            (stem, request)
        })
        .collect()
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
    /// input, output, cache read, total.
    usage: (u64, u64, u64, u64),
    response_id: Option<String>,
}

fn expected_from_sse(body: &str) -> Expected {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut tool_calls = Vec::new();
    let mut finish = None;
    let mut usage = (0, 0, 0, 0);
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
            let (input, output) = (
                n("promptTokenCount") - cached,
                n("candidatesTokenCount") + n("thoughtsTokenCount"),
            );
            // The wire's own total counts what the parts do not (tool-use prompt tokens).
            let total = match n("totalTokenCount") {
                0 => input + output + cached,
                total => total,
            };
            usage = (input, output, cached, total);
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
            message.usage.total_tokens,
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
    assert!(checked >= 100, "only {checked} streams found");
    assert!(
        failures.is_empty(),
        "{} of {checked} replays differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn the_recorded_error_envelope_becomes_an_error_event() {
    let root = fixtures_root();
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
            constrained_sampling: None,
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
    assert!(conversations >= 50, "only {conversations} conversations");
}
