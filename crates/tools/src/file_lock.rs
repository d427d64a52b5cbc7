//! One change at a time per file, across every [`Workspace`](crate::Workspace) of the process.
//!
//! `edit` reads a file, changes it and writes it back; two of them on one file at once would
//! lose one change. pi queues changes per file in one process-wide map (keyed by the file's real
//! path); so does oxpi, keyed by the file's directory as the kernel knows it (device and inode
//! of the directory handle the change is made through) and the file's name in it. That key does
//! not depend on the path or the root a `Workspace` was made with (two `Workspace::new` on one
//! root, or on a directory and its parent, meet on it), and it stays the same while the file is
//! replaced (an atomic write gives the file a new inode, never its directory).
//!
//! This is the crate's one piece of process-wide state, and it has to be: the `Workspace`
//! values that share a file are made independently, and nothing else can tell them of each
//! other. It holds only the keys of changes under way, so it never grows past the number of
//! changes running at once. A file reached through another hard link is another key (as in pi).

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::sync::{Condvar, Mutex, MutexGuard};

use cap_std::fs::Dir;

/// What identifies a file: its directory (device, inode) and its name there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    dev: u64,
    ino: u64,
    name: OsString,
}

/// The files being changed, and a wake-up for those waiting for one of them.
struct Held {
    keys: Mutex<BTreeSet<Key>>,
    released: Condvar,
}

static HELD: Held = Held {
    keys: Mutex::new(BTreeSet::new()),
    released: Condvar::new(),
};

fn keys() -> MutexGuard<'static, BTreeSet<Key>> {
    HELD.keys
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The right to change one file, until dropped.
#[derive(Debug)]
pub(crate) struct FileLock {
    key: Key,
}

impl Drop for FileLock {
    fn drop(&mut self) {
        keys().remove(&self.key);
        HELD.released.notify_all();
    }
}

/// Waits until no other change of `name` in `dir` runs in this process, then holds the right
/// to change it until the lock is dropped. Fails only if `dir` cannot be `fstat`ed.
pub(crate) fn lock_file(dir: &Dir, name: &OsStr) -> io::Result<FileLock> {
    let key = key(dir, name)?;
    let mut held = keys();
    while held.contains(&key) {
        held = HELD
            .released
            .wait(held)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }
    held.insert(key.clone());
    Ok(FileLock { key })
}

#[cfg(unix)]
fn key(dir: &Dir, name: &OsStr) -> io::Result<Key> {
    use cap_std::fs::MetadataExt;
    let meta = dir.dir_metadata()?;
    Ok(Key {
        dev: meta.dev(),
        ino: meta.ino(),
        name: name.to_os_string(),
    })
}

/// Without inodes, every file of a name is one key: changes of files of the same name wait
/// for each other, which is slower, never wrong.
#[cfg(not(unix))]
fn key(_dir: &Dir, name: &OsStr) -> io::Result<Key> {
    Ok(Key {
        dev: 0,
        ino: 0,
        name: name.to_os_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cap_std::ambient_authority;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_second_lock_of_one_file_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let open = || Dir::open_ambient_dir(dir.path(), ambient_authority()).unwrap();
        let first = lock_file(&open(), OsStr::new("file-lock-a.txt")).unwrap();
        // Another file, and the same name elsewhere, are free.
        let other = tempfile::tempdir().unwrap();
        let elsewhere = Dir::open_ambient_dir(other.path(), ambient_authority()).unwrap();
        drop(lock_file(&open(), OsStr::new("file-lock-b.txt")).unwrap());
        drop(lock_file(&elsewhere, OsStr::new("file-lock-a.txt")).unwrap());
        let got = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (got, dir) = (got.clone(), open());
            std::thread::spawn(move || {
                let _lock = lock_file(&dir, OsStr::new("file-lock-a.txt")).unwrap();
                got.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        assert!(!got.load(Ordering::SeqCst), "the second lock did not wait");
        drop(first);
        waiter.join().unwrap();
        assert!(got.load(Ordering::SeqCst));
        assert!(!keys()
            .iter()
            .any(|k| k.name == "file-lock-a.txt" || k.name == "file-lock-b.txt"));
    }
}
