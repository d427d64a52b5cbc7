//! The `write` tool: writes a file inside the workspace, atomically.

use std::fs::{self, File, Permissions};
use std::io::{self, Read, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use oxpi_agent_core::{AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::fsutil::{create_new_nofollow, kind_name, opened_path};
use crate::workspace::{PathError, Workspace};

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
/// target, so a crash or an error never leaves a half-written file. A replaced file keeps its
/// permission bits (not its owner, nor its other hard links, which keep the old content). A
/// file without any write permission bit is refused, as are directories, FIFOs, sockets and
/// devices. Returns `Successfully wrote 1234 bytes to notes/a.txt`, with the path as given.
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
        let workspace = self.workspace.clone();
        tokio::task::spawn_blocking(move || write_file(&workspace, &args, &cancel))
            .await
            .map_err(|e| ToolError::new(format!("Cannot write: the write task failed: {e}")))?
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
    let outside = || {
        ToolError::new(
            PathError::Outside {
                path: shown.to_string(),
            }
            .to_string(),
        )
    };

    let permissions = match fs::symlink_metadata(&resolved) {
        Ok(meta) if meta.is_file() => {
            if meta.permissions().readonly() {
                return Err(ToolError::new(format!(
                    "Cannot write {shown}: the file is read-only"
                )));
            }
            Some(meta.permissions())
        }
        Ok(meta) => {
            return Err(ToolError::new(format!(
                "Cannot write {shown}: it is {}",
                kind_name(&meta.file_type())
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(cannot(e)),
    };
    let (Some(parent), Some(name)) = (resolved.parent(), resolved.file_name()) else {
        return Err(cannot(io::Error::other("it has no parent directory")));
    };
    fs::create_dir_all(parent).map_err(cannot)?;
    // Directories may have been swapped since `resolve`: confirm where the parent really is.
    let parent = fs::canonicalize(parent).map_err(cannot)?;
    if !workspace.contains(&parent) {
        return Err(outside());
    }
    if cancel.is_cancelled() {
        return Err(ToolError::new("Operation aborted"));
    }
    let target = parent.join(name);
    let created = permissions.is_none();
    let bytes = match write_atomic(
        &target,
        &mut args.content.as_bytes(),
        permissions,
        workspace.root(),
    ) {
        Ok(bytes) => bytes,
        Err(WriteFailure::Outside) => return Err(outside()),
        Err(WriteFailure::Io(e)) => return Err(cannot(e)),
    };
    let details = WriteDetails {
        path: workspace.display_relative(&target),
        bytes,
        created,
    };
    Ok(
        AgentToolResult::text(format!("Successfully wrote {bytes} bytes to {shown}"))
            .with_details(serde_json::to_value(&details).unwrap_or(serde_json::Value::Null)),
    )
}

/// Why [`write_atomic`] failed.
#[derive(Debug)]
enum WriteFailure {
    /// The temporary file, as the kernel sees it, is not under the root (a directory on the
    /// way was swapped for a link); it was removed.
    Outside,
    /// Any other error.
    Io(io::Error),
}

impl From<io::Error> for WriteFailure {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Removes the temporary file unless disarmed.
struct TempGuard(Option<PathBuf>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// Creates a new temporary file in `dir`: mode 0600 if `private`, else the default mode.
fn create_temp(dir: &Path, private: bool) -> io::Result<(File, PathBuf)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut last_error = None;
    for _ in 0..32 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(
            ".oxpi-write-{}-{n}-{nanos:x}.tmp",
            std::process::id()
        ));
        let file = if private {
            create_private(&path)
        } else {
            create_new_nofollow(&path)
        };
        match file {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("cannot create a temporary file")))
}

#[cfg(unix)]
fn create_private(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(not(unix))]
fn create_private(path: &Path) -> io::Result<File> {
    create_new_nofollow(path)
}

/// Writes `content` to `target` atomically: a temporary file in the same directory, flushed to
/// disk, given `permissions` (else it keeps the default mode), then renamed over `target`. On any
/// error the temporary file is removed and `target` is untouched. The temporary file must be
/// under `root`, as the kernel sees it.
fn write_atomic(
    target: &Path,
    content: &mut dyn Read,
    permissions: Option<Permissions>,
    root: &Path,
) -> Result<u64, WriteFailure> {
    let dir = target
        .parent()
        .ok_or_else(|| io::Error::other("it has no parent directory"))?;
    // An existing file's content stays private while written; its mode is set before rename.
    let (mut file, temp) = create_temp(dir, permissions.is_some())?;
    let mut guard = TempGuard(Some(temp.clone()));
    if opened_path(&file).is_some_and(|real| !real.starts_with(root)) {
        return Err(WriteFailure::Outside);
    }
    let written = io::copy(content, &mut file)?;
    file.flush()?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)?;
    }
    file.sync_all()?;
    drop(file);
    fs::rename(&temp, target)?;
    guard.0 = None;
    // Make the rename itself durable (best effort: not every platform can sync a directory).
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields `good` bytes of `a`, then fails: a write interrupted half-way.
    struct FailingReader {
        good: usize,
    }

    impl Read for FailingReader {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.good == 0 {
                return Err(io::Error::other("simulated failure"));
            }
            let n = self.good.min(buf.len());
            buf[..n].fill(b'a');
            self.good -= n;
            Ok(n)
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn failure_mid_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let target = root.join("a.txt");
        fs::write(&target, "old content").unwrap();
        let perms = fs::metadata(&target).unwrap().permissions();
        let err = write_atomic(
            &target,
            &mut FailingReader { good: 100_000 },
            Some(perms),
            &root,
        )
        .unwrap_err();
        assert_eq!(
            format!("{err:?}"),
            r#"Io(Custom { kind: Other, error: "simulated failure" })"#
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "old content");
        assert_eq!(names(&root), ["a.txt"]);
    }

    #[test]
    fn failure_at_rename_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let target = root.join("sub");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("keep"), "k").unwrap();
        // Renaming a file over a non-empty directory fails.
        assert!(write_atomic(&target, &mut &b"x"[..], None, &root).is_err());
        assert_eq!(names(&root), ["sub"]);
        assert_eq!(names(&target), ["keep"]);
    }

    #[test]
    fn temporary_outside_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let target = fs::canonicalize(other.path()).unwrap().join("a.txt");
        let result = write_atomic(&target, &mut &b"x"[..], None, &root);
        if cfg!(target_os = "linux") {
            assert!(matches!(result, Err(WriteFailure::Outside)), "{result:?}");
            assert_eq!(names(other.path()), Vec::<String>::new());
        }
    }

    #[cfg(unix)]
    #[test]
    fn new_file_gets_the_default_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        File::create(root.join("plain")).unwrap();
        write_atomic(&root.join("new"), &mut &b"x"[..], None, &root).unwrap();
        let mode = |name: &str| fs::metadata(root.join(name)).unwrap().permissions().mode();
        assert_eq!(mode("new"), mode("plain"));
    }
}
