//! The `grep` tool: lines matching a pattern, in-process with ripgrep's crates (`grep-regex`,
//! `grep-searcher`, `ignore`), confined to the workspace.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use oxpi_agent_core::{AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::listing::{limit, resolve_start, Output, PathGlob};
use crate::walk::{self, Override, Root, Walk};
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
    /// Matching lines found, up to the limit (fewer are shown when the output reaches the
    /// byte limit first).
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
/// Searches the regular files under the search directory (default: the root; or one file) on
/// several threads, reports them in name order, and prints each matching line as
/// `path:12: text` and each context line as `path-13- text`, the path relative to the search
/// directory (the file's name when one file is searched). The pattern is a regular expression
/// (Rust's `regex` syntax, as ripgrep's) unless `literal`; case matters unless `ignoreCase`.
/// `glob` keeps only the files it matches (pi's rules, see `find`; `!` in front excludes them),
/// and, as ripgrep's `--glob` which pi passes, overrides the ignore rules: an ignored file or
/// directory it matches is searched. Files are walked as `find` walks: dotfiles included,
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
        self.workspace
            .run_blocking(args, cancel, "grep failed", grep)
            .await
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

/// What a line one file's search found is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Match,
    Before,
    After,
}

/// A line one file's search found, formatted for the output.
#[derive(Debug)]
struct Found {
    kind: Kind,
    line: String,
    /// It was cut at [`GREP_MAX_LINE_CHARS`].
    truncated: bool,
}

/// What the search of one file found; nothing when it is binary or could not be read.
#[derive(Debug, Default)]
struct FileResult {
    lines: Vec<Found>,
}

/// Collects one file's lines: at most `cap` matches, and no more lines once they hold more
/// than `max_bytes` (the output could not show them).
struct FileSink<'a> {
    display: &'a str,
    cap: usize,
    max_bytes: usize,
    stored: usize,
    matches: usize,
    result: FileResult,
    binary: bool,
    cancel: &'a CancellationToken,
}

impl FileSink<'_> {
    fn push(&mut self, kind: Kind, number: Option<u64>, bytes: &[u8]) {
        let separator = if kind == Kind::Match { ':' } else { '-' };
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        let number = number.unwrap_or(0);
        let (line, truncated) = match text.char_indices().nth(GREP_MAX_LINE_CHARS) {
            Some((cut, _)) => (
                format!(
                    "{}{separator}{number}{separator} {}... [truncated]",
                    self.display,
                    &text[..cut]
                ),
                true,
            ),
            None => (
                format!("{}{separator}{number}{separator} {text}", self.display),
                false,
            ),
        };
        self.stored += line.len() + 1;
        self.result.lines.push(Found {
            kind,
            line,
            truncated,
        });
    }

    /// Whether the lines kept so far already fill the output.
    fn full(&self) -> bool {
        self.stored > self.max_bytes
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> io::Result<bool> {
        if self.cancel.is_cancelled() {
            return Err(io::Error::other("Operation aborted"));
        }
        if self.matches >= self.cap || self.full() {
            return Ok(false);
        }
        self.matches += 1;
        self.push(Kind::Match, found.line_number(), found.bytes());
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> io::Result<bool> {
        let kind = match context.kind() {
            SinkContextKind::Before => Kind::Before,
            SinkContextKind::After => Kind::After,
            SinkContextKind::Other => return Ok(true),
        };
        if self.full() {
            return Ok(false);
        }
        self.push(kind, context.line_number(), context.bytes());
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> io::Result<bool> {
        self.binary = true;
        Ok(false)
    }
}

/// Searches one file: `None` when it is not a regular file inside the root, cannot be read, or
/// is binary. The file is opened beneath the root's handle (`openat2(RESOLVE_BENEATH)` where the
/// kernel has it), so a directory swapped for a link since the walk cannot lead outside, and
/// without blocking, so a FIFO swapped in is seen by `fstat` and never read.
fn search_file(
    root: &Root,
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    (path, parent): (&Path, Option<&walk::Parent>),
    display: &str,
    (cap, max_bytes): (usize, usize),
    cancel: &CancellationToken,
) -> Option<FileResult> {
    // Beneath the directory's handle when the walk gave it: one step, whatever the depth.
    let file = match parent {
        Some((dir, name)) => root.open_file_in(dir, name)?,
        None => root.open_file(path)?,
    }
    .into_std();
    let mut sink = FileSink {
        display,
        cap,
        max_bytes,
        stored: 0,
        matches: 0,
        result: FileResult::default(),
        binary: false,
        cancel,
    };
    let searched = searcher.search_reader(matcher, CancelRead { file, cancel }, &mut sink);
    (searched.is_ok() && !sink.binary).then_some(sink.result)
}

/// The lines of the files, taken in order, up to the limit.
struct Collect {
    limit: usize,
    matches: usize,
    /// A match past the limit exists: the search can stop.
    more: bool,
    /// The output is full (byte limit): the search can stop.
    full: bool,
    truncated: bool,
    files: usize,
    output: Output,
}

impl Collect {
    fn take(&mut self, result: Option<FileResult>) {
        let Some(result) = result else { return };
        self.files += 1;
        for found in result.lines {
            if self.matches >= self.limit && found.kind != Kind::After {
                // Past the limit, only the last match's trailing context is shown; a match, or
                // the leading context of one, means there are more.
                self.more = true;
                return;
            }
            if found.kind == Kind::Match {
                self.matches += 1;
            }
            if !self.output.push(&found.line) {
                self.full = true;
                return;
            }
            self.truncated |= found.truncated;
        }
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

/// Most threads that search files at once.
const MAX_WORKERS: usize = 8;
/// Most context lines before and after a match (more would not fit in the output anyway).
const MAX_CONTEXT: usize = 1000;
/// Most memory one file's search may use for its buffer (a longer line, or more context than
/// this holds, makes the file count as unreadable and be skipped).
const SEARCH_HEAP_LIMIT: usize = 64 * 1024 * 1024;
/// Most batches handed out and not yet reported, so results that arrive ahead of a slow file
/// wait in a bounded window.
const WINDOW: usize = 4;

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
            Some(Override {
                negated,
                glob: PathGlob::new(pattern, false)?,
            })
        }
        _ => None,
    };
    let start = resolve_start(workspace, args.path.as_deref())?;
    // More context than the output can ever show only costs memory.
    let context = usize::try_from(args.context.unwrap_or(0))
        .unwrap_or(usize::MAX)
        .min(MAX_CONTEXT);
    let searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(b'\0'))
        .heap_limit(Some(SEARCH_HEAP_LIMIT))
        .clone();
    let limit = limit(args.limit, DEFAULT_GREP_LIMIT);
    let mut collect = Collect {
        limit,
        matches: 0,
        more: false,
        full: false,
        truncated: false,
        files: 0,
        output: Output::new(workspace.limits().max_bytes),
    };
    // No file needs more than one match past the limit, nor more lines than the output holds.
    let cap = (limit.saturating_add(1), workspace.limits().max_bytes);
    let root = Arc::new(Root::open(&start.base)?);
    if start.is_dir {
        let files = Files {
            root: &root,
            start: &start.path,
            glob: glob.as_ref(),
        };
        search_tree(&files, &searcher, &matcher, cap, cancel, &mut collect);
    } else {
        let display = start
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let result = search_file(
            &root,
            &mut searcher.build(),
            &matcher,
            (&start.path, None),
            &display,
            cap,
            cancel,
        );
        collect.take(result);
    }
    if cancel.is_cancelled() {
        return Err(ToolError::new("Operation aborted"));
    }
    if collect.matches == 0 {
        return Ok(AgentToolResult::text("No matches found"));
    }
    let mut notices = Vec::new();
    let match_limit_reached = collect.more.then_some(limit);
    if let Some(limit) = match_limit_reached {
        notices.push(format!(
            "{limit} matches limit reached. Use limit={} for more, or refine pattern",
            limit.saturating_mul(2)
        ));
    }
    let details = GrepDetails {
        path: workspace.display_relative(&start.path),
        matches: collect.matches,
        files_searched: collect.files,
        match_limit_reached,
        byte_limit_reached: collect.output.bytes_reached,
        lines_truncated: collect.truncated,
    };
    let after = if collect.truncated {
        vec![format!(
            "Some lines truncated to {GREP_MAX_LINE_CHARS} chars. Use read tool to see full lines"
        )]
    } else {
        Vec::new()
    };
    let text = collect.output.finish(notices, after);
    Ok(AgentToolResult::text(text)
        .with_details(serde_json::to_value(&details).unwrap_or(serde_json::Value::Null)))
}

/// The files of a directory search: the walk and the glob.
struct Files<'a> {
    root: &'a Arc<Root>,
    start: &'a Path,
    glob: Option<&'a Override>,
}

/// Most directories whose handles one batch holds (the files of a batch are opened beneath
/// them), so the handles held by batches in flight stay few.
const DIRS_PER_BATCH: usize = 4;

/// Files per job handed to a search thread: enough that handing over costs little next to the
/// searching, few enough that a search stopped at its limit wastes little.
const BATCH: usize = 128;

/// Searches the files under `files.start` on several threads and hands the results to `collect`
/// in walk order, so the output is the same as a search file by file. The walk runs on its own
/// thread and hands out batches of [`BATCH`] files, at most [`WINDOW`] per worker ahead of the
/// batch being reported (a token is taken per batch and given back when it is reported), so
/// results that arrive ahead of a slow file wait in a bounded window. Everything stops once
/// `collect` has seen a match past the limit or filled the output, or the search is cancelled.
fn search_tree(
    files: &Files<'_>,
    searcher: &SearcherBuilder,
    matcher: &RegexMatcher,
    cap: (usize, usize),
    cancel: &CancellationToken,
    collect: &mut Collect,
) {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_WORKERS);
    let stop = AtomicBool::new(false);
    let stopped = || stop.load(Ordering::Relaxed) || cancel.is_cancelled();
    type Batch = Vec<(PathBuf, String, Option<walk::Parent>)>;
    let (job_tx, job_rx) = mpsc::sync_channel::<(usize, Batch)>(workers * WINDOW);
    let job_rx = Mutex::new(job_rx);
    let (result_tx, result_rx) =
        mpsc::sync_channel::<(usize, Vec<Option<FileResult>>)>(workers * WINDOW);
    let (token_tx, token_rx) = mpsc::sync_channel::<()>(workers * WINDOW);
    for _ in 0..workers * WINDOW {
        let _ = token_tx.send(());
    }
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let (job_tx, token_rx) = (job_tx, token_rx);
            let mut index = 0;
            let mut batch: Batch = Vec::with_capacity(BATCH);
            // Directory handles the batch holds (each change of directory counts one).
            let mut dirs = 0;
            let send = |batch: Batch, index: usize| {
                // Wait for room in the window; no token left means the search is over.
                token_rx.recv().is_ok() && job_tx.send((index, batch)).is_ok()
            };
            for entry in Walk::new(files.root, files.start, files.glob.cloned()) {
                if stopped() {
                    return;
                }
                if entry.kind != walk::Kind::File {
                    continue;
                }
                let same_dir = match (batch.last().and_then(|b| b.2.as_ref()), &entry.parent) {
                    (Some((a, _)), Some((b, _))) => Arc::ptr_eq(a, b),
                    _ => false,
                };
                if !same_dir {
                    dirs += 1;
                }
                batch.push((entry.path, entry.rel, entry.parent));
                if batch.len() == BATCH || dirs == DIRS_PER_BATCH {
                    dirs = 0;
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    if !send(full, index) {
                        return;
                    }
                    index += 1;
                }
            }
            if !batch.is_empty() {
                send(batch, index);
            }
        });
        for _ in 0..workers {
            let result_tx = result_tx.clone();
            let (job_rx, stopped) = (&job_rx, &stopped);
            scope.spawn(move || {
                let mut searcher = searcher.build();
                let root = files.root.as_ref();
                loop {
                    let job = job_rx
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .recv();
                    let Ok((index, batch)) = job else { break };
                    let results = batch
                        .iter()
                        .map(|(path, display, parent)| {
                            if stopped() {
                                return None;
                            }
                            let file = (path.as_path(), parent.as_ref());
                            search_file(root, &mut searcher, matcher, file, display, cap, cancel)
                        })
                        .collect();
                    if result_tx.send((index, results)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(result_tx);
        let mut waiting: BTreeMap<usize, Vec<Option<FileResult>>> = BTreeMap::new();
        let mut next = 0;
        'collect: for (index, results) in &result_rx {
            waiting.insert(index, results);
            while let Some(results) = waiting.remove(&next) {
                next += 1;
                let _ = token_tx.send(());
                for result in results {
                    collect.take(result);
                    if collect.more || collect.full || cancel.is_cancelled() {
                        break 'collect;
                    }
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        // The walker may wait for a token: none will come.
        drop(token_tx);
        // Let the workers finish what they hold (they search nothing more now).
        for _ in &result_rx {}
    });
}
