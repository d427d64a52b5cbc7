//! The files a conversation read and changed, collected from its tool calls (pi's file
//! operation tracking): `read`, `write` and `edit` calls with a `path` argument, the calls a
//! tool result records as nested (`nestedCalls.calls`), and the lists of the previous
//! compaction pi or oxpi made, so the lists grow across compactions.

use std::collections::BTreeSet;

use serde_json::{json, Value};

/// Files read, written and edited (pi's `FileOperations`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileOps {
    /// Paths given to `read`.
    pub read: BTreeSet<String>,
    /// Paths given to `write`.
    pub written: BTreeSet<String>,
    /// Paths given to `edit` (and the previous compaction's modified files).
    pub edited: BTreeSet<String>,
}

impl FileOps {
    /// No files.
    pub fn new() -> Self {
        Self::default()
    }

    /// The files written or edited, sorted (pi's `modifiedFiles`).
    pub fn modified_files(&self) -> Vec<String> {
        self.written.union(&self.edited).cloned().collect()
    }

    /// The files only read, never modified, sorted (pi's `readFiles`).
    pub fn read_files(&self) -> Vec<String> {
        self.read
            .iter()
            .filter(|f| !self.written.contains(*f) && !self.edited.contains(*f))
            .cloned()
            .collect()
    }

    /// The compaction entry's `details`: `{readFiles, modifiedFiles}`.
    pub fn details(&self) -> Value {
        json!({"readFiles": self.read_files(), "modifiedFiles": self.modified_files()})
    }

    /// The lists as pi appends them to a summary: a `<read-files>` and a `<modified-files>`
    /// block, one path a line, each left out when empty; empty when both are.
    pub fn summary_suffix(&self) -> String {
        let mut sections = Vec::new();
        let read = self.read_files();
        if !read.is_empty() {
            sections.push(format!("<read-files>\n{}\n</read-files>", read.join("\n")));
        }
        let modified = self.modified_files();
        if !modified.is_empty() {
            sections.push(format!(
                "<modified-files>\n{}\n</modified-files>",
                modified.join("\n")
            ));
        }
        if sections.is_empty() {
            String::new()
        } else {
            format!("\n\n{}", sections.join("\n\n"))
        }
    }

    fn add(&mut self, tool: Option<&str>, arguments: Option<&Value>) {
        let Some(path) = arguments
            .and_then(|a| a.get("path"))
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        else {
            return;
        };
        let set = match tool {
            Some("read") => &mut self.read,
            Some("write") => &mut self.written,
            Some("edit") => &mut self.edited,
            _ => return,
        };
        set.insert(path.to_string());
    }

    /// Adds the file operations of one agent message (raw JSON): an assistant message's tool
    /// calls, or the nested calls a tool result records.
    pub fn add_message(&mut self, message: &Value) {
        match message.get("role").and_then(Value::as_str) {
            Some("toolResult") => {
                let calls = message
                    .get("nestedCalls")
                    .and_then(|n| n.get("calls"))
                    .and_then(Value::as_array);
                for call in calls.into_iter().flatten() {
                    self.add(
                        call.get("name").and_then(Value::as_str),
                        call.get("arguments"),
                    );
                }
            }
            Some("assistant") => {
                let blocks = message.get("content").and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) == Some("toolCall") {
                        self.add(
                            block.get("name").and_then(Value::as_str),
                            block.get("arguments"),
                        );
                    }
                }
            }
            _ => {}
        }
    }

    /// Adds the lists of a previous compaction entry made by pi's (or oxpi's) own summarizer;
    /// one an extension made (`fromHook: true`) keeps its own `details` and adds nothing.
    pub(crate) fn add_previous(&mut self, compaction: &crate::entry::Entry) {
        if compaction.get("fromHook").and_then(Value::as_bool) == Some(true) {
            return;
        }
        let Some(details) = compaction.get("details") else {
            return;
        };
        let strings = |key: &str| -> Vec<String> {
            details
                .get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        self.read.extend(strings("readFiles"));
        self.edited.extend(strings("modifiedFiles"));
    }
}
