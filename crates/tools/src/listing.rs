//! What `ls`, `find` and `grep` share: their output (lines capped at a byte limit, whole lines
//! only, then pi's bracketed notices), glob matching with pi's rules, and resolving the directory
//! or file they start from.

use std::path::PathBuf;

use oxpi_agent_core::ToolError;

use crate::fsutil::format_size;
use crate::workspace::Workspace;

/// Output lines kept up to a byte limit (each line counted with the `\n` that joins it to the
/// previous one, as pi's `truncateHead`), so the text never holds more than the limit.
#[derive(Debug)]
pub(crate) struct Output {
    text: String,
    max_bytes: usize,
    lines: usize,
    /// A line did not fit: nothing more is kept.
    pub(crate) bytes_reached: bool,
}

impl Output {
    /// An empty output that keeps at most `max_bytes` bytes.
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            text: String::new(),
            max_bytes,
            lines: 0,
            bytes_reached: false,
        }
    }

    /// Adds a line; `false` (and nothing added, now or later) once the byte limit is reached.
    pub(crate) fn push(&mut self, line: &str) -> bool {
        if self.bytes_reached {
            return false;
        }
        let joiner = usize::from(self.lines > 0);
        if self.text.len() + joiner + line.len() > self.max_bytes {
            self.bytes_reached = true;
            return false;
        }
        if joiner == 1 {
            self.text.push('\n');
        }
        self.text.push_str(line);
        self.lines += 1;
        true
    }

    /// Lines kept.
    pub(crate) fn lines(&self) -> usize {
        self.lines
    }

    /// The text, then `[notice. notice]` after a blank line when there are notices: `before`,
    /// the byte limit's own notice if it was reached, then `after` (pi's order).
    pub(crate) fn finish(self, mut notices: Vec<String>, after: Vec<String>) -> String {
        if self.bytes_reached {
            notices.push(format!(
                "{} limit reached",
                format_size(self.max_bytes as u64)
            ));
        }
        notices.extend(after);
        let mut text = self.text;
        if !notices.is_empty() {
            text.push_str("\n\n[");
            text.push_str(&notices.join(". "));
            text.push(']');
        }
        text
    }
}

/// A glob pattern as pi's `find` and `grep` read it: without a `/` it matches a file name at any
/// depth, with one it matches the path relative to the search directory (a leading `./` is
/// dropped); `**` crosses directories, `*` does not. A pattern without an upper-case letter
/// matches case-insensitively (fd's smart case).
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    matcher: globset::GlobMatcher,
    whole_path: bool,
}

impl PathGlob {
    /// Compiles `pattern`; the error names it.
    pub(crate) fn new(pattern: &str, smart_case: bool) -> Result<Self, ToolError> {
        let mut pattern = pattern.trim();
        while let Some(rest) = pattern.strip_prefix("./") {
            pattern = rest;
        }
        if pattern.is_empty() {
            return Err(ToolError::new("The glob pattern is empty"));
        }
        // `**/name` is `name` at any depth: matched on the name alone, so its cost does not
        // grow with the depth of the path.
        while let Some(rest) = pattern.strip_prefix("**/") {
            if rest.contains('/') || rest.is_empty() {
                break;
            }
            pattern = rest;
        }
        let whole_path = pattern.contains('/');
        let insensitive = smart_case && !pattern.chars().any(char::is_uppercase);
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .case_insensitive(insensitive)
            .backslash_escape(true)
            .build()
            .map_err(|e| ToolError::new(format!("Invalid glob pattern {pattern:?}: {e}")))?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            whole_path,
        })
    }

    /// Whether the entry at `relative` (to the search directory, `/`-separated) matches.
    pub(crate) fn is_match(&self, relative: &str) -> bool {
        if self.whole_path {
            self.matcher.is_match(relative)
        } else {
            let name = relative.rsplit('/').next().unwrap_or(relative);
            self.matcher.is_match(name)
        }
    }
}

/// Where a listing tool starts: a directory inside the workspace, or (for `grep`) a file.
#[derive(Debug)]
pub(crate) struct Start {
    /// The canonical path.
    pub(crate) path: PathBuf,
    /// Whether it is a directory.
    pub(crate) is_dir: bool,
    /// The directory handles are opened beneath ([`Workspace::base_of`]).
    pub(crate) base: PathBuf,
}

/// Resolves the `path` argument (default `.`) of `ls`, `find` or `grep`: it must exist inside
/// the workspace or a read-only root (anywhere, in an unconfined workspace). `Path not found:
/// x` when it does not.
pub(crate) fn resolve_start(workspace: &Workspace, path: Option<&str>) -> Result<Start, ToolError> {
    let shown = path.unwrap_or(".");
    let resolved = workspace
        .resolve_readable(shown)
        .map_err(|e| ToolError::new(e.to_string()))?;
    match std::fs::metadata(&resolved) {
        Ok(meta) => {
            let is_dir = meta.is_dir();
            let dir = if is_dir {
                resolved.as_path()
            } else {
                resolved.parent().unwrap_or(&resolved)
            };
            let base = workspace.base_of(dir).ok_or_else(|| {
                ToolError::new(format!("Path {shown:?} is outside the workspace"))
            })?;
            Ok(Start {
                path: resolved,
                is_dir,
                base,
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(ToolError::new(format!("Path not found: {shown}")))
        }
        Err(e) => Err(ToolError::new(format!("Cannot read {shown}: {e}"))),
    }
}

/// The `limit` argument: at least 1, `default` when absent.
pub(crate) fn limit(value: Option<u64>, default: usize) -> usize {
    value.map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_keeps_whole_lines_within_the_limit() {
        let mut out = Output::new(9);
        assert!(out.push("abcd"));
        assert!(out.push("efgh")); // 4 + 1 + 4 = 9
        assert!(!out.push("i"));
        assert!(!out.push(""));
        assert_eq!(out.lines(), 2);
        assert_eq!(
            out.finish(vec!["5 entries limit reached".into()], vec!["after".into()]),
            "abcd\nefgh\n\n[5 entries limit reached. 9B limit reached. after]"
        );
        let mut out = Output::new(100);
        out.push("x");
        assert_eq!(out.finish(Vec::new(), Vec::new()), "x");
    }

    #[test]
    fn globs_match_names_anywhere_or_paths_from_the_start() {
        let cases = [
            ("*.rs", "src/lib.rs", true),
            ("*.rs", "lib.rs", true),
            ("*.rs", "src/lib.rs.bak", false),
            ("*.RS", "src/lib.rs", false),
            ("*.txt", "c.TXT", true),
            ("src/*.rs", "src/lib.rs", true),
            ("src/*.rs", "a/src/lib.rs", false),
            ("src/*.rs", "src/a/lib.rs", false),
            ("./src/*.rs", "src/lib.rs", true),
            ("**/*.json", "a.json", true),
            ("**/*.json", "a/b/c.json", true),
            ("src/**/*.spec.ts", "src/a/b/x.spec.ts", true),
            ("src/**/*.spec.ts", "src/x.spec.ts", true),
            ("src/**/*.spec.ts", "lib/x.spec.ts", false),
            // `**/name` is matched on the name alone, with the same results.
            ("**/x.txt", "x.txt", true),
            ("**/x.txt", "a/b/x.txt", true),
            ("**/x.txt", "a/bx.txt", false),
            ("**/**/x.txt", "a/x.txt", true),
            ("**/x.txt/", "a/x.txt", false),
        ];
        for (pattern, path, expected) in cases {
            let glob = PathGlob::new(pattern, true).unwrap();
            assert_eq!(glob.is_match(path), expected, "{pattern} ~ {path}");
        }
        assert_eq!(
            PathGlob::new("a[", true).unwrap_err().to_string(),
            "Invalid glob pattern \"a[\": error parsing glob 'a[': unclosed character class; missing ']'"
        );
    }

    #[test]
    fn limits() {
        assert_eq!(
            [limit(None, 100), limit(Some(0), 100), limit(Some(7), 100)],
            [100, 1, 7]
        );
    }
}
