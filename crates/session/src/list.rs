//! Where sessions live and finding them: pi's directory layout
//! (`<agent dir>/sessions/--<cwd>--/<timestamp>_<id>.jsonl`), the most recent session of a
//! directory, and the list of a directory's sessions.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::entry::{EntryType, SessionHeader};
use crate::error::{Result, SessionError};
use crate::file;
use crate::time::iso_to_millis;

/// pi's agent directory: `$PI_CODING_AGENT_DIR` when set, else `~/.pi/agent`; `None` when
/// neither that variable nor `HOME` is set.
pub fn default_agent_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".pi").join("agent"))
}

/// The directory of `cwd`'s sessions under `agent_dir`: `sessions/--<cwd>--`, the cwd's leading
/// separator removed and `/`, `\` and `:` replaced by `-` (pi's `getDefaultSessionDir`).
pub fn session_dir_for(agent_dir: &Path, cwd: &Path) -> PathBuf {
    let cwd = absolute(cwd).to_string_lossy().into_owned();
    let trimmed = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(&cwd);
    let safe: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    agent_dir.join("sessions").join(format!("--{safe}--"))
}

/// `path` made absolute against the current directory and normalized (`.` and `..` removed)
/// without touching the file system, as Node's `path.resolve`.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// One session of a directory, as pi's `SessionInfo`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The file.
    pub path: PathBuf,
    /// The session id.
    pub id: String,
    /// The header's working directory (empty when it has none).
    pub cwd: String,
    /// The name of the latest `session_info` entry, if it is not empty.
    pub name: Option<String>,
    /// The file it was forked from.
    pub parent_session_path: Option<String>,
    /// The header's timestamp (Unix milliseconds).
    pub created_ms: Option<i64>,
    /// The last user or assistant activity (Unix milliseconds), else the creation time.
    pub modified_ms: Option<i64>,
    /// How many `message` entries the file holds.
    pub message_count: usize,
    /// The first user message's text, or `(no messages)`.
    pub first_message: String,
}

/// The header of a session file, when the file is one (read in full; bounded by
/// [`file::MAX_SESSION_FILE_BYTES`]).
fn info_of(path: &Path) -> Option<SessionInfo> {
    let loaded = file::load(path).ok()?;
    let header: SessionHeader = loaded.header?;
    let mut info = SessionInfo {
        path: path.to_path_buf(),
        id: header.id().to_string(),
        cwd: header.cwd().unwrap_or("").to_string(),
        name: None,
        parent_session_path: header.parent_session().map(str::to_string),
        created_ms: header.timestamp().and_then(iso_to_millis),
        modified_ms: None,
        message_count: 0,
        first_message: String::new(),
    };
    let mut last_activity: Option<i64> = None;
    for raw in &loaded.entries {
        let kind = EntryType::from_name(raw.get("type").and_then(Value::as_str).unwrap_or(""));
        if kind == EntryType::SessionInfo {
            info.name = raw
                .get("name")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string);
        }
        if kind != EntryType::Message {
            continue;
        }
        info.message_count += 1;
        let Some(message) = raw.get("message") else {
            continue;
        };
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if role != "user" && role != "assistant" {
            continue;
        }
        let at = message
            .get("timestamp")
            .and_then(Value::as_i64)
            .or_else(|| {
                raw.get("timestamp")
                    .and_then(Value::as_str)
                    .and_then(iso_to_millis)
            });
        if let Some(at) = at {
            last_activity = Some(last_activity.map_or(at, |l| l.max(at)));
        }
        let text = match message.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        if info.first_message.is_empty() && role == "user" && !text.is_empty() {
            info.first_message = text;
        }
    }
    if info.first_message.is_empty() {
        info.first_message = "(no messages)".into();
    }
    info.modified_ms = last_activity.filter(|t| *t > 0).or(info.created_ms);
    Some(info)
}

fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SessionError::io("could not list", dir, e)),
    };
    let mut files = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| SessionError::io("could not list", dir, e))?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "jsonl") && path.is_file() {
            files.push(path);
        }
    }
    Ok(files)
}

fn same_cwd(header_cwd: Option<&str>, cwd: &Path) -> bool {
    header_cwd.is_some_and(|c| !c.is_empty() && absolute(Path::new(c)) == absolute(cwd))
}

/// The sessions of `cwd` in `session_dir` (files whose header names `cwd`), the most recently
/// active first. Files that are not sessions are left out.
pub fn list_sessions(session_dir: &Path, cwd: &Path) -> Result<Vec<SessionInfo>> {
    let mut infos: Vec<SessionInfo> = jsonl_files(session_dir)?
        .iter()
        .filter_map(|p| info_of(p))
        .filter(|info| same_cwd(Some(&info.cwd), cwd))
        .collect();
    infos.sort_by(|a, b| b.modified_ms.cmp(&a.modified_ms).then(b.path.cmp(&a.path)));
    Ok(infos)
}

/// The most recently modified session file of `cwd` in `session_dir` (by file modification
/// time, as pi's `findMostRecentSession`).
pub fn most_recent_session(session_dir: &Path, cwd: &Path) -> Result<Option<PathBuf>> {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = jsonl_files(session_dir)?
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    for (_, path) in files {
        let Ok(loaded) = file::load(&path) else {
            continue;
        };
        if loaded
            .header
            .as_ref()
            .is_some_and(|h| same_cwd(h.cwd(), cwd))
        {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cwd_becomes_pi_s_directory_name() {
        assert_eq!(
            session_dir_for(Path::new("/a"), Path::new("/home/u/my:proj/./x/..")),
            PathBuf::from("/a/sessions/--home-u-my-proj--")
        );
    }
}
