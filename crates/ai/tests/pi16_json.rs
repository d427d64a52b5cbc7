//! pi 1.6's message JSON, as pi itself writes it, read by oxpi and written back with nothing lost:
//! system messages, every optional field of assistant messages, tool results, usage and cost,
//! the `pending` and `deferred` stop reasons; and oxpi's replay of system messages equal to pi's.
//!
//! `fixtures/pi16/messages.json` was written by `bench/node/pi16/messages.mjs` on pi-ai and
//! pi-agent-core 1.6.0. The `*_live` tests run that script again when Node and npm are installed
//! (installing pi 1.6 into a cache on first use) and check pi's fresh output the same way; without
//! Node they print a line saying they skipped.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use oxpi_ai::types::transcript::{
    collapse_system_messages, current_system_message, current_system_prompt, current_tools,
};
use oxpi_ai::{
    AssistantContent, AssistantMessage, AssistantMessageDiagnostic, AssistantMessageEvent, Context,
    DeferredHandle, DiagnosticError, Message, NestedCallStatus, NestedToolCallRecord,
    NestedToolCalls, Sections, StopReason, SystemContentBlock, SystemMessage, SystemMessageContent,
    TextContent, ThinkingContent, ThinkingLevel, Tool, ToolCall, ToolReference, ToolResultMessage,
    Usage, UsageCost, UserContent, UserMessage, UserMessageContent,
};
use serde_json::{json, Map, Value};

/// Every number as an f64: JavaScript writes a zero cost as `0`, serde an `f64` zero as `0.0`.
fn numbers_as_f64(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().expect("a JSON number is an f64")),
        Value::Array(items) => Value::Array(items.iter().map(numbers_as_f64).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Parses `value` as a `Message`, writes it back and asserts nothing changed; returns it.
fn round_trip(what: &str, value: &Value) -> Message {
    let message: Message = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{what}: pi's JSON does not parse: {e}\n{value:#}"));
    let back = serde_json::to_value(&message).expect("a message serializes");
    assert_eq!(
        numbers_as_f64(&back),
        numbers_as_f64(value),
        "{what}: the round trip changed pi's JSON"
    );
    message
}

fn messages(what: &str, value: &Value) -> Vec<Message> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("{what} is an array"))
        .iter()
        .enumerate()
        .map(|(i, m)| round_trip(&format!("{what}[{i}]"), m))
        .collect()
}

fn fixture_text() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/pi16/messages.json"
    );
    std::fs::read_to_string(path).expect("fixtures/pi16/messages.json is committed")
}

fn fixture() -> Value {
    serde_json::from_str(&fixture_text()).expect("the fixture is JSON")
}

/// The recorded transcript, read from the text: a `serde_json::Value` sorts object keys, and the
/// order of a system message's sections is part of the prompt.
fn transcript_of(text: &str) -> Vec<Message> {
    #[derive(serde::Deserialize)]
    struct Recording {
        transcript: Vec<Message>,
    }
    serde_json::from_str::<Recording>(text)
        .expect("the recording's transcript parses")
        .transcript
}

/// pi's fresh output of `bench/node/pi16/messages.mjs`, or `None` (with a skip line) without Node.
fn live(test: &str) -> Option<String> {
    match oxpi_testkit::pi::run_pi16_script("bench/node/pi16/messages.mjs") {
        Ok(Some(text)) => Some(text),
        Ok(None) => {
            eprintln!(
                "{test}: skipped: node or npm not found, so pi 1.6 cannot run here \
                 (the committed recording fixtures/pi16/messages.json is checked by the other tests)"
            );
            None
        }
        Err(e) => panic!("{test}: running pi 1.6 failed: {e}"),
    }
}

/// Every message of a recording round-trips; returns how many were checked.
fn check_round_trips(pi: &Value) -> usize {
    let mut count = 0;
    for key in ["transcript", "toolRun"] {
        count += messages(key, &pi[key]).len();
    }
    count += messages("replay.collapsed", &pi["replay"]["collapsed"]).len();
    count += messages(
        "replay.normalizeContext",
        &pi["replay"]["normalizeContext"]["messages"],
    )
    .len();
    round_trip(
        "replay.currentSystemMessage",
        &pi["replay"]["currentSystemMessage"],
    );
    round_trip("fullAssistantInAgent", &pi["fullAssistantInAgent"]);
    round_trip("nestedCalls", &pi["nestedCalls"]);
    count += 3;
    for (i, event) in pi["deferred"]
        .as_array()
        .expect("deferred events")
        .iter()
        .enumerate()
    {
        let message = event
            .get("partial")
            .or(event.get("message"))
            .expect("a message");
        round_trip(&format!("deferred[{i}]"), message);
        count += 1;
    }
    for (i, event) in pi["fullAssistantEvents"]
        .as_array()
        .expect("events")
        .iter()
        .enumerate()
    {
        let parsed: AssistantMessageEvent = serde_json::from_value(event.clone())
            .unwrap_or_else(|e| panic!("fullAssistantEvents[{i}] does not parse: {e}"));
        for key in ["partial", "message"] {
            if let Some(message) = event.get(key) {
                round_trip(&format!("fullAssistantEvents[{i}].{key}"), message);
                count += 1;
            }
        }
        if let AssistantMessageEvent::Done { reason, .. } = parsed {
            assert_eq!(reason, StopReason::ToolUse);
        }
    }
    count
}

/// oxpi's replay of the recorded transcript equals what pi's helpers made of it.
fn check_replay(text: &str) {
    let pi: Value = serde_json::from_str(text).expect("the recording is JSON");
    messages("transcript", &pi["transcript"]);
    let transcript = transcript_of(text);
    let replay = &pi["replay"];
    let expected: Message = serde_json::from_value(replay["currentSystemMessage"].clone()).unwrap();
    assert_eq!(
        current_system_message(&transcript).map(Message::System),
        Some(expected)
    );
    assert_eq!(
        current_system_prompt(&transcript),
        replay["currentSystemPrompt"].as_str().unwrap()
    );
    let tools: Vec<Tool> = serde_json::from_value(replay["currentTools"].clone()).unwrap();
    assert_eq!(current_tools(&transcript), tools);
    let collapsed: Vec<Message> = serde_json::from_value(replay["collapsed"].clone()).unwrap();
    assert_eq!(collapse_system_messages(&transcript), collapsed);
    let Some(Message::System(sectioned)) = transcript
        .iter()
        .find(|m| matches!(m, Message::System(s) if s.sections.is_some()))
    else {
        panic!("the transcript has a system message with sections");
    };
    assert_eq!(
        sectioned.render_update(),
        replay["renderSystemMessageUpdate"].as_str().unwrap()
    );
    let old_style = Context::new("Old style")
        .with_tool(Tool::new("t", "d", json!({"type": "object"})))
        .with_message(UserMessage {
            content: UserMessageContent::Text("hi".into()),
            timestamp: 1,
        });
    let normalized: Vec<Message> =
        serde_json::from_value(replay["normalizeContext"]["messages"].clone()).unwrap();
    assert_eq!(old_style.normalized_messages(), normalized);
    let empty: Vec<Message> =
        serde_json::from_value(replay["normalizeContextEmpty"]["messages"].clone()).unwrap();
    assert_eq!(Context::new("").normalized_messages(), empty);
    assert!(empty.is_empty());
}

#[test]
fn every_message_pi16_wrote_round_trips() {
    let checked = check_round_trips(&fixture());
    assert!(checked > 40, "only {checked} messages checked");
}

#[test]
fn every_message_pi16_writes_now_round_trips_live() {
    if let Some(text) = live("every_message_pi16_writes_now_round_trips_live") {
        let pi: Value = serde_json::from_str(&text).expect("the script prints JSON");
        assert_eq!(pi["pi"], "1.6.0");
        check_round_trips(&pi);
    }
}

#[test]
fn system_message_replay_equals_pis() {
    check_replay(&fixture_text());
}

#[test]
fn system_message_replay_equals_pis_live() {
    if let Some(text) = live("system_message_replay_equals_pis_live") {
        check_replay(&text);
    }
}

#[test]
fn the_three_kinds_of_system_message_parse_to_whole_values() {
    let transcript = transcript_of(&fixture_text());
    let roles: Vec<&str> = transcript.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "system",
            "user",
            "assistant",
            "system",
            "user",
            "assistant"
        ]
    );
    let tool = |name: &str| {
        Tool::new(
            name,
            format!("The {name} tool"),
            json!({"type": "object", "properties": {}, "required": []}),
        )
    };
    let mut read = tool("read");
    read.constrained_sampling = Some(json!({"type": "json_schema", "strict": "prefer"}));
    assert_eq!(
        transcript[0],
        Message::System(SystemMessage {
            content: SystemMessageContent::Text("Base prompt.".into()),
            sections: None,
            tools_added: Some(vec![read, tool("bash")]),
            tools_removed: None,
            timestamp: 0,
        })
    );
    let Message::System(change) = &transcript[3] else {
        panic!("a tool change at 3");
    };
    assert!(change.timestamp > 0, "pi stamps the change it inserts");
    assert_eq!(
        *change,
        SystemMessage {
            content: SystemMessageContent::Text(String::new()),
            sections: None,
            tools_added: Some(vec![tool("write")]),
            tools_removed: Some(vec![ToolReference {
                name: "bash".into()
            }]),
            timestamp: change.timestamp,
        }
    );
    assert_eq!(
        transcript[6],
        Message::System(SystemMessage {
            content: SystemMessageContent::Blocks(vec![SystemContentBlock::Text(TextContent {
                text: "Extra instruction.".into(),
                text_signature: None,
            })]),
            sections: Some(Sections(vec![
                ("skills".into(), Some("<skills>a</skills>".into())),
                ("obsolete".into(), None),
            ])),
            tools_added: None,
            tools_removed: None,
            timestamp: 1,
        })
    );
}

fn usage(input: u64, output: u64, total: (f64, f64, f64)) -> Usage {
    Usage {
        input,
        output,
        cache_read: 0,
        cache_write: 0,
        cache_write_1h: None,
        reasoning: None,
        total_tokens: input + output,
        cost: UsageCost {
            input: total.0,
            output: total.1,
            cache_read: 0.0,
            cache_write: 0.0,
            total: total.2,
            total_from_provider: None,
        },
    }
}

#[test]
fn an_assistant_message_with_every_field_parses_to_a_whole_value() {
    let pi = fixture();
    let Message::Assistant(parsed) =
        round_trip("fullAssistantInAgent", &pi["fullAssistantInAgent"])
    else {
        panic!("an assistant message");
    };
    assert!(parsed.timestamp > 0);
    assert!(
        parsed.duration_ms.is_some(),
        "the agent's stream times the reply"
    );
    let arguments: Map<String, Value> = json!({"q": "x"}).as_object().unwrap().clone();
    let mut namespaced = ToolCall::new("call_9|fc_9", "lookup", arguments);
    namespaced.thought_signature = Some("sig-thought".into());
    namespaced.namespace = Some("mcp__search".into());
    let mut broken = ToolCall::new("call_10", "lookup", Map::new());
    broken.arguments_error =
        Some("Unexpected token } in JSON at position 5\n\nReceived arguments:\n{\"q\":}".into());
    let mut expected = AssistantMessage::empty("full-api", "full", "full-1");
    expected.content = vec![
        AssistantContent::Thinking(ThinkingContent {
            thinking: "Let me think.".into(),
            thinking_signature: Some("sig-thinking".into()),
            redacted: None,
        }),
        AssistantContent::Thinking(ThinkingContent {
            thinking: String::new(),
            thinking_signature: Some("opaque-redacted-payload".into()),
            redacted: Some(true),
        }),
        AssistantContent::Text(TextContent {
            text: "Here you go.".into(),
            text_signature: Some(r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#.into()),
        }),
        AssistantContent::ToolCall(namespaced),
        AssistantContent::ToolCall(broken),
    ];
    expected.response_model = Some("full-1-2026-11-01".into());
    expected.response_id = Some("resp_123".into());
    expected.provider_thinking_level = Some("high".into());
    expected.thinking_level = Some(ThinkingLevel::High);
    expected.diagnostics = Some(vec![
        AssistantMessageDiagnostic {
            kind: "openai_input_transformations".into(),
            timestamp: 5,
            error: None,
            details: json!({"transformations": [{"type": "reasoning", "id": "rs_1", "action": "removed", "reason": "orphaned"}]})
                .as_object()
                .cloned(),
        },
        AssistantMessageDiagnostic {
            kind: "provider_transport_failure".into(),
            timestamp: 6,
            error: Some(DiagnosticError {
                name: Some("Error".into()),
                message: "socket hang up".into(),
                stack: None,
                code: Some(json!("ECONNRESET")),
            }),
            details: None,
        },
    ]);
    expected.usage = Usage {
        input: 100,
        output: 50,
        cache_read: 20,
        cache_write: 30,
        cache_write_1h: Some(10),
        reasoning: Some(12),
        total_tokens: 200,
        cost: UsageCost {
            input: 0.0003,
            output: 0.00075,
            cache_read: 0.000006,
            cache_write: 0.0001,
            total: 0.0012,
            total_from_provider: Some(true),
        },
    };
    expected.stop_reason = StopReason::ToolUse;
    expected.raw_stop_reason = Some("tool_use".into());
    expected.end_turn = Some(false);
    expected.timestamp = parsed.timestamp;
    expected.duration_ms = parsed.duration_ms;
    assert_eq!(parsed, expected);
}

#[test]
fn tool_results_keep_usage_nested_calls_and_duration() {
    let pi = fixture();
    let run = messages("toolRun", &pi["toolRun"]);
    let results: Vec<&ToolResultMessage> = run
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3);
    let asked = results[0];
    assert!(asked.duration_ms.is_some(), "the tool ran, pi timed it");
    assert_eq!(
        *asked,
        ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "ask".into(),
            content: vec![UserContent::text("answer")],
            details: Some(json!({"asked": 1})),
            usage: Some(usage(3, 4, (0.25, 0.5, 0.75))),
            nested_calls: None,
            is_error: false,
            timestamp: asked.timestamp,
            duration_ms: asked.duration_ms,
        }
    );
    assert_eq!(results[1].duration_ms, None, "an unknown tool does not run");
    assert!(results[2].duration_ms.is_some(), "a tool that threw ran");

    let Message::ToolResult(nested) = round_trip("nestedCalls", &pi["nestedCalls"]) else {
        panic!("a tool result");
    };
    assert_eq!(nested.duration_ms, Some(12));
    assert_eq!(
        nested.nested_calls,
        Some(NestedToolCalls {
            calls: vec![
                NestedToolCallRecord {
                    id: "n1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}).as_object().cloned(),
                    arguments_bytes: None,
                    status: NestedCallStatus::Ok,
                    duration_ms: Some(3),
                    error: None,
                },
                NestedToolCallRecord {
                    id: "n2".into(),
                    name: "write".into(),
                    arguments: None,
                    arguments_bytes: Some(90_000),
                    status: NestedCallStatus::Error,
                    duration_ms: Some(1),
                    error: Some("denied".into()),
                },
                NestedToolCallRecord {
                    id: "n3".into(),
                    name: "bash".into(),
                    arguments: json!({"cmd": "sleep 9"}).as_object().cloned(),
                    arguments_bytes: None,
                    status: NestedCallStatus::Unfinished,
                    duration_ms: None,
                    error: None,
                },
            ],
            complete: false,
        })
    );
}

#[test]
fn pending_partials_and_deferred_replies_parse() {
    let pi = fixture();
    let events = pi["deferred"].as_array().unwrap();
    let start: AssistantMessageEvent = serde_json::from_value(events[0].clone()).unwrap();
    let done: AssistantMessageEvent = serde_json::from_value(events[1].clone()).unwrap();
    let AssistantMessageEvent::Start { partial } = start else {
        panic!("start first");
    };
    assert_eq!(partial.stop_reason, StopReason::Pending);
    let AssistantMessageEvent::Done { reason, message } = done else {
        panic!("then done");
    };
    assert_eq!(reason, StopReason::Deferred);
    assert_eq!(message.stop_reason, StopReason::Deferred);
    let handle = *message
        .deferred
        .clone()
        .expect("a deferred reply has a handle");
    assert_eq!(
        handle,
        DeferredHandle {
            provider: "faux".into(),
            model_id: "faux-1".into(),
            api: "faux".into(),
            id: handle.id.clone(),
            expires_at: None,
            poll_after_ms: None,
            data: None,
        }
    );
    assert!(handle.id.starts_with("deferred:"), "{}", handle.id);
    assert_eq!(
        serde_json::to_value(StopReason::Pending).unwrap(),
        json!("pending")
    );
}

#[test]
fn oxpis_failure_kind_survives_beside_pi16s_fields() {
    let pi = fixture();
    let mut value = pi["fullAssistantInAgent"].clone();
    value["stopReason"] = json!("error");
    value["errorMessage"] = json!("429 Too Many Requests");
    value["failureKind"] = json!({"kind": "http", "status": 429, "retryable": true});
    let message = round_trip("assistant with failureKind", &value);
    let Message::Assistant(message) = message else {
        panic!("an assistant message");
    };
    assert!(message.failure_kind.is_some());
    assert_eq!(message.raw_stop_reason.as_deref(), Some("tool_use"));
}
