//! Cross-provider handoff: prepares a conversation recorded on any provider for a request to
//! `target`, so a session started on one API continues on any other.
//!
//! - Thinking from another model is dropped (pi 1.6: replayed as text, the new model took it for
//!   part of its visible reply); thinking and signatures from the same model are kept for replay
//!   (an empty block only when it is signed or redacted: encrypted reasoning).
//! - Tool-call ids are rewritten by the target's rule, consistently in calls and results.
//! - Assistant turns that failed or were aborted are dropped, with the tool results that follow
//!   them (matched by position: a later turn that reuses a call id keeps its own result).
//! - A tool call without a result gets a synthetic error result right after its turn.
//! - A system message that comes while calls wait for their results is moved after them (pi 1.6).

use std::collections::{HashMap, HashSet};

use crate::types::content::{AssistantContent, TextContent, UserContent};
use crate::types::message::{AssistantMessage, Message, StopReason, ToolResultMessage};
use crate::types::model::Model;

/// True when `message` was produced by `model` itself (same provider, API and id), so its
/// thinking signatures and provider-specific fields can be replayed.
pub fn is_same_model(message: &AssistantMessage, model: &Model) -> bool {
    message.provider == model.provider && message.api == model.api && message.model == model.id
}

/// Text of the synthetic result given to a tool call that has none.
pub const MISSING_RESULT: &str = "No result provided";

/// Returns the messages ready for `target`. `normalize_id` maps a tool-call id to one the target
/// accepts (it sees each distinct id once; the same output is used for the call and its result).
pub fn transform_messages(
    messages: &[Message],
    target: &Model,
    mut normalize_id: impl FnMut(&str) -> String,
) -> Vec<Message> {
    let messages = &*crate::image_fallback::downgrade_unsupported_images(messages, target);
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut map_id = |id: &str| -> String {
        if let Some(mapped) = ids.get(id) {
            return mapped.clone();
        }
        let mapped = normalize_id(id);
        ids.insert(id.to_string(), mapped.clone());
        mapped
    };
    // Calls of the failed assistant turn just dropped, whose results follow it and go too. Only
    // that turn's: ids repeat across turns (many servers number calls per response), so a later
    // turn's call with the same id keeps its own result.
    let mut dropped_calls: HashSet<String> = HashSet::new();
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    // Calls of the latest kept assistant turn that still wait for a result: (id, name).
    let mut open: Vec<(String, String)> = Vec::new();
    // System messages that came while calls of the latest turn waited for their results.
    let mut held: Vec<Message> = Vec::new();

    for message in messages {
        match message {
            Message::System(_) if open.is_empty() => out.push(message.clone()),
            Message::System(_) => held.push(message.clone()),
            Message::Assistant(assistant) => {
                close_open(&mut out, &mut open);
                out.append(&mut held);
                dropped_calls.clear();
                if matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) {
                    dropped_calls.extend(assistant.tool_calls().map(|c| c.id.clone()));
                    continue;
                }
                let same = is_same_model(assistant, target);
                let mut converted = assistant.clone();
                converted.content = assistant
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        AssistantContent::Thinking(t) if same => (t.redacted == Some(true)
                            || t.thinking_signature.is_some()
                            || !t.thinking.trim().is_empty())
                        .then(|| AssistantContent::Thinking(t.clone())),
                        AssistantContent::Thinking(_) => None,
                        AssistantContent::Text(t) if same => {
                            Some(AssistantContent::Text(t.clone()))
                        }
                        AssistantContent::Text(t) => Some(AssistantContent::Text(TextContent {
                            text: t.text.clone(),
                            text_signature: None,
                        })),
                        AssistantContent::ToolCall(call) => {
                            let mut call = call.clone();
                            call.id = map_id(&call.id);
                            if !same {
                                call.thought_signature = None;
                            }
                            open.push((call.id.clone(), call.name.clone()));
                            Some(AssistantContent::ToolCall(call))
                        }
                    })
                    .collect();
                out.push(Message::Assistant(converted));
            }
            Message::ToolResult(result) => {
                if dropped_calls.contains(&result.tool_call_id) {
                    continue;
                }
                let mut result = result.clone();
                result.tool_call_id = map_id(&result.tool_call_id);
                let before = open.len();
                open.retain(|(id, _)| id != &result.tool_call_id);
                if open.len() == before {
                    // A result without a call in the latest turn would be rejected by every API.
                    continue;
                }
                out.push(Message::ToolResult(result));
                if open.is_empty() {
                    out.append(&mut held);
                }
            }
            Message::User(_) => {
                close_open(&mut out, &mut open);
                out.append(&mut held);
                dropped_calls.clear();
                out.push(message.clone());
            }
            // Never sent to a model (`Context::for_request` drops them before a provider).
            Message::Custom(_) => {}
        }
    }
    close_open(&mut out, &mut open);
    out.append(&mut held);
    out
}

fn close_open(out: &mut Vec<Message>, open: &mut Vec<(String, String)>) {
    for (id, name) in open.drain(..) {
        out.push(Message::ToolResult(ToolResultMessage {
            tool_call_id: id,
            tool_name: name,
            content: vec![UserContent::text(MISSING_RESULT)],
            details: None,
            usage: None,
            nested_calls: None,
            is_error: true,
            timestamp: 0,
            duration_ms: None,
        }));
    }
}

/// Anthropic: `[A-Za-z0-9_-]{1,64}`; other characters become `_`, long ids are cut.
pub fn anthropic_tool_id(id: &str) -> String {
    let mut clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if clean.is_empty() {
        clean.push_str("call");
    }
    clean
}

/// OpenAI: at most 40 characters.
pub fn openai_tool_id(id: &str) -> String {
    if id.chars().count() <= 40 {
        id.to_string()
    } else {
        id.chars().take(40).collect()
    }
}

/// Mistral: exactly 9 letters or digits, derived from the id so it is stable.
pub fn mistral_tool_id(id: &str) -> String {
    if id.len() == 9 && id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return id.to_string();
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..9)
        .map(|i| {
            let index = ((hash >> (i * 7)) % ALPHABET.len() as u64) as usize;
            ALPHABET.get(index).copied().map(char::from).unwrap_or('a')
        })
        .collect()
}
