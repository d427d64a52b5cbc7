//! Cross-provider handoff: a conversation saved from each of the four APIs (text, thinking,
//! redacted thinking, images, parallel tool calls with that API's id style, an errored turn, a
//! call left without a result) continues on each of the four. For every ordered pair, the
//! request the target builds is checked against the target's rules.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::time::Duration;

use oxpi_ai::{
    AssistantContent, AssistantMessage, Context, Message, Model, StopReason, StreamOptions,
    TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserContent, UserMessage,
    UserMessageContent,
};
use oxpi_testkit::{Reply, TestServer};
use serde_json::{json, Value};

const APIS: [(&str, &str); 4] = [
    ("openai-completions", "/v1"),
    ("openai-responses", "/v1"),
    ("anthropic-messages", "/v1"),
    ("google-generative-ai", "/v1beta"),
];

/// Tool-call ids in the style each API produces.
fn ids(api: &str) -> [String; 4] {
    let long = "x".repeat(70);
    match api {
        "openai-completions" => [
            "call_a1".into(),
            "call.weird/id:2".into(),
            "call_a3".into(),
            format!("call_{long}"),
        ],
        "openai-responses" => [
            "call_r1|fc_0123456789abcdef".into(),
            "call_r2|fc_fedcba9876543210".into(),
            "call_r3|fc_1".into(),
            format!("call_r4|fc_{long}"),
        ],
        "anthropic-messages" => [
            "toolu_01A".into(),
            "toolu_01B".into(),
            "toolu_01C".into(),
            "toolu_01D".into(),
        ],
        _ => [
            "gemini_call_1".into(),
            "gemini_call_2".into(),
            "gemini_call_3".into(),
            "gemini_call_4".into(),
        ],
    }
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn assistant(api: &str, content: Vec<AssistantContent>, stop: StopReason) -> Message {
    let mut m = AssistantMessage::empty(api, format!("prov-{api}"), format!("model-{api}"));
    m.content = content;
    m.stop_reason = stop;
    Message::Assistant(m)
}

fn call(id: &str, path: &str) -> AssistantContent {
    let mut c = ToolCall::new(
        id,
        "read",
        json!({"path": path}).as_object().cloned().unwrap(),
    );
    c.thought_signature = Some("thought-sig".into());
    AssistantContent::ToolCall(c)
}

fn result(id: &str, content: Vec<UserContent>, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content,
        details: None,
        is_error,
        timestamp: 0,
        usage: None,
        nested_calls: None,
        duration_ms: None,
    })
}

fn conversation(api: &str) -> Vec<Message> {
    let [a, b, c, d] = ids(api);
    vec![
        Message::User(UserMessage {
            content: UserMessageContent::Blocks(vec![
                UserContent::text("Look at this"),
                UserContent::image(PNG, "image/png"),
            ]),
            timestamp: 0,
        }),
        assistant(
            api,
            vec![
                AssistantContent::Thinking(ThinkingContent {
                    thinking: "I should read both files.".into(),
                    thinking_signature: Some("sig-1".into()),
                    redacted: None,
                }),
                AssistantContent::Text(TextContent {
                    text: "Reading both.".into(),
                    text_signature: Some("text-sig".into()),
                }),
                call(&a, "a.txt"),
                call(&b, "b.txt"),
            ],
            StopReason::ToolUse,
        ),
        result(
            &a,
            vec![
                UserContent::text("alpha"),
                UserContent::image(PNG, "image/png"),
            ],
            false,
        ),
        result(&b, vec![UserContent::text("no such file")], true),
        assistant(
            api,
            vec![AssistantContent::text("Both read.")],
            StopReason::Stop,
        ),
        Message::user("And now?"),
        assistant(
            api,
            vec![AssistantContent::text("ERRORED-TURN"), call(&c, "c.txt")],
            StopReason::Error,
        ),
        Message::user("Try again"),
        assistant(
            api,
            vec![
                AssistantContent::Thinking(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: Some("opaque".into()),
                    redacted: Some(true),
                }),
                call(&d, "d.txt"),
            ],
            StopReason::ToolUse,
        ),
        Message::user("continue"),
    ]
}

fn target_model(api: &str, path: &str, server: &TestServer, same_as: Option<&str>) -> Model {
    let mut model = Model::openai_compatible(
        format!("{}{path}", server.base_url()),
        format!("model-{api}"),
    );
    model.api = api.into();
    model.provider = format!("prov-{}", same_as.unwrap_or("target"));
    if same_as.is_none() {
        model.id = "target-model".into();
    }
    model.input = vec![oxpi_ai::InputKind::Text, oxpi_ai::InputKind::Image];
    model.reasoning = true;
    model
}

/// (call ids in order, result ids in order) of a request body, per target API.
fn calls_and_results(api: &str, body: &Value) -> (Vec<String>, Vec<String>) {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    match api {
        "openai-completions" => {
            for m in body["messages"].as_array().unwrap() {
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    calls.push(s(&c["id"]));
                }
                if m["role"] == "tool" {
                    results.push(s(&m["tool_call_id"]));
                }
            }
        }
        "openai-responses" => {
            for item in body["input"].as_array().unwrap() {
                match item["type"].as_str() {
                    Some("function_call") => calls.push(s(&item["call_id"])),
                    Some("function_call_output") => results.push(s(&item["call_id"])),
                    _ => {}
                }
            }
        }
        "anthropic-messages" => {
            for m in body["messages"].as_array().unwrap() {
                for block in m["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("tool_use") => calls.push(s(&block["id"])),
                        Some("tool_result") => results.push(s(&block["tool_use_id"])),
                        _ => {}
                    }
                }
            }
        }
        _ => {
            for content in body["contents"].as_array().unwrap() {
                for part in content["parts"].as_array().into_iter().flatten() {
                    if part.get("functionCall").is_some() {
                        calls.push(s(&part["functionCall"]["name"]));
                    }
                    if part.get("functionResponse").is_some() {
                        results.push(s(&part["functionResponse"]["name"]));
                    }
                }
            }
        }
    }
    (calls, results)
}

fn check_ids(api: &str, ids: &[String]) {
    for id in ids {
        match api {
            "anthropic-messages" => assert!(
                !id.is_empty()
                    && id.len() <= 64
                    && id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "anthropic id {id:?}"
            ),
            // pi 1.6: a Responses id loses its `|item` part; others are kept (cut to 40 only
            // for OpenAI itself).
            "openai-completions" => assert!(!id.contains('|'), "chat id {id:?}"),
            "openai-responses" => assert!(
                !id.contains('|') && id.chars().count() <= 64,
                "responses call_id {id:?}"
            ),
            _ => {}
        }
    }
}

#[tokio::test]
async fn every_api_continues_every_other_apis_conversation() {
    for (source, _) in APIS {
        for (target, path) in APIS {
            let server = TestServer::start(vec![Reply::json_error(
                400,
                r#"{"error":{"message":"captured"}}"#,
            )])
            .await
            .unwrap();
            let same = source == target;
            let model = target_model(target, path, &server, same.then_some(source));
            let context = Context {
                system_prompt: Some("system".into()),
                messages: std::sync::Arc::new(conversation(source)),
                tools: vec![oxpi_ai::Tool {
                    name: "read".into(),
                    description: "Read a file".into(),
                    parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
                    constrained_sampling: None,
                }],
            };
            let options = StreamOptions::default()
                .with_api_key("k")
                .with_max_retries(0)
                .with_retry_base_delay(Duration::from_millis(1));
            let reply = oxpi_ai::stream(&model, &context, options).result().await;
            let label = format!("{source} -> {target}");
            assert_eq!(
                reply.error_message.as_deref(),
                Some("400 captured"),
                "{label}: the request was built and sent"
            );
            let body = server.requests()[0].json();
            let text = body.to_string();

            let (calls, results) = calls_and_results(target, &body);
            // The errored turn and its call are gone; the orphan call got a synthetic result.
            assert_eq!(calls.len(), 3, "{label}: {calls:?}");
            assert_eq!(calls, results, "{label}: one result per call, in order");
            check_ids(target, &calls);
            assert!(
                !text.contains("ERRORED-TURN"),
                "{label}: errored turn dropped"
            );
            assert!(text.contains("Both read."), "{label}");
            assert!(
                text.contains("No result provided"),
                "{label}: synthetic result"
            );
            assert!(text.contains(&PNG[..20]), "{label}: images kept");
            if same && target == "anthropic-messages" {
                assert!(
                    text.contains("sig-1") && text.contains("opaque"),
                    "{label}: own thinking replayed with signatures"
                );
            }
            if !same {
                assert!(
                    !text.contains("opaque"),
                    "{label}: another model's redacted thinking is dropped"
                );
                // Another model's signatures mean nothing here; its thinking is dropped (pi 1.6).
                assert!(
                    !text.contains("sig-1"),
                    "{label}: foreign thinking signature dropped"
                );
                assert!(
                    !text.contains("thought-sig"),
                    "{label}: foreign thought signature dropped"
                );
                assert!(
                    !text.contains("I should read both files."),
                    "{label}: another model's thinking dropped"
                );
            }
        }
    }
}

/// Many servers number calls per response (`call_0`, `call_1`, …), so an id repeats across turns.
/// An aborted turn's call `call_0` and its result are dropped; a later turn's call `call_0` keeps
/// its own, real result (not "No result provided"): each result belongs to the turn it follows.
#[test]
fn a_repeated_call_id_after_a_failed_turn_keeps_its_result() {
    let api = "openai-completions";
    let mut model = Model::openai_compatible("http://127.0.0.1:1/v1", format!("model-{api}"));
    model.provider = format!("prov-{api}");
    let text = |t: &str| vec![UserContent::text(t)];
    let (ask_a, ask_b) = (
        Message::user("read a.txt"),
        Message::user("read b.txt instead"),
    );
    for stop in [StopReason::Aborted, StopReason::Error] {
        let failed = assistant(api, vec![call("call_0", "a.txt")], stop);
        let later = assistant(api, vec![call("call_0", "b.txt")], StopReason::ToolUse);
        let real = result("call_0", text("content of b.txt"), false);
        // With a user message between the turns, and without one (the agent continued).
        let with_user = vec![
            ask_a.clone(),
            failed.clone(),
            result("call_0", text("Operation aborted"), true),
            ask_b.clone(),
            later.clone(),
            real.clone(),
        ];
        assert_eq!(
            oxpi_ai::transform::transform_messages(&with_user, &model, str::to_string),
            vec![ask_a.clone(), ask_b.clone(), later.clone(), real.clone(),],
            "{stop:?}, user between"
        );
        let continued = vec![
            ask_a.clone(),
            failed,
            result("call_0", text("Operation aborted"), true),
            later.clone(),
            real.clone(),
        ];
        assert_eq!(
            oxpi_ai::transform::transform_messages(&continued, &model, str::to_string),
            vec![ask_a.clone(), later, real],
            "{stop:?}, continued"
        );
    }
}
