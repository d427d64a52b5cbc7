//! pi's skills (`docs/skills.md`): `SKILL.md` files (and, in pi's own folders, `.md` files with
//! a `description` directly in the folder) found in pi's places and order: the trusted
//! project's `.pi/skills` and `.agents/skills` (the working directory up to the Git root),
//! `<agent dir>/skills`, `~/.agents/skills`, then the settings' `skills` paths and `--skill`
//! paths. The first skill of a name wins. Listed in the system prompt as pi lists them
//! (`disable-model-invocation` ones left out), expanded by `/skill:name args`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skill {
    /// `name` of the front matter, else the folder's name.
    pub name: String,
    /// `description` (a skill without one is not loaded).
    pub description: String,
    /// The file.
    pub file_path: PathBuf,
    /// Its folder (relative references resolve from here).
    pub base_dir: PathBuf,
    /// `disable-model-invocation: true`: only `/skill:name` runs it.
    pub disable_model_invocation: bool,
}

impl Skill {
    /// The entry of RPC `get_commands`.
    pub(crate) fn command_json(&self) -> Value {
        json!({
            "name": format!("skill:{}", self.name),
            "description": self.description,
            "source": "skill",
            "sourceInfo": {"path": self.file_path, "source": "local", "origin": "top-level"},
        })
    }
}

fn load_file(path: &Path, warnings: &mut Vec<String>) -> Option<Skill> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!("{}: {e}", path.display()));
            return None;
        }
    };
    let declared = path.file_name().is_some_and(|n| n == "SKILL.md");
    let front = match super::front_matter::parse(&text) {
        Ok((front, _)) => front,
        Err(e) => {
            if declared {
                warnings.push(format!("{}: {e}", path.display()));
            }
            return None;
        }
    };
    let description = front.string("description").filter(|d| !d.trim().is_empty());
    let Some(description) = description else {
        if declared {
            warnings.push(format!(
                "{}: a skill needs a description; skipped",
                path.display()
            ));
        }
        return None;
    };
    let base_dir = path.parent()?.to_path_buf();
    let name = front
        .string("name")
        .filter(|n| !n.is_empty())
        .or_else(|| Some(base_dir.file_name()?.to_string_lossy().into_owned()))?;
    Some(Skill {
        name,
        description,
        file_path: path.to_path_buf(),
        base_dir,
        disable_model_invocation: front.is_true("disable-model-invocation"),
    })
}

/// pi's walk: a folder with `SKILL.md` is one skill; else its `.md` files (the top folder only,
/// when `root_files`) and its subfolders (not hidden, not `node_modules`).
fn load_dir(dir: &Path, root_files: bool, out: &mut Vec<Skill>, warnings: &mut Vec<String>) {
    let skill = dir.join("SKILL.md");
    if skill.is_file() {
        out.extend(load_file(&skill, warnings));
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let Some(name) = name else { continue };
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            load_dir(&path, false, out, warnings);
        } else if root_files && name.ends_with(".md") && path.is_file() {
            out.extend(load_file(&path, warnings));
        }
    }
}

/// Where skills are looked for (pi's order), given what applies.
pub(crate) struct SkillPlaces<'a> {
    /// The agent directory.
    pub agent_dir: Option<&'a Path>,
    /// `$HOME` (for `~/.agents/skills`).
    pub home: Option<&'a Path>,
    /// The working directory.
    pub cwd: &'a Path,
    /// Whether the project is trusted.
    pub trusted: bool,
    /// False with `--no-skills`.
    pub include_defaults: bool,
    /// Settings' `skills` and `--skill` paths.
    pub explicit: &'a [PathBuf],
}

/// The closest directory at or above `start` that holds `.git`.
pub(crate) fn git_root(start: &Path) -> Option<&Path> {
    start.ancestors().find(|d| d.join(".git").exists())
}

/// The skills, first of a name kept, and warnings.
pub(crate) fn load(places: &SkillPlaces<'_>) -> (Vec<Skill>, Vec<String>) {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    if places.include_defaults {
        let user_agents = places.home.map(|h| h.join(".agents").join("skills"));
        if places.trusted {
            load_dir(
                &places.cwd.join(".pi/skills"),
                true,
                &mut found,
                &mut warnings,
            );
            let stop = git_root(places.cwd);
            for dir in places.cwd.ancestors() {
                let skills = dir.join(".agents").join("skills");
                if Some(&skills) != user_agents.as_ref() {
                    load_dir(&skills, false, &mut found, &mut warnings);
                }
                if Some(dir) == stop {
                    break;
                }
            }
        }
        if let Some(dir) = places.agent_dir {
            load_dir(&dir.join("skills"), true, &mut found, &mut warnings);
        }
        if let Some(dir) = &user_agents {
            load_dir(dir, false, &mut found, &mut warnings);
        }
    }
    for path in places.explicit {
        let path = places.cwd.join(path);
        if path.is_dir() {
            load_dir(&path, true, &mut found, &mut warnings);
        } else if path.is_file() && path.extension().is_some_and(|e| e == "md") {
            found.extend(load_file(&path, &mut warnings));
        } else {
            warnings.push(format!("{}: skill path does not exist", path.display()));
        }
    }
    let mut out: Vec<Skill> = Vec::new();
    for skill in found {
        if out.iter().any(|s| s.name == skill.name) {
            warnings.push(format!(
                "{}: skill name {:?} is taken; skipped",
                skill.file_path.display(),
                skill.name
            ));
        } else {
            out.push(skill);
        }
    }
    (out, warnings)
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// pi's skills section of the system prompt, when a reading tool is there (`read`, else
/// `bash`) and a skill may be invoked by the model.
pub(crate) fn prompt_section(skills: &[Skill], tools: &[String]) -> Option<String> {
    let visible: Vec<&Skill> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    let reader = ["read", "bash"]
        .into_iter()
        .find(|r| tools.iter().any(|t| t == r))?;
    if visible.is_empty() {
        return None;
    }
    let mut lines = vec![
        "The following skills provide specialized instructions for specific tasks.".to_string(),
        if reader == "read" {
            "Use the read tool to load a skill's file when the task matches its description."
        } else {
            "Use bash to load a skill's file when the task matches its description."
        }
        .to_string(),
        "Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute \
         paths in tool calls."
            .to_string(),
        String::new(),
        "<available_skills>".to_string(),
    ];
    for s in visible {
        lines.push("  <skill>".into());
        lines.push(format!("    <name>{}</name>", escape_xml(&s.name)));
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&s.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&s.file_path.to_string_lossy())
        ));
        lines.push("  </skill>".into());
    }
    lines.push("</available_skills>".into());
    Some(lines.join("\n"))
}

/// `/skill:name args` as pi expands it (the skill's body in a `<skill>` block, then the
/// arguments); anything else unchanged.
pub(crate) fn expand(text: &str, skills: &[Skill]) -> String {
    let Some(rest) = text.strip_prefix("/skill:") else {
        return text.to_string();
    };
    let (name, args) = match rest.find(' ') {
        Some(i) => (&rest[..i], rest[i + 1..].trim()),
        None => (rest, ""),
    };
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        return text.to_string();
    };
    let Ok(content) = std::fs::read_to_string(&skill.file_path) else {
        return text.to_string();
    };
    let Ok((_, body)) = super::front_matter::parse(&content) else {
        return text.to_string();
    };
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
        skill.name,
        skill.file_path.display(),
        skill.base_dir.display(),
        body.trim()
    );
    if args.is_empty() {
        block
    } else {
        format!("{block}\n\n{args}")
    }
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
