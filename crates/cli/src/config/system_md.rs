//! pi's `SYSTEM.md` and `APPEND_SYSTEM.md`: the project's (`<cwd>/.pi/…`, only when the project
//! is trusted) before the agent directory's. `--system-prompt` replaces the found `SYSTEM.md`;
//! any `--append-system-prompt` replaces the found `APPEND_SYSTEM.md` (pi's
//! `DefaultResourceLoader`).

use std::path::{Path, PathBuf};

/// The file named `name` pi would use: the trusted project's, else the agent directory's.
pub(crate) fn discover(
    name: &str,
    cwd: &Path,
    agent_dir: Option<&Path>,
    trusted: bool,
) -> Option<PathBuf> {
    let project = cwd.join(".pi").join(name);
    if trusted && project.is_file() {
        return Some(project);
    }
    let global = agent_dir?.join(name);
    global.is_file().then_some(global)
}

/// The text of `path`, a warning on stderr when it cannot be read.
fn read(path: &Path) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Some(text.strip_prefix('\u{feff}').unwrap_or(&text).to_string()),
        Err(e) => {
            eprintln!("Warning: Could not read {}: {e}", path.display());
            None
        }
    }
}

/// The system prompt replacing oxpi's preamble: `cli` (text or a file) if given, else the
/// discovered `SYSTEM.md`.
pub(crate) fn system_prompt(
    cli: Option<&str>,
    cwd: &Path,
    agent_dir: Option<&Path>,
    trusted: bool,
) -> Option<String> {
    match cli {
        Some(value) => Some(crate::context_files::text_or_file(value)),
        None => discover("SYSTEM.md", cwd, agent_dir, trusted).and_then(|p| read(&p)),
    }
}

/// The appended texts: `cli`'s (each text or a file) if any, else the discovered
/// `APPEND_SYSTEM.md`.
pub(crate) fn append(
    cli: &[String],
    cwd: &Path,
    agent_dir: Option<&Path>,
    trusted: bool,
) -> Vec<String> {
    if !cli.is_empty() {
        return cli
            .iter()
            .map(|a| crate::context_files::text_or_file(a))
            .collect();
    }
    discover("APPEND_SYSTEM.md", cwd, agent_dir, trusted)
        .and_then(|p| read(&p))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trusted_project_s_file_comes_first_and_the_command_line_replaces_both() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let (a, c) = (agent.path(), cwd.path());
        assert_eq!(system_prompt(None, c, Some(a), true), None);
        std::fs::write(a.join("SYSTEM.md"), "\u{feff}global").unwrap();
        std::fs::write(a.join("APPEND_SYSTEM.md"), "more").unwrap();
        std::fs::create_dir_all(c.join(".pi")).unwrap();
        std::fs::write(c.join(".pi/SYSTEM.md"), "project").unwrap();
        assert_eq!(
            system_prompt(None, c, Some(a), true).as_deref(),
            Some("project")
        );
        assert_eq!(
            system_prompt(None, c, Some(a), false).as_deref(),
            Some("global")
        );
        assert_eq!(
            system_prompt(Some("mine"), c, Some(a), true).as_deref(),
            Some("mine")
        );
        assert_eq!(append(&[], c, Some(a), true), ["more"]);
        assert_eq!(append(&["x".into()], c, Some(a), true), ["x"]);
    }
}
