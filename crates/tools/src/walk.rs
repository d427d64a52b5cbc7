//! How `find` and `grep` walk a directory: ripgrep's walker (`ignore`) in name order, dotfiles
//! included, `.git` skipped, links never followed, and the `.gitignore` / `.ignore` files of the
//! workspace applied, read by oxpi itself rather than by the walker: each is opened beneath the
//! root's handle, non-blocking, must be a regular file (a FIFO, a device or a link out is never
//! read) and is read up to 1 MiB. The files of the directories between the root and the search
//! directory count too, as they would for `rg` or `fd`; nothing above the root is read.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, OpenOptions};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::WalkBuilder;
use oxpi_agent_core::ToolError;

use crate::listing::{relative, PathGlob};
use crate::workspace::Workspace;

/// Largest ignore file read (the rest is not).
const MAX_IGNORE_FILE: u64 = 1024 * 1024;

/// The workspace root, opened once per call, and how files are opened beneath it: with
/// `openat2(RESOLVE_BENEATH)` where the kernel has it (else a checked `openat` walk), so no
/// path can lead outside, and non-blocking, so a FIFO is seen by `fstat` and never read.
#[derive(Debug)]
pub(crate) struct Root {
    path: PathBuf,
    dir: Dir,
    options: OpenOptions,
}

impl Root {
    pub(crate) fn open(workspace: &Workspace) -> Result<Self, ToolError> {
        let dir = Dir::open_ambient_dir(workspace.root(), ambient_authority())
            .map_err(|e| ToolError::new(format!("Cannot open the workspace: {e}")))?;
        let mut options = OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NONBLOCK);
        }
        Ok(Self {
            path: workspace.root().to_path_buf(),
            dir,
            options,
        })
    }

    /// Opens `path` (absolute, inside the root) for reading if it is a regular file.
    pub(crate) fn open_file(&self, path: &Path) -> Option<File> {
        let relative = path.strip_prefix(&self.path).ok()?;
        let file = self.dir.open_with(relative, &self.options).ok()?;
        file.metadata().ok()?.is_file().then_some(file)
    }
}

/// The rules that apply in a directory: its own ignore files' first, then its parent's, up to
/// the root.
type Chain = Arc<Vec<Arc<Gitignore>>>;

/// The ignore rules of each directory, loaded once.
#[derive(Debug)]
struct Ignores {
    root: Arc<Root>,
    chains: Mutex<HashMap<PathBuf, Chain>>,
}

impl Ignores {
    /// The rules of `.gitignore` then `.ignore` in `dir` (later lines win, as in git).
    fn load(&self, dir: &Path) -> Option<Arc<Gitignore>> {
        let mut builder = GitignoreBuilder::new(dir);
        let mut any = false;
        for name in [".gitignore", ".ignore"] {
            let Some(file) = self.root.open_file(&dir.join(name)) else {
                continue;
            };
            let mut text = String::new();
            if file
                .take(MAX_IGNORE_FILE)
                .read_to_string(&mut text)
                .is_err()
            {
                continue;
            }
            for line in text.lines() {
                let _ = builder.add_line(None, line);
                any = true;
            }
        }
        any.then(|| builder.build().ok()).flatten().map(Arc::new)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Chain>> {
        self.chains
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The chain of rules for `dir` (empty outside the root).
    fn chain(&self, dir: &Path) -> Chain {
        if let Some(chain) = self.lock().get(dir) {
            return chain.clone();
        }
        let inside = dir.starts_with(&self.root.path);
        let parent = match dir.parent() {
            Some(parent) if inside && dir != self.root.path => self.chain(parent),
            _ => Chain::default(),
        };
        let own = if inside { self.load(dir) } else { None };
        let chain: Chain = match own {
            Some(own) => Arc::new(std::iter::once(own).chain(parent.iter().cloned()).collect()),
            None => parent,
        };
        self.lock().insert(dir.to_path_buf(), chain.clone());
        chain
    }

    /// Whether `path` is ignored: the rules of the nearest directory that says anything about
    /// it win (a deeper `!pattern` un-ignores).
    fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        let Some(dir) = path.parent() else {
            return false;
        };
        for rules in self.chain(dir).iter() {
            let found = rules.matched(path, is_dir);
            if found.is_ignore() {
                return true;
            }
            if found.is_whitelist() {
                return false;
            }
        }
        false
    }
}

/// A walker of `start` (inside the root): entries in name order, dotfiles included, ignored
/// paths and `.git` pruned, links not followed. `exclude` prunes the directories it matches
/// (relative to `start`), as `rg --glob '!vendor'` does.
pub(crate) fn walker(root: &Arc<Root>, start: &Path, exclude: Option<PathGlob>) -> WalkBuilder {
    let ignores = Ignores {
        root: root.clone(),
        chains: Mutex::default(),
    };
    let start_path = start.to_path_buf();
    let mut builder = WalkBuilder::new(start);
    builder
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            if entry.file_name() == ".git" {
                return false;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if is_dir {
                if let Some(exclude) = &exclude {
                    if exclude.is_match(&relative(&start_path, entry.path())) {
                        return false;
                    }
                }
            }
            !ignores.is_ignored(entry.path(), is_dir)
        });
    builder
}
