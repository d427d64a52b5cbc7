//! The RPC commands of the session: new_session, switch_session, fork, clone,
//! get_fork_messages, get_entries, get_tree, get_last_assistant_text, set_session_name,
//! get_session_stats; and pi's answer to every other command.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use oxpi_ai::{Message, StopReason};
use oxpi_session::{Entry, NewSessionOptions, SessionManager};
use serde_json::{json, Map, Value};

use super::commands::CommandResult;
use super::{success, Rpc};

fn entry_json(entry: &Entry) -> Value {
    Value::Object(entry.as_json().clone())
}

/// The text of a user message entry.
fn user_entry_text(entry: &Entry) -> Option<String> {
    if entry.type_name() != "message" {
        return None;
    }
    match entry.message()?.ok()? {
        Message::User(m) => Some(m.text_content()),
        _ => None,
    }
}

/// Replaces the bound session with what `change` makes of it (the agent's history follows);
/// when `change` fails the session stays as it was.
fn replace_session(
    rpc: &Rpc,
    change: impl FnOnce(&mut SessionManager) -> Result<Option<SessionManager>, String>,
) -> Result<(), String> {
    let mut session = rpc.runtime.unbind().ok_or("no session is bound")?;
    let result = change(&mut session);
    let next = match result {
        Ok(Some(other)) => other,
        Ok(None) => session,
        Err(e) => {
            rpc.runtime.bind(session).map_err(|b| b.to_string())?;
            return Err(e);
        }
    };
    rpc.runtime.bind(next).map_err(|e| e.to_string())
}

fn tree(entries: &[&Entry], labels: &dyn Fn(&str) -> Option<String>) -> Vec<Value> {
    let ids: std::collections::HashSet<&str> = entries.iter().filter_map(|e| e.id()).collect();
    let mut children: HashMap<Option<&str>, Vec<&Entry>> = HashMap::new();
    for entry in entries {
        let parent = entry.parent_id().filter(|p| ids.contains(p));
        children.entry(parent).or_default().push(entry);
    }
    fn node(
        entry: &Entry,
        children: &HashMap<Option<&str>, Vec<&Entry>>,
        labels: &dyn Fn(&str) -> Option<String>,
        depth: usize,
    ) -> Value {
        let id = entry.id();
        let kids: Vec<Value> = if depth > 10_000 {
            Vec::new()
        } else {
            children
                .get(&id)
                .map(|list| {
                    list.iter()
                        .map(|c| node(c, children, labels, depth + 1))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut out = Map::new();
        out.insert("entry".into(), entry_json(entry));
        out.insert("children".into(), Value::Array(kids));
        if let Some(label) = id.and_then(labels) {
            out.insert("label".into(), json!(label));
        }
        Value::Object(out)
    }
    children
        .get(&None)
        .map(|roots| {
            roots
                .iter()
                .map(|r| node(r, &children, labels, 0))
                .collect()
        })
        .unwrap_or_default()
}

fn stats(session: &SessionManager) -> Value {
    let (mut user, mut assistant, mut calls, mut results, mut total) = (0, 0, 0, 0, 0);
    let (mut input, mut output, mut read, mut write, mut cost) = (0u64, 0u64, 0u64, 0u64, 0f64);
    let mut add = |usage: &oxpi_ai::Usage| {
        input += usage.input;
        output += usage.output;
        read += usage.cache_read;
        write += usage.cache_write;
        cost += usage.cost.total;
    };
    for entry in session.entries() {
        if entry.type_name() != "message" {
            continue;
        }
        total += 1;
        match entry.message().and_then(Result::ok) {
            Some(Message::User(_)) => user += 1,
            Some(Message::ToolResult(_)) => results += 1,
            Some(Message::Assistant(m)) => {
                assistant += 1;
                calls += m.tool_calls().count();
                add(&m.usage);
            }
            _ => {}
        }
    }
    json!({
        "sessionFile": session.session_file(),
        "sessionId": session.session_id(),
        "userMessages": user,
        "assistantMessages": assistant,
        "toolCalls": calls,
        "toolResults": results,
        "totalMessages": total,
        "tokens": {"input": input, "output": output, "cacheRead": read, "cacheWrite": write,
                   "total": input + output + read + write},
        "cost": cost,
    })
}

/// The session commands; `Unknown command: …` for anything else.
pub(crate) async fn dispatch(
    rpc: &Arc<Rpc>,
    kind: &str,
    id: &Option<Value>,
    command: &Value,
) -> CommandResult {
    let ok = |data: Option<Value>| Ok(Some(success(id, kind, data)));
    let runtime = &rpc.runtime;
    match kind {
        "new_session" => {
            rpc.abort_and_wait().await;
            let mut options = NewSessionOptions::default();
            if let Some(parent) = command.get("parentSession").and_then(Value::as_str) {
                options = options.parent_session(parent);
            }
            replace_session(rpc, |s| {
                s.new_session(options)
                    .map(|_| None)
                    .map_err(|e| e.to_string())
            })?;
            ok(Some(json!({"cancelled": false})))
        }
        "switch_session" => {
            let path = command
                .get("sessionPath")
                .and_then(Value::as_str)
                .ok_or("the command needs a string field `sessionPath`")?
                .to_string();
            rpc.abort_and_wait().await;
            let dir = runtime.session_dir.clone();
            replace_session(rpc, |_| {
                SessionManager::open(Path::new(&path), dir.as_deref())
                    .map(Some)
                    .map_err(|e| e.to_string())
            })?;
            ok(Some(json!({"cancelled": false})))
        }
        "fork" | "clone" => {
            rpc.abort_and_wait().await;
            let (target, text) = if kind == "fork" {
                let entry_id = command
                    .get("entryId")
                    .and_then(Value::as_str)
                    .ok_or("Invalid entry ID for forking")?;
                runtime
                    .with_session(|s| {
                        let entry = s.entry(entry_id)?;
                        let text = user_entry_text(entry)?;
                        Some((entry.parent_id().map(str::to_string), Some(text)))
                    })
                    .flatten()
                    .ok_or("Invalid entry ID for forking")?
            } else {
                let leaf = runtime
                    .with_session(|s| s.leaf_id().map(str::to_string))
                    .flatten()
                    .ok_or("Cannot clone session: no current entry selected")?;
                (Some(leaf), None)
            };
            replace_session(rpc, |s| {
                let result = match &target {
                    Some(leaf) => s.create_branched_session(leaf).map(|_| ()),
                    None => {
                        let mut options = NewSessionOptions::default();
                        if let Some(file) = s.session_file() {
                            options = options.parent_session(file.to_string_lossy());
                        }
                        s.new_session(options).map(|_| ())
                    }
                };
                result.map(|()| None).map_err(|e| e.to_string())
            })?;
            if kind == "clone" {
                return ok(Some(json!({"cancelled": false})));
            }
            ok(Some(json!({"text": text, "cancelled": false})))
        }
        "get_fork_messages" => {
            let messages = runtime
                .with_session(|s| {
                    s.entries()
                        .filter_map(|e| {
                            let text = user_entry_text(e).filter(|t| !t.is_empty())?;
                            Some(json!({"entryId": e.id(), "text": text}))
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            ok(Some(json!({"messages": messages})))
        }
        "get_entries" => {
            let since = command.get("since").and_then(Value::as_str);
            let data = runtime
                .with_session(|s| {
                    let entries: Vec<&Entry> = s.entries().collect();
                    let start = match since {
                        None => 0,
                        Some(since) => entries.iter().position(|e| e.id() == Some(since))? + 1,
                    };
                    let list: Vec<Value> = entries[start..].iter().map(|e| entry_json(e)).collect();
                    Some(json!({"entries": list, "leafId": s.leaf_id()}))
                })
                .flatten();
            match data {
                Some(data) => ok(Some(data)),
                None => Err(format!("Entry not found: {}", since.unwrap_or_default())),
            }
        }
        "get_tree" => {
            let data = runtime
                .with_session(|s| {
                    let entries: Vec<&Entry> = s.entries().collect();
                    let labels = |id: &str| s.label(id).map(str::to_string);
                    json!({"tree": tree(&entries, &labels), "leafId": s.leaf_id()})
                })
                .unwrap_or(Value::Null);
            ok(Some(data))
        }
        "get_last_assistant_text" => {
            let messages = runtime.agent.messages();
            let text = messages.iter().rev().find_map(|m| match m {
                Message::Assistant(a) => {
                    let text = a.text();
                    if a.stop_reason != StopReason::Stop && text.trim().is_empty() {
                        None
                    } else {
                        Some(text.trim().to_string())
                    }
                }
                _ => None,
            });
            let text = text.filter(|t| !t.is_empty());
            ok(Some(json!({"text": text})))
        }
        "set_session_name" => {
            let name = command
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string();
            if name.is_empty() {
                return Err("Session name cannot be empty".into());
            }
            runtime
                .with_session(|s| s.append_session_info(&name).map_err(|e| e.to_string()))
                .ok_or("no session is bound")??;
            rpc.out
                .write(&json!({"type": "session_info_changed", "name": name}));
            ok(None)
        }
        "get_session_stats" => {
            let mut data = runtime.with_session(|s| stats(s)).unwrap_or(Value::Null);
            let model = runtime.agent.model();
            if model.context_window > 0 {
                let tokens: u64 = runtime
                    .with_session(|s| {
                        s.build_session_context()
                            .messages
                            .iter()
                            .map(|m| oxpi_session::estimate_tokens(m))
                            .sum()
                    })
                    .unwrap_or(0);
                data["contextUsage"] = json!({
                    "tokens": tokens,
                    "contextWindow": model.context_window,
                    "percent": tokens as f64 * 100.0 / model.context_window as f64,
                });
            }
            ok(Some(data))
        }
        _ => Err(format!("Unknown command: {kind}")),
    }
}
