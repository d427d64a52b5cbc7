//! The `write` tool: writes a file inside the workspace, atomically.

use std::io;

use oxpi_agent_core::{AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::atomic::{open_parent, write_atomic};
use crate::file_lock::lock_file;
use crate::fsutil::cap_kind_name;
use crate::workspace::{names_directory, PathError, Workspace};

/// Arguments of the `write` tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// Path to the file to write, relative to the workspace root (an absolute path must lie
    /// inside it).
    pub path: String,
    /// Content to write to the file.
    pub content: String,
}

/// What a successful `write` did, in [`AgentToolResult::details`] (as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteDetails {
    /// The file, relative to the workspace root.
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
    /// Whether the file was created (rather than replaced).
    pub created: bool,
}

/// The `write` tool, bound to a [`Workspace`].
///
/// Creates missing parent directories inside the root, then writes atomically: the content goes
/// to a temporary file in the target's directory, which is flushed to disk and renamed over the
/// target, so a crash or an error never leaves a half-written file. Directories are created and
/// opened beneath a handle on the root and the file is written relative to its directory's
/// handle, so another process that swaps a directory for a symbolic link meanwhile cannot steer
/// the write outside the root. A replaced file keeps its permission bits, and its owner and
/// group as far as the process may give them (`fchown`: root always; another user only to a
/// group it is in; a file it may not give away becomes its own, without a set-user-ID or
/// set-group-ID bit that no longer applies). Its other hard links keep the old content. A
/// file without any write permission bit is refused, as are directories, FIFOs, sockets and
/// devices. Edits and writes of one file run one at a time in the process, whatever
/// [`Workspace`] they come through. Returns `Successfully wrote 1234 bytes to notes/a.txt`, with
/// the path as given.
#[derive(Debug, Clone)]
pub struct WriteTool {
    workspace: Workspace,
}

impl WriteTool {
    /// A `write` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }

    /// The workspace it writes to.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }
}

impl AgentTool for WriteTool {
    type Args = WriteArgs;

    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        "Write content to a file in the workspace. Creates the file if it doesn't exist, \
         overwrites it if it does, and creates parent directories as needed."
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: WriteArgs,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        self.workspace
            .run_blocking(
                args,
                cancel,
                "Cannot write: the write task failed",
                write_file,
            )
            .await
    }
}

/// Writes as the tool does, on the calling thread.
fn write_file(
    workspace: &Workspace,
    args: &WriteArgs,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let shown = args.path.as_str();
    let resolved = workspace
        .resolve(shown)
        .map_err(|e| ToolError::new(e.to_string()))?;
    let cannot = |e: io::Error| ToolError::new(format!("Cannot write {shown}: {e}"));
    if names_directory(shown) {
        return Err(ToolError::new(format!(
            "Cannot write {shown}: the path ends with \"/\", so it names a directory"
        )));
    }
    let Some((anchor, relative)) = workspace.anchor(&resolved) else {
        return Err(ToolError::new(
            PathError::Outside {
                path: shown.to_string(),
            }
            .to_string(),
        ));
    };
    // From here on, everything is relative to directory handles opened beneath the root.
    let (dir, name) = open_parent(anchor, relative, true).map_err(cannot)?;
    // Changes of one file run one at a time in the process (an `edit` must not interleave).
    let _lock = lock_file(&dir, &name).map_err(cannot)?;
    let existing = match dir.symlink_metadata(&name) {
        Ok(meta) if meta.is_file() => {
            if meta.permissions().readonly() {
                return Err(ToolError::new(format!(
                    "Cannot write {shown}: the file is read-only"
                )));
            }
            Some(meta)
        }
        Ok(meta) => {
            return Err(ToolError::new(format!(
                "Cannot write {shown}: it is {}",
                cap_kind_name(&meta.file_type())
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(cannot(e)),
    };
    if cancel.is_cancelled() {
        return Err(ToolError::new("Operation aborted"));
    }
    let created = existing.is_none();
    let bytes = write_atomic(&dir, &name, &mut args.content.as_bytes(), existing.as_ref())
        .map_err(cannot)?;
    let details = WriteDetails {
        path: workspace.display_relative(&resolved),
        bytes,
        created,
    };
    Ok(
        AgentToolResult::text(format!("Successfully wrote {bytes} bytes to {shown}"))
            .with_details(serde_json::to_value(&details).unwrap_or(serde_json::Value::Null)),
    )
}
