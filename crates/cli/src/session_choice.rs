//! Which session a run writes to, from `-c`, `--session`, `--fork`, `--no-session`,
//! `--session-dir` and `--name`: a new file per run by default, in pi's layout
//! (`<agent dir>/sessions/--<cwd>--/<timestamp>_<id>.jsonl`).

use std::path::{Path, PathBuf};

use oxpi_session::{NewSessionOptions, SessionError, SessionManager};

/// The session options of the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SessionFlags {
    /// `-c`.
    pub continue_recent: bool,
    /// `--session`.
    pub session: Option<String>,
    /// `--fork`.
    pub fork: Option<String>,
    /// `--session-dir`.
    pub session_dir: Option<PathBuf>,
    /// `--no-session`.
    pub no_session: bool,
    /// `--name`.
    pub name: Option<String>,
}

/// Why the session could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionChoiceError {
    /// The session store failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// No session file or id matched.
    #[error("no session matches {0:?} (give a session file or a session id of this directory)")]
    NotFound(String),
    /// A partial id matched several sessions.
    #[error("session id {given:?} matches several sessions: {matches}")]
    Ambiguous {
        /// What was given.
        given: String,
        /// The matching ids.
        matches: String,
    },
    /// Neither a session directory nor a home directory.
    #[error("no session directory: set HOME, PI_CODING_AGENT_DIR or --session-dir")]
    NoDirectory,
}

/// Where `cwd`'s sessions are: `--session-dir`, else pi's directory for it.
pub(crate) fn session_dir(
    flags: &SessionFlags,
    agent_dir: Option<&Path>,
    cwd: &Path,
) -> Option<PathBuf> {
    flags
        .session_dir
        .clone()
        .or_else(|| agent_dir.map(|dir| oxpi_session::session_dir_for(dir, cwd)))
}

/// A session file named by path, else by (the start of) its id among `dir`'s sessions.
pub(crate) fn resolve_session_arg(
    given: &str,
    dir: &Path,
    cwd: &Path,
) -> Result<PathBuf, SessionChoiceError> {
    let path = Path::new(given);
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    let sessions = oxpi_session::list_sessions(dir, cwd).unwrap_or_default();
    let matches: Vec<_> = sessions
        .iter()
        .filter(|s| s.id.starts_with(given))
        .collect();
    match matches.as_slice() {
        [] => Err(SessionChoiceError::NotFound(given.to_string())),
        [one] => Ok(one.path.clone()),
        several => Err(SessionChoiceError::Ambiguous {
            given: given.to_string(),
            matches: several
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Opens or creates the run's session.
pub(crate) fn open(
    flags: &SessionFlags,
    agent_dir: Option<&Path>,
    cwd: &Path,
) -> Result<SessionManager, SessionChoiceError> {
    let mut session = if flags.no_session {
        SessionManager::in_memory(cwd)
    } else {
        let dir = session_dir(flags, agent_dir, cwd).ok_or(SessionChoiceError::NoDirectory)?;
        if let Some(given) = &flags.session {
            SessionManager::open(&resolve_session_arg(given, &dir, cwd)?, Some(&dir))?
        } else if let Some(given) = &flags.fork {
            let source = resolve_session_arg(given, &dir, cwd)?;
            SessionManager::fork_from(&source, cwd, &dir, NewSessionOptions::default())?
        } else if flags.continue_recent {
            SessionManager::continue_recent(cwd, &dir)?
        } else {
            SessionManager::create(cwd, &dir, NewSessionOptions::default())?
        }
    };
    if let Some(name) = flags
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        session.append_session_info(name)?;
    }
    Ok(session)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_continue_open_by_id_and_fork() {
        let root = tempfile::tempdir().unwrap();
        let agent = root.path().join("agent");
        let cwd = root.path().join("project");
        std::fs::create_dir_all(&cwd).unwrap();
        let flags = SessionFlags::default();
        let dir = session_dir(&flags, Some(&agent), &cwd).unwrap();
        assert_eq!(dir, oxpi_session::session_dir_for(&agent, &cwd));

        let mut first = open(&flags, Some(&agent), &cwd).unwrap();
        first
            .append_message(&oxpi_ai::Message::user("first"))
            .unwrap();
        let first_file = first.session_file().unwrap().to_path_buf();
        let first_id = first.session_id().to_string();
        assert!(first_file.starts_with(&dir));
        drop(first);

        let continued = SessionFlags {
            continue_recent: true,
            ..SessionFlags::default()
        };
        let again = open(&continued, Some(&agent), &cwd).unwrap();
        assert_eq!(again.session_file(), Some(first_file.as_path()));
        drop(again);

        let by_id = SessionFlags {
            session: Some(first_id[..8].to_string()),
            ..SessionFlags::default()
        };
        let opened = open(&by_id, Some(&agent), &cwd).unwrap();
        assert_eq!(opened.session_id(), first_id);
        drop(opened);

        let fork = SessionFlags {
            fork: Some(first_file.to_string_lossy().into_owned()),
            name: Some("forked".into()),
            ..SessionFlags::default()
        };
        let forked = open(&fork, Some(&agent), &cwd).unwrap();
        assert_ne!(forked.session_id(), first_id);
        assert_eq!(
            forked.header().parent_session(),
            Some(first_file.to_string_lossy().as_ref())
        );
        assert_eq!(forked.session_name(), Some("forked"));

        let missing = SessionFlags {
            session: Some("zzzz-none".into()),
            ..SessionFlags::default()
        };
        let error = open(&missing, Some(&agent), &cwd).unwrap_err().to_string();
        assert!(
            error.contains("no session matches \"zzzz-none\""),
            "{error}"
        );

        let memory = SessionFlags {
            no_session: true,
            ..SessionFlags::default()
        };
        assert!(!open(&memory, None, &cwd).unwrap().is_persisted());
    }
}
