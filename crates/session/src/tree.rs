//! Reading a [`SessionManager`]'s tree: entries, the path from the leaf to the root, labels,
//! the context a request is built from, and a new file of one path.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::context::{self, SessionContext};
use crate::entry::{Entry, EntryType, SessionHeader};
use crate::error::{Result, SessionError};
use crate::file::{LoadIssue, Writer};
use crate::ids;
use crate::manager::SessionManager;
use crate::time::{file_stamp, now_iso};

impl SessionManager {
    /// The header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        self.header.id()
    }

    /// The session's file (`None` in memory).
    pub fn session_file(&self) -> Option<&Path> {
        self.file_path()
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        self.cwd_path()
    }

    /// The directory new sessions made from this one go to.
    pub fn session_dir(&self) -> &Path {
        self.dir_path()
    }

    /// The lines of the file that did not become entries when it was opened (a torn last
    /// line, a malformed line), in file order. Empty for a clean file.
    pub fn load_issues(&self) -> &[LoadIssue] {
        self.issues()
    }

    /// Every entry in file order (the header not included).
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.type_name() != "session")
    }

    /// The entry with this id.
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.by_id.get(id).map(|&i| &self.entries[i])
    }

    /// The leaf's id (`None` before the first entry or after [`reset_leaf`](Self::reset_leaf)).
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// The leaf entry.
    pub fn leaf_entry(&self) -> Option<&Entry> {
        self.leaf.as_deref().and_then(|id| self.entry(id))
    }

    /// The direct children of an entry (`None`: the roots), in file order.
    pub fn children(&self, parent_id: Option<&str>) -> Vec<&Entry> {
        self.entries()
            .filter(|e| e.id().is_some() && e.parent_id() == parent_id)
            .collect()
    }

    /// The label of an entry.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.label_of(id)
    }

    /// The session's name, from the latest `session_info` entry (`None` when cleared).
    pub fn session_name(&self) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.entry_type() == EntryType::SessionInfo)
            .and_then(|e| e.str_field("name"))
            .map(str::trim)
            .filter(|n| !n.is_empty())
    }

    /// The path from the root to `from` (the leaf when `None`), every entry type included;
    /// empty when the id is unknown or the leaf is reset.
    pub fn branch_path(&self, from: Option<&str>) -> Vec<&Entry> {
        let start = from.or(self.leaf.as_deref());
        match start {
            Some(id) if self.by_id.contains_key(id) => {
                context::path(&self.entries, &self.by_id, Some(id))
            }
            _ => Vec::new(),
        }
    }

    /// The entries the context is built from (pi's `buildContextEntries`): the path with the
    /// latest compaction in place of what it summarized.
    pub fn context_entries(&self) -> Vec<&Entry> {
        context::context_entries(&context::path(
            &self.entries,
            &self.by_id,
            self.leaf.as_deref(),
        ))
    }

    /// The context a request is built from (pi's `buildSessionContext`).
    pub fn build_session_context(&self) -> SessionContext {
        context::build(&self.entries, &self.by_id, self.leaf.as_deref())
    }

    /// Writes the path from the root to `leaf_id` into a new session file (labels of entries
    /// on the path kept, `parentSession` naming this file) and continues in it. Returns the new
    /// file, or `None` for a session in memory (whose entries are replaced likewise).
    pub fn create_branched_session(&mut self, leaf_id: &str) -> Result<Option<PathBuf>> {
        let path: Vec<Entry> = self
            .branch_path(Some(leaf_id))
            .into_iter()
            .cloned()
            .collect();
        if path.is_empty() {
            return Err(SessionError::EntryNotFound { id: leaf_id.into() });
        }
        // Labels are left out and written again at the end; an entry whose parent was a label
        // is chained to the entry before it.
        let mut kept: Vec<Entry> = Vec::new();
        let mut pending_labels: Vec<String> = Vec::new();
        let mut replacement: std::collections::HashMap<String, String> = Default::default();
        let mut parent: Option<String> = None;
        for mut entry in path {
            let id = entry.id().unwrap_or_default().to_string();
            if entry.entry_type() == EntryType::Label {
                pending_labels.push(id);
                continue;
            }
            for label in pending_labels.drain(..) {
                replacement.insert(label, id.clone());
            }
            if entry.parent_id() != parent.as_deref() {
                entry.json_mut().insert(
                    "parentId".into(),
                    parent.clone().map_or(Value::Null, Value::from),
                );
            }
            if entry.type_name() == "compaction" {
                let first = entry.str_field("firstKeptEntryId").map(str::to_string);
                if let Some(first) = first.filter(|f| *f != id) {
                    if let Some(to) = replacement.get(&first) {
                        entry
                            .json_mut()
                            .insert("firstKeptEntryId".into(), to.clone().into());
                    }
                }
            }
            parent = Some(id);
            kept.push(entry);
        }
        let kept_ids: std::collections::HashMap<String, ()> = kept
            .iter()
            .filter_map(|e| e.id())
            .map(|id| (id.to_string(), ()))
            .collect();
        let mut labels: Vec<(String, String, Option<String>)> = self
            .labels_iter()
            .filter(|(target, _, _)| kept_ids.contains_key(*target))
            .map(|(t, l, at)| (t.to_string(), l.to_string(), at.map(str::to_string)))
            .collect();
        labels.sort();
        let mut taken = kept_ids.clone();
        for (target, label, at) in labels {
            let id = ids::entry_id(&taken);
            taken.insert(id.clone(), ());
            let mut m = serde_json::Map::new();
            m.insert("type".into(), "label".into());
            m.insert("id".into(), id.clone().into());
            m.insert(
                "parentId".into(),
                parent.clone().map_or(Value::Null, Value::from),
            );
            m.insert("timestamp".into(), at.map_or(Value::Null, Value::from));
            m.insert("targetId".into(), target.into());
            m.insert("label".into(), label.into());
            kept.push(Entry::from_json(m));
            parent = Some(id);
        }
        let previous = self.file_path().map(|p| p.to_string_lossy().into_owned());
        let new_id = ids::session_id();
        let timestamp = now_iso();
        let persisted = previous.is_some() && self.is_persisted();
        self.header = SessionHeader::new(
            &new_id,
            &timestamp,
            &self.cwd_path().to_string_lossy(),
            if persisted { previous.as_deref() } else { None },
        );
        self.entries = kept;
        self.rebuild_index();
        if !persisted {
            return Ok(None);
        }
        let file = self
            .dir_path()
            .join(format!("{}_{new_id}.jsonl", file_stamp(&timestamp)));
        self.set_file(file.clone());
        if self
            .entries
            .iter()
            .any(|e| matches!(e.message_role(), Some("user" | "assistant")))
        {
            let bytes = self.all_lines()?;
            self.set_writer(Some(Writer::create_new(&file, &bytes)?));
        } else {
            self.set_writer(None);
        }
        Ok(Some(file))
    }
}
