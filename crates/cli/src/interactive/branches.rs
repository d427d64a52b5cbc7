//! `/tree`'s move of the leaf (the list is tree.rs), `/fork` and `/clone`: new session files
//! branched from the current one. The agent's history follows each change (the session is rebound).

use oxpi_ai::Message;
use oxpi_session::Entry;

use super::selector::{Choice, Selector};
use super::sessions::replace;
use crate::runtime::Runtime;

/// The one-line text of a message entry: `role: first line`.
fn preview(entry: &Entry) -> Option<(bool, String)> {
    if entry.type_name() == "compaction" {
        return Some((false, "[compaction]".into()));
    }
    if entry.type_name() != "message" {
        return None;
    }
    let (is_user, text) = match entry.message()?.ok()? {
        Message::User(m) => (true, m.text_content()),
        Message::Assistant(a) => (
            false,
            a.content
                .iter()
                .find_map(|b| match b {
                    oxpi_ai::AssistantContent::Text(t) if !t.text.trim().is_empty() => {
                        Some(t.text.clone())
                    }
                    oxpi_ai::AssistantContent::ToolCall(c) => Some(format!("[{}]", c.name)),
                    _ => None,
                })
                .unwrap_or_default(),
        ),
        _ => return None,
    };
    let first: String = text.lines().next().unwrap_or("").chars().take(70).collect();
    Some((
        is_user,
        format!("{}: {first}", if is_user { "user" } else { "assistant" }),
    ))
}

/// `/tree`'s choice: a user message moves the leaf to before it and returns its text (for the
/// editor, as pi); any other entry becomes the leaf.
pub(crate) fn navigate(runtime: &Runtime, id: &str) -> Result<Option<String>, String> {
    let mut text = None;
    replace(runtime, |s| {
        let entry = s.entry(id).ok_or("That entry is gone")?;
        let user = match entry.message().and_then(Result::ok) {
            Some(Message::User(m)) => Some(m.text_content()),
            _ => None,
        };
        match user {
            Some(t) => {
                let parent = entry.parent_id().map(str::to_string);
                text = Some(t);
                match parent {
                    Some(p) => s.branch(&p).map_err(|e| e.to_string())?,
                    None => s.reset_leaf(),
                }
            }
            None => s.branch(id).map_err(|e| e.to_string())?,
        }
        Ok(None)
    })?;
    Ok(text)
}

/// `/fork`'s picker: the user messages of the session.
pub(crate) fn fork_picker(runtime: &Runtime) -> Result<Selector, String> {
    let choices: Vec<Choice> = runtime
        .with_session(|s| {
            s.entries()
                .filter_map(|e| {
                    let (is_user, text) = preview(e)?;
                    let id = e.id()?.to_string();
                    is_user.then(|| Choice {
                        key: id,
                        label: text.trim_start_matches("user: ").to_string(),
                        detail: String::new(),
                    })
                })
                .collect()
        })
        .ok_or("No session is open")?;
    if choices.is_empty() {
        return Err("No user message to fork from".into());
    }
    let last = choices.last().map(|c| c.key.clone());
    Ok(Selector::new(
        "Fork from a message",
        choices,
        last.as_deref(),
    ))
}

/// `/fork`'s choice: a new session file with the path before the message; returns its text.
pub(crate) fn fork(runtime: &Runtime, id: &str) -> Result<String, String> {
    let mut text = String::new();
    replace(runtime, |s| {
        let entry = s.entry(id).ok_or("That entry is gone")?;
        if let Some(Message::User(m)) = entry.message().and_then(Result::ok) {
            text = m.text_content();
        }
        match entry.parent_id().map(str::to_string) {
            Some(parent) => s.create_branched_session(&parent).map(|_| None),
            None => {
                let mut options = oxpi_session::NewSessionOptions::default();
                if let Some(file) = s.session_file() {
                    options = options.parent_session(file.to_string_lossy());
                }
                s.new_session(options).map(|_| None)
            }
        }
        .map_err(|e| e.to_string())
    })?;
    Ok(text)
}

/// `/clone`: a new session file with the whole current path.
pub(crate) fn clone_session(runtime: &Runtime) -> Result<(), String> {
    replace(runtime, |s| {
        let leaf = s
            .leaf_id()
            .map(str::to_string)
            .ok_or("Nothing to clone yet")?;
        s.create_branched_session(&leaf)
            .map(|_| None)
            .map_err(|e| e.to_string())
    })
}
