//! pi's tools for oxpi agents (`read`, `bash`, `edit`, `write`, `grep`, `find`, `ls`), confined
//! to a workspace root.
//!
//! The model proposes, the program decides: every path the model gives is resolved by
//! [`Workspace::resolve`] to a canonical path inside the root, or refused with a message that
//! names the path and says it is outside the workspace. The root is canonicalized once, when the
//! [`Workspace`] is made; the tools hold it and the model never chooses it. Files are opened
//! without following a final symbolic link (`O_NOFOLLOW`), and on Linux the kernel is asked
//! where the opened file really is, so a path swapped between the check and the open cannot lead
//! outside. Writes never re-resolve a path at all: directories are created and opened beneath a
//! handle on the root (`cap-std`, with `openat2(RESOLVE_BENEATH)` where the kernel has it), and
//! the temporary file, the rename and its cleanup are relative to the parent directory's handle.
//!
//! - [`ReadTool`] returns at most 2,000 lines or 50 KB of text (configurable with [`Limits`]),
//!   streaming the file, and says how to continue; images come back as image blocks.
//! - [`BashTool`] runs a shell command in the root, in its own process group, showing the last
//!   2,000 lines or 50 KB of its output; under [`Sandbox::workspace`] (the default) the kernel
//!   lets it write only inside the root and the tool's own temporary directory.
//! - [`WriteTool`] writes atomically (temporary file, flush to disk, rename) and keeps an
//!   existing file's permissions, owner and group (as far as the process may give them).
//!
//! Blocking file-system work runs on Tokio's blocking thread pool.
//!
//! ```
//! use std::sync::Arc;
//! use oxpi_agent_core::CancellationToken;
//! use oxpi_tools::{coding_tools, Workspace};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let tools = coding_tools(Workspace::new(dir.path())?)?;
//! let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
//! # #[cfg(unix)]
//! assert_eq!(names, ["read", "bash", "edit", "write"]);
//! // An agent runs them for its model (`AgentOptions::new(model).with_tools(tools)`); by hand:
//! let write = tools.iter().find(|t| t.name() == "write").ok_or("no write tool")?;
//! let run = |args: serde_json::Value| {
//!     let args = args.as_object().cloned().unwrap_or_default();
//!     write.execute("call-1", args, CancellationToken::new(), Arc::new(|_| {}))
//! };
//! run(serde_json::json!({"path": "notes/a.txt", "content": "hello"})).await?;
//! assert_eq!(std::fs::read_to_string(dir.path().join("notes/a.txt"))?, "hello");
//! // A path that leads outside the workspace is refused.
//! let refused = run(serde_json::json!({"path": "../a.txt", "content": "no"})).await;
//! assert!(refused.unwrap_err().to_string().contains("outside"));
//! # Ok(())
//! # }
//! ```

mod atomic;
#[cfg(unix)]
mod bash;
#[cfg(unix)]
mod bash_output;
mod cursor;
mod edit;
mod edit_diff;
mod edit_match;
mod file_lock;
mod find;
mod fsutil;
mod grep;
mod image;
mod listing;
mod ls;
#[cfg(unix)]
mod process;
mod read;
mod read_details;
#[cfg(unix)]
mod running;
#[cfg(unix)]
mod sandbox;
mod text;
mod walk;
mod window_error;
mod workspace;
mod write;

use oxpi_agent_core::AgentToolHandle;
pub use oxpi_ai::tool::SchemaError;

#[cfg(unix)]
pub use bash::{BashArgs, BashDetails, BashTool, DEFAULT_EXIT_GRACE};
#[cfg(unix)]
pub use bash_output::BashTruncation;
pub use edit::{EditArgs, EditDetails, EditTool, Replacement, MAX_EDIT_BYTES};
pub use find::{FindArgs, FindDetails, FindTool, DEFAULT_FIND_LIMIT};
pub use grep::{GrepArgs, GrepDetails, GrepTool, DEFAULT_GREP_LIMIT, GREP_MAX_LINE_CHARS};
pub use ls::{LsArgs, LsDetails, LsTool, DEFAULT_LS_LIMIT};
pub use read::{ReadArgs, ReadTool};
pub use read_details::{ImageDetails, ReadDetails, TextDetails, TruncatedBy};
#[cfg(unix)]
pub use running::RunningCommands;
#[cfg(unix)]
pub use sandbox::{Sandbox, SandboxError, SandboxPolicy, SandboxSupport, MIN_LANDLOCK_ABI};
pub use workspace::{
    Limits, PathError, Workspace, DEFAULT_MAX_BYTES, DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_LINES,
    DEFAULT_MAX_SCAN_BYTES, MAX_PATH_BYTES,
};
pub use write::{WriteArgs, WriteDetails, WriteTool};

/// The `read` tool for `workspace`, ready for an agent.
///
/// Fails only if the arguments' schema cannot be compiled, which a unit test rules out.
pub fn read_tool(workspace: Workspace) -> Result<AgentToolHandle, SchemaError> {
    AgentToolHandle::new(ReadTool::new(workspace))
}

/// The `write` tool for `workspace`, ready for an agent.
///
/// Fails only if the arguments' schema cannot be compiled, which a unit test rules out.
pub fn write_tool(workspace: Workspace) -> Result<AgentToolHandle, SchemaError> {
    AgentToolHandle::new(WriteTool::new(workspace))
}

/// The `bash` tool for `workspace`, ready for an agent, under [`Sandbox::workspace`] (use
/// [`BashTool::with_sandbox`] and [`AgentToolHandle::new`] for another sandbox).
///
/// Fails only if the arguments' schema cannot be compiled, which a unit test rules out.
#[cfg(unix)]
pub fn bash_tool(workspace: Workspace) -> Result<AgentToolHandle, SchemaError> {
    AgentToolHandle::new(BashTool::new(workspace))
}

/// The `edit` tool for `workspace`, ready for an agent.
///
/// Fails only if the arguments' schema cannot be compiled, which a unit test rules out.
pub fn edit_tool(workspace: Workspace) -> Result<AgentToolHandle, SchemaError> {
    AgentToolHandle::new(EditTool::new(workspace))
}

/// The `ls` tool for `workspace`, ready for an agent.
///
/// Fails only if the arguments' schema cannot be compiled, which a unit test rules out.
pub fn ls_tool(workspace: Workspace) -> Result<AgentToolHandle, SchemaError> {
    AgentToolHandle::new(LsTool::new(workspace))
}

/// The `find` tool for `workspace`, ready for an agent.
///
/// Fails only if the arguments' schema cannot be compiled, which a unit test rules out.
pub fn find_tool(workspace: Workspace) -> Result<AgentToolHandle, SchemaError> {
    AgentToolHandle::new(FindTool::new(workspace))
}

/// The `grep` tool for `workspace`, ready for an agent.
///
/// Fails only if the arguments' schema cannot be compiled, which a unit test rules out.
pub fn grep_tool(workspace: Workspace) -> Result<AgentToolHandle, SchemaError> {
    AgentToolHandle::new(GrepTool::new(workspace))
}

/// pi's coding tools, in pi's order: `read`, `bash`, `edit`, `write` (`bash` under
/// [`Sandbox::workspace`]; on a system without Unix processes, `read`, `edit`, `write`).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let tools = oxpi_tools::coding_tools(oxpi_tools::Workspace::new(dir.path())?)?;
/// let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
/// assert_eq!(names, ["read", "bash", "edit", "write"]);
/// # Ok(())
/// # }
/// ```
pub fn coding_tools(workspace: Workspace) -> Result<Vec<AgentToolHandle>, SchemaError> {
    let mut tools = vec![read_tool(workspace.clone())?];
    #[cfg(unix)]
    tools.push(bash_tool(workspace.clone())?);
    tools.push(edit_tool(workspace.clone())?);
    tools.push(write_tool(workspace)?);
    Ok(tools)
}

/// pi's read-only tools: `read`, `grep`, `find`, `ls`.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let tools = oxpi_tools::read_only_tools(oxpi_tools::Workspace::new(dir.path())?)?;
/// let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
/// assert_eq!(names, ["read", "grep", "find", "ls"]);
/// # Ok(())
/// # }
/// ```
pub fn read_only_tools(workspace: Workspace) -> Result<Vec<AgentToolHandle>, SchemaError> {
    Ok(vec![
        read_tool(workspace.clone())?,
        grep_tool(workspace.clone())?,
        find_tool(workspace.clone())?,
        ls_tool(workspace)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_build() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let read = read_tool(ws.clone()).unwrap();
        let write = write_tool(ws.clone()).unwrap();
        // Every tool's schema compiles.
        for tool in [edit_tool, ls_tool, find_tool, grep_tool, bash_tool] {
            tool(ws.clone()).unwrap();
        }
        assert_eq!(
            (read.name(), read.label(), write.name(), write.label()),
            ("read", "read", "write", "write")
        );
        assert_eq!(
            read.definition().description,
            "Read the contents of a file in the workspace. Text output is truncated to 2000 \
             lines or 50KB (whichever is hit first); use offset/limit for large files, and \
             continue with offset until complete. Images (png, jpeg, gif, webp) are returned as \
             attachments."
        );
        assert_eq!(
            write.definition().parameters["required"],
            serde_json::json!(["path", "content"])
        );
    }
}
