//! Project context files found as pi finds them (`loadProjectContextFiles`): the agent
//! directory's file first, then one file per directory from the filesystem root down to the
//! working directory, each directory's first of `AGENTS.override.md`, `AGENTS.md`, `AGENTS.MD`,
//! `CLAUDE.md`, `CLAUDE.MD`; and the system prompt they go into.

use std::path::{Path, PathBuf};

/// The names tried in each directory, in pi's order.
pub(crate) const CANDIDATES: [&str; 5] = [
    "AGENTS.override.md",
    "AGENTS.md",
    "AGENTS.MD",
    "CLAUDE.md",
    "CLAUDE.MD",
];

/// A context file and its text (a leading BOM removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContextFile {
    /// Where it was found.
    pub path: PathBuf,
    /// Its text.
    pub content: String,
}

fn from_dir(dir: &Path) -> Option<ContextFile> {
    CANDIDATES.iter().find_map(|name| {
        let path = dir.join(name);
        if !path.is_file() {
            return None;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => Some(ContextFile {
                content: text.strip_prefix('\u{feff}').unwrap_or(&text).to_string(),
                path,
            }),
            Err(e) => {
                eprintln!("Warning: Could not read {}: {e}", path.display());
                None
            }
        }
    })
}

/// The context files for `cwd`: `agent_dir`'s, then the ancestors' from the root down.
pub(crate) fn load(cwd: &Path, agent_dir: Option<&Path>) -> Vec<ContextFile> {
    let mut files: Vec<ContextFile> = agent_dir.and_then(from_dir).into_iter().collect();
    let mut ancestors = Vec::new();
    for dir in cwd.ancestors() {
        if let Some(file) = from_dir(dir) {
            if !files.iter().any(|f| f.path == file.path) {
                ancestors.push(file);
            }
        }
    }
    files.extend(ancestors.into_iter().rev());
    files
}

/// What goes into the system prompt besides the context files.
#[derive(Debug, Clone, Default)]
pub(crate) struct PromptParts {
    /// `--system-prompt`: replaces oxpi's preamble.
    pub custom: Option<String>,
    /// `--append-system-prompt`, in order.
    pub append: Vec<String>,
    /// The tools declared to the model.
    pub tools: Vec<String>,
    /// pi's skills listing (`config::skills::prompt_section`), if any.
    pub skills: Option<String>,
    /// The project's files (`small` prompt profile), if listed.
    pub files: Option<String>,
}

/// A value of `--system-prompt`/`--append-system-prompt`: an existing file's text, else the
/// text itself (as pi).
pub(crate) fn text_or_file(value: &str) -> String {
    let path = Path::new(value);
    if path.is_file() {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
    }
    value.to_string()
}

/// The named sections of the system prompt, in order (pi keeps the prompt as sections of the
/// transcript's leading system message): `preamble` (or `--system-prompt`), `tools`,
/// `project_context` (pi's `<project_instructions path="…">` blocks), `skills`, `append`,
/// `files` (the `small` profile's list), `cwd`.
pub(crate) fn system_sections(
    parts: &PromptParts,
    files: &[ContextFile],
    cwd: &Path,
) -> Vec<(String, String)> {
    let mut sections = Vec::new();
    let preamble = parts.custom.clone().unwrap_or_else(|| {
        "You are oxpi, a coding agent working in the user's project. Use the tools to look \
         at files and run commands rather than guessing; keep answers short and concrete."
            .to_string()
    });
    sections.push(("preamble".to_string(), preamble));
    if !parts.tools.is_empty() {
        sections.push((
            "tools".to_string(),
            format!("Available tools: {}.", parts.tools.join(", ")),
        ));
    }
    if !files.is_empty() {
        let mut context = vec!["Project-specific instructions and guidelines:".to_string()];
        context.extend(files.iter().map(|f| {
            format!(
                "<project_instructions path=\"{}\">\n{}\n</project_instructions>",
                f.path.display(),
                f.content
            )
        }));
        sections.push(("project_context".to_string(), context.join("\n\n")));
    }
    if let Some(skills) = &parts.skills {
        sections.push(("skills".to_string(), skills.clone()));
    }
    if !parts.append.is_empty() {
        sections.push(("append".to_string(), parts.append.join("\n\n")));
    }
    if let Some(files) = &parts.files {
        sections.push((
            "files".to_string(),
            format!("Files in the working directory:\n{files}"),
        ));
    }
    sections.push((
        "cwd".to_string(),
        format!("Current working directory: {}", cwd.display()),
    ));
    sections
}

/// The system prompt as one text: the sections joined by blank lines (what a provider gets once
/// the system message is replayed; the tests read it whole).
#[cfg(test)]
pub(crate) fn system_prompt(parts: &PromptParts, files: &[ContextFile], cwd: &Path) -> String {
    system_sections(parts, files, cwd)
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_come_global_first_then_root_down_one_per_directory() {
        let root = tempfile::tempdir().unwrap();
        let agent = root.path().join("agent");
        let repo = root.path().join("repo");
        let sub = repo.join("crates/x");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(agent.join("AGENTS.md"), "global").unwrap();
        std::fs::write(repo.join("CLAUDE.md"), "\u{feff}repo claude").unwrap();
        std::fs::write(repo.join("AGENTS.md"), "repo agents").unwrap();
        std::fs::write(sub.join("CLAUDE.md"), "sub").unwrap();
        // A directory of that name is not a file.
        std::fs::create_dir(sub.join("AGENTS.md")).unwrap();

        let files = load(&sub, Some(&agent));
        let texts: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(texts, ["global", "repo agents", "sub"]);
        assert_eq!(files[1].path, repo.join("AGENTS.md"));

        std::fs::remove_file(repo.join("AGENTS.md")).unwrap();
        let files = load(&repo, None);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].content, "repo claude", "the BOM is removed");

        let prompt = system_prompt(&PromptParts::default(), &files, &repo);
        assert!(prompt.contains(&format!(
            "<project_instructions path=\"{}\">\nrepo claude\n</project_instructions>",
            repo.join("CLAUDE.md").display()
        )));
        assert!(prompt.ends_with(&format!("Current working directory: {}", repo.display())));
    }

    #[test]
    fn a_custom_prompt_replaces_the_preamble_and_appends_follow() {
        let parts = PromptParts {
            custom: Some("Be terse.".into()),
            append: vec!["Also this.".into()],
            tools: vec!["read".into()],
            skills: None,
            files: None,
        };
        let prompt = system_prompt(&parts, &[], Path::new("/w"));
        assert!(prompt.starts_with("Be terse.\n\nAvailable tools: read.\n\nAlso this."));
        assert!(!prompt.contains("oxpi, a coding agent"));
        assert!(!prompt.contains("Files in the working directory"));
    }

    #[test]
    fn the_file_list_comes_just_before_the_working_directory() {
        let parts = PromptParts {
            tools: vec!["read".into()],
            files: Some("a.py\nnet/b.py".into()),
            ..PromptParts::default()
        };
        let prompt = system_prompt(&parts, &[], Path::new("/w"));
        assert!(prompt.ends_with(
            "Available tools: read.\n\nFiles in the working directory:\na.py\nnet/b.py\n\n\
             Current working directory: /w"
        ));
    }
}
