//! `Tab` completion (slash commands, then paths) and the file list of `@`'s fuzzy search
//! (`.gitignore` respected, bounded).

use std::path::Path;

/// The slash commands the view knows, for completion.
pub(crate) const COMMANDS: &[&str] = &[
    "clone", "compact", "copy", "exit", "export", "fork", "hotkeys", "login", "logout", "model",
    "name", "new", "quit", "resume", "session", "settings", "thinking", "tree",
];

/// The most files `@` lists.
pub(crate) const MAX_FILES: usize = 20_000;

/// The longest common prefix of `words`.
fn common_prefix<'a>(words: &[&'a str]) -> &'a str {
    let Some(first) = words.first() else {
        return "";
    };
    let mut end = first.len();
    for w in &words[1..] {
        end = first
            .char_indices()
            .zip(w.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8())
            .min(end);
    }
    &first[..end]
}

/// What `Tab` does to `word` (the text before the cursor back to a space) given the
/// `candidates`: the completed word, or `None` when nothing matches; the second value lists
/// the candidates when more than one match.
pub(crate) fn complete_word(word: &str, candidates: &[String]) -> (Option<String>, Vec<String>) {
    let matching: Vec<&str> = candidates
        .iter()
        .map(String::as_str)
        .filter(|c| c.starts_with(word))
        .collect();
    match matching.len() {
        0 => (None, Vec::new()),
        1 => (Some(matching[0].to_string()), Vec::new()),
        _ => {
            let prefix = common_prefix(&matching);
            (
                (prefix.len() > word.len()).then(|| prefix.to_string()),
                matching.iter().map(|s| s.to_string()).collect(),
            )
        }
    }
}

/// Candidates for a path `word` relative to `cwd`: the entries of its directory, written as
/// the word's directory part plus the name (`/` after directories).
pub(crate) fn path_candidates(cwd: &Path, word: &str) -> Vec<String> {
    let (dir, _) = match word.rfind('/') {
        Some(i) => (&word[..=i], &word[i + 1..]),
        None => ("", word),
    };
    let base = if dir.starts_with('/') {
        Path::new(dir).to_path_buf()
    } else {
        cwd.join(dir)
    };
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .flatten()
        .take(MAX_FILES)
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let slash = if e.path().is_dir() { "/" } else { "" };
            format!("{dir}{name}{slash}")
        })
        .collect();
    out.sort();
    out
}

/// The workspace's files for `@`, relative to `root`, `.gitignore` respected, at most
/// [`MAX_FILES`].
pub(crate) fn workspace_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in ignore::WalkBuilder::new(root).build().flatten() {
        if out.len() >= MAX_FILES {
            break;
        }
        if entry.file_type().is_some_and(|t| t.is_file()) {
            if let Ok(rel) = entry.path().strip_prefix(root) {
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_match_completes_several_extend_to_their_common_prefix() {
        let c = strings(&["/new", "/name", "/model"]);
        assert_eq!(complete_word("/mo", &c), (Some("/model".into()), vec![]));
        assert_eq!(complete_word("/n", &c), (None, strings(&["/new", "/name"])));
        assert_eq!(
            complete_word("s", &strings(&["src/", "sessions.rs", "sessions2.rs"])),
            (None, strings(&["src/", "sessions.rs", "sessions2.rs"]))
        );
        assert_eq!(
            complete_word("se", &strings(&["sessions.rs", "sessions2.rs"])),
            (
                Some("sessions".into()),
                strings(&["sessions.rs", "sessions2.rs"])
            )
        );
        assert_eq!(complete_word("zz", &c), (None, vec![]));
    }

    #[test]
    fn paths_and_workspace_files_respect_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        std::fs::write(root.join("src/deep/x.rs"), "").unwrap();
        std::fs::write(root.join("target/out.bin"), "").unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        assert_eq!(
            path_candidates(root, "src/"),
            strings(&["src/deep/", "src/main.rs"])
        );
        assert_eq!(
            workspace_files(root),
            strings(&["src/deep/x.rs", "src/main.rs"]),
            "hidden and ignored files are left out"
        );
    }
}
