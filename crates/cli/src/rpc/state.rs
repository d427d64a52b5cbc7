//! `get_state`: the session's state (pi's `RpcSessionState`) and the JSON it was last written
//! as. Clients poll it (an editor extension asks after every change it sees), and most polls
//! find nothing changed, so the data is serialized again only when it differs from the last
//! answer; each answer still reads the state afresh and compares it whole. A poll's line is
//! recognised from its `type` and `id` alone ([`get_state_id`]), without building a JSON tree.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use oxpi_agent_core::QueueMode;
use oxpi_ai::Model;
use serde_json::value::RawValue;

use super::{failure, lock, Rpc};

/// The data of `get_state` but the model, serialized from its typed form (a
/// `serde_json::Value` tree of it cost more than the rest of the round trip).
#[derive(Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct State {
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

/// `get_state`'s data: the model first, as pi writes it.
#[derive(serde::Serialize)]
struct StateData<'a> {
    model: &'a Model,
    #[serde(flatten)]
    rest: &'a State,
}

/// The last model and state answered, and their JSON.
#[derive(Debug, Default)]
pub(crate) struct StateCache(Mutex<Option<Answered>>);

#[derive(Debug)]
struct Answered {
    model: Model,
    state: State,
    json: Box<RawValue>,
}

/// `get_state`'s success response (`id` as the command had it).
#[derive(serde::Serialize)]
struct StateResponse<'a, I: serde::Serialize + ?Sized> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a I>,
    #[serde(rename = "type")]
    kind: &'static str,
    command: &'static str,
    success: bool,
    data: &'a RawValue,
}

/// The fields of a command line that say whether it is `get_state`; the others are checked
/// for well-formed JSON and skipped.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
}

/// A field that is present, `null` included (`Option`'s own rule would read `null` as absent,
/// and pi answers an `"id": null` with one).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

/// When `line` is a `get_state` command (one JSON object, `type` `"get_state"`): `Some` of its
/// `id` (`None` inside when it has none). Every other line, a malformed one included, is
/// `None` and goes the general way (which answers a `get_state` it can read there too, such as
/// one with a key given twice).
pub(crate) fn get_state_id(line: &[u8]) -> Option<Option<&RawValue>> {
    // A derived struct would also read an array, by position.
    if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let head: Head = serde_json::from_slice(line).ok()?;
    (head.kind.as_deref() == Some("get_state")).then_some(head.id)
}

/// Answers a `get_state` command with `id`: the state now, written as the last answer's JSON
/// when it is the same state.
pub(crate) fn write_state<I: serde::Serialize + ?Sized>(rpc: &Rpc, id: Option<&I>) {
    let now = state(rpc);
    let agent = &rpc.runtime.agent;
    let mut cache = lock(&rpc.state_cache.0);
    let same = cache
        .as_ref()
        .is_some_and(|last| last.state == now && agent.with_model(|m| *m == last.model));
    if !same {
        let model = agent.model();
        let data = StateData {
            model: &model,
            rest: &now,
        };
        match serde_json::value::to_raw_value(&data) {
            Ok(json) => {
                *cache = Some(Answered {
                    model,
                    state: now,
                    json,
                })
            }
            Err(e) => {
                *cache = None;
                let id = id.and_then(|id| serde_json::to_value(id).ok());
                let text = format!("the state could not be encoded: {e}");
                rpc.out.write(&failure(&id, Some("get_state"), &text));
                return;
            }
        }
    }
    if let Some(last) = cache.as_ref() {
        rpc.out.write_serialized(&StateResponse {
            id,
            kind: "response",
            command: "get_state",
            success: true,
            data: &last.json,
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

#[cfg(test)]
mod tests {
    use super::get_state_id;

    fn id(line: &str) -> Option<Option<String>> {
        get_state_id(line.as_bytes()).map(|id| id.map(|raw| raw.get().to_string()))
    }

    #[test]
    fn a_get_state_line_is_recognised_with_its_id_as_written() {
        assert_eq!(
            id(r#"{"id":"b","type":"get_state"}"#),
            Some(Some(r#""b""#.into()))
        );
        assert_eq!(id(r#"{"type":"get_state","id":7}"#), Some(Some("7".into())));
        assert_eq!(
            id(r#"{"type":"get_state","id":null}"#),
            Some(Some("null".into()))
        );
        assert_eq!(
            id(r#"{"type":"get_state","id":{"n":[1,2]},"extra":true}"#),
            Some(Some(r#"{"n":[1,2]}"#.into()))
        );
        assert_eq!(id(r#" {"type":"get_\u0073tate"} "#), Some(None));
    }

    #[test]
    fn every_other_line_goes_the_general_way() {
        for line in [
            r#"{"type":"get_messages","id":"x"}"#,
            r#"{"id":"x"}"#,
            r#"{"type":"get_state","id":"x""#,
            r#"{"type":"get_state"} trailing"#,
            r#"{"type":"get_state","type":"abort"}"#,
            r#"{"type":3}"#,
            r#"["get_state"]"#,
            r#"{"type":"get_state","extra":tru}"#,
        ] {
            assert_eq!(id(line), None, "{line}");
        }
    }
}
