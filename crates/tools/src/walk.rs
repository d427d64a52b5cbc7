//! How `find` and `grep` walk a directory: beneath handles, never by path ([`Walk`]), in name
//! order, dotfiles included, `.git` skipped, links never followed, and the `.gitignore` /
//! `.ignore` files of the workspace applied (with ripgrep's `ignore` crate's rules), read by oxpi
//! itself: each is opened beneath the root's handle, non-blocking, must be a regular file (a
//! FIFO, a device or a link out is never read) and is read up to 1 MiB. The files of the
//! directories between the root and the search directory count too, as they would for `rg` or
//! `fd`; nothing above the root is read.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, OpenOptions};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use oxpi_agent_core::ToolError;

use crate::listing::PathGlob;

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
    /// The directory `base` (the workspace root, or what [`crate::Workspace::base_of`] gave for a
    /// search outside it), opened once.
    pub(crate) fn open(base: &Path) -> Result<Self, ToolError> {
        let dir = Dir::open_ambient_dir(base, ambient_authority())
            .map_err(|e| ToolError::new(format!("Cannot open the workspace: {e}")))?;
        let mut options = OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NONBLOCK);
        }
        Ok(Self {
            path: base.to_path_buf(),
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

    /// Opens the entry `name` of `dir` (a directory of a walk) for reading, beneath that
    /// handle, if it is a regular file: one step, whatever the depth of `dir`.
    pub(crate) fn open_file_in(&self, dir: &Dir, name: &OsStr) -> Option<File> {
        let file = dir.open_with(name, &self.options).ok()?;
        file.metadata().ok()?.is_file().then_some(file)
    }
}

/// The rules that apply in a directory: its own ignore files' first, then its parent's, up to
/// the root. A list sharing its tail with the parent's, so a directory's costs only its own.
type Chain = Option<Arc<ChainNode>>;

/// One directory's rules in a [`Chain`].
#[derive(Debug)]
struct ChainNode {
    rules: Gitignore,
    parent: Chain,
}

/// `chain` with `own` in front, if there are any.
fn push_rules(chain: Chain, own: Option<Gitignore>) -> Chain {
    match own {
        Some(rules) => Some(Arc::new(ChainNode {
            rules,
            parent: chain,
        })),
        None => chain,
    }
}

/// Whether `path` is ignored by `chain`: the rules of the nearest directory that says anything
/// about it win (a deeper `!pattern` un-ignores).
fn ignored_by(chain: &Chain, path: &Path, is_dir: bool) -> bool {
    let mut node = chain.as_deref();
    while let Some(current) = node {
        let found = current.rules.matched(path, is_dir);
        if found.is_ignore() {
            return true;
        }
        if found.is_whitelist() {
            return false;
        }
        node = current.parent.as_deref();
    }
    false
}

/// The rules of `.gitignore` then `.ignore` in the directory `path` (later lines win, as in
/// git), each file opened by `open`.
fn load_rules(path: &Path, open: impl Fn(&str) -> Option<File>) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(path);
    let mut any = false;
    for name in [".gitignore", ".ignore"] {
        let Some(file) = open(name) else {
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
    any.then(|| builder.build().ok()).flatten()
}

/// The rules of the search directory: those of the directories from the root down to it, each
/// read by its path beneath the root's handle (once per walk).
fn start_chain(root: &Root, dir: &Path) -> Chain {
    if !dir.starts_with(&root.path) {
        return None;
    }
    let parent = match dir.parent() {
        Some(parent) if dir != root.path => start_chain(root, parent),
        _ => None,
    };
    push_rules(
        parent,
        load_rules(dir, |name| root.open_file(&dir.join(name))),
    )
}

/// What an entry of a walk is, as its directory listed it (a link is `Other`: never followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
    Other,
}

/// A directory of a walk and the name of an entry in it.
pub(crate) type Parent = (Arc<Dir>, OsString);

/// An entry of a walk.
#[derive(Debug)]
pub(crate) struct Entry {
    /// Where it is: the root's path joined with the names walked.
    pub(crate) path: PathBuf,
    /// The names from the search directory, `/`-separated (lossy for names that are not UTF-8).
    pub(crate) rel: String,
    pub(crate) kind: Kind,
    /// The directory it is in, and its name there (for a file: `grep` opens it beneath it).
    pub(crate) parent: Option<Parent>,
}

/// `grep`'s `glob`, which overrides the ignore rules as ripgrep's `--glob` does: a file or
/// directory it matches is walked whatever `.gitignore` says (`!glob`: pruned); a file it does
/// not match is left out, a directory it does not match is walked if the ignore rules let it.
#[derive(Debug, Clone)]
pub(crate) struct Override {
    pub(crate) negated: bool,
    pub(crate) glob: PathGlob,
}

/// At most this many directories of a walk are held open: the deepest ones. A directory whose
/// handle was let go is reopened, when the walk comes back up to it, as `..` of its child (one
/// step, checked to be the same directory by device and inode).
const MAX_OPEN_DIRS: usize = 32;

/// A directory being walked.
#[derive(Debug)]
struct Level {
    /// Its handle, while it is one of the [`MAX_OPEN_DIRS`] deepest levels (shared with the
    /// entries handed out, so `grep` opens a file beneath it in one step).
    dir: Option<Arc<Dir>>,
    /// Device and inode, to check a reopened handle.
    identity: (u64, u64),
    /// The ignore rules for its entries.
    chain: Chain,
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
/// held open by the walk, and one directory's names are held while it is walked. Each
/// directory is opened once going down and at most once more per child coming back up, in one
/// step each: the walk is linear in the number of directories, whatever their depth.
#[derive(Debug)]
pub(crate) struct Walk {
    root: Arc<Root>,
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
            .ok()
            .and_then(|dir| {
                Some(Level {
                    children: read_entries(&dir),
                    identity: identity(&dir)?,
                    dir: Some(Arc::new(dir)),
                    chain: start_chain(root, start),
                    path: start.to_path_buf(),
                    rel: String::new(),
                })
            })
            .into_iter()
            .collect();
        Self {
            root: root.clone(),
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
        let chain = self.levels.last().map(|level| &level.chain);
        !chain.is_some_and(|chain| ignored_by(chain, path, kind == Kind::Dir))
    }

    /// Opens the directory `name` of the innermost level beneath its handle and starts walking
    /// it; it is skipped if it is no longer a directory. The handle of the level
    /// [`MAX_OPEN_DIRS`] above is let go.
    fn descend(&mut self, name: OsString, path: PathBuf, rel: String) {
        let Some(parent) = self.levels.last().and_then(|level| level.dir.clone()) else {
            return;
        };
        let Ok(dir) = open_dir_nofollow(&parent, &name) else {
            return;
        };
        let Some(identity) = identity(&dir) else {
            return;
        };
        let own = load_rules(&path, |file| self.root.open_file_in(&dir, OsStr::new(file)));
        let chain = push_rules(
            self.levels.last().and_then(|level| level.chain.clone()),
            own,
        );
        let children = read_entries(&dir);
        self.levels.push(Level {
            dir: Some(Arc::new(dir)),
            identity,
            chain,
            path,
            rel,
            children,
        });
        if let Some(far) = self.levels.len().checked_sub(MAX_OPEN_DIRS + 1) {
            self.levels[far].dir = None;
        }
    }

    /// Leaves the innermost level; the one it was in gets its handle back (as `..` of the level
    /// left, if it had let it go). If that is not the same directory any more (moved meanwhile),
    /// its remaining directories are not walked.
    fn ascend(&mut self) {
        let Some(left) = self.levels.pop() else {
            return;
        };
        let Some(level) = self.levels.last_mut() else {
            return;
        };
        if level.dir.is_some() {
            return;
        }
        let reopened = left
            .dir
            .as_deref()
            .and_then(|child| open_dir_nofollow(child, OsStr::new("..")).ok())
            .filter(|dir| identity(dir) == Some(level.identity));
        level.dir = reopened.map(Arc::new);
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
                self.ascend();
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
            let parent = self
                .levels
                .last()
                .and_then(|level| level.dir.clone())
                .map(|dir| (dir, name.clone()));
            if kind == Kind::Dir {
                self.pending = Some((name, path.clone(), rel.clone()));
            }
            return Some(Entry {
                path,
                rel,
                kind,
                parent,
            });
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

/// The device and inode of `dir`.
fn identity(dir: &Dir) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        let stat = rustix::fs::fstat(dir).ok()?;
        #[allow(clippy::unnecessary_cast)]
        Some((stat.st_dev as u64, stat.st_ino as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Some((0, 0))
    }
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
