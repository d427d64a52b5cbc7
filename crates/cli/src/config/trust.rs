//! pi's project trust (`docs/security.md`): whether the project's own settings, skills, prompt
//! templates, `SYSTEM.md` and `mcp.json` load. `--approve` / `--no-approve` decide first; a
//! project without such resources is trusted unless `trust.json` says otherwise; else the
//! closest saved decision in `<agent dir>/trust.json` (the directory or a parent); else
//! `defaultProjectTrust`: `always` trusts, `ask` and `never` do not (oxpi has no trust prompt,
//! as pi's print, JSON and RPC modes have none).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::json_file;

/// pi's `defaultProjectTrust`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProjectTrust {
    /// Ask (without a prompt: not trusted).
    Ask,
    /// Trust.
    Always,
    /// Do not trust.
    Never,
}

/// What in `.pi` asks for a trust decision (pi's list).
const PROTECTED: [&str; 8] = [
    "settings.json",
    "mcp.json",
    "extensions",
    "skills",
    "prompts",
    "themes",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
];

/// Whether `cwd` has resources that need trust: one of [`PROTECTED`] in `cwd/.pi`, or
/// `.agents/skills` in `cwd` or a parent.
pub(crate) fn has_protected_resources(cwd: &Path) -> bool {
    let pi = cwd.join(".pi");
    if PROTECTED.iter().any(|name| pi.join(name).exists()) {
        return true;
    }
    cwd.ancestors()
        .any(|dir| dir.join(".agents").join("skills").exists())
}

/// The saved decision for `cwd` (its canonical path or the closest parent's) in
/// `<agent_dir>/trust.json`; an unreadable file is a warning and no decision.
pub(crate) fn saved_decision(agent_dir: &Path, cwd: &Path) -> (Option<bool>, Option<String>) {
    let path = agent_dir.join("trust.json");
    let map = match json_file::read_object(&path) {
        Ok(Some(map)) => map,
        Ok(None) => return (None, None),
        Err(e) => {
            return (
                None,
                Some(format!(
                    "Failed to read trust store {e}; no saved decision applies"
                )),
            )
        }
    };
    let start: PathBuf = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    for dir in start.ancestors() {
        let key = dir.to_string_lossy();
        match map.get(key.as_ref()) {
            Some(Value::Bool(b)) => return (Some(*b), None),
            Some(Value::Null) | None => {}
            Some(other) => {
                return (
                    None,
                    Some(format!(
                        "Invalid trust store {}: value for {:?} must be true, false, or null, \
                         found {}",
                        path.display(),
                        key,
                        json_file::quote(other)
                    )),
                )
            }
        }
    }
    (None, None)
}

/// pi's decision for `cwd`, and a warning when `trust.json` could not be read.
pub(crate) fn project_trusted(
    agent_dir: Option<&Path>,
    cwd: &Path,
    default_trust: ProjectTrust,
    approve: Option<bool>,
) -> (bool, Option<String>) {
    if let Some(decision) = approve {
        return (decision, None);
    }
    let (saved, warning) = match agent_dir {
        Some(dir) => saved_decision(dir, cwd),
        None => (None, None),
    };
    if !has_protected_resources(cwd) {
        return (saved.unwrap_or(true), warning);
    }
    if let Some(decision) = saved {
        return (decision, warning);
    }
    (default_trust == ProjectTrust::Always, warning)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_follow_pi_s_order() {
        let agent = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let cwd = std::fs::canonicalize(project.path()).unwrap();
        let decide = |d| project_trusted(Some(agent.path()), &cwd, d, None).0;
        // Nothing protected: trusted.
        assert!(decide(ProjectTrust::Never));
        std::fs::create_dir_all(cwd.join(".pi")).unwrap();
        assert!(decide(ProjectTrust::Ask), "a bare .pi needs no trust");
        std::fs::write(cwd.join(".pi/settings.json"), "{}").unwrap();
        assert!(!decide(ProjectTrust::Ask));
        assert!(!decide(ProjectTrust::Never));
        assert!(decide(ProjectTrust::Always));
        // A saved decision for a parent applies, the closest first.
        let parent = cwd.parent().unwrap().to_string_lossy().into_owned();
        let own = cwd.to_string_lossy().into_owned();
        let store = serde_json::json!({ parent.clone(): true });
        std::fs::write(agent.path().join("trust.json"), store.to_string()).unwrap();
        assert!(decide(ProjectTrust::Never));
        let store = serde_json::json!({ parent.clone(): true, own: false });
        std::fs::write(agent.path().join("trust.json"), store.to_string()).unwrap();
        assert!(!decide(ProjectTrust::Always));
        // The command line decides first.
        assert!(project_trusted(Some(agent.path()), &cwd, ProjectTrust::Never, Some(true)).0);
        // A broken store: a warning, and the default decides.
        std::fs::write(agent.path().join("trust.json"), "{").unwrap();
        let (trusted, warning) = project_trusted(Some(agent.path()), &cwd, ProjectTrust::Ask, None);
        assert!(!trusted);
        let warning = warning.unwrap();
        assert!(
            warning.starts_with("Failed to read trust store ")
                && warning.contains("trust.json:1:1: invalid JSON"),
            "{warning}"
        );
    }
}
