//! The `grep` tool: lines matching a pattern, in-process with ripgrep's crates (`grep-regex`,
//! `grep-searcher`, `ignore`), confined to the workspace.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use oxpi_agent_core::{AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::find::walker;
use crate::fsutil::{open_read_nofollow, opened_path};
use crate::listing::{limit, relative, resolve_start, Output, PathGlob};
use crate::workspace::Workspace;

/// Default number of matching lines `grep` returns.
pub const DEFAULT_GREP_LIMIT: usize = 100;
/// Longest line `grep` shows, in characters; longer ones are cut.
pub const GREP_MAX_LINE_CHARS: usize = 500;

/// Arguments of the `grep` tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GrepArgs {
    /// Search pattern (regex or literal string)
    pub pattern: String,
    /// Directory or file to search (default: current directory)
    #[serde(default)]
    pub path: Option<String>,
    /// Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g.
    /// '*.ts', it matches file names at any depth
    #[serde(default)]
    pub glob: Option<String>,
    /// Case-insensitive search (default: false)
    #[serde(default)]
    pub ignore_case: Option<bool>,
    /// Treat pattern as literal string instead of regex (default: false)
    #[serde(default)]
    pub literal: Option<bool>,
    /// Number of lines to show before and after each match (default: 0)
    #[serde(default)]
    pub context: Option<u64>,
    /// Maximum number of matches to return (default: 100)
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// What `grep` returned, in [`AgentToolResult::details`] (as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepDetails {
    /// The directory or file searched, relative to the workspace root.
    pub path: String,
    /// Matching lines shown.
    pub matches: usize,
    /// Files searched.
    pub files_searched: usize,
    /// The match limit, when more lines matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_limit_reached: Option<usize>,
    /// Whether the output was cut at the byte limit.
    pub byte_limit_reached: bool,
    /// Whether a line was cut at 500 characters.
    pub lines_truncated: bool,
}

/// The `grep` tool, bound to a [`Workspace`].
///
/// Searches the regular files under the search directory (default: the root; or one file) in
/// name order, and prints each matching line as `path:12: text` and each context line as
/// `path-13- text`, the path relative to the search directory (the file's name when one file is
/// searched). The pattern is a regular expression (Rust's `regex` syntax, as ripgrep's) unless
/// `literal`; case matters unless `ignoreCase`. `glob` keeps only the files it matches (pi's rules,
/// see `find`; `!` in front excludes them). Files are walked as `find` walks: dotfiles included,
/// `.gitignore` respected, `.git` skipped, links never followed. Binary files (a NUL byte) are
/// skipped; FIFOs, sockets and devices are never opened. Lines longer than 500 characters are
/// cut (`... [truncated]`). At most `limit` matching lines (100) and 50 KB, with pi's notices
/// (`[100 matches limit reached. Use limit=200 for more, or refine pattern]`); the search stops at
/// the first match past the limit, and an abort stops it within one read.
#[derive(Debug, Clone)]
pub struct GrepTool {
    workspace: Workspace,
}

impl GrepTool {
    /// A `grep` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

impl AgentTool for GrepTool {
    type Args = GrepArgs;

    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Search file contents for a pattern. Returns matching lines with file paths and line \
         numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is \
         hit first). Long lines are truncated to 500 chars."
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: GrepArgs,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        let workspace = self.workspace.clone();
        tokio::task::spawn_blocking(move || grep(&workspace, &args, &cancel))
            .await
            .map_err(|e| ToolError::new(format!("grep failed: {e}")))?
    }
}

/// A file's bytes that stop with an error once the search is cancelled.
struct CancelRead<'a> {
    file: File,
    cancel: &'a CancellationToken,
}

impl Read for CancelRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(io::Error::other("Operation aborted"));
        }
        self.file.read(buf)
    }
}

/// The state of one search across files.
struct Search<'a> {
    limit: usize,
    /// Matching lines so far, all files.
    matches: usize,
    /// A match past the limit was seen.
    more: bool,
    lines_truncated: bool,
    /// The current file: its name as shown, and its lines so far (dropped if it turns out to be
    /// binary).
    display: String,
    lines: Vec<String>,
    binary: bool,
    cancel: &'a CancellationToken,
}

impl Search<'_> {
    fn line(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        let number = number.unwrap_or(0);
        let line = match text.char_indices().nth(GREP_MAX_LINE_CHARS) {
            Some((cut, _)) => {
                self.lines_truncated = true;
                format!(
                    "{}{separator}{number}{separator} {}... [truncated]",
                    self.display,
                    &text[..cut]
                )
            }
            None => format!("{}{separator}{number}{separator} {text}", self.display),
        };
        self.lines.push(line);
    }
}

impl Sink for Search<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> io::Result<bool> {
        if self.cancel.is_cancelled() {
            return Err(io::Error::other("Operation aborted"));
        }
        if self.matches >= self.limit {
            self.more = true;
            return Ok(false);
        }
        self.matches += 1;
        self.line(':', found.line_number(), found.bytes());
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> io::Result<bool> {
        // Past the limit, only the last match's trailing context is shown.
        if self.matches >= self.limit && *context.kind() != SinkContextKind::After {
            return Ok(true);
        }
        self.line('-', context.line_number(), context.bytes());
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> io::Result<bool> {
        self.binary = true;
        Ok(false)
    }
}

fn matcher(args: &GrepArgs) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case.unwrap_or(false))
        .fixed_strings(args.literal.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| ToolError::new(e.to_string()))
}

/// Searches one file into `search`; the lines it found go to `output` unless it was binary.
fn search_file(
    workspace: &Workspace,
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    search: &mut Search<'_>,
    output: &mut Output,
) -> Result<bool, ToolError> {
    // Opened without following a link or blocking on a FIFO swapped in since the walk, and only
    // read if the kernel says it is a regular file inside the root.
    let Ok(file) = open_read_nofollow(path) else {
        return Ok(false);
    };
    if !file.metadata().is_ok_and(|m| m.is_file())
        || opened_path(&file).is_some_and(|real| !real.starts_with(workspace.root()))
    {
        return Ok(false);
    }
    search.lines.clear();
    search.binary = false;
    let matches_before = search.matches;
    let result = searcher.search_reader(
        matcher,
        CancelRead {
            file,
            cancel: search.cancel,
        },
        &mut *search,
    );
    if search.cancel.is_cancelled() {
        return Err(ToolError::new("Operation aborted"));
    }
    if result.is_err() || search.binary {
        // An unreadable or binary file shows nothing and counts no match.
        search.matches = matches_before;
        search.more = search.more && !search.binary;
        search.lines.clear();
        return Ok(true);
    }
    for line in search.lines.drain(..) {
        output.push(&line);
    }
    Ok(true)
}

fn grep(
    workspace: &Workspace,
    args: &GrepArgs,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let matcher = matcher(args)?;
    let glob = match args.glob.as_deref().map(str::trim) {
        Some(g) if !g.is_empty() => {
            let (negated, pattern) = match g.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, g),
            };
            Some((negated, PathGlob::new(pattern, false)?))
        }
        _ => None,
    };
    let start = resolve_start(workspace, args.path.as_deref())?;
    let context = usize::try_from(args.context.unwrap_or(0)).unwrap_or(usize::MAX);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(b'\0'))
        .build();
    let mut search = Search {
        limit: limit(args.limit, DEFAULT_GREP_LIMIT),
        matches: 0,
        more: false,
        lines_truncated: false,
        display: String::new(),
        lines: Vec::new(),
        binary: false,
        cancel,
    };
    let mut output = Output::new(workspace.limits().max_bytes);
    let mut files = 0usize;
    if start.is_dir {
        for entry in walker(workspace, &start.path).build() {
            if cancel.is_cancelled() {
                return Err(ToolError::new("Operation aborted"));
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let rel = relative(&start.path, entry.path());
            if let Some((negated, glob)) = &glob {
                if glob.is_match(&rel) == *negated {
                    continue;
                }
            }
            search.display = rel;
            if search_file(
                workspace,
                &mut searcher,
                &matcher,
                entry.path(),
                &mut search,
                &mut output,
            )? {
                files += 1;
            }
            if search.more {
                break;
            }
        }
    } else {
        search.display = start
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if search_file(
            workspace,
            &mut searcher,
            &matcher,
            &start.path,
            &mut search,
            &mut output,
        )? {
            files += 1;
        }
    }
    if search.matches == 0 {
        return Ok(AgentToolResult::text("No matches found"));
    }
    let mut notices = Vec::new();
    let match_limit_reached = search.more.then_some(search.limit);
    if let Some(limit) = match_limit_reached {
        notices.push(format!(
            "{limit} matches limit reached. Use limit={} for more, or refine pattern",
            limit.saturating_mul(2)
        ));
    }
    let details = GrepDetails {
        path: workspace.display_relative(&start.path),
        matches: search.matches,
        files_searched: files,
        match_limit_reached,
        byte_limit_reached: output.bytes_reached,
        lines_truncated: search.lines_truncated,
    };
    let after = if search.lines_truncated {
        vec![format!(
            "Some lines truncated to {GREP_MAX_LINE_CHARS} chars. Use read tool to see full lines"
        )]
    } else {
        Vec::new()
    };
    let text = output.finish(notices, after);
    Ok(AgentToolResult::text(text)
        .with_details(serde_json::to_value(&details).unwrap_or(serde_json::Value::Null)))
}
