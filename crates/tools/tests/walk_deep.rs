//! `find` and `grep` in a chain of directories 10,000 deep (paths of 20,000 bytes, far past
//! `PATH_MAX`): the walk is linear in the number of directories whatever the depth, so both
//! answer, with the file at the bottom, in about the time of a flat tree.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

mod common;

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;

use common::{find, grep, text};
use oxpi_tools::Workspace;
use rustix::fs::{mkdirat, openat, unlinkat, AtFlags, Mode, OFlags};
use serde_json::json;

const DEPTH: usize = 10_000;

fn open_dir(parent: &OwnedFd, name: &str) -> OwnedFd {
    openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap()
}

/// `root/d/d/…/d/needle.txt`, `DEPTH` directories deep, made one level at a time beneath a
/// handle (a path that long cannot be used).
fn make_chain(root: &Path) {
    let mut dir =
        rustix::fs::open(root, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
    for _ in 0..DEPTH {
        mkdirat(&dir, "d", Mode::from_raw_mode(0o755)).unwrap();
        dir = open_dir(&dir, "d");
    }
    let fd = openat(
        &dir,
        "needle.txt",
        OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    std::fs::File::from(fd)
        .write_all(b"a needle here\n")
        .unwrap();
}

/// Removes the chain bottom up, one handle at a time (`remove_dir_all` would hold one per level).
fn remove_chain(root: &Path) {
    let mut dir =
        rustix::fs::open(root, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
    for _ in 0..DEPTH {
        dir = open_dir(&dir, "d");
    }
    unlinkat(&dir, "needle.txt", AtFlags::empty()).unwrap();
    for _ in 0..DEPTH {
        let parent = open_dir(&dir, "..");
        unlinkat(&parent, "d", AtFlags::REMOVEDIR).unwrap();
        dir = parent;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_and_grep_reach_the_bottom_of_a_chain_10000_deep() {
    // In memory where there is a tmpfs: on a disk, making and removing 10,000 nested
    // directories costs most of the test's time.
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let root = base.path().canonicalize().unwrap();
    make_chain(&root);
    let ws = Workspace::new(&root).unwrap();
    let path = format!("{}needle.txt", "d/".repeat(DEPTH));
    let found = find(&ws, json!({"pattern": "**/needle.txt"})).await;
    let grepped = grep(&ws, json!({"pattern": "needle"})).await;
    remove_chain(&root);
    assert_eq!(text(&found.unwrap()), path);
    assert_eq!(text(&grepped.unwrap()), format!("{path}:1: a needle here"));
}
