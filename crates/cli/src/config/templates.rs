//! pi's prompt templates (`docs/prompt-templates.md`): the `.md` files directly in
//! `<agent dir>/prompts/`, then the trusted project's `.pi/prompts/`, then `--prompt-template`
//! paths (a file or a directory); front matter `description` and `argument-hint`; `/name args`
//! expanded with `$1`, `$@`, `$ARGUMENTS`, `${1:-default}`, `${@:-default}`, `${@:N}`,
//! `${@:N:L}`, the arguments split with pi's shell-like quoting.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// One template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PromptTemplate {
    /// The command name (the file name without `.md`).
    pub name: String,
    /// `description`, else the first non-empty line (60 characters, then `...`).
    pub description: String,
    /// `argument-hint`.
    pub argument_hint: Option<String>,
    /// The body after the front matter, trimmed.
    pub content: String,
    /// The file.
    pub path: PathBuf,
    /// `user`, `project` or `temporary` (pi's scope).
    pub scope: &'static str,
}

impl PromptTemplate {
    /// The entry of RPC `get_commands`.
    pub(crate) fn command_json(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "source": "prompt",
            "sourceInfo": {
                "path": self.path,
                "source": if self.scope == "temporary" { "cli" } else { "local" },
                "scope": self.scope,
                "origin": "top-level",
            },
        })
    }
}

fn load_file(
    path: &Path,
    scope: &'static str,
    warnings: &mut Vec<String>,
) -> Option<PromptTemplate> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            warnings.push(format!("{}: {e}", path.display()));
            return None;
        }
    };
    let (front, body) = match super::front_matter::parse(&text) {
        Ok(parsed) => parsed,
        Err(e) => {
            warnings.push(format!("{}: {e}", path.display()));
            return None;
        }
    };
    let description = front
        .string("description")
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| match body.lines().find(|l| !l.trim().is_empty()) {
            Some(line) if line.chars().count() > 60 => {
                format!("{}...", line.chars().take(60).collect::<String>())
            }
            Some(line) => line.to_string(),
            None => String::new(),
        });
    let name = path.file_name()?.to_string_lossy();
    Some(PromptTemplate {
        name: name.strip_suffix(".md").unwrap_or(&name).to_string(),
        description,
        argument_hint: front.string("argument-hint"),
        content: body,
        path: path.to_path_buf(),
        scope,
    })
}

fn load_dir(
    dir: &Path,
    scope: &'static str,
    out: &mut Vec<PromptTemplate>,
    warnings: &mut Vec<String>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    paths.sort();
    out.extend(paths.iter().filter_map(|p| load_file(p, scope, warnings)));
}

/// The templates of a run, in pi's order, and warnings for files that could not be read.
pub(crate) fn load(
    agent_dir: Option<&Path>,
    cwd: &Path,
    trusted: bool,
    include_defaults: bool,
    explicit: &[PathBuf],
) -> (Vec<PromptTemplate>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    if include_defaults {
        if let Some(dir) = agent_dir {
            load_dir(&dir.join("prompts"), "user", &mut out, &mut warnings);
        }
        if trusted {
            load_dir(
                &cwd.join(".pi").join("prompts"),
                "project",
                &mut out,
                &mut warnings,
            );
        }
    }
    for path in explicit {
        let path = cwd.join(super::settings::expand_home(&path.to_string_lossy()));
        if path.is_dir() {
            load_dir(&path, "temporary", &mut out, &mut warnings);
        } else if path.is_file() && path.extension().is_some_and(|e| e == "md") {
            out.extend(load_file(&path, "temporary", &mut warnings));
        }
    }
    (out, warnings)
}

/// pi's argument splitting: whitespace separates; a quote opens only at the start of an
/// argument; `\` before the open quote's character keeps it; an unclosed quote is text.
pub(crate) fn parse_args(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut args = Vec::new();
    let mut current = String::new();
    let mut has_token = false;
    let mut quote: Option<char> = None;
    let mut quote_start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = quote {
            if c == '\\' && chars.get(i + 1) == Some(&q) {
                current.push(q);
                i += 1;
            } else if c == q {
                quote = None;
            } else {
                current.push(c);
            }
        } else if (c == '"' || c == '\'') && !has_token {
            quote = Some(c);
            quote_start = i;
            has_token = true;
        } else if c.is_whitespace() {
            if has_token {
                args.push(std::mem::take(&mut current));
                has_token = false;
            }
        } else {
            current.push(c);
            has_token = true;
        }
        if quote.is_some() && i == chars.len() - 1 {
            quote = None;
            current = chars[quote_start].to_string();
            i = quote_start;
        }
        i += 1;
    }
    if has_token {
        args.push(current);
    }
    args
}

/// pi's `substituteArgs`: placeholders of the template only (arguments are not expanded
/// again).
pub(crate) fn substitute(content: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let mut out = String::new();
    let mut rest = content;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some((text, used)) = placeholder(after, args, &all) {
            out.push_str(&text);
            rest = &after[used..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The value of the placeholder `after` starts with (after its `$`), and its length.
fn placeholder(after: &str, args: &[String], all: &str) -> Option<(String, usize)> {
    let digits = |s: &str| s.chars().take_while(char::is_ascii_digit).count();
    if let Some(inner) = after.strip_prefix('{') {
        let end = inner.find('}')?;
        let body = &inner[..end];
        let used = end + 2;
        if let Some((target, default)) = body.split_once(":-") {
            let value = match target {
                "@" | "ARGUMENTS" => Some(all.to_string()),
                t if !t.is_empty() && digits(t) == t.len() => {
                    let n: usize = t.parse().ok()?;
                    n.checked_sub(1).and_then(|i| args.get(i)).cloned()
                }
                _ => return None,
            };
            return Some((
                value
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| default.to_string()),
                used,
            ));
        }
        let slice = body.strip_prefix("@:")?;
        let (start, len) = match slice.split_once(':') {
            Some((s, l)) => (s, Some(l)),
            None => (slice, None),
        };
        if start.is_empty() || digits(start) != start.len() {
            return None;
        }
        let start = start
            .parse::<usize>()
            .ok()?
            .saturating_sub(1)
            .min(args.len());
        let picked: Vec<&String> = match len {
            Some(l) if !l.is_empty() && digits(l) == l.len() => {
                args[start..].iter().take(l.parse().ok()?).collect()
            }
            Some(_) => return None,
            None => args[start..].iter().collect(),
        };
        let joined = picked
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        return Some((joined, used));
    }
    if after.starts_with("ARGUMENTS") {
        return Some((all.to_string(), "ARGUMENTS".len()));
    }
    if after.starts_with('@') {
        return Some((all.to_string(), 1));
    }
    let n = digits(after);
    if n == 0 {
        return None;
    }
    let index: usize = after[..n].parse().ok()?;
    let value = index
        .checked_sub(1)
        .and_then(|i| args.get(i))
        .cloned()
        .unwrap_or_default();
    Some((value, n))
}

/// `text` expanded when it is `/name args` of a template; otherwise unchanged.
pub(crate) fn expand(text: &str, templates: &[PromptTemplate]) -> String {
    let Some(rest) = text.strip_prefix('/') else {
        return text.to_string();
    };
    let (name, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim_start()),
        None => (rest, ""),
    };
    if name.is_empty() {
        return text.to_string();
    }
    match templates.iter().find(|t| t.name == name) {
        Some(t) => substitute(&t.content, &parse_args(args)),
        None => text.to_string(),
    }
}

#[cfg(test)]
#[path = "templates_tests.rs"]
mod tests;
