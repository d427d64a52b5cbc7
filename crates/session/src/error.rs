//! What can go wrong with a session file.

use std::path::PathBuf;

/// An error of a session operation; each names the file or entry it is about.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Reading, writing or creating a file or directory failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done (`could not read`, `could not append to`, …).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not empty, yet its first entry is not a session header with a string `id`.
    #[error("{} is not a pi session file: its first entry is not a session header", path.display())]
    NotASession {
        /// The file.
        path: PathBuf,
    },
    /// The file is larger than the bound oxpi reads into memory.
    #[error("{} is {size} bytes, more than the {limit} bytes a session may have", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The bound.
        limit: u64,
    },
    /// Another writer (another process, or another manager in this one) holds the file's lock.
    #[error("{} is in use by another writer (its lock is held); open it read-only or close the other session", path.display())]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// No entry has this id.
    #[error("entry {id} not found in the session")]
    EntryNotFound {
        /// The id asked for.
        id: String,
    },
    /// An operation's argument is not acceptable (an invalid session id, a context edit of an
    /// entry that has no model content, …).
    #[error("{0}")]
    Invalid(String),
    /// The session was opened read-only, or lives in memory only, and cannot be written.
    #[error("the session {0} is read-only")]
    ReadOnly(String),
    /// An entry could not be serialized.
    #[error("could not serialize the {kind} entry: {source}")]
    Serialize {
        /// The entry's type.
        kind: String,
        /// serde_json's error.
        source: serde_json::Error,
    },
}

impl SessionError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

/// The result of a session operation.
pub type Result<T, E = SessionError> = std::result::Result<T, E>;
