//! The command trees of `bash` calls that are running, and the tools' temporary directories, so a
//! program that ends on a signal (pi's `killTrackedDetachedChildren` on `SIGTERM` / `SIGHUP`) can
//! kill every tree and remove the directories before it exits: an exit skips the destructors
//! that would otherwise do it.
//!
//! The registry is a value the program owns and hands to each [`BashTool`](crate::BashTool)
//! ([`BashTool::tracked_by`](crate::BashTool::tracked_by)), not a process-wide static: a program
//! with several agents keeps one registry or several, as it likes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::process::kill_tree;

/// The running command trees and temporary directories of the `bash` tools tracked by it.
/// Clones share one registry.
#[derive(Debug, Clone, Default)]
pub struct RunningCommands {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    /// Per run: the shell's pid (its process group) and the run's marker token.
    trees: HashMap<u64, (u32, String)>,
    temp_dirs: Vec<PathBuf>,
    /// Set by [`RunningCommands::kill_all`]: a tree started afterwards is killed at once.
    closed: bool,
}

impl RunningCommands {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many command trees are running now.
    pub fn running(&self) -> usize {
        self.lock().trees.len()
    }

    /// Kills every running tree (as an abort does: the process group, and every process below
    /// it or carrying its run's marker) and removes the temporary directories; from now on a
    /// command that starts is killed at once. Blocks while the trees are looked for in `/proc`
    /// (milliseconds). Returns how many trees were killed.
    pub fn kill_all(&self) -> usize {
        let (trees, dirs) = {
            let mut inner = self.lock();
            inner.closed = true;
            let trees: Vec<(u32, String)> = inner.trees.drain().map(|(_, tree)| tree).collect();
            (trees, std::mem::take(&mut inner.temp_dirs))
        };
        for (pid, token) in &trees {
            kill_tree(*pid, token);
        }
        for dir in dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
        trees.len()
    }

    /// Tracks the tree of one run until the returned guard is dropped; after
    /// [`kill_all`](Self::kill_all) the tree is killed at once instead.
    pub(crate) fn track(&self, pid: u32, token: &str) -> Tracked {
        let mut inner = self.lock();
        if inner.closed {
            drop(inner);
            kill_tree(pid, token);
            return Tracked {
                registry: self.clone(),
                id: None,
            };
        }
        let id = inner.next;
        inner.next += 1;
        inner.trees.insert(id, (pid, token.to_string()));
        Tracked {
            registry: self.clone(),
            id: Some(id),
        }
    }

    /// Removes `dir` in [`kill_all`](Self::kill_all).
    pub(crate) fn track_temp_dir(&self, dir: PathBuf) {
        self.lock().temp_dirs.push(dir);
    }
}

/// One tracked run; untracked when dropped.
#[derive(Debug)]
pub(crate) struct Tracked {
    registry: RunningCommands,
    id: Option<u64>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.registry.lock().trees.remove(&id);
        }
    }
}
