//! The source tree the `grep` and `find` rows search: a deterministic tree of text files (about
//! 20,000 files and 200 MB by default) in nested directories, with a few planted lines that the
//! searches look for, a `.gitignore` and ignored files, as a code base has.
//!
//! The same seed gives the same bytes, so oxpi, `rg`, `fd` and pi's tools search identical data.

use std::io::{self, Write};
use std::path::Path;

/// The literal planted in [`PLANTED`] files (one line each).
pub const LITERAL: &str = "needle_literal_7f3a";
/// A regular expression matching the other planted line (one per planted file).
pub const REGEX: &str = r"fn [a-z]+_needle\(\)";
/// Files holding one literal line and one regex line each, so a search for either finds fewer
/// matches than the default limit of 100 and has to read the whole tree.
pub const PLANTED: usize = 40;
/// The glob the `find` rows look for.
pub const FIND_GLOB: &str = "**/*.rs";

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "let", "value", "return", "self", "match", "config", "result", "error", "string", "buffer",
    "index", "count", "stream", "event", "handler", "request", "response", "token", "parse",
    "write", "read", "state", "model", "tool", "agent", "message", "context", "options",
];
const EXTENSIONS: &[&str] = &["rs", "ts", "md", "json", "txt", "py", "toml", "js"];

/// What [`generate`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeStats {
    /// Files written (ignored ones included).
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Files matching [`FIND_GLOB`] that `.gitignore` does not hide.
    pub rs_files: usize,
}

/// Writes `files` files of about `bytes / files` bytes each under `root` (created if needed).
/// One file in 50 goes to an ignored `target/` directory.
pub fn generate(root: &Path, files: usize, bytes: u64) -> io::Result<TreeStats> {
    // An empty `.git` makes `rg` and `fd` treat the tree as a repository, so they apply its
    // `.gitignore` as oxpi does.
    std::fs::create_dir_all(root.join(".git"))?;
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n")?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let per_file = (bytes / files.max(1) as u64).max(64) as usize;
    let mut stats = TreeStats {
        files: 0,
        bytes: 0,
        rs_files: 0,
    };
    let planted_every = (files / PLANTED).max(1);
    let mut planted = 0;
    for i in 0..files {
        let ignored = i % 50 == 49;
        let dir = if ignored {
            root.join("target").join(format!("d{}", i % 7))
        } else {
            root.join(format!("m{}", i % 40))
                .join(format!("s{}", (i / 40) % 25))
        };
        std::fs::create_dir_all(&dir)?;
        let ext = EXTENSIONS[rng.below(EXTENSIONS.len() as u64) as usize];
        let path = dir.join(format!("f{i}.{ext}"));
        let mut text = String::with_capacity(per_file + 64);
        let plant = !ignored && i % planted_every == 0 && planted < PLANTED;
        while text.len() < per_file {
            let words = 3 + rng.below(9);
            for w in 0..words {
                if w > 0 {
                    text.push(' ');
                }
                text.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            }
            text.push('\n');
            if plant && text.len() > per_file / 2 && !text.contains(LITERAL) {
                text.push_str(&format!("// {LITERAL} in file {i}\n"));
                text.push_str(&format!("fn planted_needle() {{ {i} }}\n"));
            }
        }
        if plant {
            planted += 1;
        }
        let mut file = std::fs::File::create(&path)?;
        file.write_all(text.as_bytes())?;
        stats.files += 1;
        stats.bytes += text.len() as u64;
        if ext == "rs" && !ignored {
            stats.rs_files += 1;
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_deterministic_and_holds_the_planted_lines() {
        let a = tempfile_dir("a");
        let b = tempfile_dir("b");
        let stats = generate(&a, 200, 200 * 1024).unwrap();
        assert_eq!(generate(&b, 200, 200 * 1024).unwrap(), stats);
        assert_eq!(stats.files, 200);
        assert!(stats.bytes >= 200 * 1024, "{stats:?}");
        let mut planted = 0;
        for entry in walk(&a) {
            let text = std::fs::read_to_string(&entry).unwrap();
            assert_eq!(
                std::fs::read_to_string(b.join(entry.strip_prefix(&a).unwrap())).unwrap(),
                text
            );
            planted += text.matches(LITERAL).count();
        }
        assert_eq!(planted, PLANTED);
        let _ = std::fs::remove_dir_all(&a);
        let _ = std::fs::remove_dir_all(&b);
    }

    fn tempfile_dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("oxpi-tree-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.file_name().is_some_and(|n| n != ".gitignore") {
                    out.push(p);
                }
            }
        }
        out
    }
}
