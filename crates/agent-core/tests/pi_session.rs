//! A whole session's JSON against pi's: `fixtures/pi/session.json` holds every event and the
//! final messages of a run recorded from pi-agent-core 0.73.1 itself (`bench/node/session.mjs`,
//! on pi-ai's faux provider). The same run on oxpi must produce the same field names, event by
//! event type and message by role; values (ids, timestamps, token counts) are not compared.
//! The few deliberate differences are listed here and in docs/differences-from-pi.md.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use oxpi_agent_core::{Agent, AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::StopReason;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

/// The `echo` tool of `bench/node/session.mjs`: one progress update, then the text back.
struct Echo;

impl AgentTool for Echo {
    type Args = EchoArgs;
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Say the text back"
    }
    async fn execute(
        &self,
        _id: &str,
        args: EchoArgs,
        _cancel: CancellationToken,
        update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        update(AgentToolResult::text("working").with_details(json!({"progress": 0.5})));
        let length = args.text.len();
        Ok(AgentToolResult::text(args.text).with_details(json!({ "length": length })))
    }
}

/// Every path of `value` with its keys, array items collapsed to `[]` (`content[].type`).
fn paths(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                out.insert(path.clone());
                paths(item, &path, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                paths(item, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// Field paths grouped by event type (or message role).
fn by_kind<'a>(
    values: impl Iterator<Item = &'a Value>,
    tag: &str,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut grouped: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for value in values {
        let kind = value[tag].as_str().unwrap().to_string();
        paths(value, "", grouped.entry(kind).or_default());
    }
    grouped
}

/// `message_update` paths pi writes and oxpi does not, on purpose (docs/differences-from-pi.md):
/// the partial message is not copied into every event (O(n) per delta, O(n^2) per reply),
/// neither beside the provider event (`message`) nor inside it (`partial`).
fn only_in_pi(path: &str) -> bool {
    path == "message"
        || path.starts_with("message.")
        || path.starts_with("assistantMessageEvent.partial")
}

/// `message_update` paths oxpi adds: without the partial message, `toolcall_start` names the
/// call's `id` and `name` itself.
const ONLY_IN_OXPI: &[&str] = &["assistantMessageEvent.id", "assistantMessageEvent.name"];

/// Fields pi 1.6 added after the 0.73.1 recording, which oxpi follows (`tests/pi16_session.rs`
/// compares with a 1.6 recording): the tool's run time, `durationMs`, on `tool_execution_end` and
/// on every tool result message (wherever one appears: `message_end`, `turn_end`, `agent_end`).
fn from_pi_16(path: &str) -> bool {
    path == "durationMs" || path.ends_with(".durationMs")
}

#[tokio::test]
async fn a_session_has_pis_field_names() {
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures_pi("session.json")).unwrap())
            .unwrap();

    let faux = faux();
    faux.push(
        FauxReply::text("Let me echo.")
            .with_raw_tool_call(
                Some("call_1".into()),
                "echo",
                json!({"text": "hi"}).to_string(),
            )
            .with_stop_reason(StopReason::ToolUse),
    );
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(
        options(&faux)
            .with_system_prompt("Be brief.")
            .with_tool(handle(Echo)),
    );
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    let events: Vec<Value> = log
        .events()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    let messages: Vec<Value> = agent
        .messages()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();

    let pi_events = by_kind(recorded["events"].as_array().unwrap().iter(), "type");
    let ours = by_kind(events.iter(), "type");
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        pi_events.keys().collect::<Vec<_>>(),
        "event types"
    );
    for (kind, pi_paths) in &pi_events {
        let expected: BTreeSet<&String> = pi_paths
            .iter()
            .filter(|p| !(kind == "message_update" && only_in_pi(p)))
            .collect();
        let got: BTreeSet<&String> = ours[kind]
            .iter()
            .filter(|p| !(kind == "message_update" && ONLY_IN_OXPI.contains(&p.as_str())))
            .filter(|p| !from_pi_16(p))
            .collect();
        assert_eq!(got, expected, "fields of {kind}");
    }

    let pi_messages = by_kind(recorded["messages"].as_array().unwrap().iter(), "role");
    let mut ours = by_kind(messages.iter(), "role");
    for paths in ours.values_mut() {
        paths.retain(|p| !from_pi_16(p));
    }
    assert_eq!(ours, pi_messages, "fields of the messages");
}

fn fixtures_pi(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/pi")
        .join(name)
}
