//! How `find` and `grep` walk a directory: beneath handles, never by path ([`Walk`]), in name
//! order, dotfiles included, `.git` skipped, links never followed, and the `.gitignore` /
//! `.ignore` files of the workspace applied (with ripgrep's `ignore` crate's rules), read by oxpi
//! itself: each is opened beneath the root's handle, non-blocking, must be a regular file (a
//! FIFO, a device or a link out is never read) and is read up to 1 MiB. The files of the
//! directories between the root and the search directory count too, as they would for `rg` or
//! `fd`; nothing above the root is read.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, OpenOptions};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use oxpi_agent_core::ToolError;

use crate::listing::PathGlob;
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

    /// Opens the directory `path` (absolute, inside the root) beneath the root's handle.
    fn open_dir(&self, path: &Path) -> std::io::Result<Dir> {
        let relative = path
            .strip_prefix(&self.path)
            .map_err(|_| std::io::Error::other("outside the workspace"))?;
        if relative.as_os_str().is_empty() {
            self.dir.try_clone()
        } else {
            self.dir.open_dir(relative)
        }
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

/// What an entry of a walk is, as its directory listed it (a link is `Other`: never followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
    Other,
}

/// An entry of a walk.
#[derive(Debug)]
pub(crate) struct Entry {
    /// Where it is: the root's path joined with the names walked.
    pub(crate) path: PathBuf,
    /// The names from the search directory, `/`-separated (lossy for names that are not UTF-8).
    pub(crate) rel: String,
    pub(crate) kind: Kind,
}

/// `grep`'s `glob`, which overrides the ignore rules as ripgrep's `--glob` does: a file or
/// directory it matches is walked whatever `.gitignore` says (`!glob`: pruned); a file it does
/// not match is left out, a directory it does not match is walked if the ignore rules let it.
#[derive(Debug, Clone)]
pub(crate) struct Override {
    pub(crate) negated: bool,
    pub(crate) glob: PathGlob,
}

/// Directories deeper than this below the search directory are not kept open while their
/// entries are walked; one is reopened, name by name, from the deepest open one when needed.
const MAX_OPEN_DIRS: usize = 32;

/// A directory being walked.
#[derive(Debug)]
struct Level {
    /// Its handle, for the first [`MAX_OPEN_DIRS`] levels.
    dir: Option<Dir>,
    /// Its name in its parent (empty for the search directory).
    name: OsString,
    path: PathBuf,
    /// Relative to the search directory (empty for the search directory itself).
    rel: String,
    /// Its entries not walked yet, in name order.
    children: std::vec::IntoIter<(OsString, Kind)>,
}

/// A walk of a directory inside the root, beneath handles: the search directory is opened
/// beneath the root's handle, and every directory below it by its one name relative to its
/// parent's handle, never following a link (`openat(O_NOFOLLOW | O_DIRECTORY)` on Unix). A
/// directory swapped for a link is then skipped, never listed: no name from outside the root
/// can come out, whatever another process renames meanwhile.
///
/// Entries come depth-first, each directory's in byte order of their names (the search
/// directory itself is not an entry); dotfiles are included, `.git` and ignored paths are
/// pruned (see [`Override`] for `grep`'s `glob`). At most [`MAX_OPEN_DIRS`] directories are
/// open at once, and one directory's names are held while it is walked.
#[derive(Debug)]
pub(crate) struct Walk {
    ignores: Ignores,
    glob: Option<Override>,
    levels: Vec<Level>,
    /// A directory just returned, to be read before the next entry.
    pending: Option<(OsString, PathBuf, String)>,
}

impl Walk {
    /// A walk of `start` (a directory inside the root); empty if it cannot be opened.
    pub(crate) fn new(root: &Arc<Root>, start: &Path, glob: Option<Override>) -> Self {
        let levels = root
            .open_dir(start)
            .map(|dir| Level {
                children: read_entries(&dir),
                dir: Some(dir),
                name: OsString::new(),
                path: start.to_path_buf(),
                rel: String::new(),
            })
            .into_iter()
            .collect();
        Self {
            ignores: Ignores {
                root: root.clone(),
                chains: Mutex::default(),
            },
            glob,
            levels,
            pending: None,
        }
    }

    /// Whether an entry is walked: `.git` never, then the glob override, then the ignore rules.
    fn keep(&self, name: &OsStr, path: &Path, rel: &str, kind: Kind) -> bool {
        if name == ".git" {
            return false;
        }
        if let Some(glob) = &self.glob {
            match (glob.negated, glob.glob.is_match(rel)) {
                (true, true) => return false,
                (false, true) => return true,
                (false, false) if kind != Kind::Dir => return false,
                _ => {}
            }
        }
        !self.ignores.is_ignored(path, kind == Kind::Dir)
    }

    /// Opens the directory `name` of the innermost level, from the deepest open level down,
    /// one name at a time, and starts walking it; it is skipped if it is no longer a directory.
    fn descend(&mut self, name: OsString, path: PathBuf, rel: String) {
        let Some(held) = self.levels.iter().rposition(|level| level.dir.is_some()) else {
            return;
        };
        let names = self.levels[held + 1..]
            .iter()
            .map(|level| level.name.as_os_str())
            .chain(std::iter::once(name.as_os_str()));
        let mut dir: Option<Dir> = None;
        for step in names {
            let parent = match &dir {
                Some(dir) => dir,
                None => match &self.levels[held].dir {
                    Some(dir) => dir,
                    None => return,
                },
            };
            match open_dir_nofollow(parent, step) {
                Ok(next) => dir = Some(next),
                Err(_) => return,
            }
        }
        let Some(dir) = dir else { return };
        let children = read_entries(&dir);
        let keep_open = self.levels.len() < MAX_OPEN_DIRS;
        self.levels.push(Level {
            dir: keep_open.then_some(dir),
            name,
            path,
            rel,
            children,
        });
    }
}

impl Iterator for Walk {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        if let Some((name, path, rel)) = self.pending.take() {
            self.descend(name, path, rel);
        }
        loop {
            let level = self.levels.last_mut()?;
            let Some((name, kind)) = level.children.next() else {
                self.levels.pop();
                continue;
            };
            let path = level.path.join(&name);
            let rel = if level.rel.is_empty() {
                name.to_string_lossy().into_owned()
            } else {
                format!("{}/{}", level.rel, name.to_string_lossy())
            };
            if !self.keep(&name, &path, &rel, kind) {
                continue;
            }
            if kind == Kind::Dir {
                self.pending = Some((name, path.clone(), rel.clone()));
            }
            return Some(Entry { path, rel, kind });
        }
    }
}

/// The entries of `dir` with their kinds (as the directory lists them, else from `lstat`),
/// sorted by name; unreadable entries are left out.
fn read_entries(dir: &Dir) -> std::vec::IntoIter<(OsString, Kind)> {
    let mut children: Vec<(OsString, Kind)> = match dir.entries() {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let file_type = match entry.file_type() {
                    Ok(t) if t.is_dir() || t.is_file() || t.is_symlink() => t,
                    // The directory did not say (`DT_UNKNOWN`) or it is special: ask.
                    _ => entry.metadata().ok()?.file_type(),
                };
                let kind = if file_type.is_dir() {
                    Kind::Dir
                } else if file_type.is_file() {
                    Kind::File
                } else {
                    Kind::Other
                };
                Some((entry.file_name(), kind))
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    children.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    children.into_iter()
}

/// Opens the directory `name` (one component) of `parent` without following a link: a link,
/// or anything else that is not a directory, is refused.
#[cfg(unix)]
fn open_dir_nofollow(parent: &Dir, name: &OsStr) -> std::io::Result<Dir> {
    use rustix::fs::{openat, Mode, OFlags};
    let flags =
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = openat(parent, name, flags, Mode::empty())?;
    Ok(Dir::from_std_file(std::fs::File::from(fd)))
}

/// Opens the directory `name` of `parent`, beneath it (`cap-std`).
#[cfg(not(unix))]
fn open_dir_nofollow(parent: &Dir, name: &OsStr) -> std::io::Result<Dir> {
    parent.open_dir(name)
}
