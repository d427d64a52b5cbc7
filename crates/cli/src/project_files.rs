//! The project's files as a short list for the system prompt (the `small` prompt profile): a
//! small model that cannot explore guesses paths (`src/main/java/…/HeaderParser.java` for a
//! Python project); shown the files, it reads the right one.

use std::path::Path;

/// At most this many entries are looked at (over all the passes below), so a huge tree (a
/// home directory) costs little; each directory entered is read whole, to sort it.
const VISITED: usize = 2_000;
/// Directories deeper than this are not entered.
const DEPTH: usize = 6;

/// The files under `cwd`, the shallowest first, at most `limit` of them, one relative path per
/// line, sorted; a last line says how many more there are (or that there are more than were
/// looked at). `None` when there is no file to list.
///
/// ripgrep's ignore rules apply (hidden entries skipped): in a Git repository its `.gitignore`
/// files up to the repository's root, as `rg` does; outside one, the `.gitignore` files inside
/// `cwd` (a project not under Git still hides its `node_modules/`), none above it. The tree is
/// walked to depth 1, then 2, and so on, so the files near the top are found first and a large
/// subdirectory does not hide the files beside it.
pub(crate) fn listing(cwd: &Path, limit: usize) -> Option<String> {
    let in_repo = crate::config::skills::git_root(cwd).is_some();
    let mut files: Vec<String> = Vec::new();
    let mut visited = 0;
    let mut cut = false;
    'depths: for depth in 1..=DEPTH {
        let mut found = Vec::new();
        let mut deeper = false;
        for entry in ignore::WalkBuilder::new(cwd)
            .max_depth(Some(depth))
            .require_git(in_repo)
            .parents(in_repo)
            .sort_by_file_name(|a, b| a.cmp(b))
            .build()
            .flatten()
        {
            visited += 1;
            if visited > VISITED {
                cut = true;
                break;
            }
            if entry.depth() != depth {
                continue;
            }
            match entry.file_type() {
                Some(kind) if kind.is_dir() => deeper = true,
                Some(kind) if kind.is_file() => {
                    if let Ok(relative) = entry.path().strip_prefix(cwd) {
                        found.push(relative.to_string_lossy().into_owned());
                    }
                }
                _ => {}
            }
        }
        found.sort();
        files.append(&mut found);
        if cut || !deeper {
            break 'depths;
        }
    }
    if files.is_empty() {
        return None;
    }
    let total = files.len();
    files.truncate(limit);
    files.sort();
    let more = total - files.len();
    match (more, cut) {
        (_, true) => files.push(format!("… and more files (more than {VISITED} entries)")),
        (0, false) => {}
        (n, false) => files.push(format!("… and {n} more files")),
    }
    Some(files.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_files_shallowest_first_sorted_without_hidden_or_ignored_ones() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for path in [
            "b.py",
            "a.txt",
            "net/headers.py",
            "net/deep/x/y.rs",
            ".hidden",
            "target/out.bin",
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        assert_eq!(
            listing(root, 10).as_deref(),
            Some("a.txt\nb.py\nnet/deep/x/y.rs\nnet/headers.py")
        );
        assert_eq!(
            listing(root, 3).as_deref(),
            Some("a.txt\nb.py\nnet/headers.py\n… and 1 more files")
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(listing(empty.path(), 10), None);
    }

    /// Walked level by level: a subdirectory with more entries than are looked at does not
    /// hide the files beside it; the project's `.gitignore` applies outside a Git repository
    /// too, and one above the project (outside a repository) does not.
    #[test]
    fn a_large_subdirectory_does_not_hide_the_files_above_it() {
        let dir = tempfile::tempdir().unwrap();
        // A `.gitignore` above the project hiding everything (a dotfiles home) does not count.
        std::fs::write(dir.path().join(".gitignore"), "*\n").unwrap();
        let root = &dir.path().join("project");
        std::fs::create_dir_all(root.join("node_modules/pkg")).unwrap();
        std::fs::write(root.join("node_modules/pkg/index.js"), "").unwrap();
        std::fs::write(root.join(".gitignore"), "node_modules/\n").unwrap();
        std::fs::write(root.join("main.py"), "").unwrap();
        std::fs::write(root.join("setup.py"), "").unwrap();
        assert_eq!(listing(root, 10).as_deref(), Some("main.py\nsetup.py"));
        std::fs::create_dir_all(root.join("data")).unwrap();
        for n in 0..(VISITED + 5) {
            std::fs::write(root.join(format!("data/d{n:05}")), "").unwrap();
        }
        let text = listing(root, 3).unwrap();
        assert_eq!(
            text,
            format!(
                "data/d00000\nmain.py\nsetup.py\n… and more files (more than {VISITED} entries)"
            )
        );
    }

    #[test]
    fn a_directory_larger_than_what_is_looked_at_says_so() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..(VISITED + 5) {
            std::fs::write(dir.path().join(format!("f{n:05}")), "").unwrap();
        }
        let text = listing(dir.path(), 5).unwrap();
        assert_eq!(
            text,
            format!("f00000\nf00001\nf00002\nf00003\nf00004\n… and more files (more than {VISITED} entries)")
        );
    }
}
