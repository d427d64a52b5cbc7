//! The project's files as a short list for the system prompt (the `small` prompt profile): a
//! small model that cannot explore guesses paths (`src/main/java/…/HeaderParser.java` for a
//! Python project); shown the files, it reads the right one.

use std::path::Path;

/// At most this many paths are looked at, so a huge directory (a home directory) costs little.
const VISITED: usize = 2_000;
/// Directories deeper than this are not entered.
const DEPTH: usize = 6;

/// The files under `cwd` (ripgrep's ignore rules: `.gitignore`, hidden entries skipped), the
/// shallowest first, at most `limit` of them, one relative path per line, sorted; a last line
/// says how many more there are (or that there are more than were looked at). `None` when
/// there is no file to list.
pub(crate) fn listing(cwd: &Path, limit: usize) -> Option<String> {
    let mut files: Vec<(usize, String)> = Vec::new();
    let mut visited = 0;
    let mut cut = false;
    for entry in ignore::WalkBuilder::new(cwd)
        .max_depth(Some(DEPTH))
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
        .flatten()
    {
        visited += 1;
        if visited > VISITED {
            cut = true;
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(relative) = entry.path().strip_prefix(cwd) {
            files.push((entry.depth(), relative.to_string_lossy().into_owned()));
        }
    }
    if files.is_empty() {
        return None;
    }
    let total = files.len();
    files.sort();
    files.truncate(limit);
    let mut lines: Vec<String> = files.into_iter().map(|(_, path)| path).collect();
    lines.sort();
    let more = total - lines.len();
    match (more, cut) {
        (_, true) => lines.push(format!("… and more files (more than {VISITED} entries)")),
        (0, false) => {}
        (n, false) => lines.push(format!("… and {n} more files")),
    }
    Some(lines.join("\n"))
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
