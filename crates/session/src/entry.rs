//! Session entries as pi 1.6 writes them, kept as their raw JSON objects so every field (and
//! every entry type oxpi does not know) is written back as it was read.

use serde_json::{Map, Value};

/// The version of the session format oxpi writes (pi's `CURRENT_SESSION_VERSION`).
pub const CURRENT_SESSION_VERSION: u64 = 3;

/// The entry types pi 1.6 writes, and any other kept by name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryType {
    /// `message`: an agent message (`user`, `assistant`, `toolResult`, `system`, `custom`, …).
    Message,
    /// `model_change`: `provider`, `modelId`.
    ModelChange,
    /// `thinking_level_change`: `thinkingLevel`.
    ThinkingLevelChange,
    /// `compaction`: `summary`, `firstKeptEntryId`, `tokensBefore`, optional `systemMessage`.
    Compaction,
    /// `branch_summary`: `fromId`, `summary`.
    BranchSummary,
    /// `custom`: extension state, not in the model's context.
    Custom,
    /// `custom_message`: an extension's message, in the model's context.
    CustomMessage,
    /// `label`: `targetId`, `label` (absent to clear).
    Label,
    /// `session_info`: `name`.
    SessionInfo,
    /// `usage`: usage not attributed to an assistant message.
    Usage,
    /// `context_edit`: `targetId`, `replacement` (null omits the target from the context).
    ContextEdit,
    /// Any other `type`, kept and written back unchanged.
    Other(String),
}

impl EntryType {
    /// The type of a `type` string.
    pub fn from_name(name: &str) -> Self {
        match name {
            "message" => Self::Message,
            "model_change" => Self::ModelChange,
            "thinking_level_change" => Self::ThinkingLevelChange,
            "compaction" => Self::Compaction,
            "branch_summary" => Self::BranchSummary,
            "custom" => Self::Custom,
            "custom_message" => Self::CustomMessage,
            "label" => Self::Label,
            "session_info" => Self::SessionInfo,
            "usage" => Self::Usage,
            "context_edit" => Self::ContextEdit,
            other => Self::Other(other.to_string()),
        }
    }

    /// The `type` string.
    pub fn name(&self) -> &str {
        match self {
            Self::Message => "message",
            Self::ModelChange => "model_change",
            Self::ThinkingLevelChange => "thinking_level_change",
            Self::Compaction => "compaction",
            Self::BranchSummary => "branch_summary",
            Self::Custom => "custom",
            Self::CustomMessage => "custom_message",
            Self::Label => "label",
            Self::SessionInfo => "session_info",
            Self::Usage => "usage",
            Self::ContextEdit => "context_edit",
            Self::Other(name) => name,
        }
    }
}

/// One line of a session file other than the header: a JSON object with `type`, `id`,
/// `parentId` and `timestamp`, and the fields of its type.
///
/// An entry read from a file keeps its line as it was read, and is written back with those
/// very bytes as long as it is not changed (a string holding a lone UTF-16 surrogate, which
/// pi writes as `"\ud83d"`, reads as U+FFFD but is written back as pi wrote it).
#[derive(Debug, Clone)]
pub struct Entry {
    raw: Map<String, Value>,
    /// The line as read (without its newline), while `raw` is unchanged.
    line: Option<Box<[u8]>>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl Entry {
    /// An entry of its JSON object, taken as it is.
    pub fn from_json(raw: Map<String, Value>) -> Self {
        Self { raw, line: None }
    }

    /// An entry read from `line` (its bytes, without the newline), parsed as `raw`.
    pub(crate) fn from_line(raw: Map<String, Value>, line: &[u8]) -> Self {
        Self {
            raw,
            line: Some(line.into()),
        }
    }

    /// The entry's line, with its newline: the bytes it was read from when it is unchanged.
    pub(crate) fn to_line(&self) -> crate::error::Result<Vec<u8>> {
        match &self.line {
            Some(line) => {
                let mut out = Vec::with_capacity(line.len() + 1);
                out.extend_from_slice(line);
                out.push(b'\n');
                Ok(out)
            }
            None => crate::file::json_line(&self.raw),
        }
    }

    /// Adds string-or-null fields the entry does not have, keeping the rest of its line as it
    /// was read (the fields are added at the end, as pi's migration does).
    pub(crate) fn add_fields(&mut self, fields: &[(&str, Value)]) {
        if fields.iter().any(|(k, _)| self.raw.contains_key(*k)) {
            self.line = None;
        }
        if let Some(line) = self.line.take() {
            self.line = splice_fields(&line, fields);
        }
        for (key, value) in fields {
            self.raw.insert((*key).to_string(), value.clone());
        }
    }

    /// The JSON object, as it is written.
    pub fn as_json(&self) -> &Map<String, Value> {
        &self.raw
    }

    /// The JSON object.
    pub fn into_json(self) -> Map<String, Value> {
        self.raw
    }

    pub(crate) fn json_mut(&mut self) -> &mut Map<String, Value> {
        self.line = None;
        &mut self.raw
    }

    /// The `type` string (empty when it is missing or not a string).
    pub fn type_name(&self) -> &str {
        self.str_field("type").unwrap_or("")
    }

    /// The entry's type.
    pub fn entry_type(&self) -> EntryType {
        EntryType::from_name(self.type_name())
    }

    /// The entry's id (every entry has one after migration; `None` only for a hand-made file).
    pub fn id(&self) -> Option<&str> {
        self.str_field("id")
    }

    /// The parent's id; `None` for a root.
    pub fn parent_id(&self) -> Option<&str> {
        self.str_field("parentId")
    }

    /// The ISO 8601 `timestamp`.
    pub fn timestamp(&self) -> Option<&str> {
        self.str_field("timestamp")
    }

    /// A field of the entry.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.raw.get(field)
    }

    /// A string field of the entry.
    pub fn str_field(&self, field: &str) -> Option<&str> {
        self.raw.get(field).and_then(Value::as_str)
    }

    /// The `message` of a `message` entry, as its raw JSON (any role, including those
    /// `oxpi_ai::Message` has no variant for).
    pub fn message_json(&self) -> Option<&Value> {
        if self.entry_type() == EntryType::Message {
            self.raw.get("message")
        } else {
            None
        }
    }

    /// The message's `role` (`user`, `assistant`, `toolResult`, `system`, `custom`, …).
    pub fn message_role(&self) -> Option<&str> {
        self.message_json()
            .and_then(|m| m.get("role"))
            .and_then(Value::as_str)
    }

    /// The message as an `oxpi_ai::Message`: `None` when this is not a `message` entry, an error
    /// when its role or fields are not one oxpi-ai reads (a `system` or `custom` message, …).
    pub fn message(&self) -> Option<Result<oxpi_ai::Message, serde_json::Error>> {
        self.message_json()
            .map(|m| serde_json::from_value(m.clone()))
    }
}

/// `line` (a JSON object) with `fields` added before its closing brace; `None` when the line
/// does not end with `}`.
fn splice_fields(line: &[u8], fields: &[(&str, Value)]) -> Option<Box<[u8]>> {
    let end = line.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if line[end] != b'}' {
        return None;
    }
    let body = &line[..end];
    let empty = body
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .is_some_and(|last| body[last] == b'{');
    let mut out = body.to_vec();
    for (index, (key, value)) in fields.iter().enumerate() {
        if !(empty && index == 0) {
            out.push(b',');
        }
        out.extend(serde_json::to_vec(key).ok()?);
        out.push(b':');
        out.extend(serde_json::to_vec(value).ok()?);
    }
    out.push(b'}');
    Some(out.into())
}

/// The first line of a session file: `type: "session"`, `version`, `id`, `timestamp`, `cwd`,
/// and `parentSession` for a fork; kept as its raw JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionHeader {
    raw: Map<String, Value>,
}

impl SessionHeader {
    pub(crate) fn new(id: &str, timestamp: &str, cwd: &str, parent_session: Option<&str>) -> Self {
        let mut raw = Map::new();
        raw.insert("type".into(), "session".into());
        raw.insert("version".into(), CURRENT_SESSION_VERSION.into());
        raw.insert("id".into(), id.into());
        raw.insert("timestamp".into(), timestamp.into());
        raw.insert("cwd".into(), cwd.into());
        if let Some(parent) = parent_session {
            raw.insert("parentSession".into(), parent.into());
        }
        Self { raw }
    }

    /// A header of its JSON object, if it is one: `type: "session"` and a string `id`.
    pub fn from_json(raw: Map<String, Value>) -> Option<Self> {
        Self::is_header(&raw).then_some(Self { raw })
    }

    /// Whether a JSON object is a header: `type: "session"` and a string `id`.
    pub(crate) fn is_header(raw: &Map<String, Value>) -> bool {
        raw.get("type").and_then(Value::as_str) == Some("session")
            && raw.get("id").is_some_and(Value::is_string)
    }

    /// The JSON object, as it is written.
    pub fn as_json(&self) -> &Map<String, Value> {
        &self.raw
    }

    pub(crate) fn json_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.raw
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.raw.get("id").and_then(Value::as_str).unwrap_or("")
    }

    /// The format version (1 when absent, as pi reads it).
    pub fn version(&self) -> u64 {
        self.raw.get("version").and_then(Value::as_u64).unwrap_or(1)
    }

    /// The working directory the session belongs to.
    pub fn cwd(&self) -> Option<&str> {
        self.raw.get("cwd").and_then(Value::as_str)
    }

    /// When the session was created (ISO 8601).
    pub fn timestamp(&self) -> Option<&str> {
        self.raw.get("timestamp").and_then(Value::as_str)
    }

    /// The file this session was forked or branched from.
    pub fn parent_session(&self) -> Option<&str> {
        self.raw.get("parentSession").and_then(Value::as_str)
    }
}
