//! Agent events as pi's JSON and RPC records (pi's `toJsonEvent`): `message_update` carries the
//! reply's latest `usage` and the provider event without its `partial` (a `toolcall_start` names
//! the call's `id` and `toolName`); `agent_end` says `willRetry`; oxpi-only fields and events
//! are left out. Records are written as one line each, LF-terminated.

use std::io::Write;
use std::sync::{Arc, Mutex};

use oxpi_agent_core::AgentEvent;
use oxpi_ai::Message;
use serde_json::{json, Map, Value};

/// Turns events into records; remembers the streaming reply's usage between its events.
#[derive(Debug, Default)]
pub(crate) struct JsonEvents {
    usage: Value,
}

impl JsonEvents {
    /// The record of `event`, or `None` for an event pi does not send.
    pub(crate) fn record(&mut self, event: &AgentEvent) -> Option<Value> {
        let mut value = serde_json::to_value(event).ok()?;
        let object = value.as_object_mut()?;
        match event {
            AgentEvent::RetryAttemptStart { .. } => return None,
            AgentEvent::AgentEnd { .. } => {
                object.remove("errorMessage");
                object.insert("willRetry".into(), Value::Bool(false));
            }
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                if let Message::Assistant(m) = message {
                    self.usage = serde_json::to_value(m.usage).unwrap_or(Value::Null);
                }
            }
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => {
                let mut inner = serde_json::to_value(assistant_message_event).ok()?;
                let inner_object = inner.as_object_mut()?;
                if let Some(partial) = inner_object.remove("partial") {
                    if let Some(usage) = partial.get("usage") {
                        self.usage = usage.clone();
                    }
                }
                if inner_object.get("type").and_then(Value::as_str) == Some("toolcall_start") {
                    if let Some(name) = inner_object.remove("name") {
                        inner_object.insert("toolName".into(), name);
                    }
                }
                let mut out = Map::new();
                out.insert("type".into(), json!("message_update"));
                out.insert("usage".into(), self.usage.clone());
                out.insert("assistantMessageEvent".into(), inner);
                return Some(Value::Object(out));
            }
            _ => {}
        }
        Some(value)
    }
}

/// pi's `agent_settled` record.
pub(crate) fn settled(aborted: bool) -> Value {
    json!({"type": "agent_settled", "aborted": aborted})
}

/// True when the run's last message is an aborted reply.
pub(crate) fn ended_aborted(messages: &[Message]) -> bool {
    matches!(messages.last(), Some(Message::Assistant(m))
        if m.stop_reason == oxpi_ai::StopReason::Aborted)
}

/// Stdout for records: one JSON object per line, written and flushed whole.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecordWriter {
    lock: Arc<Mutex<()>>,
}

impl RecordWriter {
    /// Writes `record` and a LF. A closed stdout is ignored (the reader left).
    pub(crate) fn write(&self, record: &Value) {
        self.write_serialized(record);
    }

    /// Writes any serializable `record` and a LF, as [`write`](Self::write).
    pub(crate) fn write_serialized<T: serde::Serialize + ?Sized>(&self, record: &T) {
        // Most records are a few hundred bytes: one allocation instead of a doubling series.
        let mut line = Vec::with_capacity(1024);
        if serde_json::to_writer(&mut line, record).is_err() {
            return;
        }
        line.push(b'\n');
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&line).and_then(|()| out.flush());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxpi_ai::AssistantMessageEvent;

    #[test]
    fn message_updates_drop_the_partial_and_carry_usage() {
        let mut events = JsonEvents::default();
        let update = AgentEvent::MessageUpdate {
            assistant_message_event: AssistantMessageEvent::ToolcallStart {
                content_index: 1,
                id: "call_1".into(),
                name: "read".into(),
            },
        };
        let record = events.record(&update).unwrap();
        assert_eq!(record["type"], "message_update");
        assert_eq!(
            record["assistantMessageEvent"],
            json!({"type": "toolcall_start", "contentIndex": 1, "id": "call_1", "toolName": "read"})
        );
        assert!(record.get("usage").is_some());
        let end = AgentEvent::AgentEnd {
            messages: vec![],
            error_message: Some("x".into()),
        };
        assert_eq!(
            events.record(&end).unwrap(),
            json!({"type": "agent_end", "messages": [], "willRetry": false})
        );
        assert_eq!(
            events.record(&AgentEvent::RetryAttemptStart { attempt: 1 }),
            None
        );
    }
}
