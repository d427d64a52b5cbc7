//! The session commands of the view: `/new`, `/resume`'s picker (this directory's sessions,
//! newest first, with name, first message, age and size) and `/session`'s facts.

use std::path::Path;

use oxpi_session::{NewSessionOptions, SessionManager};

use super::selector::{Choice, Selector};
use super::state::Footer;
use super::view::footer::tokens;
use crate::runtime::Runtime;

/// Replaces the bound session with what `change` makes of it; on failure the old one stays.
pub(crate) fn replace(
    runtime: &Runtime,
    change: impl FnOnce(&mut SessionManager) -> Result<Option<SessionManager>, String>,
) -> Result<(), String> {
    let mut session = runtime.unbind().ok_or("No session is open")?;
    let next = match change(&mut session) {
        Ok(Some(other)) => other,
        Ok(None) => session,
        Err(e) => {
            runtime.bind(session).map_err(|b| b.to_string())?;
            return Err(e);
        }
    };
    runtime.bind(next).map_err(|e| e.to_string())
}

/// `/new`: a new session in the same directory.
pub(crate) fn new_session(runtime: &Runtime) -> Result<(), String> {
    replace(runtime, |s| {
        s.new_session(NewSessionOptions::default())
            .map(|_| None)
            .map_err(|e| e.to_string())
    })
}

/// `/resume`'s choice: the session file at `path`.
pub(crate) fn switch(runtime: &Runtime, path: &str) -> Result<(), String> {
    let dir = runtime.session_dir.clone();
    replace(runtime, |_| {
        SessionManager::open(Path::new(path), dir.as_deref())
            .map(Some)
            .map_err(|e| e.to_string())
    })
}

/// How long ago `ms` was, as `5m`, `3h`, `2d`.
pub(crate) fn age(now_ms: i64, ms: i64) -> String {
    let s = (now_ms - ms).max(0) / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// The picker over this directory's sessions, newest first (the open one left out).
pub(crate) fn picker(runtime: &Runtime) -> Result<Selector, String> {
    let dir = runtime
        .session_dir
        .clone()
        .ok_or("Sessions are not stored (--no-session)")?;
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let current = runtime.session_file();
    let mut sessions = oxpi_session::list_sessions(&dir, &cwd).map_err(|e| e.to_string())?;
    sessions.retain(|s| Some(&s.path) != current.as_ref());
    sessions.sort_by_key(|s| std::cmp::Reverse(s.modified_ms.or(s.created_ms).unwrap_or(0)));
    if sessions.is_empty() {
        return Err("No other sessions in this directory".into());
    }
    let now = oxpi_ai::now_millis();
    let choices = sessions
        .iter()
        .map(|s| {
            let first: String = s
                .first_message
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(60)
                .collect();
            let label = match &s.name {
                Some(name) => format!("{name}: {first}"),
                None => first,
            };
            let size = std::fs::metadata(&s.path).map(|m| m.len()).unwrap_or(0);
            Choice {
                key: s.path.display().to_string(),
                label,
                detail: format!(
                    "{} ago · {} messages · {}B",
                    age(now, s.modified_ms.or(s.created_ms).unwrap_or(now)),
                    s.message_count,
                    tokens(size)
                ),
            }
        })
        .collect();
    Ok(Selector::new("Resume a session", choices, None))
}

/// `/session`: file, id, name, message counts, tokens and cost.
pub(crate) fn info(runtime: &Runtime, footer: &Footer) -> String {
    let file = runtime
        .session_file()
        .map_or("(not stored)".to_string(), |p| p.display().to_string());
    let id = runtime
        .with_session(|s| s.session_id().to_string())
        .unwrap_or_default();
    let messages = runtime.agent.messages();
    let count = |f: fn(&oxpi_ai::Message) -> bool| messages.iter().filter(|m| f(m)).count();
    let user = count(|m| matches!(m, oxpi_ai::Message::User(_)));
    let assistant = count(|m| matches!(m, oxpi_ai::Message::Assistant(_)));
    let results = count(|m| matches!(m, oxpi_ai::Message::ToolResult(_)));
    let mut out = format!("Session\nFile: {file}\nID: {id}\n");
    if let Some(name) = &footer.session_name {
        out.push_str(&format!("Name: {name}\n"));
    }
    out.push_str(&format!(
        "Messages: {user} user, {assistant} assistant, {results} tool results\nTokens: {} in, {} out, {} cache\nCost: ${:.4}",
        footer.input, footer.output, footer.cache, footer.cost
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_in_the_largest_unit() {
        let now = 10 * 86_400_000;
        assert_eq!(
            [
                age(now, now - 5_000),
                age(now, now - 120_000),
                age(now, now - 3 * 3_600_000),
                age(now, now - 2 * 86_400_000),
                age(now, now + 1000)
            ],
            ["5s", "2m", "3h", "2d", "0s"]
        );
    }
}
