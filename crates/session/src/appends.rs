//! The entries a [`SessionManager`] appends, one method per entry type pi writes.

use serde_json::{json, Map, Value};

use crate::context;
use crate::entry::EntryType;
use crate::error::{Result, SessionError};
use crate::ids;
use crate::manager::SessionManager;
use crate::time::{iso_to_millis, now_iso};

impl SessionManager {
    /// A new entry object of `kind`: `type`, a fresh `id`, `parentId` (the leaf), `timestamp`.
    fn base(&self, kind: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), kind.into());
        m.insert("id".into(), ids::entry_id(&self.by_id).into());
        m.insert(
            "parentId".into(),
            self.leaf.clone().map_or(Value::Null, Value::from),
        );
        m.insert("timestamp".into(), now_iso().into());
        m
    }

    /// Appends an entry of any `kind` with `fields` (an extension's own type, say); `type`,
    /// `id`, `parentId` and `timestamp` are set here. Returns its id.
    pub fn append_entry(&mut self, kind: &str, fields: Map<String, Value>) -> Result<String> {
        let mut m = self.base(kind);
        for (k, v) in fields {
            if !matches!(k.as_str(), "type" | "id" | "parentId" | "timestamp") {
                m.insert(k, v);
            }
        }
        self.push(m)
    }

    /// Appends a message (as its JSON) as a child of the leaf; returns the entry's id.
    ///
    /// The message is written as its own serialization, so the order of its fields and of a
    /// system message's `sections` (which pi renders in their order) is kept on disk.
    pub fn append_message(&mut self, message: &oxpi_ai::Message) -> Result<String> {
        let serialize = |source| SessionError::Serialize {
            kind: "message".into(),
            source,
        };
        let text = serde_json::to_vec(message).map_err(serialize)?;
        let value: Value = serde_json::from_slice(&text).map_err(serialize)?;
        let base = self.base("message");
        let mut line = serde_json::to_vec(&base).map_err(serialize)?;
        // `base` is a non-empty object: its text ends with `}`.
        line.pop();
        line.extend_from_slice(b",\"message\":");
        line.extend_from_slice(&text);
        line.push(b'}');
        let mut raw = base;
        raw.insert("message".into(), value);
        self.push_line(raw, line)
    }

    /// Appends a message given as raw JSON (any role pi has: `system`, `custom`,
    /// `bashExecution`, …), written back with the same fields (object keys in name order: use
    /// [`append_message`](Self::append_message) where the order of keys matters).
    pub fn append_message_json(&mut self, message: Value) -> Result<String> {
        let mut m = self.base("message");
        m.insert("message".into(), message);
        self.push(m)
    }

    /// Appends a thinking level change.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String> {
        let mut m = self.base("thinking_level_change");
        m.insert("thinkingLevel".into(), level.into());
        self.push(m)
    }

    /// Appends a model change.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String> {
        let mut m = self.base("model_change");
        m.insert("provider".into(), provider.into());
        m.insert("modelId".into(), model_id.into());
        self.push(m)
    }

    /// Appends usage that belongs to no assistant message (`kind`: `cache_warm`, …).
    pub fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: Value,
        note: Option<&str>,
    ) -> Result<String> {
        let mut m = self.base("usage");
        m.insert("kind".into(), kind.into());
        m.insert("provider".into(), provider.into());
        m.insert("model".into(), model.into());
        m.insert("usage".into(), usage);
        if let Some(note) = note.filter(|n| !n.is_empty()) {
            m.insert("note".into(), note.into());
        }
        self.push(m)
    }

    /// Appends a compaction: `summary` replaces the path before `first_kept_entry_id` (`None`:
    /// nothing before the compaction is kept, its own id is stored). The current system
    /// message (every system message on the path replayed) is stored with it, as pi does.
    pub fn append_compaction(&mut self, compaction: CompactionRecord) -> Result<String> {
        let system = context::current_system_message(&self.build_session_context().messages);
        let mut m = self.base("compaction");
        let id = m.get("id").cloned().unwrap_or(Value::Null);
        let timestamp = m
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_string);
        m.insert("summary".into(), compaction.summary.into());
        m.insert(
            "firstKeptEntryId".into(),
            compaction.first_kept_entry_id.map_or(id, Value::from),
        );
        m.insert("tokensBefore".into(), compaction.tokens_before.into());
        insert_some(&mut m, "details", compaction.details);
        insert_some(&mut m, "usage", compaction.usage);
        insert_some(&mut m, "fromHook", compaction.from_hook.map(Value::from));
        let Some(system) = system else {
            return self.push(m);
        };
        // The system message written as its own text, so its sections keep their order.
        let at = timestamp.as_deref().and_then(iso_to_millis).unwrap_or(0);
        let text = system.to_json(Some(at.into()));
        let mut line = serde_json::to_vec(&m).map_err(|source| SessionError::Serialize {
            kind: "compaction".into(),
            source,
        })?;
        // `m` is a non-empty object: its text ends with `}`.
        line.pop();
        line.extend_from_slice(b",\"systemMessage\":");
        line.extend_from_slice(&text);
        line.push(b'}');
        let value = serde_json::from_slice(&text).unwrap_or(Value::Null);
        m.insert("systemMessage".into(), value);
        self.push_line(m, line)
    }

    /// Appends an extension's state (not in the model's context).
    pub fn append_custom_entry(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<String> {
        let mut m = self.base("custom");
        m.insert("customType".into(), custom_type.into());
        insert_some(&mut m, "data", data);
        self.push(m)
    }

    /// Appends an extension's message, which is in the model's context (`content`: a string or
    /// text and image blocks).
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: Value,
        display: bool,
        details: Option<Value>,
    ) -> Result<String> {
        let mut m = self.base("custom_message");
        m.insert("customType".into(), custom_type.into());
        m.insert("content".into(), content);
        m.insert("display".into(), display.into());
        insert_some(&mut m, "details", details);
        self.push(m)
    }

    /// Appends the session's display name (line breaks become spaces, trimmed).
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        let clean = name
            .split(['\r', '\n'])
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let mut m = self.base("session_info");
        m.insert("name".into(), clean.trim().into());
        self.push(m)
    }

    /// Sets (`Some`) or clears (`None`) the label of an entry.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        if !self.by_id.contains_key(target_id) {
            return Err(SessionError::EntryNotFound {
                id: target_id.into(),
            });
        }
        let mut m = self.base("label");
        m.insert("targetId".into(), target_id.into());
        if let Some(label) = label {
            m.insert("label".into(), label.into());
        }
        self.push(m)
    }

    /// Appends an edit of an earlier entry's model content on the current branch: `None`
    /// leaves the entry out of the context, `Some({"content": …})` replaces its content.
    pub fn append_context_edit(
        &mut self,
        target_id: &str,
        replacement: Option<Value>,
    ) -> Result<String> {
        if let Some(r) = &replacement {
            if !r
                .get("content")
                .is_some_and(|c| c.is_string() || c.is_array())
            {
                return Err(SessionError::Invalid(
                    "a context edit's replacement must be null or hold string or array content"
                        .into(),
                ));
            }
        }
        let target = self
            .entry(target_id)
            .ok_or_else(|| SessionError::EntryNotFound {
                id: target_id.into(),
            })?;
        if !self
            .branch_path(None)
            .iter()
            .any(|e| e.id() == Some(target_id))
        {
            return Err(SessionError::Invalid(format!(
                "entry {target_id} is not on the current branch"
            )));
        }
        let role = match target.entry_type() {
            EntryType::CustomMessage => "custom",
            EntryType::Message => target.message_role().unwrap_or(""),
            _ => "",
        };
        if !matches!(role, "custom" | "user" | "assistant" | "toolResult") {
            return Err(SessionError::Invalid(format!(
                "entry {target_id} has no model content to edit"
            )));
        }
        let replacement = match replacement {
            Some(r) if matches!(role, "assistant" | "toolResult") => match r.get("content") {
                Some(Value::String(text)) => json!({"content": [{"type": "text", "text": text}]}),
                _ => r,
            },
            Some(r) => r,
            None => Value::Null,
        };
        let mut m = self.base("context_edit");
        m.insert("targetId".into(), target_id.into());
        m.insert("replacement".into(), replacement);
        self.push(m)
    }

    /// Moves the leaf to `entry_id`: the next entry starts a branch there.
    pub fn branch(&mut self, entry_id: &str) -> Result<()> {
        if !self.by_id.contains_key(entry_id) {
            return Err(SessionError::EntryNotFound {
                id: entry_id.into(),
            });
        }
        self.leaf = Some(entry_id.into());
        Ok(())
    }

    /// Moves the leaf before every entry: the next entry is a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// Branches at `entry_id` (`None`: a new root) with a summary of the path left behind,
    /// appended as a `branch_summary` entry whose `fromId` is the old leaf.
    pub fn branch_with_summary(
        &mut self,
        entry_id: Option<&str>,
        summary: &str,
        details: Option<Value>,
    ) -> Result<String> {
        if let Some(id) = entry_id {
            if !self.by_id.contains_key(id) {
                return Err(SessionError::EntryNotFound { id: id.into() });
            }
        }
        let from = self.leaf.clone().unwrap_or_else(|| "root".into());
        self.leaf = entry_id.map(str::to_string);
        let mut m = self.base("branch_summary");
        m.insert("fromId".into(), from.into());
        m.insert("summary".into(), summary.into());
        insert_some(&mut m, "details", details);
        self.push(m)
    }
}

/// A compaction to append: what [`SessionManager::append_compaction`] writes.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CompactionRecord {
    /// The summary of what is left out.
    pub summary: String,
    /// The first entry kept (`None`: none).
    pub first_kept_entry_id: Option<String>,
    /// The context's tokens before compacting.
    pub tokens_before: u64,
    /// pi's `{readFiles, modifiedFiles}`, or an extension's data.
    pub details: Option<Value>,
    /// The usage of making the summary.
    pub usage: Option<Value>,
    /// Whether an extension made it.
    pub from_hook: Option<bool>,
}

impl CompactionRecord {
    /// A compaction with `summary`, keeping from `first_kept_entry_id`.
    pub fn new(
        summary: impl Into<String>,
        first_kept_entry_id: Option<String>,
        tokens_before: u64,
    ) -> Self {
        Self {
            summary: summary.into(),
            first_kept_entry_id,
            tokens_before,
            ..Self::default()
        }
    }

    /// Sets the details.
    pub fn details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Sets the summary's usage.
    pub fn usage(mut self, usage: Value) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Marks it as made by an extension.
    pub fn from_hook(mut self, from_hook: bool) -> Self {
        self.from_hook = Some(from_hook);
        self
    }
}

fn insert_some(m: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        m.insert(key.into(), value);
    }
}
