//! Creating and replacing files inside the workspace through directory handles, so no path
//! string is ever resolved again after [`Workspace::resolve`](crate::Workspace::resolve) checked it.
//!
//! The parent directory is created and opened beneath a handle on the root with `cap-std`, which
//! uses `openat2(RESOLVE_BENEATH)` where the kernel has it and otherwise walks one component at a
//! time with `openat(O_NOFOLLOW)`, refusing any step (a `..`, an absolute link, a link swapped in
//! a moment ago) that would lead outside the root. Everything after that (the temporary file, the
//! rename over the target, the cleanup) is relative to the opened directory: `openat`,
//! `renameat`, `unlinkat`. A directory on the way that another process swaps for a symbolic link
//! can then make the write fail, never land outside.
//!
//! Every tool that creates or changes a file goes through [`open_parent`] and [`write_atomic`].

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, Metadata, OpenOptions, Permissions};

/// Opens the directory that holds `relative` (a path inside the root, relative to it, as
/// resolved by the workspace), creating missing directories when `create` is set. Returns the
/// directory's handle and the file name. Every step is taken beneath a handle on `root`.
pub(crate) fn open_parent(
    root: &Path,
    relative: &Path,
    create: bool,
) -> io::Result<(Dir, OsString)> {
    let name = relative
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::IsADirectory, "it is a directory"))?
        .to_os_string();
    let root = Dir::open_ambient_dir(root, ambient_authority())?;
    let parent = relative.parent().unwrap_or(Path::new(""));
    if parent.as_os_str().is_empty() {
        return Ok((root, name));
    }
    if create {
        root.create_dir_all(parent)?;
    }
    Ok((root.open_dir(parent)?, name))
}

/// Removes the temporary file (relative to its directory) unless disarmed.
struct TempGuard<'a> {
    dir: &'a Dir,
    name: Option<OsString>,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            let _ = self.dir.remove_file(name);
        }
    }
}

/// Creates a new temporary file in `dir`: mode 0600 if `private`, else the default mode.
fn create_temp(dir: &Dir, private: bool) -> io::Result<(File, OsString)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if private {
        use cap_std::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut last_error = None;
    for _ in 0..32 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!(
            ".oxpi-write-{}-{n}-{nanos:x}.tmp",
            std::process::id()
        ));
        match dir.open_with(&name, &options) {
            Ok(file) => return Ok((file, name)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("cannot create a temporary file")))
}

/// Writes `content` to `name` in `dir` atomically: a temporary file in the same directory,
/// flushed to disk, given the owner, group and permissions of the file it replaces (`existing`,
/// its metadata; else it keeps the process's owner and the default mode), then renamed over
/// `name` (`renameat` within the one directory handle). On any error the temporary file is
/// removed and `name` is untouched. Returns the number of bytes written.
pub(crate) fn write_atomic(
    dir: &Dir,
    name: &OsStr,
    content: &mut dyn Read,
    existing: Option<&Metadata>,
) -> io::Result<u64> {
    // An existing file's content stays private while written; its owner and mode are set
    // before the rename.
    let (mut file, temp) = create_temp(dir, existing.is_some())?;
    let mut guard = TempGuard {
        dir,
        name: Some(temp.clone()),
    };
    let written = io::copy(content, &mut file)?;
    file.flush()?;
    if let Some(existing) = existing {
        // The owner first: changing it clears the set-user-ID and set-group-ID bits.
        let permissions = keep_owner(&file, existing, existing.permissions())?;
        file.set_permissions(permissions)?;
    }
    file.sync_all()?;
    drop(file);
    dir.rename(&temp, dir, name)?;
    guard.name = None;
    // Make the rename itself durable (best effort: not every platform can sync a directory).
    if let Ok(handle) = dir.try_clone() {
        let _ = handle.into_std_file().sync_all();
    }
    Ok(written)
}

/// Gives `file` the owner and group of `existing` (`fchown`), as far as the process may:
/// root may give it to anyone, another user only to a group it is in, and that refusal
/// (`EPERM`) is not an error: the file then stays the process's (the user's own file, or the
/// group it could not give). Returns `permissions` without the set-user-ID (set-group-ID) bit
/// when the owner (group) could not be kept, as the kernel clears them on a change of owner.
#[cfg(unix)]
fn keep_owner(
    file: &File,
    existing: &Metadata,
    permissions: Permissions,
) -> io::Result<Permissions> {
    use cap_std::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::fs::fchown;
    // Not permitted (EPERM), an owner the user namespace cannot map (EINVAL, as root in a
    // rootless container), or a file system without owners (EOPNOTSUPP: some FUSE, 9p, CIFS
    // mounts): the file keeps the process's owner, as it did before owners were kept.
    let refused = |e: &io::Error| {
        matches!(
            e.raw_os_error(),
            Some(libc::EPERM | libc::EINVAL | libc::EOPNOTSUPP)
        )
    };
    let (uid, gid) = (existing.uid(), existing.gid());
    let now = file.metadata()?;
    if (now.uid(), now.gid()) != (uid, gid) {
        match fchown(file, Some(uid), Some(gid)) {
            Ok(()) => {}
            // Not allowed to give the file away: the group, at least, if the process may.
            Err(e) if refused(&e) && now.gid() != gid => match fchown(file, None, Some(gid)) {
                Err(e) if !refused(&e) => return Err(e),
                _ => {}
            },
            Err(e) if refused(&e) => {}
            Err(e) => return Err(e),
        }
    }
    let now = file.metadata()?;
    let mut mode = permissions.mode();
    if now.uid() != uid {
        mode &= !0o4000;
    }
    if now.gid() != gid {
        mode &= !0o2000;
    }
    Ok(Permissions::from_mode(mode))
}

/// Without owners to keep, the permissions as they are.
#[cfg(not(unix))]
fn keep_owner(
    _file: &File,
    _existing: &Metadata,
    permissions: Permissions,
) -> io::Result<Permissions> {
    Ok(permissions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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

    fn open(root: &Path) -> Dir {
        Dir::open_ambient_dir(root, ambient_authority()).unwrap()
    }

    #[test]
    fn failure_mid_write_leaves_the_old_file_and_no_temporary() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("a.txt"), "old content").unwrap();
        let dir = open(root.path());
        let meta = dir.metadata("a.txt").unwrap();
        let err = write_atomic(
            &dir,
            OsStr::new("a.txt"),
            &mut FailingReader { good: 100_000 },
            Some(&meta),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "simulated failure");
        assert_eq!(
            fs::read_to_string(root.path().join("a.txt")).unwrap(),
            "old content"
        );
        assert_eq!(names(root.path()), ["a.txt"]);
    }

    #[test]
    fn failure_at_rename_leaves_no_temporary() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("sub")).unwrap();
        fs::write(root.path().join("sub/keep"), "k").unwrap();
        // Renaming a file over a non-empty directory fails.
        let dir = open(root.path());
        assert!(write_atomic(&dir, OsStr::new("sub"), &mut &b"x"[..], None).is_err());
        assert_eq!(names(root.path()), ["sub"]);
        assert_eq!(names(&root.path().join("sub")), ["keep"]);
    }

    #[cfg(unix)]
    #[test]
    fn new_file_gets_the_default_mode() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        fs::File::create(root.path().join("plain")).unwrap();
        write_atomic(&open(root.path()), OsStr::new("new"), &mut &b"x"[..], None).unwrap();
        let mode = |name: &str| {
            fs::metadata(root.path().join(name))
                .unwrap()
                .permissions()
                .mode()
        };
        assert_eq!(mode("new"), mode("plain"));
    }

    #[cfg(unix)]
    #[test]
    fn parent_through_a_link_out_of_the_root_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        let outside = base.path().join("outside");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        std::os::unix::fs::symlink("../outside", root.join("rel")).unwrap();
        for (path, create) in [
            ("out/a.txt", false),
            ("out/new/a.txt", true),
            ("rel/a.txt", false),
            ("rel/new/a.txt", true),
        ] {
            assert!(
                open_parent(&root, Path::new(path), create).is_err(),
                "{path}"
            );
        }
        assert_eq!(names(&outside), Vec::<String>::new());
        let (dir, name) = open_parent(&root, Path::new("in/side/a.txt"), true).unwrap();
        assert_eq!(name, "a.txt");
        write_atomic(&dir, &name, &mut &b"x"[..], None).unwrap();
        assert_eq!(fs::read_to_string(root.join("in/side/a.txt")).unwrap(), "x");
    }
}
