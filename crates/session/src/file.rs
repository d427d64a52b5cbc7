//! The session file on disk: reading its lines (torn and malformed ones reported, not silently
//! dropped), and a writer that holds the file's advisory lock and appends one whole line per
//! `write`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::entry::{Entry, SessionHeader};
use crate::error::{Result, SessionError};
use crate::head;
use crate::text::Text;

/// The largest session file oxpi reads into memory (1 GiB).
pub const MAX_SESSION_FILE_BYTES: u64 = 1 << 30;

/// How many characters of a bad line a [`LoadIssue`] quotes.
const EXCERPT_CHARS: usize = 80;

/// A line of a session file that did not become an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadIssue {
    /// The line's number, from 1.
    pub line: usize,
    /// The byte offset where the line starts.
    pub offset: u64,
    /// What was wrong with it.
    pub kind: LoadIssueKind,
    /// The line's start, for a message.
    pub excerpt: String,
}

/// What was wrong with a line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadIssueKind {
    /// The last line has no newline and is not valid JSON: its write was cut off (a crash or
    /// a kill during the append). The entry it held is lost.
    Torn,
    /// A line that is not valid JSON (with serde_json's error).
    Malformed(String),
    /// A line that is valid JSON but not an object.
    NotAnObject,
}

impl std::fmt::Display for LoadIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match &self.kind {
            LoadIssueKind::Torn => "is torn (cut off mid-write; the entry is lost)".to_string(),
            LoadIssueKind::Malformed(error) => format!("is not valid JSON ({error})"),
            LoadIssueKind::NotAnObject => "is not a JSON object".to_string(),
        };
        write!(
            f,
            "line {} (byte {}) {what}: {:?}",
            self.line, self.offset, self.excerpt
        )
    }
}

/// A file's lines, parsed.
pub(crate) struct Loaded {
    /// The header, when the first object is one.
    pub header: Option<SessionHeader>,
    /// Every object after the header, each with its line.
    pub entries: Vec<Entry>,
    /// The lines that are not entries.
    pub issues: Vec<LoadIssue>,
    /// The file is not empty and its last byte is not a newline.
    pub unterminated: bool,
    /// Whether any object was read (false: the file is empty or holds only bad lines).
    pub any_object: bool,
    /// The file's size.
    pub size: u64,
}

/// Reads and parses a session file (a missing file reads as empty).
pub(crate) fn load(path: &Path) -> Result<Loaded> {
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(file) => {
            let size = file
                .metadata()
                .map_err(|e| SessionError::io("could not stat", path, e))?
                .len();
            if size > MAX_SESSION_FILE_BYTES {
                return Err(SessionError::TooLarge {
                    path: path.into(),
                    size,
                    limit: MAX_SESSION_FILE_BYTES,
                });
            }
            file.take(MAX_SESSION_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| SessionError::io("could not read", path, e))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(SessionError::io("could not open", path, e)),
    }
    Ok(parse(bytes))
}

/// Parses a session file's bytes. Every entry keeps its line as a slice of these bytes: a line
/// is read in one pass for the fields the tree needs ([`head::read`]); a line that pass cannot
/// read (the first, one with a lone surrogate escape, an unusual shape) is parsed in full.
pub(crate) fn parse(bytes: Vec<u8>) -> Loaded {
    let buf = Arc::new(bytes);
    let bytes: &[u8] = &buf;
    let mut loaded = Loaded {
        header: None,
        entries: Vec::new(),
        issues: Vec::new(),
        unterminated: !bytes.is_empty() && bytes.last() != Some(&b'\n'),
        any_object: false,
        size: bytes.len() as u64,
    };
    let mut offset = 0usize;
    let mut first = true;
    loaded
        .entries
        .reserve(bytes.iter().filter(|b| **b == b'\n').count() + 1);
    for (index, raw_line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line_start = offset;
        offset += raw_line.len() + 1;
        let is_last_unterminated = offset > bytes.len() && loaded.unterminated;
        let text = String::from_utf8_lossy(raw_line);
        if text.trim().is_empty() {
            continue;
        }
        let issue = |kind| LoadIssue {
            line: index + 1,
            offset: line_start as u64,
            kind,
            excerpt: text.chars().take(EXCERPT_CHARS).collect(),
        };
        if !first {
            // A line with a lone surrogate escape is read as its text with U+FFFD, and keeps
            // its bytes as read.
            let fixed = may_hold_surrogate(raw_line)
                .then(|| replace_lone_surrogates(raw_line))
                .flatten();
            let entry = match fixed {
                None => std::str::from_utf8(raw_line)
                    .ok()
                    .and_then(head::read)
                    .map(|head| {
                        let text = Text::new(&buf, line_start..line_start + raw_line.len());
                        Entry::from_text(text, head, None)
                    }),
                Some(fixed) => std::str::from_utf8(&fixed)
                    .ok()
                    .and_then(head::read)
                    .map(|head| Entry::from_text(Text::owned(fixed), head, Some(raw_line.into()))),
            };
            if let Some(entry) = entry {
                loaded.any_object = true;
                loaded.entries.push(entry);
                continue;
            }
        }
        match parse_line(raw_line) {
            Ok(Value::Object(object)) => {
                loaded.any_object = true;
                if std::mem::take(&mut first) && SessionHeader::is_header(&object) {
                    loaded.header = SessionHeader::from_json(object);
                    continue;
                }
                loaded.entries.push(Entry::from_line(object, raw_line));
            }
            Ok(_) => loaded.issues.push(issue(LoadIssueKind::NotAnObject)),
            Err(_) if is_last_unterminated => loaded.issues.push(issue(LoadIssueKind::Torn)),
            Err(e) => loaded
                .issues
                .push(issue(LoadIssueKind::Malformed(e.to_string()))),
        }
    }
    loaded
}

/// A line's JSON. A string holding a lone UTF-16 surrogate escape (`"\ud83d"`, which
/// JavaScript's `JSON.stringify` writes for text cut between the two halves of a pair) reads
/// with U+FFFD in its place, as pi reads it with the lone half.
fn parse_line(line: &[u8]) -> serde_json::Result<Value> {
    match serde_json::from_slice(line) {
        Err(e) if e.is_syntax() => match replace_lone_surrogates(line) {
            Some(fixed) => serde_json::from_slice(&fixed).map_err(|_| e),
            None => Err(e),
        },
        other => other,
    }
}

/// Whether `line` may hold a `\uD8xx`–`\uDFxx` escape (a surrogate; a lone one needs
/// [`replace_lone_surrogates`]).
fn may_hold_surrogate(line: &[u8]) -> bool {
    memchr::memmem::find_iter(line, b"\\u").any(|i| {
        matches!(line.get(i + 2), Some(b'd' | b'D'))
            && matches!(
                line.get(i + 3),
                Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
            )
    })
}

/// `line` with every `\uXXXX` escape of a surrogate that is not half of a pair replaced by
/// `\ufffd`; `None` when there is none.
fn replace_lone_surrogates(line: &[u8]) -> Option<Vec<u8>> {
    let escape_at = |i: usize| -> Option<u16> {
        let hex = line.get(i..i + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    let mut copied = 0;
    while i < line.len() {
        if line[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(unit) = escape_at(i) else {
            i += 2;
            continue;
        };
        let lone = match unit {
            0xD800..=0xDBFF => match escape_at(i + 6) {
                Some(0xDC00..=0xDFFF) => {
                    i += 12;
                    continue;
                }
                _ => true,
            },
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            let out = out.get_or_insert_with(|| Vec::with_capacity(line.len()));
            out.extend_from_slice(&line[copied..i]);
            out.extend_from_slice(b"\\ufffd");
            copied = i + 6;
        }
        i += 6;
    }
    let mut out = out?;
    out.extend_from_slice(&line[copied..]);
    Some(out)
}

/// One JSON line of an object, with its newline.
pub(crate) fn json_line(object: &Map<String, Value>) -> Result<Vec<u8>> {
    let mut line = serde_json::to_vec(object).map_err(|source| SessionError::Serialize {
        kind: object
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        source,
    })?;
    line.push(b'\n');
    Ok(line)
}

/// The one writer of a session file: an append handle holding the file's exclusive advisory
/// lock (`flock`) for as long as it lives. Each entry is one `write` of one whole line.
#[derive(Debug)]
pub(crate) struct Writer {
    file: File,
    path: PathBuf,
}

impl Writer {
    /// Opens an existing (or new, empty) file for appending and takes its lock.
    pub fn open(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| SessionError::io("could not open for appending", path, e))?;
        lock(&file, path)?;
        Ok(Self {
            file,
            path: path.into(),
        })
    }

    /// Creates a file that must not exist yet, takes its lock and writes `bytes`.
    pub fn create_new(path: &Path, bytes: &[u8]) -> Result<Self> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)
            .map_err(|e| SessionError::io("could not create", path, e))?;
        lock(&file, path)?;
        let mut writer = Self {
            file,
            path: path.into(),
        };
        if let Err(e) = writer.append(bytes) {
            // No half-written file is left behind: the next append creates it again.
            let _ = std::fs::remove_file(path);
            return Err(match e {
                SessionError::Io { source, .. } => {
                    SessionError::io("could not create", path, source)
                }
                other => other,
            });
        }
        Ok(writer)
    }

    /// Appends `bytes` (whole lines) in one write.
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .map_err(|e| SessionError::io("could not append to", &self.path, e))
    }

    /// Replaces the file's contents with `bytes` atomically (a temporary file renamed over it),
    /// then holds the new file's lock. A symbolic link is followed: its target is replaced and
    /// the link stays; the file keeps its permissions.
    pub fn replace(&mut self, bytes: &[u8]) -> Result<()> {
        let target = std::fs::canonicalize(&self.path)
            .map_err(|e| SessionError::io("could not resolve", &self.path, e))?;
        let permissions = std::fs::metadata(&target)
            .map_err(|e| SessionError::io("could not stat", &target, e))?
            .permissions();
        let dir = target.parent().unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let written =
            write_new(&temp, bytes, &permissions).and_then(|()| std::fs::rename(&temp, &target));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(SessionError::io("could not rewrite", &self.path, e));
        }
        *self = Self::open(&self.path)?;
        Ok(())
    }
}

/// Writes `bytes` to a new file with `permissions` and syncs it.
fn write_new(path: &Path, bytes: &[u8], permissions: &std::fs::Permissions) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(permissions.mode() & 0o7777);
    }
    let mut file = options.open(path)?;
    // The mode given at creation is narrowed by the umask; set it as it was.
    file.set_permissions(permissions.clone())?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(unix)]
fn lock(file: &File, path: &Path) -> Result<()> {
    use rustix::fs::{flock, FlockOperation};
    match flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
            Err(SessionError::Locked { path: path.into() })
        }
        Err(e) => Err(SessionError::io("could not lock", path, e.into())),
    }
}

#[cfg(not(unix))]
fn lock(_file: &File, _path: &Path) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_and_a_malformed_middle_line_are_reported() {
        let bytes = b"{\"type\":\"session\",\"id\":\"s\"}\nnot json\n\n5\n{\"type\":\"message\",\"id\":\"a\"}\n{\"type\":\"mess";
        let loaded = parse(bytes.to_vec());
        assert!(loaded.header.is_some());
        assert_eq!(loaded.entries.len(), 1);
        assert!(loaded.unterminated);
        let kinds: Vec<(usize, u64, &LoadIssueKind)> = loaded
            .issues
            .iter()
            .map(|i| (i.line, i.offset, &i.kind))
            .collect();
        assert!(
            matches!(kinds[0], (2, 28, LoadIssueKind::Malformed(_))),
            "{kinds:?}"
        );
        assert_eq!(kinds[1], (4, 38, &LoadIssueKind::NotAnObject));
        assert_eq!(kinds[2], (6, 68, &LoadIssueKind::Torn));
        assert_eq!(kinds.len(), 3);
        assert_eq!(loaded.issues[2].excerpt, "{\"type\":\"mess");
    }

    #[test]
    fn an_unterminated_last_line_that_parses_is_an_entry() {
        let loaded = parse(
            b"{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"label\",\"id\":\"b\"}".to_vec(),
        );
        assert!(loaded.unterminated);
        assert_eq!(loaded.entries.len(), 1);
        assert!(loaded.issues.is_empty());
    }
}
