//! [`SessionManager`]: one session as an append-only tree of entries in a JSONL file, with a
//! leaf pointer, as pi's `SessionManager`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::entry::{Entry, EntryType, SessionHeader};
use crate::error::{Result, SessionError};
use crate::file::{self, json_line, LoadIssue, Writer};
use crate::list::{absolute, most_recent_session};
use crate::time::{file_stamp, now_iso};
use crate::{ids, migrate};

/// Options of a new session.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct NewSessionOptions {
    /// The session id (a UUIDv7 when `None`); alphanumerics, `-`, `_`, `.`.
    pub id: Option<String>,
    /// The file this session continues from (`parentSession` in the header).
    pub parent_session: Option<String>,
}

impl NewSessionOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the session id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the parent session file.
    pub fn parent_session(mut self, path: impl Into<String>) -> Self {
        self.parent_session = Some(path.into());
        self
    }
}

/// How the session is stored.
#[derive(Debug)]
enum Storage {
    /// In a file; `writer` is `None` until the file is first written (pi writes a new session's
    /// file only once it holds a user or assistant message).
    File { writer: Option<Writer> },
    /// Read from a file, never written.
    ReadOnly,
    /// In memory only.
    Memory,
}

/// A session: its header, its entries in file order, and the leaf new entries are appended to.
///
/// Every append is written to the file as one line before it returns, so a crash or kill loses
/// at most the entry being written. A writable manager holds the file's advisory lock
/// (`flock`); a second writer of the same file, in this process or another, is refused with
/// [`SessionError::Locked`].
#[derive(Debug)]
pub struct SessionManager {
    pub(crate) header: SessionHeader,
    pub(crate) entries: Vec<Entry>,
    pub(crate) by_id: HashMap<String, usize>,
    labels: HashMap<String, (String, Option<String>)>,
    pub(crate) leaf: Option<String>,
    cwd: PathBuf,
    session_dir: PathBuf,
    file: Option<PathBuf>,
    storage: Storage,
    issues: Vec<LoadIssue>,
}

impl SessionManager {
    fn blank(cwd: &Path, session_dir: &Path, storage: Storage) -> Self {
        Self {
            header: SessionHeader::new("", "", "", None),
            entries: Vec::new(),
            by_id: HashMap::new(),
            labels: HashMap::new(),
            leaf: None,
            cwd: absolute(cwd),
            session_dir: session_dir.to_path_buf(),
            file: None,
            storage,
            issues: Vec::new(),
        }
    }

    /// A new session of `cwd` in `session_dir` (created if missing). Its file,
    /// `<timestamp>_<id>.jsonl`, is written once the session holds a user or assistant message.
    pub fn create(cwd: &Path, session_dir: &Path, options: NewSessionOptions) -> Result<Self> {
        std::fs::create_dir_all(session_dir)
            .map_err(|e| SessionError::io("could not create", session_dir, e))?;
        let mut manager = Self::blank(cwd, session_dir, Storage::File { writer: None });
        manager.new_session(options)?;
        Ok(manager)
    }

    /// A session that lives in memory only.
    pub fn in_memory(cwd: &Path) -> Self {
        let mut manager = Self::blank(cwd, Path::new(""), Storage::Memory);
        // Default options are always valid.
        let _ = manager.new_session(NewSessionOptions::default());
        manager
    }

    /// Opens the session file at `path` for reading and appending (taking its lock). A v1 or v2
    /// file is migrated and rewritten; a last line cut off mid-write is reported in
    /// [`load_issues`](Self::load_issues) and the file gets the newline it lacked (as pi).
    /// A missing or empty file becomes a new session at that path (its folder is created now,
    /// as pi does, so a path that cannot be written fails here). New sessions made from this
    /// one go to `session_dir` (the file's directory when `None`).
    pub fn open(path: &Path, session_dir: Option<&Path>) -> Result<Self> {
        let path = absolute(path);
        let dir = session_dir.map_or_else(
            || path.parent().map(Path::to_path_buf).unwrap_or_default(),
            Path::to_path_buf,
        );
        if !path.exists() {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| SessionError::io("could not create", parent, e))?;
            }
            let cwd = std::env::current_dir().unwrap_or_default();
            let mut manager = Self::blank(&cwd, &dir, Storage::File { writer: None });
            manager.new_session(NewSessionOptions::default())?;
            manager.file = Some(path);
            return Ok(manager);
        }
        let mut writer = Writer::open(&path)?;
        let loaded = file::load(&path)?;
        let (mut manager, pending) = Self::from_loaded(&path, &dir, loaded, Storage::ReadOnly)?;
        match pending {
            Pending::Nothing => {}
            Pending::Newline => writer.append(b"\n")?,
            Pending::Rewrite => writer.replace(&manager.all_lines()?)?,
        }
        manager.storage = Storage::File {
            writer: Some(writer),
        };
        Ok(manager)
    }

    /// Opens the session file at `path` for reading only: no lock is taken and nothing is
    /// written (a v1 or v2 file is migrated in memory).
    pub fn open_read_only(path: &Path) -> Result<Self> {
        let path = absolute(path);
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let loaded = file::load(&path)?;
        if !loaded.any_object {
            return Err(SessionError::NotASession { path });
        }
        Ok(Self::from_loaded(&path, &dir, loaded, Storage::ReadOnly)?.0)
    }

    /// Continues the most recently modified session of `cwd` in `session_dir`, or creates one.
    pub fn continue_recent(cwd: &Path, session_dir: &Path) -> Result<Self> {
        match most_recent_session(session_dir, cwd)? {
            Some(path) => Self::open(&path, Some(session_dir)),
            None => Self::create(cwd, session_dir, NewSessionOptions::default()),
        }
    }

    /// Forks the session at `source` into a new file of `target_cwd` in `session_dir`: a new
    /// header (new id, `parentSession` naming the source) and every entry of the source.
    pub fn fork_from(
        source: &Path,
        target_cwd: &Path,
        session_dir: &Path,
        options: NewSessionOptions,
    ) -> Result<Self> {
        let source = absolute(source);
        let loaded = file::load(&source)?;
        if !loaded.any_object || loaded.header.is_none() {
            return Err(SessionError::NotASession { path: source });
        }
        let (from, _) = Self::from_loaded(&source, session_dir, loaded, Storage::ReadOnly)?;
        std::fs::create_dir_all(session_dir)
            .map_err(|e| SessionError::io("could not create", session_dir, e))?;
        let id = checked_id(options.id)?;
        let timestamp = now_iso();
        let target_cwd = absolute(target_cwd);
        let header = SessionHeader::new(
            &id,
            &timestamp,
            &target_cwd.to_string_lossy(),
            Some(&source.to_string_lossy()),
        );
        let path = session_dir.join(format!("{}_{id}.jsonl", file_stamp(&timestamp)));
        let mut bytes = json_line(header.as_json())?;
        for entry in &from.entries {
            bytes.extend(entry.to_line()?);
        }
        drop(Writer::create_new(&path, &bytes)?);
        Self::open(&path, Some(session_dir))
    }

    /// The manager of a loaded file, and what the file needs before it is appended to.
    fn from_loaded(
        path: &Path,
        dir: &Path,
        loaded: file::Loaded,
        storage: Storage,
    ) -> Result<(Self, Pending)> {
        let file::Loaded {
            header,
            mut entries,
            issues,
            unterminated,
            any_object,
            size,
        } = loaded;
        if !any_object {
            if size > 0 {
                return Err(SessionError::NotASession { path: path.into() });
            }
            // An empty file: a new session written at that path.
            let cwd = std::env::current_dir().unwrap_or_default();
            let mut manager = Self::blank(&cwd, dir, storage);
            manager.new_session(NewSessionOptions::default())?;
            manager.file = Some(path.into());
            manager.issues = issues;
            return Ok((manager, Pending::Rewrite));
        }
        let Some(mut header) = header else {
            return Err(SessionError::NotASession { path: path.into() });
        };
        let migrated = migrate::migrate(&mut header, &mut entries);
        let cwd = header
            .cwd()
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
        let mut manager = Self::blank(&cwd, dir, storage);
        manager.header = header;
        manager.entries = entries;
        manager.file = Some(path.into());
        manager.issues = issues;
        manager.build_index();
        let pending = if migrated {
            Pending::Rewrite
        } else if unterminated {
            Pending::Newline
        } else {
            Pending::Nothing
        };
        Ok((manager, pending))
    }

    /// Starts a new, empty session in this manager (a new id and header; the leaf at the
    /// root); returns the file it will be written to.
    pub fn new_session(&mut self, options: NewSessionOptions) -> Result<Option<PathBuf>> {
        let id = checked_id(options.id)?;
        let timestamp = now_iso();
        self.header = SessionHeader::new(
            &id,
            &timestamp,
            &self.cwd.to_string_lossy(),
            options.parent_session.as_deref(),
        );
        self.entries.clear();
        self.by_id.clear();
        self.labels.clear();
        self.leaf = None;
        self.issues.clear();
        if let Storage::File { writer } = &mut self.storage {
            *writer = None;
            self.file = Some(
                self.session_dir
                    .join(format!("{}_{id}.jsonl", file_stamp(&timestamp))),
            );
        }
        Ok(self.file.clone())
    }

    fn build_index(&mut self) {
        self.by_id.clear();
        self.labels.clear();
        self.leaf = None;
        for (index, entry) in self.entries.iter().enumerate() {
            if entry.type_name() == "session" {
                continue;
            }
            let Some(id) = entry.id() else { continue };
            self.by_id.insert(id.to_string(), index);
            self.leaf = Some(id.to_string());
            if entry.entry_type() == EntryType::Label {
                if let Some(target) = entry.str_field("targetId") {
                    match entry.str_field("label").filter(|l| !l.is_empty()) {
                        Some(label) => {
                            let at = entry.timestamp().map(str::to_string);
                            self.labels
                                .insert(target.to_string(), (label.to_string(), at));
                        }
                        None => {
                            self.labels.remove(target);
                        }
                    }
                }
            }
        }
    }

    /// The header and every entry, one JSON line each.
    pub(crate) fn all_lines(&self) -> Result<Vec<u8>> {
        let mut bytes = json_line(self.header.as_json())?;
        for entry in &self.entries {
            bytes.extend(entry.to_line()?);
        }
        Ok(bytes)
    }

    fn has_conversation(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.message_role(), Some("user" | "assistant")))
    }

    /// Appends `raw` (which has its `id`) as a child of the leaf and writes it; on a write error
    /// the entry is taken back, so no later entry can name it as its parent.
    pub(crate) fn push(&mut self, raw: Map<String, Value>) -> Result<String> {
        self.push_entry(Entry::from_json(raw).into_shared())
    }

    /// [`push`](Self::push) of `raw` written as `line` (its JSON text, field order as given).
    pub(crate) fn push_line(&mut self, raw: Map<String, Value>, line: Vec<u8>) -> Result<String> {
        self.push_entry(Entry::from_line(raw, &line).into_shared())
    }

    fn push_entry(&mut self, entry: Entry) -> Result<String> {
        let id = entry.id().unwrap_or_default().to_string();
        let previous_leaf = self.leaf.replace(id.clone());
        self.by_id.insert(id.clone(), self.entries.len());
        self.entries.push(entry);
        if let Err(e) = self.persist_last() {
            self.entries.pop();
            self.by_id.remove(&id);
            self.leaf = previous_leaf;
            return Err(e);
        }
        if let Some(entry) = self.entries.last() {
            if entry.entry_type() == EntryType::Label {
                self.build_index_labels_for_last();
            }
        }
        Ok(id)
    }

    fn build_index_labels_for_last(&mut self) {
        let Some(entry) = self.entries.last() else {
            return;
        };
        let Some(target) = entry.str_field("targetId").map(str::to_string) else {
            return;
        };
        match entry.str_field("label").filter(|l| !l.is_empty()) {
            Some(label) => {
                let at = entry.timestamp().map(str::to_string);
                self.labels.insert(target, (label.to_string(), at));
            }
            None => {
                self.labels.remove(&target);
            }
        }
    }

    fn persist_last(&mut self) -> Result<()> {
        let has_conversation = self.has_conversation();
        let Storage::File { writer } = &mut self.storage else {
            return match self.storage {
                Storage::ReadOnly => Err(SessionError::ReadOnly(self.header.id().to_string())),
                _ => Ok(()),
            };
        };
        if let Some(writer) = writer {
            let last = self.entries.last().map(Entry::to_line);
            return match last {
                Some(line) => writer.append(&line?),
                None => Ok(()),
            };
        }
        if !has_conversation {
            return Ok(());
        }
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        let bytes = self.all_lines()?;
        let created = Writer::create_new(&path, &bytes)?;
        self.set_writer(Some(created));
        Ok(())
    }
}

impl SessionManager {
    pub(crate) fn file_path(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    pub(crate) fn cwd_path(&self) -> &Path {
        &self.cwd
    }

    pub(crate) fn dir_path(&self) -> &Path {
        &self.session_dir
    }

    pub(crate) fn issues(&self) -> &[LoadIssue] {
        &self.issues
    }

    pub(crate) fn label_of(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(|(l, _)| l.as_str())
    }

    pub(crate) fn labels_iter(&self) -> impl Iterator<Item = (&str, &str, Option<&str>)> {
        self.labels
            .iter()
            .map(|(t, (l, at))| (t.as_str(), l.as_str(), at.as_deref()))
    }

    /// Whether entries are written to a file (not in memory, not read-only).
    pub fn is_persisted(&self) -> bool {
        matches!(self.storage, Storage::File { .. })
    }

    pub(crate) fn rebuild_index(&mut self) {
        self.build_index();
    }

    pub(crate) fn set_file(&mut self, file: PathBuf) {
        self.file = Some(file);
    }

    pub(crate) fn set_writer(&mut self, new: Option<Writer>) {
        if let Storage::File { writer } = &mut self.storage {
            *writer = new;
        }
    }
}

/// What a loaded file needs before entries are appended to it.
enum Pending {
    Nothing,
    /// The last line has no newline.
    Newline,
    /// Migrated (or empty): written again in full.
    Rewrite,
}

fn checked_id(id: Option<String>) -> Result<String> {
    match id {
        None => Ok(ids::session_id()),
        Some(id) if ids::is_valid_session_id(&id) => Ok(id),
        Some(id) => Err(SessionError::Invalid(format!(
            "session id {id:?} must be non-empty, hold only alphanumerics, '-', '_' and '.', and start and end with an alphanumeric"
        ))),
    }
}
