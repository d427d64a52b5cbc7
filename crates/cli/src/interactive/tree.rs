//! `/tree`'s list: the session's entries depth first (a fork's branches indented, the leaf
//! marked), each shown as pi's tree selector shows it (`user: …`, `assistant: …`, `[read:
//! notes.txt]`, `[compaction: 12k tokens]`, a label as `[label] ` before the text), under pi's
//! filters (`Ctrl+D` default, `Ctrl+T` no tools, `Ctrl+U` user only, `Ctrl+L` labeled only,
//! `Ctrl+A` all, `Ctrl+O` cycles).

use std::collections::HashMap;

use oxpi_session::{Entry, SessionManager};
use serde_json::Value;

use super::keys::Key;
use super::selector::{Choice, Selector};
use super::state::Action;
use crate::runtime::Runtime;

/// Which entries `/tree` lists (pi's `treeFilterMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum TreeFilter {
    /// Everything but settings and bookkeeping entries (labels, model and thinking changes,
    /// session names, custom entries).
    #[default]
    Default,
    /// The default without tool results.
    NoTools,
    /// User messages only.
    UserOnly,
    /// Labeled entries only.
    LabeledOnly,
    /// Every entry.
    All,
}

impl TreeFilter {
    const CYCLE: [TreeFilter; 5] = [
        Self::Default,
        Self::NoTools,
        Self::UserOnly,
        Self::LabeledOnly,
        Self::All,
    ];

    /// `self` toggled with `other`: `other`, or the default when `other` is already on (pi's
    /// `Ctrl+T`, `Ctrl+U`, `Ctrl+L`, `Ctrl+A`).
    pub(crate) fn toggled(self, other: Self) -> Self {
        if self == other {
            Self::Default
        } else {
            other
        }
    }

    /// The next filter (`Ctrl+O`): default → no tools → user only → labeled only → all.
    pub(crate) fn next(self) -> Self {
        let i = Self::CYCLE.iter().position(|f| *f == self).unwrap_or(0);
        Self::CYCLE[(i + 1) % Self::CYCLE.len()]
    }

    /// The selector's title, with pi's status label for a filter other than the default.
    pub(crate) fn title(self) -> String {
        let status = match self {
            Self::Default => "",
            Self::NoTools => " [no-tools]",
            Self::UserOnly => " [user]",
            Self::LabeledOnly => " [labeled]",
            Self::All => " [all]",
        };
        format!("Session tree{status}")
    }
}

fn one_line(text: &str) -> String {
    let line: String = text.replace(['\n', '\t'], " ").trim().to_string();
    line.chars().take(100).collect()
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// pi's short form of a tool call (`[read: notes.txt]`, `[bash: ls -la]`).
fn tool_call_text(name: &str, args: &Value) -> String {
    let s = |key: &str, default: &str| args[key].as_str().unwrap_or(default).to_string();
    match name {
        "read" | "write" | "edit" => format!("[{name}: {}]", s("path", "")),
        "bash" => {
            let command = s("command", "");
            let short: String = one_line(&command).chars().take(50).collect();
            let more = if command.chars().count() > 50 {
                "..."
            } else {
                ""
            };
            format!("[bash: {short}{more}]")
        }
        "grep" => format!("[grep: /{}/ in {}]", s("pattern", ""), s("path", ".")),
        "find" => format!("[find: {} in {}]", s("pattern", ""), s("path", ".")),
        "ls" => format!("[ls: {}]", s("path", ".")),
        _ => {
            let json = args.to_string();
            let short: String = json.chars().take(40).collect();
            let more = if json.chars().count() > 40 { "..." } else { "" };
            format!("[{name}: {short}{more}]")
        }
    }
}

/// The `/tree` selector's own state: its filter and the label being edited (`Shift+L`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TreeKeys {
    /// The filter in force.
    pub filter: TreeFilter,
    /// The entry whose label is being edited, and the text typed.
    pub label_edit: Option<(String, String)>,
}

impl TreeKeys {
    /// Handles a key of the open tree selector; `None`: not one of its own (the selector's
    /// search and movement take it), `Some(action)`: handled.
    pub(crate) fn on_key(&mut self, key: &Key, selector: &Selector) -> Option<Option<Action>> {
        if let Some((id, text)) = &mut self.label_edit {
            return Some(match key {
                Key::Char(c) => {
                    text.push(*c);
                    None
                }
                Key::Backspace => {
                    text.pop();
                    None
                }
                Key::Enter => {
                    let (id, text) = (id.clone(), text.clone());
                    self.label_edit = None;
                    Some(Action::TreeLabel(id, text))
                }
                Key::Esc | Key::CtrlC => {
                    self.label_edit = None;
                    None
                }
                _ => None,
            });
        }
        let filter = match key {
            Key::CtrlD => TreeFilter::Default,
            Key::CtrlT => self.filter.toggled(TreeFilter::NoTools),
            Key::CtrlU => self.filter.toggled(TreeFilter::UserOnly),
            Key::CtrlL => self.filter.toggled(TreeFilter::LabeledOnly),
            Key::Home => self.filter.toggled(TreeFilter::All),
            Key::CtrlO => self.filter.next(),
            Key::Char('L') => {
                return Some(
                    selector
                        .chosen()
                        .map(|id| Action::TreeEditLabel(id.to_string())),
                );
            }
            _ => return None,
        };
        self.filter = filter;
        Some(Some(Action::TreeRefresh))
    }
}

/// How an entry is shown and whether it passes `filter`; `None`: not listed.
fn display(
    entry: &Entry,
    calls: &HashMap<String, (String, Value)>,
    filter: TreeFilter,
    labeled: bool,
    is_leaf: bool,
) -> Option<String> {
    let kind = entry.type_name();
    let role = entry.message_role();
    let settings = matches!(
        kind,
        "label"
            | "context_edit"
            | "custom"
            | "model_change"
            | "thinking_level_change"
            | "session_info"
    );
    let passes = match filter {
        TreeFilter::Default => !settings,
        TreeFilter::NoTools => !settings && role != Some("toolResult"),
        TreeFilter::UserOnly => role == Some("user"),
        TreeFilter::LabeledOnly => labeled,
        TreeFilter::All => true,
    };
    if !passes || kind == "usage" {
        return None;
    }
    let field = |name: &str| entry.get(name).cloned().unwrap_or(Value::Null);
    Some(match kind {
        "message" => {
            let m = entry.message_json()?;
            match role.unwrap_or("") {
                "user" => format!("user: {}", one_line(&content_text(&m["content"]))),
                "assistant" => {
                    let text = one_line(&content_text(&m["content"]));
                    let stop = m["stopReason"].as_str().unwrap_or("stop");
                    let failed = stop != "stop" && stop != "toolUse";
                    // pi leaves out a reply of tool calls only (not the leaf, not a failure).
                    if text.is_empty() && !failed && !is_leaf {
                        return None;
                    }
                    let shown = if !text.is_empty() {
                        text
                    } else if stop == "aborted" {
                        "(aborted)".into()
                    } else if let Some(e) = m["errorMessage"].as_str() {
                        one_line(e).chars().take(80).collect()
                    } else {
                        "(no content)".into()
                    };
                    format!("assistant: {shown}")
                }
                "toolResult" => {
                    let id = m["toolCallId"].as_str().unwrap_or("");
                    match calls.get(id) {
                        Some((name, args)) => tool_call_text(name, args),
                        None => format!("[{}]", m["toolName"].as_str().unwrap_or("tool")),
                    }
                }
                "bashExecution" => {
                    format!("[bash]: {}", one_line(m["command"].as_str().unwrap_or("")))
                }
                other => format!("[{other}]"),
            }
        }
        "custom_message" => format!(
            "[{}]: {}",
            field("customType").as_str().unwrap_or(""),
            one_line(&content_text(&field("content")))
        ),
        "compaction" => format!(
            "[compaction: {}k tokens]",
            (field("tokensBefore").as_f64().unwrap_or(0.0) / 1000.0).round()
        ),
        "branch_summary" => format!(
            "[branch summary]: {}",
            one_line(field("summary").as_str().unwrap_or(""))
        ),
        "model_change" => format!("[model: {}]", field("modelId").as_str().unwrap_or("")),
        "thinking_level_change" => format!(
            "[thinking: {}]",
            field("thinkingLevel").as_str().unwrap_or("")
        ),
        "custom" => format!("[custom: {}]", field("customType").as_str().unwrap_or("")),
        "context_edit" => format!(
            "[context {}: {}]",
            if field("replacement").is_null() {
                "omit"
            } else {
                "replace"
            },
            field("targetId").as_str().unwrap_or("")
        ),
        "label" => format!(
            "[label: {}]",
            field("label").as_str().unwrap_or("(cleared)")
        ),
        "session_info" => format!("[title: {}]", field("name").as_str().unwrap_or("empty")),
        _ => return None,
    })
}

/// The tree's entries under `filter`, depth first in file order (an explicit stack: a long
/// session is a deep chain).
pub(crate) fn tree_choices(s: &SessionManager, filter: TreeFilter) -> Vec<Choice> {
    fn push<'a>(stack: &mut Vec<(&'a Entry, usize)>, children: &[&'a Entry], depth: usize) {
        // A chain (one child) stays at its depth; the branches of a fork are indented.
        let depth = if children.len() > 1 { depth + 1 } else { depth };
        for child in children.iter().rev() {
            stack.push((child, depth));
        }
    }
    let leaf = s.leaf_id();
    let mut children: HashMap<Option<&str>, Vec<&Entry>> = HashMap::new();
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    for entry in s.entries().filter(|e| e.id().is_some()) {
        children.entry(entry.parent_id()).or_default().push(entry);
        if entry.message_role() == Some("assistant") {
            let content = entry.message_json().map(|m| &m["content"]);
            for block in content.and_then(Value::as_array).into_iter().flatten() {
                if block["type"] == "toolCall" {
                    if let (Some(id), Some(name)) = (block["id"].as_str(), block["name"].as_str()) {
                        calls.insert(id.into(), (name.into(), block["arguments"].clone()));
                    }
                }
            }
        }
    }
    let none = Vec::new();
    let mut out = Vec::new();
    let mut stack = Vec::new();
    push(&mut stack, children.get(&None).unwrap_or(&none), 0);
    while let Some((entry, depth)) = stack.pop() {
        let Some(id) = entry.id() else { continue };
        let label = s.label(id);
        let is_leaf = Some(id) == leaf;
        if let Some(text) = display(entry, &calls, filter, label.is_some(), is_leaf) {
            let mark = if is_leaf { "  ← current" } else { "" };
            let label = label.map(|l| format!("[{l}] ")).unwrap_or_default();
            out.push(Choice {
                key: id.to_string(),
                label: format!("{}{label}{text}{mark}", "  ".repeat(depth.min(20))),
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

/// `/tree`'s picker under `filter`, `selected` (else the leaf) selected; an empty list under a
/// filter other than the default is kept open (the filter can be changed back).
pub(crate) fn tree_picker(
    runtime: &Runtime,
    filter: TreeFilter,
    selected: Option<&str>,
) -> Result<Selector, String> {
    let choices = runtime
        .with_session(|s| tree_choices(s, filter))
        .ok_or("No session is open")?;
    if choices.is_empty() && filter == TreeFilter::Default {
        return Err("The session has no messages yet".into());
    }
    let leaf = runtime
        .with_session(|s| s.leaf_id().map(str::to_string))
        .flatten();
    Ok(Selector::new(
        &filter.title(),
        choices,
        selected.or(leaf.as_deref()),
    ))
}

/// Sets (or, empty, removes) the label of entry `id` (pi's `appendLabelChange`).
pub(crate) fn set_label(runtime: &Runtime, id: &str, label: &str) -> Result<(), String> {
    let label = Some(label.trim()).filter(|l| !l.is_empty());
    runtime
        .with_session(|s| s.append_label_change(id, label).map(drop))
        .ok_or("No session is open")?
        .map_err(|e| e.to_string())
}

/// The label entry `id` has now.
pub(crate) fn label_of(runtime: &Runtime, id: &str) -> Option<String> {
    runtime
        .with_session(|s| s.label(id).map(str::to_string))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> oxpi_ai::Message {
        crate::runtime::user_message(text)
    }

    /// An assistant message with `content` and `stop`.
    fn assistant(content: serde_json::Value, stop: &str) -> oxpi_ai::Message {
        let usage = serde_json::json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
            "totalTokens": 0, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
            "total": 0}});
        serde_json::from_value(serde_json::json!({"role": "assistant", "content": content,
            "api": "openai-completions", "provider": "p", "model": "m", "usage": usage,
            "stopReason": stop, "timestamp": 1}))
        .unwrap()
    }

    fn labels(s: &SessionManager, filter: TreeFilter) -> Vec<String> {
        tree_choices(s, filter)
            .into_iter()
            .map(|c| c.label)
            .collect()
    }

    #[test]
    fn the_tree_lists_branches_indented_with_the_leaf_marked() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = SessionManager::in_memory(dir.path());
        let first = s.append_message(&user("first")).unwrap();
        s.append_message(&user("second")).unwrap();
        s.branch(&first).unwrap();
        s.append_message(&user("other")).unwrap();
        assert_eq!(
            labels(&s, TreeFilter::Default),
            ["user: first", "  user: second", "  user: other  ← current"]
        );
    }

    #[test]
    fn filters_and_labels_are_pi_s() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = SessionManager::in_memory(dir.path());
        let question = s.append_message(&user("what is in notes?")).unwrap();
        let call = serde_json::json!([{"type": "toolCall", "id": "c1", "name": "read",
            "arguments": {"path": "notes.txt"}}]);
        s.append_message(&assistant(call, "toolUse")).unwrap();
        let result = serde_json::json!({"role": "toolResult", "toolCallId": "c1",
            "toolName": "read", "content": [{"type": "text", "text": "42"}], "isError": false,
            "timestamp": 2});
        s.append_message(&serde_json::from_value(result).unwrap())
            .unwrap();
        let answer = serde_json::json!([{"type": "text", "text": "It says\n42"}]);
        s.append_message(&assistant(answer, "stop")).unwrap();
        s.append_label_change(&question, Some("start")).unwrap();

        assert_eq!(
            labels(&s, TreeFilter::Default),
            [
                "[start] user: what is in notes?",
                "[read: notes.txt]",
                "assistant: It says 42"
            ]
        );
        assert_eq!(
            labels(&s, TreeFilter::NoTools),
            ["[start] user: what is in notes?", "assistant: It says 42"]
        );
        assert_eq!(
            labels(&s, TreeFilter::UserOnly),
            ["[start] user: what is in notes?"]
        );
        assert_eq!(
            labels(&s, TreeFilter::LabeledOnly),
            ["[start] user: what is in notes?"]
        );
        let all = labels(&s, TreeFilter::All);
        // As pi: a reply of tool calls only is left out under every filter.
        assert_eq!(
            all,
            [
                "[start] user: what is in notes?",
                "[read: notes.txt]",
                "assistant: It says 42",
                "[label: start]  ← current"
            ]
        );

        assert_eq!(TreeFilter::Default.next(), TreeFilter::NoTools);
        assert_eq!(TreeFilter::All.next(), TreeFilter::Default);
        assert_eq!(
            TreeFilter::UserOnly.toggled(TreeFilter::UserOnly),
            TreeFilter::Default
        );
        assert_eq!(
            TreeFilter::NoTools.toggled(TreeFilter::UserOnly),
            TreeFilter::UserOnly
        );
        assert_eq!(TreeFilter::LabeledOnly.title(), "Session tree [labeled]");
    }
}
