//! `get_state`: the session's state (pi's `RpcSessionState`) and the JSON it was last written
//! as. Clients poll it (an editor extension asks after every change it sees), and most polls
//! find nothing changed, so the data is serialized again only when it differs from the last
//! answer; each answer still reads the state afresh and compares it whole.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use oxpi_agent_core::QueueMode;
use oxpi_ai::Model;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{failure, lock, Rpc};

/// The data of `get_state`, serialized from its typed form (a `serde_json::Value` tree of it
/// cost more than the rest of the round trip).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct State {
    model: Model,
    thinking_level: &'static str,
    is_streaming: bool,
    is_compacting: bool,
    steering_mode: &'static str,
    follow_up_mode: &'static str,
    session_file: Option<PathBuf>,
    session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_name: Option<String>,
    auto_compaction_enabled: bool,
    message_count: usize,
    pending_message_count: usize,
}

/// The last state answered and its JSON.
#[derive(Debug, Default)]
pub(crate) struct StateCache(Mutex<Option<(State, Box<RawValue>)>>);

/// `get_state`'s success response (`id` as the command had it).
#[derive(serde::Serialize)]
struct StateResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Value>,
    #[serde(rename = "type")]
    kind: &'static str,
    command: &'static str,
    success: bool,
    data: &'a RawValue,
}

/// Answers a `get_state` command with `id`: the state now, written as the last answer's JSON
/// when it is the same state.
pub(crate) fn write_state(rpc: &Rpc, id: Option<&Value>) {
    let now = state(rpc);
    let mut cache = lock(&rpc.state_cache.0);
    if cache.as_ref().is_none_or(|(last, _)| *last != now) {
        match serde_json::value::to_raw_value(&now) {
            Ok(json) => *cache = Some((now, json)),
            Err(e) => {
                *cache = None;
                let id = id.cloned();
                let text = format!("the state could not be encoded: {e}");
                rpc.out.write(&failure(&id, Some("get_state"), &text));
                return;
            }
        }
    }
    if let Some((_, data)) = cache.as_ref() {
        rpc.out.write_serialized(&StateResponse {
            id,
            kind: "response",
            command: "get_state",
            success: true,
            data,
        });
    }
}

fn state(rpc: &Rpc) -> State {
    let agent = &rpc.runtime.agent;
    let (steering, follow_up) = {
        let queues = lock(&rpc.queues);
        (queues.steering.len(), queues.follow_up.len())
    };
    let (session_id, session_name) = rpc
        .runtime
        .with_session(|s| {
            (
                Some(s.session_id().to_string()),
                s.session_name().map(str::to_string),
            )
        })
        .unwrap_or_default();
    State {
        model: agent.model(),
        thinking_level: rpc.runtime.thinking_level().as_str(),
        is_streaming: rpc.is_busy(),
        is_compacting: rpc.runtime.compacting.is_compacting(),
        steering_mode: mode_name(agent.steering_mode()),
        follow_up_mode: mode_name(agent.follow_up_mode()),
        session_file: rpc.runtime.session_file(),
        session_id,
        session_name,
        auto_compaction_enabled: rpc.runtime.auto_compaction.load(Ordering::SeqCst),
        message_count: agent.messages().len(),
        pending_message_count: steering + follow_up,
    }
}

/// pi's name of a queue mode.
fn mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::All => "all",
        QueueMode::OneAtATime => "one-at-a-time",
    }
}
