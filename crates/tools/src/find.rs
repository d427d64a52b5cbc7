//! The `find` tool: files and directories whose path matches a glob, in-process (oxpi's walk
//! beneath directory handles, ripgrep's ignore rules and `globset`), confined to the workspace.

use std::sync::Arc;

use oxpi_agent_core::{AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::listing::{limit, resolve_start, Output, PathGlob};
use crate::walk::{Kind, Root, Walk};
use crate::workspace::Workspace;

/// Default number of results `find` returns.
pub const DEFAULT_FIND_LIMIT: usize = 1000;

/// Arguments of the `find` tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindArgs {
    /// Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g.
    /// '*.ts', it matches file names at any depth
    pub pattern: String,
    /// Directory to search in (default: current directory)
    #[serde(default)]
    pub path: Option<String>,
    /// Maximum number of results (default: 1000)
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// What `find` returned, in [`AgentToolResult::details`] (as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FindDetails {
    /// The directory searched, relative to the workspace root.
    pub path: String,
    /// Paths shown.
    pub results: usize,
    /// The result limit, when more paths matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_limit_reached: Option<usize>,
    /// Whether the output was cut at the byte limit.
    pub byte_limit_reached: bool,
}

/// The `find` tool, bound to a [`Workspace`].
///
/// Walks the search directory (default: the root) in name order and lists every file and
/// directory whose path matches the glob, relative to the search directory, a directory with `/`
/// after it. A pattern without `/` (`*.rs`) matches names at any depth; one with `/`
/// (`src/**/*.spec.ts`) matches the path from the search directory; an all-lower-case pattern
/// ignores case (fd's smart case). Dotfiles are included; `.gitignore` and `.ignore` files
/// inside the workspace are respected (also those of the directories above the search
/// directory, up to the root; a search directory that is itself ignored is still searched), and
/// `.git` is skipped. Symbolic links are listed, never followed; ignore files are read only when
/// they are regular files inside the root. Every directory is opened beneath a handle on its
/// parent without following a link, so a directory that another process swaps for a link to
/// somewhere outside while `find` runs is skipped: no name from outside is ever listed.
/// At most `limit` results (1,000) and 50 KB, with pi's notices
/// (`[1000 results limit reached. Use limit=2000 for more, or refine pattern]`); no match gives
/// `No files found matching pattern`. The walk stops at the first result past the limit.
#[derive(Debug, Clone)]
pub struct FindTool {
    workspace: Workspace,
}

impl FindTool {
    /// A `find` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

impl AgentTool for FindTool {
    type Args = FindArgs;

    fn name(&self) -> &str {
        "find"
    }

    fn description(&self) -> &str {
        "Search for files by glob pattern. Returns matching file paths relative to the search \
         directory. Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever \
         is hit first)."
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: FindArgs,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        self.workspace
            .run_blocking(args, cancel, "find failed", find)
            .await
    }
}

fn find(
    workspace: &Workspace,
    args: &FindArgs,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let shown = args.path.as_deref().unwrap_or(".");
    let glob = PathGlob::new(&args.pattern, true)?;
    let start = resolve_start(workspace, args.path.as_deref())?;
    if !start.is_dir {
        return Err(ToolError::new(format!("Not a directory: {shown}")));
    }
    let limit = limit(args.limit, DEFAULT_FIND_LIMIT);
    let mut output = Output::new(workspace.limits().max_bytes);
    let mut results = 0usize;
    let mut more = false;
    let mut aborted = false;
    // One thread: the entries come in name order, and the walk stops at the limit.
    let root = Arc::new(Root::open(&start.base)?);
    for entry in Walk::new(&root, &start.path, None) {
        if cancel.is_cancelled() {
            aborted = true;
            break;
        }
        if !glob.is_match(&entry.rel) {
            continue;
        }
        if results == limit {
            more = true;
            break;
        }
        results += 1;
        let line = match entry.kind {
            Kind::Dir => format!("{}/", entry.rel),
            _ => entry.rel,
        };
        output.push(&line);
    }
    if aborted {
        return Err(ToolError::new("Operation aborted"));
    }
    if results == 0 {
        return Ok(AgentToolResult::text("No files found matching pattern"));
    }
    let mut notices = Vec::new();
    let result_limit_reached = more.then_some(limit);
    if let Some(limit) = result_limit_reached {
        notices.push(format!(
            "{limit} results limit reached. Use limit={} for more, or refine pattern",
            limit.saturating_mul(2)
        ));
    }
    let details = FindDetails {
        path: workspace.display_relative(&start.path),
        results: output.lines(),
        result_limit_reached,
        byte_limit_reached: output.bytes_reached,
    };
    Ok(AgentToolResult::text(output.finish(notices, Vec::new()))
        .with_details(serde_json::to_value(&details).unwrap_or(serde_json::Value::Null)))
}
