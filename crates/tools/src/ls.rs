//! The `ls` tool: lists a directory inside the workspace, sorted, with `/` after directories.

use std::collections::BinaryHeap;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use oxpi_agent_core::{AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::listing::{limit, resolve_start, Output};
use crate::workspace::Workspace;

/// Default number of entries `ls` returns.
pub const DEFAULT_LS_LIMIT: usize = 500;

/// Arguments of the `ls` tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LsArgs {
    /// Directory to list (default: current directory)
    #[serde(default)]
    pub path: Option<String>,
    /// Maximum number of entries to return (default: 500)
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// What `ls` returned, in [`AgentToolResult::details`] (as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LsDetails {
    /// The directory, relative to the workspace root.
    pub path: String,
    /// Entries shown.
    pub entries: usize,
    /// Entries in the directory.
    pub total_entries: usize,
    /// The entry limit, when the directory has more entries than it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_limit_reached: Option<usize>,
    /// Whether the output was cut at the byte limit.
    pub byte_limit_reached: bool,
}

/// The `ls` tool, bound to a [`Workspace`].
///
/// Lists the entries of a directory (dotfiles included, `.gitignore` not applied), sorted by name
/// without regard to case, a directory (or a link to a directory inside the workspace) with `/`
/// after its name. At most `limit` entries (500) and 50 KB, with pi's notices:
/// `[500 entries limit reached. Use limit=1000 for more]`; an empty directory gives
/// `(empty directory)`. Only the entries shown are kept in memory, however large the directory.
/// The directory is opened beneath a handle on the root, so a directory swapped for a link while
/// `ls` runs cannot make it list anything outside.
#[derive(Debug, Clone)]
pub struct LsTool {
    workspace: Workspace,
}

impl LsTool {
    /// An `ls` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

impl AgentTool for LsTool {
    type Args = LsArgs;

    fn name(&self) -> &str {
        "ls"
    }

    fn description(&self) -> &str {
        "List directory contents. Returns entries sorted alphabetically, with '/' suffix for \
         directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever \
         is hit first)."
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: LsArgs,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        self.workspace
            .run_blocking(args, cancel, "ls failed", list)
            .await
    }
}

/// One entry, ordered by name without case, then by the name itself.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    key: String,
    name: String,
    is_dir: bool,
}

/// Lists `args.path` as the tool does, on the calling thread (also what `read` of a directory
/// gives when [`ReadTool::listing_directories`](crate::ReadTool::listing_directories) is on).
pub(crate) fn list(
    workspace: &Workspace,
    args: &LsArgs,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let shown = args.path.as_deref().unwrap_or(".");
    let start = resolve_start(workspace, args.path.as_deref())?;
    if !start.is_dir {
        return Err(ToolError::new(format!("Not a directory: {shown}")));
    }
    let cannot = |e: std::io::Error| ToolError::new(format!("Cannot read directory {shown}: {e}"));
    let root = Dir::open_ambient_dir(&start.base, ambient_authority()).map_err(cannot)?;
    let relative = start.path.strip_prefix(&start.base).unwrap_or(&start.path);
    let dir = if relative.as_os_str().is_empty() {
        root
    } else {
        root.open_dir(relative).map_err(cannot)?
    };
    let limit = limit(args.limit, DEFAULT_LS_LIMIT);
    // The `limit` smallest entries seen so far (a max-heap: the largest is dropped first).
    let mut kept: BinaryHeap<Entry> = BinaryHeap::new();
    let mut total = 0usize;
    for entry in dir.entries().map_err(cannot)? {
        if cancel.is_cancelled() {
            return Err(ToolError::new("Operation aborted"));
        }
        let entry = entry.map_err(cannot)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        total += 1;
        if kept.len() == limit {
            let key = name.to_lowercase();
            let largest = kept.peek().map(|e| (e.key.as_str(), e.name.as_str()));
            if largest.is_some_and(|largest| (key.as_str(), name.as_str()) >= largest) {
                continue;
            }
            kept.pop();
        }
        let file_type = entry.file_type().map_err(cannot)?;
        // A link counts as a directory when it leads to one inside the workspace (resolved by
        // the workspace's rules, which also follow absolute links that stay inside).
        let is_dir = file_type.is_dir()
            || (file_type.is_symlink()
                && start
                    .path
                    .join(entry.file_name())
                    .to_str()
                    .and_then(|link| workspace.resolve(link).ok())
                    .is_some_and(|target| target.is_dir()));
        kept.push(Entry {
            key: name.to_lowercase(),
            name,
            is_dir,
        });
    }
    let entries = kept.into_sorted_vec();
    if entries.is_empty() {
        return Ok(AgentToolResult::text("(empty directory)"));
    }
    let mut output = Output::new(workspace.limits().max_bytes);
    for entry in &entries {
        let line = if entry.is_dir {
            format!("{}/", entry.name)
        } else {
            entry.name.clone()
        };
        if !output.push(&line) {
            break;
        }
    }
    let mut notices = Vec::new();
    let entry_limit_reached = (total > limit).then_some(limit);
    if let Some(limit) = entry_limit_reached {
        notices.push(format!(
            "{limit} entries limit reached. Use limit={} for more",
            limit.saturating_mul(2)
        ));
    }
    let details = LsDetails {
        path: workspace.display_relative(&start.path),
        entries: output.lines(),
        total_entries: total,
        entry_limit_reached,
        byte_limit_reached: output.bytes_reached,
    };
    Ok(AgentToolResult::text(output.finish(notices, Vec::new()))
        .with_details(serde_json::to_value(&details).unwrap_or(serde_json::Value::Null)))
}
