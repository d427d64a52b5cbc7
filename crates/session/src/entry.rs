//! Session entries as pi 1.6 writes them, kept as their raw JSON objects so every field (and
//! every entry type oxpi does not know) is written back as it was read.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::head::{Head, MessageHead};
use crate::text::{Span, Text};

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
/// pi writes as `"\ud83d"`, reads as U+FFFD but is written back as pi wrote it). It keeps the
/// line as text, shared with the file's other lines, with its `type`, `id`, `parentId`,
/// `timestamp` and message role read; the JSON object is built the first time something asks
/// for it ([`as_json`](Self::as_json), [`get`](Self::get)).
#[derive(Debug, Clone)]
pub struct Entry {
    /// As read from a file and not changed since (then `raw` and `line` are unused).
    read: Option<Box<Read>>,
    /// Built, or changed: the object.
    raw: Map<String, Value>,
    /// The line of `raw`, while it is known.
    line: Option<Box<[u8]>>,
}

#[derive(Debug, Clone)]
struct Read {
    /// The JSON text (a lone surrogate escape replaced by `\ufffd`).
    text: Text,
    /// The line as read, when it is not `text`.
    original: Option<Box<[u8]>>,
    head: Head,
    /// The object, once asked for.
    raw: OnceLock<Map<String, Value>>,
}

impl Read {
    fn raw(&self) -> &Map<String, Value> {
        // The text parsed as an object when it was read, so this parse succeeds.
        self.raw
            .get_or_init(|| serde_json::from_str(self.text.as_str()).unwrap_or_default())
    }

    fn line(&self) -> &[u8] {
        self.original.as_deref().unwrap_or(self.text.bytes())
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.as_json() == other.as_json()
    }
}

impl Entry {
    /// An entry of its JSON object, taken as it is.
    pub fn from_json(raw: Map<String, Value>) -> Self {
        Self {
            read: None,
            raw,
            line: None,
        }
    }

    /// An entry read from `line` (its bytes, without the newline), parsed as `raw`.
    pub(crate) fn from_line(raw: Map<String, Value>, line: &[u8]) -> Self {
        Self {
            read: None,
            raw,
            line: Some(line.into()),
        }
    }

    /// An entry of the JSON object `text` whose fields `head` was read from; `original` is the
    /// line as read when it is not `text`.
    pub(crate) fn from_text(text: Text, head: Head, original: Option<Box<[u8]>>) -> Self {
        Self {
            read: Some(Box::new(Read {
                text,
                original,
                head,
                raw: OnceLock::new(),
            })),
            raw: Map::new(),
            line: None,
        }
    }

    /// This entry with its object replaced by its line, as an entry read from a file keeps it
    /// (so a context shares its message rather than copying it); unchanged when the object
    /// cannot be written or read back that way.
    pub(crate) fn into_shared(self) -> Self {
        if self.read.is_some() {
            return self;
        }
        let line = match &self.line {
            Some(line) => Ok(line.to_vec()),
            None => serde_json::to_vec(&self.raw),
        };
        let Ok(mut line) = line else {
            return self;
        };
        let head = std::str::from_utf8(&line).ok().and_then(crate::head::read);
        match head {
            Some(head) => {
                line.shrink_to_fit();
                Self::from_text(Text::owned(line), head, None)
            }
            None => self,
        }
    }

    /// The entry's line, with its newline: the bytes it was read from when it is unchanged.
    pub(crate) fn to_line(&self) -> crate::error::Result<Vec<u8>> {
        let line = match (&self.read, &self.line) {
            (Some(read), _) => read.line(),
            (None, Some(line)) => line,
            (None, None) => return crate::file::json_line(&self.raw),
        };
        let mut out = Vec::with_capacity(line.len() + 1);
        out.extend_from_slice(line);
        out.push(b'\n');
        Ok(out)
    }

    /// The entry as a changeable object, with its line while it is unchanged.
    fn object_mut(&mut self) -> (&mut Map<String, Value>, &mut Option<Box<[u8]>>) {
        if let Some(mut read) = self.read.take() {
            self.raw = std::mem::take(&mut read.raw)
                .into_inner()
                .unwrap_or_else(|| read.raw().clone());
            self.line = Some(read.line().into());
        }
        (&mut self.raw, &mut self.line)
    }

    /// Adds string-or-null fields the entry does not have, keeping the rest of its line as it
    /// was read (the fields are added at the end, as pi's migration does).
    pub(crate) fn add_fields(&mut self, fields: &[(&str, Value)]) {
        let (raw, line) = self.object_mut();
        if fields.iter().any(|(k, _)| raw.contains_key(*k)) {
            *line = None;
        }
        if let Some(old) = line.take() {
            *line = splice_fields(&old, fields);
        }
        for (key, value) in fields {
            raw.insert((*key).to_string(), value.clone());
        }
    }

    /// The JSON object, as it is written.
    pub fn as_json(&self) -> &Map<String, Value> {
        match &self.read {
            Some(read) => read.raw(),
            None => &self.raw,
        }
    }

    /// The JSON object.
    pub fn into_json(self) -> Map<String, Value> {
        match self.read {
            Some(read) => {
                let read = *read;
                match read.raw.into_inner() {
                    Some(raw) => raw,
                    None => serde_json::from_str(read.text.as_str()).unwrap_or_default(),
                }
            }
            None => self.raw,
        }
    }

    pub(crate) fn json_mut(&mut self) -> &mut Map<String, Value> {
        let (raw, line) = self.object_mut();
        *line = None;
        raw
    }

    fn head(&self) -> Option<&Head> {
        self.read.as_ref().map(|read| &read.head)
    }

    /// A string field of the head, read from the line.
    fn head_field(&self, span: impl Fn(&Head) -> Option<Span>) -> Option<&str> {
        let read = self.read.as_ref()?;
        read.text.field(span(&read.head))
    }

    /// The `type` string (empty when it is missing or not a string).
    pub fn type_name(&self) -> &str {
        match self.head() {
            Some(head) => head.kind.as_ref().map_or("", EntryType::name),
            None => self.str_field("type").unwrap_or(""),
        }
    }

    /// The entry's type.
    pub fn entry_type(&self) -> EntryType {
        match self.head() {
            Some(Head {
                kind: Some(kind), ..
            }) => kind.clone(),
            _ => EntryType::from_name(self.type_name()),
        }
    }

    /// Whether the entry is of this type (no allocation for an unknown type).
    pub(crate) fn is(&self, kind: &EntryType) -> bool {
        match self.head() {
            Some(head) => head.kind.as_ref() == Some(kind),
            None => self.type_name() == kind.name() && !self.type_name().is_empty(),
        }
    }

    /// The entry's id (every entry has one after migration; `None` only for a hand-made file).
    pub fn id(&self) -> Option<&str> {
        match self.head() {
            Some(_) => self.head_field(|h| h.id),
            None => self.str_field("id"),
        }
    }

    /// The parent's id; `None` for a root.
    pub fn parent_id(&self) -> Option<&str> {
        match self.head() {
            Some(_) => self.head_field(|h| h.parent_id),
            None => self.str_field("parentId"),
        }
    }

    /// The ISO 8601 `timestamp`.
    pub fn timestamp(&self) -> Option<&str> {
        match self.head() {
            Some(_) => self.head_field(|h| h.timestamp),
            None => self.str_field("timestamp"),
        }
    }

    /// A field of the entry.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.as_json().get(field)
    }

    /// A string field of the entry.
    pub fn str_field(&self, field: &str) -> Option<&str> {
        if let Some(head) = self.head() {
            match field {
                "type" => return head.kind.as_ref().map(EntryType::name),
                "id" => return self.id(),
                "parentId" => return self.parent_id(),
                "timestamp" => return self.timestamp(),
                _ => {}
            }
        }
        self.get(field).and_then(Value::as_str)
    }

    /// The `message` of a `message` entry, as its raw JSON (any role, including those
    /// `oxpi_ai::Message` has no variant for).
    pub fn message_json(&self) -> Option<&Value> {
        if self.is(&EntryType::Message) {
            self.get("message")
        } else {
            None
        }
    }

    /// The JSON text of a `message` entry's message as it was read from the file (a lone
    /// surrogate escape replaced by `\ufffd`); `None` for another entry, or one built or
    /// changed since it was read.
    pub fn message_text(&self) -> Option<&str> {
        let (text, message) = self.read_message()?;
        text.field(Some(message.span))
    }

    /// The entry's JSON text (shared), for an entry read from a file (or appended) and unchanged.
    pub(crate) fn read_text(&self) -> Option<&Text> {
        self.read.as_ref().map(|read| &read.text)
    }

    /// The message's text (shared) and head, for an unchanged `message` entry read from a file.
    pub(crate) fn read_message(&self) -> Option<(&Text, &MessageHead)> {
        let read = self.read.as_ref()?;
        read.head.message.as_ref().map(|m| (&read.text, m))
    }

    /// The message's `role` (`user`, `assistant`, `toolResult`, `system`, `custom`, …).
    pub fn message_role(&self) -> Option<&str> {
        match self.head() {
            Some(head) => head.message.as_ref().and_then(|m| m.role.as_deref()),
            None => self
                .message_json()
                .and_then(|m| m.get("role"))
                .and_then(Value::as_str),
        }
    }

    /// The message as an `oxpi_ai::Message`: `None` when this is not a `message` entry, an error
    /// when its role or fields are not one oxpi-ai reads (a `system` or `custom` message, …).
    pub fn message(&self) -> Option<Result<oxpi_ai::Message, serde_json::Error>> {
        if let Some(text) = self.message_text() {
            if let Ok(message) = serde_json::from_str(text) {
                return Some(Ok(message));
            }
        }
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
