//! The workspace: a canonical root directory, the limits of the tools bound to it, and path
//! confinement.
//!
//! [`Workspace::resolve`] turns a path proposed by the model into a canonical path inside the
//! root, or refuses it. It walks the path one component at a time from the root (or from `/` for
//! an absolute path), following every symbolic link it meets the way the kernel would, and
//! decides on the result: the resolved path must lie under the root, compared component by
//! component (so `/work/root-evil` is not inside `/work/root`). The part of the path that does not
//! exist yet is appended as written, so `..` in it is applied lexically, which is exact because a
//! missing directory cannot be a symbolic link.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use oxpi_agent_core::{AgentToolResult, ToolError};
use tokio_util::sync::CancellationToken;

/// Default maximum number of lines `read` returns in one call.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Default maximum number of bytes of text `read` returns in one call (50 KB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Default number of bytes `read` may scan past what it returns to count the file's lines (8 MB).
pub const DEFAULT_MAX_SCAN_BYTES: u64 = 8 * 1024 * 1024;
/// Default maximum size of an image `read` returns (5 MB).
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// Symbolic links followed while resolving one path before giving up (Linux's limit).
const MAX_SYMLINKS: usize = 40;

/// Longest path the model may propose, in bytes: Linux's `PATH_MAX` (4096, counting the NUL that
/// ends a C string), so any path the kernel would refuse with `ENAMETOOLONG` is refused up front.
pub const MAX_PATH_BYTES: usize = 4095;

/// How much of a refused long path an error message quotes.
const QUOTED_PATH_CHARS: usize = 100;

/// Limits that keep the model's context small. `Default` gives pi's limits: 2,000 lines or
/// 50 KB, whichever comes first.
///
/// ```
/// use oxpi_tools::Limits;
///
/// let limits = Limits::default().with_max_lines(500).with_max_bytes(16 * 1024);
/// assert_eq!((limits.max_lines, limits.max_bytes), (500, 16 * 1024));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Maximum number of lines `read` returns (at least 1 is always used).
    pub max_lines: usize,
    /// Maximum number of bytes of text `read` returns, notices aside (at least 1 is always used).
    pub max_bytes: usize,
    /// How many bytes `read` may read past the text it returns to count the lines in the rest
    /// of the file. When the rest is larger, the total is reported as unknown
    /// (`[Showing lines 1-2000. Use offset=2001 to continue.]`) instead of reading it all.
    pub max_scan_bytes: u64,
    /// Largest image file `read` returns as an image block.
    pub max_image_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
            max_scan_bytes: DEFAULT_MAX_SCAN_BYTES,
            max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
        }
    }
}

impl Limits {
    /// Sets [`Limits::max_lines`].
    #[must_use]
    pub const fn with_max_lines(mut self, max_lines: usize) -> Self {
        self.max_lines = max_lines;
        self
    }

    /// Sets [`Limits::max_bytes`].
    #[must_use]
    pub const fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Sets [`Limits::max_scan_bytes`].
    #[must_use]
    pub const fn with_max_scan_bytes(mut self, max_scan_bytes: u64) -> Self {
        self.max_scan_bytes = max_scan_bytes;
        self
    }

    /// Sets [`Limits::max_image_bytes`].
    #[must_use]
    pub const fn with_max_image_bytes(mut self, max_image_bytes: u64) -> Self {
        self.max_image_bytes = max_image_bytes;
        self
    }
}

/// A path the model proposed was refused. `Display` is the message the model sees; it names the
/// path as the model wrote it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty.
    #[error("Path \"\" is outside the workspace: the path is empty")]
    Empty,
    /// The path contains a NUL byte.
    #[error("Path {path:?} is outside the workspace: paths cannot contain NUL bytes")]
    Nul {
        /// The path as proposed.
        path: String,
    },
    /// The path resolves outside the root, through `..`, an absolute path or a symbolic link.
    #[error("Path {path:?} is outside the workspace")]
    Outside {
        /// The path as proposed.
        path: String,
    },
    /// The path is longer than [`MAX_PATH_BYTES`]; `path` holds only its first 100 characters.
    #[error("Path {path:?}… cannot be resolved: it is {len} bytes long, more than the {max} bytes the OS allows", max = MAX_PATH_BYTES)]
    TooLong {
        /// The start of the path as proposed.
        path: String,
        /// Its length in bytes.
        len: usize,
    },
    /// A component that is not a directory is followed by more of the path (`file.txt/.`,
    /// `file.txt/`, `file.txt/../x`), which the OS refuses with "not a directory".
    #[error("Path {path:?} cannot be resolved: {component:?} is not a directory")]
    NotADirectory {
        /// The path as proposed.
        path: String,
        /// The component that is not a directory, relative to the root.
        component: String,
    },
    /// Resolving the path met more symbolic links than the kernel would follow.
    #[error("Path {path:?} cannot be resolved: too many levels of symbolic links")]
    SymlinkLoop {
        /// The path as proposed.
        path: String,
    },
    /// A component could not be inspected (e.g. permission denied).
    #[error("Path {path:?} cannot be resolved: {source}")]
    Io {
        /// The path as proposed.
        path: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// A root directory the tools can never leave, and the limits they apply.
///
/// The root is canonicalized once, by [`Workspace::new`]; the tools hold it and the model never
/// chooses it. Cloning is cheap.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: Arc<Path>,
    limits: Limits,
    /// False when paths outside the root are allowed too (pi's tools, [`Workspace::unconfined`]).
    confined: bool,
    /// Directories outside the root that reading tools may also read.
    read_roots: Arc<[PathBuf]>,
}

/// One step of a path being resolved (an owned [`Component`]).
enum Step {
    /// Start again from this root (`/`, or a Windows prefix and root).
    Root(PathBuf),
    /// `..`
    Parent,
    /// A file or directory name.
    Name(OsString),
}

fn steps(path: &Path) -> impl DoubleEndedIterator<Item = Step> + '_ {
    path.components().filter_map(|c| match c {
        Component::Prefix(p) => Some(Step::Root(PathBuf::from(p.as_os_str()))),
        Component::RootDir => Some(Step::Root(PathBuf::from(Component::RootDir.as_os_str()))),
        Component::CurDir => None,
        Component::ParentDir => Some(Step::Parent),
        Component::Normal(name) => Some(Step::Name(name.to_os_string())),
    })
}

impl Workspace {
    /// A workspace rooted at `root`, which must be an existing directory; it is canonicalized
    /// here, once. Limits are the defaults.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = fs::canonicalize(root.as_ref())?;
        if !fs::metadata(&root)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace root {} is not a directory", root.display()),
            ));
        }
        Ok(Self {
            root: Arc::from(root),
            limits: Limits::default(),
            confined: true,
            read_roots: Arc::from(Vec::new()),
        })
    }

    /// The same workspace without confinement: paths outside the root are allowed too, as
    /// pi's tools allow them (relative paths still resolve against the root).
    #[must_use]
    pub fn unconfined(mut self) -> Self {
        self.confined = false;
        self
    }

    /// Whether paths outside the root (and the read-only roots) are refused.
    pub fn is_confined(&self) -> bool {
        self.confined
    }

    /// The same workspace where the reading tools (`read`, `ls`, `find`, `grep`) may also read
    /// beneath `dir`, an existing directory (canonicalized here). Writing there stays refused.
    pub fn with_read_root(mut self, dir: impl AsRef<Path>) -> io::Result<Self> {
        let dir = fs::canonicalize(dir.as_ref())?;
        let mut roots: Vec<PathBuf> = self.read_roots.iter().cloned().collect();
        if !roots.contains(&dir) {
            roots.push(dir);
        }
        self.read_roots = Arc::from(roots);
        Ok(self)
    }

    /// The directories outside the root that the reading tools may read.
    pub fn read_roots(&self) -> &[PathBuf] {
        &self.read_roots
    }

    /// The same workspace with other limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The limits the tools apply.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Resolves a path proposed by the model to a canonical path inside the root.
    ///
    /// Relative paths resolve against the root; an absolute path is accepted only if it resolves
    /// inside the root. Symbolic links are followed at every component, so a link that leads
    /// outside (including a dangling one) is refused. The part of the path that does not exist
    /// yet is kept as written. The returned path contains no symbolic links as of this call;
    /// callers open it without following a final link, so one swapped in afterwards cannot lead
    /// them outside.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let ws = oxpi_tools::Workspace::new(dir.path())?;
    /// assert_eq!(ws.resolve("notes/a.txt")?, ws.root().join("notes/a.txt"));
    /// assert_eq!(
    ///     ws.resolve("../x").unwrap_err().to_string(),
    ///     r#"Path "../x" is outside the workspace"#
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
        self.resolve_within(path, false)
    }

    /// As [`Workspace::resolve`], but a path beneath one of the read-only roots
    /// ([`Workspace::with_read_root`]) is accepted too: for tools that only read.
    pub fn resolve_readable(&self, path: &str) -> Result<PathBuf, PathError> {
        self.resolve_within(path, true)
    }

    fn resolve_within(&self, path: &str, readable: bool) -> Result<PathBuf, PathError> {
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        if path.len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong {
                path: path.chars().take(QUOTED_PATH_CHARS).collect(),
                len: path.len(),
            });
        }
        if path.contains('\0') {
            return Err(PathError::Nul {
                path: path.to_string(),
            });
        }
        let directory_required = names_directory(path);
        let mut queue: VecDeque<Step> = steps(Path::new(path)).collect();
        // Built in place (push and pop), so each step costs its own component, not the path so
        // far.
        let mut resolved = self.root.to_path_buf();
        // Number of trailing components of `resolved` that do not exist (appended as written).
        let mut missing = 0usize;
        let mut links = 0usize;
        while let Some(step) = queue.pop_front() {
            match step {
                Step::Root(root) => {
                    resolved = root;
                    missing = 0;
                }
                Step::Parent => {
                    // `resolved` is canonical up to its missing tail, so popping is exact.
                    resolved.pop();
                    missing = missing.saturating_sub(1);
                }
                Step::Name(name) => {
                    resolved.push(&name);
                    if missing > 0 {
                        missing += 1;
                        continue;
                    }
                    match fs::symlink_metadata(&resolved) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            links += 1;
                            if links > MAX_SYMLINKS {
                                return Err(PathError::SymlinkLoop {
                                    path: path.to_string(),
                                });
                            }
                            let target =
                                fs::read_link(&resolved).map_err(|source| PathError::Io {
                                    path: path.to_string(),
                                    source,
                                })?;
                            // Resolve the target from the link's directory.
                            resolved.pop();
                            for step in steps(&target).rev() {
                                queue.push_front(step);
                            }
                        }
                        Ok(meta) if !meta.is_dir() && (directory_required || !queue.is_empty()) => {
                            // Outside the root, say nothing about what is there.
                            if !resolved.starts_with(&self.root) {
                                missing = 1;
                                continue;
                            }
                            return Err(PathError::NotADirectory {
                                path: path.to_string(),
                                component: self.display_relative(&resolved),
                            });
                        }
                        Ok(_) => {}
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                            ) =>
                        {
                            missing = 1;
                        }
                        Err(source) => {
                            return Err(PathError::Io {
                                path: path.to_string(),
                                source,
                            })
                        }
                    }
                }
            }
        }
        let allowed = if readable {
            self.contains_readable(&resolved)
        } else {
            self.contains(&resolved)
        };
        if allowed {
            Ok(resolved)
        } else {
            Err(PathError::Outside {
                path: path.to_string(),
            })
        }
    }

    /// Runs a tool's file-system work `f` on Tokio's blocking thread pool; `failed` starts the
    /// error text if that task itself fails (a panic).
    pub(crate) async fn run_blocking<A: Send + 'static>(
        &self,
        args: A,
        cancel: CancellationToken,
        failed: &str,
        f: fn(&Workspace, &A, &CancellationToken) -> Result<AgentToolResult, ToolError>,
    ) -> Result<AgentToolResult, ToolError> {
        let workspace = self.clone();
        tokio::task::spawn_blocking(move || f(&workspace, &args, &cancel))
            .await
            .map_err(|e| ToolError::new(format!("{failed}: {e}")))?
    }

    /// `resolved` relative to the root, with `.` for the root itself (for details and logs).
    pub(crate) fn display_relative(&self, resolved: &Path) -> String {
        match resolved.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => resolved.to_string_lossy().into_owned(),
        }
    }

    /// Whether `path` (canonical) lies inside the root.
    pub(crate) fn contains(&self, path: &Path) -> bool {
        !self.confined || path.starts_with(&self.root)
    }

    /// The directory to open `resolved` beneath and its path from there: the root, or (in an
    /// unconfined workspace) the file system's root for a path outside it.
    pub(crate) fn anchor<'a>(&'a self, resolved: &'a Path) -> Option<(&'a Path, &'a Path)> {
        if let Ok(relative) = resolved.strip_prefix(&self.root) {
            return Some((&self.root, relative));
        }
        if self.confined {
            return None;
        }
        let top = resolved.ancestors().last()?;
        Some((top, resolved.strip_prefix(top).ok()?))
    }

    /// Whether `path` (canonical) lies inside the root or a read-only root.
    pub(crate) fn contains_readable(&self, path: &Path) -> bool {
        self.contains(path) || self.read_roots.iter().any(|r| path.starts_with(r))
    }

    /// The directory the listing tools open their handles beneath for `dir` (canonical, a
    /// directory they may read): the root when `dir` lies inside it, else the read-only root
    /// holding it, else (in an unconfined workspace) `dir` itself.
    pub(crate) fn base_of(&self, dir: &Path) -> Option<PathBuf> {
        if dir.starts_with(&self.root) {
            return Some(self.root.to_path_buf());
        }
        if let Some(root) = self.read_roots.iter().find(|r| dir.starts_with(r)) {
            return Some(root.clone());
        }
        (!self.confined).then(|| dir.to_path_buf())
    }
}

/// Whether `path` can only name a directory, as the OS reads it: it ends with `/` or `/.`
/// (`Path::components` drops both, so they are checked on the text).
pub(crate) fn names_directory(path: &str) -> bool {
    path.contains('/') && matches!(path.rsplit('/').next(), Some("" | "."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_default_to_pi() {
        assert_eq!(
            Limits::default(),
            Limits {
                max_lines: 2000,
                max_bytes: 51200,
                max_scan_bytes: 8 * 1024 * 1024,
                max_image_bytes: 5 * 1024 * 1024,
            }
        );
    }

    #[cfg(unix)]
    #[test]
    fn missing_tail_then_parent_checks_links_again() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        let ws = Workspace::new(&root).unwrap();
        // `nope` is missing; after `..` we are back at the root, where `out` is a link.
        assert!(matches!(
            ws.resolve("nope/../out/x"),
            Err(PathError::Outside { .. })
        ));
        assert_eq!(ws.resolve("nope/a/../b").unwrap(), ws.root().join("nope/b"));
    }

    #[test]
    fn root_must_be_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, "x").unwrap();
        assert_eq!(
            Workspace::new(&file).unwrap_err().kind(),
            io::ErrorKind::NotADirectory
        );
        assert_eq!(
            Workspace::new(dir.path().join("missing"))
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn display_relative_of_root_is_dot() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        assert_eq!(ws.display_relative(ws.root()), ".");
        assert_eq!(ws.display_relative(&ws.root().join("a/b")), "a/b");
    }
}
