//! The RPC commands of prompting, state, model, thinking and queues; the session commands are
//! in `session_cmds.rs`. Each returns the response record (or `None` when it wrote it itself).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use oxpi_agent_core::QueueMode;
use oxpi_ai::{Message, Model, ThinkingLevel, UserContent, UserMessage, UserMessageContent};
use serde_json::{json, Value};

use super::{failure, session_cmds, success, Rpc};

/// Why a command was refused; the text is the response's `error`.
pub(crate) type CommandResult = Result<Option<Value>, String>;

fn str_field<'a>(command: &'a Value, field: &str) -> Result<&'a str, String> {
    command
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the command needs a string field `{field}`"))
}

/// The user message of a `prompt`/`steer`/`follow_up`: its text and optional images.
fn user_message(rpc: &Rpc, command: &Value) -> Result<Message, String> {
    let text = rpc.runtime.expand_prompt(str_field(command, "message")?);
    let mut blocks = vec![UserContent::text(text)];
    if let Some(images) = command.get("images").and_then(Value::as_array) {
        for image in images {
            let block: UserContent = serde_json::from_value(image.clone())
                .map_err(|e| format!("an image is not an ImageContent: {e}"))?;
            blocks.push(block);
        }
    }
    Ok(Message::User(UserMessage {
        content: UserMessageContent::Blocks(blocks),
        timestamp: oxpi_ai::now_millis(),
    }))
}

fn queue_mode(command: &Value) -> Result<QueueMode, String> {
    match str_field(command, "mode")? {
        "all" => Ok(QueueMode::All),
        "one-at-a-time" => Ok(QueueMode::OneAtATime),
        other => Err(format!(
            "Invalid mode: {other} (use \"all\" or \"one-at-a-time\")"
        )),
    }
}

/// The models a client may switch to: the current one, then every model with a key
/// (`models.json`'s included, as pi's `getAvailable`).
pub(crate) fn available_models(rpc: &Rpc) -> Vec<Model> {
    crate::model_scope::current_first(&rpc.runtime, None)
}

fn set_model(rpc: &Rpc, model: Model) -> Value {
    rpc.runtime.agent.set_model(model.clone());
    let _ = rpc
        .runtime
        .with_session(|s| s.append_model_change(&model.provider, &model.id));
    // The thinking level is clamped to what the new model takes.
    rpc.runtime.set_thinking_level(rpc.runtime.thinking_level());
    serde_json::to_value(&model).unwrap_or(Value::Null)
}

/// The conversation as pi's agent holds it: the bound session's context (a compaction's
/// summary stays a `compactionSummary` message, as in pi), else the agent's messages.
fn messages(rpc: &Rpc) -> Value {
    rpc.runtime
        .with_session(|s| {
            let messages = s.build_session_context().messages;
            Value::Array(messages.into_iter().map(|m| m.into_value()).collect())
        })
        .unwrap_or_else(|| json!(*rpc.runtime.agent.messages()))
}

/// Handles one command; the response, or `None` when it was written already.
pub(crate) async fn handle(rpc: &Arc<Rpc>, command: &Value) -> Option<Value> {
    let id = command.get("id").cloned();
    let Some(kind) = command.get("type").and_then(Value::as_str) else {
        return Some(failure(&id, None, "Unknown command: undefined"));
    };
    let result = dispatch(rpc, kind, &id, command).await;
    match result {
        Ok(Some(response)) => Some(response),
        Ok(None) => None,
        Err(error) => Some(failure(&id, Some(kind), &error)),
    }
}

async fn dispatch(
    rpc: &Arc<Rpc>,
    kind: &str,
    id: &Option<Value>,
    command: &Value,
) -> CommandResult {
    let ok = |data: Option<Value>| Ok(Some(success(id, kind, data)));
    let agent = &rpc.runtime.agent;
    match kind {
        "prompt" => {
            let message = user_message(rpc, command)?;
            if rpc.is_busy() {
                let steer = match command.get("streamingBehavior").and_then(Value::as_str) {
                    Some("steer") => true,
                    Some("followUp") => false,
                    _ => return Err("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.".into()),
                };
                rpc.enqueue(message, steer);
                return ok(Some(json!({"disposition": "queued"})));
            }
            rpc.wait_for_compaction().await;
            rpc.out
                .write(&success(id, kind, Some(json!({"disposition": "started"}))));
            rpc.start_run(message);
            Ok(None)
        }
        "steer" | "follow_up" => {
            let message = user_message(rpc, command)?;
            rpc.enqueue(message, kind == "steer");
            ok(Some(json!({"disposition": "queued"})))
        }
        "abort" => {
            rpc.abort_and_wait().await;
            ok(None)
        }
        "clear_queue" => {
            let (steering, follow_up) = rpc.clear_queues();
            rpc.queue_update();
            ok(Some(json!({"steering": steering, "followUp": follow_up})))
        }
        "get_state" => {
            super::state::write_state(rpc, id.as_ref());
            Ok(None)
        }
        "get_messages" => ok(Some(json!({"messages": messages(rpc)}))),
        "set_model" => {
            let provider = str_field(command, "provider")?;
            let model_id = str_field(command, "modelId")?;
            let model = available_models(rpc)
                .into_iter()
                .find(|m| m.provider == provider && m.id == model_id)
                .ok_or_else(|| format!("Model not found: {provider}/{model_id}"))?;
            ok(Some(set_model(rpc, model)))
        }
        "cycle_model" => {
            let Some((model, level, scoped)) =
                crate::model_scope::cycle_runtime(&rpc.runtime, true, None)
            else {
                return ok(Some(Value::Null));
            };
            ok(Some(json!({
                "model": model,
                "thinkingLevel": level.as_str(),
                "isScoped": scoped,
            })))
        }
        "get_available_models" => ok(Some(json!({"models": available_models(rpc)}))),
        "set_thinking_level" => {
            let name = str_field(command, "level")?;
            let level = ThinkingLevel::parse(name)
                .ok_or_else(|| format!("Invalid thinking level: {name}"))?;
            let set = rpc.runtime.set_thinking_level(level);
            rpc.out
                .write(&json!({"type": "thinking_level_changed", "level": set.as_str()}));
            ok(None)
        }
        "cycle_thinking_level" => {
            let levels = oxpi_ai::supported_thinking_levels(&agent.model());
            if levels.len() < 2 {
                return ok(Some(Value::Null));
            }
            let now = rpc.runtime.thinking_level();
            let next = levels
                .iter()
                .position(|l| *l == now)
                .map_or(levels[0], |i| levels[(i + 1) % levels.len()]);
            let set = rpc.runtime.set_thinking_level(next);
            ok(Some(json!({"level": set.as_str()})))
        }
        "get_available_thinking_levels" => {
            let levels: Vec<&str> = oxpi_ai::supported_thinking_levels(&agent.model())
                .into_iter()
                .map(ThinkingLevel::as_str)
                .collect();
            ok(Some(json!({"levels": levels})))
        }
        "set_steering_mode" => {
            agent.set_steering_mode(queue_mode(command)?);
            ok(None)
        }
        "set_follow_up_mode" => {
            agent.set_follow_up_mode(queue_mode(command)?);
            ok(None)
        }
        "compact" => {
            // As pi: the running prompt (and its recovery) is aborted first, then compacted;
            // the response comes when the compaction ends, other commands answered meanwhile.
            let custom = command.get("customInstructions").and_then(Value::as_str);
            rpc.abort_and_wait().await;
            rpc.start_compaction(id.clone(), custom.map(str::to_string));
            Ok(None)
        }
        "set_auto_compaction" | "set_auto_retry" => {
            let enabled = command
                .get("enabled")
                .and_then(Value::as_bool)
                .ok_or("the command needs a boolean field `enabled`")?;
            let flag = if kind == "set_auto_retry" {
                &rpc.auto_retry
            } else {
                &*rpc.runtime.auto_compaction
            };
            flag.store(enabled, Ordering::SeqCst);
            if kind == "set_auto_retry" {
                let policy = enabled.then_some(rpc.runtime.retry);
                rpc.runtime.agent.set_retry_policy(policy);
            }
            ok(None)
        }
        "abort_retry" => {
            rpc.runtime.agent.abort_retry();
            ok(None)
        }
        "bash" => {
            rpc.start_bash(id.clone(), command)?;
            Ok(None)
        }
        "abort_bash" => {
            rpc.abort_bash();
            ok(None)
        }
        "get_commands" => ok(Some(json!({ "commands": rpc.runtime.commands() }))),
        _ => session_cmds::dispatch(rpc, kind, id, command).await,
    }
}
