//! `/tree`, `/fork` and `/clone`: the session's entry tree as a list to pick from (depth shown
//! by indentation, the current leaf marked), moving the leaf, and new session files branched
//! from the current one. The agent's history follows each change (the session is rebound).

use std::collections::HashMap;

use oxpi_ai::Message;
use oxpi_session::{Entry, SessionManager};

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

/// The tree's user and assistant entries, depth first in file order (an explicit stack: a
/// long session is a deep chain).
pub(crate) fn tree_choices(s: &SessionManager) -> Vec<Choice> {
    fn push<'a>(stack: &mut Vec<(&'a Entry, usize)>, children: &[&'a Entry], depth: usize) {
        // A chain (one child) stays at its depth; the branches of a fork are indented.
        let depth = if children.len() > 1 { depth + 1 } else { depth };
        for child in children.iter().rev() {
            stack.push((child, depth));
        }
    }
    let leaf = s.leaf_id();
    let mut children: HashMap<Option<&str>, Vec<&Entry>> = HashMap::new();
    for entry in s.entries().filter(|e| e.id().is_some()) {
        children.entry(entry.parent_id()).or_default().push(entry);
    }
    let none = Vec::new();
    let mut out = Vec::new();
    let mut stack = Vec::new();
    push(&mut stack, children.get(&None).unwrap_or(&none), 0);
    while let Some((entry, depth)) = stack.pop() {
        let Some(id) = entry.id() else { continue };
        if let Some((_, text)) = preview(entry) {
            let mark = if Some(id) == leaf {
                "  ← current"
            } else {
                ""
            };
            let label = s.label(id).map(|l| format!(" [{l}]")).unwrap_or_default();
            out.push(Choice {
                key: id.to_string(),
                label: format!("{}{text}{label}{mark}", "  ".repeat(depth.min(20))),
                detail: String::new(),
            });
            if out.len() >= 10_000 {
                break;
            }
        }
        push(&mut stack, children.get(&Some(id)).unwrap_or(&none), depth);
    }
    out
}

/// `/tree`'s picker.
pub(crate) fn tree_picker(runtime: &Runtime) -> Result<Selector, String> {
    let choices = runtime
        .with_session(|s| tree_choices(s))
        .ok_or("No session is open")?;
    if choices.is_empty() {
        return Err("The session has no messages yet".into());
    }
    let leaf = runtime
        .with_session(|s| s.leaf_id().map(str::to_string))
        .flatten();
    Ok(Selector::new("Session tree", choices, leaf.as_deref()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        crate::runtime::user_message(text)
    }

    #[test]
    fn the_tree_lists_branches_indented_with_the_leaf_marked() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = SessionManager::in_memory(dir.path());
        let first = s.append_message(&user("first")).unwrap();
        s.append_message(&user("second")).unwrap();
        s.branch(&first).unwrap();
        s.append_message(&user("other")).unwrap();
        let labels: Vec<String> = tree_choices(&s).into_iter().map(|c| c.label).collect();
        assert_eq!(
            labels,
            ["user: first", "  user: second", "  user: other  ← current"]
        );
    }
}
