//! The context a request is built from, as pi's `buildSessionContext`: the path from the leaf
//! to the root, the latest compaction's summary in place of what it summarized, context edits
//! applied, and the model and thinking level in force.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::entry::{Entry, EntryType};
use crate::head::Fill;
use crate::message::ContextMessage;
use crate::time::iso_to_millis_json;

/// What a request is built from: the agent messages (raw JSON, any role pi has:
/// `system`, `user`, `assistant`, `toolResult`, `custom`, `compactionSummary`,
/// `branchSummary`, …), the thinking level and the model. Serializes as pi's `SessionContext`.
/// A message read from the file shares its entry's text (see [`ContextMessage`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionContext {
    /// The messages, oldest first.
    pub messages: Vec<ContextMessage>,
    /// The thinking level in force (`off` unless a `thinking_level_change` set one).
    pub thinking_level: String,
    /// The model in force: `{provider, modelId}` of the last model change or assistant message.
    pub model: Option<Value>,
}

/// The text pi puts around a compaction summary when it becomes a user message.
pub const COMPACTION_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// The text after a compaction summary.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// The text pi puts before a branch summary.
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// The text after a branch summary.
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// The path from the root to `leaf` (pi's `buildSessionPath`: `None` is the empty path; an id
/// not found starts from the last entry).
pub(crate) fn path<'a>(
    entries: &'a [Entry],
    by_id: &HashMap<String, usize>,
    leaf: Option<&str>,
) -> Vec<&'a Entry> {
    let Some(leaf) = leaf else {
        return Vec::new();
    };
    let start = by_id
        .get(leaf)
        .map(|&i| &entries[i])
        .or_else(|| entries.last());
    let mut path = Vec::new();
    let mut current = start;
    while let Some(entry) = current {
        // A cycle in a hand-made file must not loop forever.
        if path.len() > entries.len() {
            break;
        }
        path.push(entry);
        current = entry
            .parent_id()
            .and_then(|p| by_id.get(p))
            .map(|&i| &entries[i]);
    }
    path.reverse();
    path
}

fn is_system_message(entry: &Entry) -> bool {
    entry.is(&EntryType::Message) && entry.message_role() == Some("system")
}

/// The path with the latest compaction honoured (pi's `buildContextEntries`): the compaction
/// first, then the non-system entries from its `firstKeptEntryId` up to it, then everything
/// after it.
pub(crate) fn context_entries<'a>(path: &[&'a Entry]) -> Vec<&'a Entry> {
    let Some(index) = path.iter().rposition(|e| e.is(&EntryType::Compaction)) else {
        return path.to_vec();
    };
    let compaction = path[index];
    let first_kept = compaction.str_field("firstKeptEntryId");
    let mut out = vec![compaction];
    let mut found = false;
    for entry in &path[..index] {
        if entry.id().is_some() && entry.id() == first_kept {
            found = true;
        }
        if found && !is_system_message(entry) {
            out.push(entry);
        }
    }
    out.extend_from_slice(&path[index + 1..]);
    out
}

/// The messages one entry contributes (pi's `sessionEntryToContextMessages`).
pub(crate) fn entry_messages(entry: &Entry) -> Vec<ContextMessage> {
    if let Some((text, message)) = entry.read_message() {
        if message.fill == Fill::Nothing {
            return vec![ContextMessage::shared(
                text.slice(message.span.range()),
                message.role.clone(),
            )];
        }
    }
    let mut messages: Vec<ContextMessage> = entry_values(entry)
        .into_iter()
        .map(ContextMessage::from_value)
        .collect();
    // A compaction's stored system message comes first: taken from the entry's text, so its
    // sections keep their order (the value's map would sort them).
    if entry.entry_type() == EntryType::Compaction && messages.len() == 2 {
        if let Some(system) = compaction_system_text(entry) {
            messages[0] = system;
        }
    }
    messages
}

/// A compaction entry's `systemMessage`, shared from its text.
fn compaction_system_text(entry: &Entry) -> Option<ContextMessage> {
    #[derive(serde::Deserialize)]
    struct Compaction<'a> {
        #[serde(borrow, rename = "systemMessage")]
        system: Option<&'a serde_json::value::RawValue>,
    }
    let text = entry.read_text()?;
    let whole = text.as_str();
    let raw = serde_json::from_str::<Compaction<'_>>(whole)
        .ok()?
        .system?
        .get();
    if !raw.starts_with('{') {
        return None;
    }
    let start = (raw.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let range = start..start + raw.len();
    (whole.get(range.clone()) == Some(raw))
        .then(|| ContextMessage::shared(text.slice(range), Some("system".into())))
}

/// [`entry_messages`] as values, built from the entry's object.
fn entry_values(entry: &Entry) -> Vec<Value> {
    match entry.entry_type() {
        EntryType::Message => {
            let Some(message) = entry.get("message") else {
                return Vec::new();
            };
            let mut message = message.clone();
            if let Value::Object(object) = &mut message {
                let role = object.get("role").and_then(Value::as_str).unwrap_or("");
                let missing = object.get("content").is_none_or(Value::is_null);
                if missing && role == "system" {
                    object.insert("content".into(), "".into());
                } else if missing && matches!(role, "user" | "assistant" | "toolResult") {
                    object.insert("content".into(), Value::Array(Vec::new()));
                }
            }
            vec![message]
        }
        EntryType::CustomMessage => {
            let mut m = Map::new();
            m.insert("role".into(), "custom".into());
            copy(entry, &mut m, "customType", "customType");
            let content = entry
                .get("content")
                .filter(|c| !c.is_null())
                .cloned()
                .unwrap_or(Value::Array(Vec::new()));
            m.insert("content".into(), content);
            copy(entry, &mut m, "display", "display");
            copy(entry, &mut m, "details", "details");
            m.insert(
                "timestamp".into(),
                iso_to_millis_json(entry.get("timestamp")),
            );
            vec![Value::Object(m)]
        }
        EntryType::BranchSummary => {
            let summary = entry.get("summary");
            if !summary.is_some_and(truthy) {
                return Vec::new();
            }
            let mut m = Map::new();
            m.insert("role".into(), "branchSummary".into());
            copy(entry, &mut m, "summary", "summary");
            copy(entry, &mut m, "fromId", "fromId");
            m.insert(
                "timestamp".into(),
                iso_to_millis_json(entry.get("timestamp")),
            );
            vec![Value::Object(m)]
        }
        EntryType::Compaction => {
            let mut m = Map::new();
            m.insert("role".into(), "compactionSummary".into());
            copy(entry, &mut m, "summary", "summary");
            copy(entry, &mut m, "tokensBefore", "tokensBefore");
            m.insert(
                "timestamp".into(),
                iso_to_millis_json(entry.get("timestamp")),
            );
            match entry.get("systemMessage").filter(|s| truthy(s)) {
                Some(system) => vec![system.clone(), Value::Object(m)],
                None => vec![Value::Object(m)],
            }
        }
        _ => Vec::new(),
    }
}

/// JavaScript truthiness of a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Copies a field when present and not null (JSON.stringify drops `undefined`; pi's objects
/// carry the entry's own value, so a `null` stays `null`).
fn copy(entry: &Entry, into: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = entry.get(from) {
        into.insert(to.into(), value.clone());
    }
}

/// The messages of one entry with its latest context edit applied (pi's
/// `projectContextEntry`).
fn project(entry: &Entry, edit: Option<&Entry>) -> Vec<ContextMessage> {
    let messages = entry_messages(entry);
    let Some(edit) = edit else {
        return messages;
    };
    let replacement = match edit.get("replacement") {
        None | Some(Value::Null) => return Vec::new(),
        Some(r) => r,
    };
    let content = replacement.get("content").cloned();
    messages
        .into_iter()
        .map(|message| {
            let role = message.role().unwrap_or("").to_string();
            if !matches!(
                role.as_str(),
                "user" | "assistant" | "toolResult" | "custom"
            ) {
                return message;
            }
            let mut message = message.into_value();
            let new_content = match &content {
                Some(Value::String(text)) if role == "assistant" || role == "toolResult" => {
                    serde_json::json!([{ "type": "text", "text": text }])
                }
                Some(c) => c.clone(),
                None => Value::Null,
            };
            if let Value::Object(object) = &mut message {
                if content.is_none() {
                    object.remove("content");
                } else {
                    object.insert("content".into(), new_content);
                }
            }
            ContextMessage::from_value(message)
        })
        .collect()
}

/// The thinking level and model set along `path` (pi's `getSessionContextSettings`).
fn settings(path: &[&Entry]) -> (String, Option<Value>) {
    // The last setting of each wins: read from the leaf back, up to the last of both.
    let mut thinking: Option<Value> = None;
    let mut model = None;
    for entry in path.iter().rev() {
        if thinking.is_some() && model.is_some() {
            break;
        }
        match entry.entry_type() {
            EntryType::ThinkingLevelChange if thinking.is_none() => {
                thinking = Some(entry.get("thinkingLevel").cloned().unwrap_or(Value::Null));
            }
            EntryType::ModelChange if model.is_none() => {
                model = Some(model_ref(entry.get("provider"), entry.get("modelId")));
            }
            EntryType::Message if model.is_none() && entry.message_role() == Some("assistant") => {
                model = Some(message_model(entry));
            }
            _ => {}
        }
    }
    let thinking = thinking
        .as_ref()
        .map_or(Some("off"), Value::as_str)
        .unwrap_or("off")
        .to_string();
    (thinking, model)
}

/// The `{provider, modelId}` of an assistant message, read from its text when it has one.
fn message_model(entry: &Entry) -> Value {
    #[derive(serde::Deserialize)]
    struct Fields {
        provider: Option<Value>,
        model: Option<Value>,
    }
    if let Some(text) = entry.message_text() {
        // `Option<Value>` reads a null as absent; the value keeps it.
        if let Ok(Fields { provider, model }) = serde_json::from_str::<Fields>(text) {
            if provider.is_some() && model.is_some() {
                return model_ref(provider.as_ref(), model.as_ref());
            }
        }
    }
    let message = entry.get("message");
    model_ref(
        message.and_then(|m| m.get("provider")),
        message.and_then(|m| m.get("model")),
    )
}

fn model_ref(provider: Option<&Value>, model_id: Option<&Value>) -> Value {
    let mut m = Map::new();
    if let Some(p) = provider {
        m.insert("provider".into(), p.clone());
    }
    if let Some(id) = model_id {
        m.insert("modelId".into(), id.clone());
    }
    Value::Object(m)
}

/// The selected entries of the path to `leaf`, each with the messages it contributes after
/// context edits (pi's `buildSessionProjection().entries`).
pub(crate) fn projection<'a>(path: &[&'a Entry]) -> Vec<(&'a Entry, Vec<ContextMessage>)> {
    let mut out = Vec::new();
    project_each(path, |entry, messages| out.push((entry, messages)));
    out
}

/// Calls `each` with every selected entry of the path and its messages, in order.
fn project_each<'a>(path: &[&'a Entry], mut each: impl FnMut(&'a Entry, Vec<ContextMessage>)) {
    let selected = context_entries(path);
    let mut edits: HashMap<&str, &Entry> = HashMap::new();
    for entry in &selected {
        if entry.is(&EntryType::ContextEdit) {
            if let Some(target) = entry.str_field("targetId") {
                edits.insert(target, entry);
            }
        }
    }
    for (index, entry) in selected.iter().enumerate() {
        // Only the newest compaction (first) contributes a summary; an older one can be kept
        // because its id lies in the retained range.
        if index > 0 && entry.is(&EntryType::Compaction) {
            each(entry, Vec::new());
            continue;
        }
        let edit = entry.id().and_then(|id| edits.get(id)).copied();
        each(entry, project(entry, edit));
    }
}

/// The context of the path to `leaf` (pi's `buildSessionContext`). A message read from the
/// file shares its entry's text: nothing is copied but the references.
pub(crate) fn build(
    entries: &[Entry],
    by_id: &HashMap<String, usize>,
    leaf: Option<&str>,
) -> SessionContext {
    let path = path(entries, by_id, leaf);
    let (thinking_level, model) = settings(&path);
    let mut messages = Vec::with_capacity(path.len());
    project_each(&path, |_, m| messages.extend(m));
    SessionContext {
        messages,
        thinking_level,
        model,
    }
}

/// pi's `getCurrentSystemMessage`: every system message replayed into one (content appended,
/// sections patched by name, tools added and removed); `None` when there is none and no tool.
pub(crate) fn current_system_message(messages: &[ContextMessage]) -> Option<SystemState> {
    let mut content: Vec<String> = Vec::new();
    let mut sections: Vec<(String, Value)> = Vec::new();
    let mut tools: Vec<(String, Value)> = Vec::new();
    let mut timestamp: Option<Value> = None;
    for message in messages {
        if message.role() != Some("system") {
            continue;
        }
        if timestamp.is_none() {
            timestamp = message.get("timestamp").cloned();
        }
        let text = content_text(message.get("content"));
        if !text.is_empty() {
            content.push(text);
        }
        for (name, value) in ordered_sections(message) {
            if value.is_null() {
                sections.retain(|(n, _)| *n != name);
            } else if let Some(slot) = sections.iter_mut().find(|(n, _)| *n == name) {
                slot.1 = value;
            } else {
                sections.push((name, value));
            }
        }
        for removed in list(message.get("toolsRemoved")) {
            let name = removed.get("name").and_then(Value::as_str).unwrap_or("");
            tools.retain(|(n, _)| n != name);
        }
        for added in list(message.get("toolsAdded")) {
            let name = added
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if let Some(slot) = tools.iter_mut().find(|(n, _)| *n == name) {
                slot.1 = added.clone();
            } else {
                tools.push((name, added.clone()));
            }
        }
    }
    if timestamp.is_none() && tools.is_empty() {
        return None;
    }
    Some(SystemState {
        content: content.join("\n\n"),
        sections,
        tools: tools.into_iter().map(|(_, t)| t).collect(),
        timestamp: timestamp.unwrap_or(Value::from(0)),
    })
}

/// The system message every system message of a path adds up to, its sections in their order
/// (pi renders them in that order; a JSON map in between would sort them).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SystemState {
    content: String,
    sections: Vec<(String, Value)>,
    tools: Vec<Value>,
    /// The first system message's timestamp.
    pub(crate) timestamp: Value,
}

impl SystemState {
    /// The message as JSON text, sections in their order: `role`, `content`, `sections`,
    /// `toolsAdded`, `timestamp` (`at` in place of the first message's, when given).
    pub(crate) fn to_json(&self, at: Option<Value>) -> Vec<u8> {
        fn text(out: &mut Vec<u8>, value: &impl serde::Serialize) {
            // Strings, JSON values and numbers always serialize.
            out.extend(serde_json::to_vec(value).unwrap_or_default());
        }
        let mut out = b"{\"role\":\"system\",\"content\":".to_vec();
        text(&mut out, &self.content);
        if !self.sections.is_empty() {
            out.extend_from_slice(b",\"sections\":{");
            for (index, (name, value)) in self.sections.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                text(&mut out, name);
                out.push(b':');
                text(&mut out, value);
            }
            out.push(b'}');
        }
        if !self.tools.is_empty() {
            out.extend_from_slice(b",\"toolsAdded\":");
            text(&mut out, &self.tools);
        }
        out.extend_from_slice(b",\"timestamp\":");
        text(&mut out, at.as_ref().unwrap_or(&self.timestamp));
        out.push(b'}');
        out
    }

    /// The message as a JSON value (its sections then in name order).
    pub(crate) fn to_value(&self) -> Value {
        serde_json::from_slice(&self.to_json(None)).unwrap_or(Value::Null)
    }
}

/// A system message's `sections` in the order its text has them (read from the text when the
/// message has one, else from its value).
fn ordered_sections(message: &ContextMessage) -> Vec<(String, Value)> {
    #[derive(serde::Deserialize)]
    struct Patch {
        #[serde(default)]
        sections: Option<oxpi_ai::Sections>,
    }
    if let Some(text) = message.json_text() {
        if let Ok(Patch { sections }) = serde_json::from_str::<Patch>(text) {
            return sections
                .map(|s| {
                    s.0.into_iter()
                        .map(|(name, value)| (name, value.map_or(Value::Null, Value::from)))
                        .collect()
                })
                .unwrap_or_default();
        }
    }
    match message.get("sections") {
        Some(Value::Object(patch)) => patch.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => Vec::new(),
    }
}

fn list(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// pi's `contentText`: a string, or the text blocks joined by newlines.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
