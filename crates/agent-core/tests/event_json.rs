//! `AgentEvent` JSON against pi-agent-core's `AgentEvent` union (packages/agent/src/types.ts):
//! `type` tags in snake_case, fields in camelCase (`toolCallId`, `toolName`, `args`,
//! `partialResult`, `result`, `isError`, `toolResults`, `messages`).

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use oxpi_agent_core::{Agent, AgentEvent, AgentToolResult};
use oxpi_ai::faux::FauxReply;
use serde_json::{json, Value};

/// Events of a run that produces every event type.
async fn every_event() -> Vec<AgentEvent> {
    let faux = faux();
    faux.push(call("c1", "progress", json!({"ms": 5})));
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(options(&faux).with_tool(handle(ProgressTool)));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.expect("prompt");
    assert_idle_and_paired(&agent);
    log.events()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().expect("an object").keys().cloned().collect()
}

fn set(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn events_have_pi_field_names() {
    let events = every_event().await;
    let mut by_type: BTreeMap<String, Value> = BTreeMap::new();
    for e in &events {
        let v = serde_json::to_value(e).unwrap();
        // Round trip.
        let back: AgentEvent = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(&back, e);
        by_type
            .entry(v["type"].as_str().unwrap().to_string())
            .or_insert(v);
    }
    let expected: BTreeMap<&str, BTreeSet<String>> = [
        ("agent_start", set(&["type"])),
        ("agent_end", set(&["type", "messages"])),
        ("turn_start", set(&["type"])),
        ("turn_end", set(&["type", "message", "toolResults"])),
        ("message_start", set(&["type", "message"])),
        // pi also has `message` here; see `message_update_carries_the_partial_message`.
        ("message_update", set(&["type", "assistantMessageEvent"])),
        ("message_end", set(&["type", "message"])),
        (
            "tool_execution_start",
            set(&["type", "toolCallId", "toolName", "args"]),
        ),
        (
            "tool_execution_update",
            set(&["type", "toolCallId", "toolName", "args", "partialResult"]),
        ),
        (
            "tool_execution_end",
            // pi 1.6's `durationMs`, present when the tool ran.
            set(&[
                "type",
                "toolCallId",
                "toolName",
                "result",
                "isError",
                "durationMs",
            ]),
        ),
    ]
    .into_iter()
    .collect();
    let seen: BTreeSet<&str> = by_type.keys().map(String::as_str).collect();
    assert_eq!(seen, expected.keys().copied().collect::<BTreeSet<_>>());
    for (ty, fields) in &expected {
        assert_eq!(&keys(&by_type[*ty]), fields, "fields of {ty}");
    }

    let start = &by_type["tool_execution_start"];
    assert_eq!(start["toolCallId"], "c1");
    assert_eq!(start["toolName"], "progress");
    assert_eq!(start["args"], json!({"ms": 5}));
    let update = &by_type["tool_execution_update"];
    assert_eq!(
        update["partialResult"]["content"][0],
        json!({"type": "text", "text": "50%"})
    );
    let end = &by_type["tool_execution_end"];
    assert_eq!(end["isError"], false);
    assert_eq!(
        end["result"]["content"][0],
        json!({"type": "text", "text": "done"})
    );
    let turn_end = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .find(|v| v["type"] == "turn_end")
        .unwrap();
    assert_eq!(turn_end["message"]["role"], "assistant");
    let tool_result = &turn_end["toolResults"][0];
    // (pi also has `role: "toolResult"` here; see `turn_end_tool_results_carry_their_role`.)
    assert_eq!(tool_result["toolCallId"], "c1");
    assert_eq!(tool_result["toolName"], "progress");
    assert_eq!(tool_result["isError"], false);
    let message_start = &by_type["message_start"];
    assert_eq!(message_start["message"]["role"], "user");
    let update = &by_type["message_update"];
    assert_eq!(update["assistantMessageEvent"]["type"], "toolcall_start");
    assert_eq!(update["assistantMessageEvent"]["contentIndex"], 0);
    let agent_end = &by_type["agent_end"];
    assert_eq!(agent_end["messages"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn agent_end_error_message_is_an_optional_extension() {
    let faux = faux();
    faux.push(FauxReply::error("boom"));
    let agent = Agent::new(options(&faux));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.ran();
    let end = serde_json::to_value(log.events().last().unwrap()).unwrap();
    assert_eq!(keys(&end), set(&["type", "messages", "errorMessage"]));
    assert_eq!(end["errorMessage"], "boom");
    assert_idle_and_paired(&agent);
}

#[test]
fn pi_events_deserialize() {
    // As pi-agent-core emits them, including fields oxpi does not keep (`message` on
    // message_update, `partial` on the provider event, `details: {}` on error results).
    let pi_events = [
        json!({"type": "agent_start"}),
        json!({"type": "turn_start"}),
        json!({"type": "message_start", "message": {"role": "user", "content": "hi", "timestamp": 1}}),
        json!({
            "type": "message_update",
            "message": {"role": "assistant", "content": [], "api": "x", "provider": "y", "model": "z",
                        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                        "stopReason": "stop", "timestamp": 1},
            "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": "h", "partial": {}}
        }),
        json!({"type": "tool_execution_start", "toolCallId": "c1", "toolName": "read", "args": {"path": "a"}}),
        json!({"type": "tool_execution_update", "toolCallId": "c1", "toolName": "read", "args": {"path": "a"},
               "partialResult": {"content": [{"type": "text", "text": "50%"}], "details": {}}}),
        json!({"type": "tool_execution_end", "toolCallId": "c1", "toolName": "read",
               "result": {"content": [{"type": "text", "text": "Tool read not found"}], "details": {}}, "isError": true}),
        json!({"type": "turn_end", "message": {"role": "user", "content": "x", "timestamp": 1},
               "toolResults": [{"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                                "content": [{"type": "text", "text": "ok"}], "details": {}, "isError": false,
                                "timestamp": 1}]}),
        json!({"type": "agent_end", "messages": []}),
    ];
    for v in pi_events {
        let e: AgentEvent = serde_json::from_value(v.clone())
            .unwrap_or_else(|err| panic!("{v} does not parse: {err}"));
        assert_eq!(json_type(&e), v["type"].as_str().unwrap());
    }
}

/// pi's `message_update` is `{ type, message, assistantMessageEvent }`: the partial assistant
/// message rides along on every update. oxpi leaves it out on purpose (O(delta) events; see
/// `Agent::streaming_message`): the event carries only the provider event.
#[tokio::test]
async fn message_update_carries_only_the_provider_event() {
    let events = every_event().await;
    let update = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .find(|v| v["type"] == "message_update")
        .unwrap();
    assert_eq!(keys(&update), set(&["type", "assistantMessageEvent"]));
}

/// pi's `AgentToolResult` always has `details` (error results use `details: {}`); oxpi omits it
/// when `None`.
#[test]
fn tool_result_json_always_has_details() {
    let v = serde_json::to_value(AgentToolResult::text("x")).unwrap();
    assert_eq!(keys(&v), set(&["content", "details"]));
}

/// pi's `turn_end.toolResults` are `ToolResultMessage`s, which carry `role: "toolResult"`. In
/// oxpi the role tag lives on `Message`, and `TurnEnd::tool_results` is a
/// `Vec<ToolResultMessage>`, so the serialized results have no `role`. Consumers that switch on
/// `role` (or feed these back as messages) break.
#[tokio::test]
async fn turn_end_tool_results_carry_their_role() {
    let events = every_event().await;
    let turn_end = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .find(|v| v["type"] == "turn_end")
        .unwrap();
    assert_eq!(
        turn_end["toolResults"][0]["role"], "toolResult",
        "{turn_end:#}"
    );
}
