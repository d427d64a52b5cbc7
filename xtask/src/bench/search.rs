//! The `grep` and `find` rows of the bench: oxpi's tools against the `rg` and `fd` binaries
//! (Debian's `ripgrep` and `fd-find`) and pi's own tools (which spawn them) on the same
//! generated tree (`oxpi-bench tree`: 20,000 files / 200 MB, 2,000 / 20 MB with `--quick`).
//! oxpi, `rg` and `fd` are timed as whole processes; pi's tools around their `execute()`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};

/// What a search row runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Search {
    /// `grep` for a literal planted 40 times.
    GrepLiteral,
    /// `grep` for a regular expression planted 40 times.
    GrepRegex,
    /// `find '**/*.rs'`, stopping at the default 1,000 results.
    Find,
}

/// The literal and the regex the tree plants (`oxpi_bench::tree`).
const LITERAL: &str = "needle_literal_7f3a";
const REGEX: &str = r"fn [a-z]+_needle\(\)";
/// Lines each grep row must return, and most paths the find row returns.
const PLANTED: usize = 40;
const FIND_LIMIT: usize = 1000;

impl Search {
    pub(crate) fn label(self, files: usize, bytes: u64) -> String {
        let tree = format!(
            "{} files / {}",
            thousands(files),
            super::report::size_text(bytes)
        );
        match self {
            Search::GrepLiteral => format!("grep literal, {tree}"),
            Search::GrepRegex => format!("grep regex, {tree}"),
            Search::Find => format!("find '**/*.rs', {tree}"),
        }
    }

    /// The lines a correct run prints on `tree`.
    fn expected_lines(self, tree: &Tree) -> usize {
        match self {
            Search::GrepLiteral | Search::GrepRegex => PLANTED,
            Search::Find => tree.rs_files.min(FIND_LIMIT),
        }
    }

    /// oxpi's tool arguments.
    fn oxpi_args(self) -> Value {
        match self {
            Search::GrepLiteral => json!({"pattern": LITERAL, "literal": true}),
            Search::GrepRegex => json!({"pattern": REGEX}),
            Search::Find => json!({"pattern": "**/*.rs"}),
        }
    }
}

/// `20000` → `20,000`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The `rg` and `fd` programs, when found (or installed).
#[derive(Debug, Clone, Default)]
pub(crate) struct Binaries {
    pub(crate) rg: Option<PathBuf>,
    pub(crate) fd: Option<PathBuf>,
    /// Why one is missing.
    pub(crate) missing: Vec<String>,
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

impl Binaries {
    /// Finds `rg` and `fd` (`fdfind` on Debian); when one is missing and `apt-get` can run
    /// (as root), installs Debian's `ripgrep` / `fd-find` first.
    pub(crate) fn prepare() -> Self {
        let find = || (on_path("rg"), on_path("fd").or_else(|| on_path("fdfind")));
        let (mut rg, mut fd) = find();
        if (rg.is_none() || fd.is_none()) && on_path("apt-get").is_some() && is_root() {
            println!("==> apt-get install -y ripgrep fd-find (for the grep and find rows)");
            let installed = Command::new("apt-get")
                .args(["install", "-y", "-qq", "ripgrep", "fd-find"])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !installed {
                let _ = Command::new("apt-get")
                    .args(["update", "-qq"])
                    .stdout(Stdio::null())
                    .status();
                let _ = Command::new("apt-get")
                    .args(["install", "-y", "-qq", "ripgrep", "fd-find"])
                    .stdout(Stdio::null())
                    .status();
            }
            (rg, fd) = find();
        }
        let mut missing = Vec::new();
        if rg.is_none() {
            missing.push("rg not found (Debian package ripgrep): its rows are not measured".into());
        }
        if fd.is_none() {
            missing.push("fd not found (Debian package fd-find): its row is not measured".into());
        }
        Self { rg, fd, missing }
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The generated tree: where it is and its size.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    pub(crate) root: PathBuf,
    pub(crate) files: usize,
    pub(crate) bytes: u64,
    /// Files `find '**/*.rs'` lists (not ignored).
    pub(crate) rs_files: usize,
}

/// Writes the tree under `dir` once (kept between runs: a `stats.json` beside it says it is
/// complete).
pub(crate) fn tree(bench_bin: &Path, dir: &Path, files: usize, bytes: u64) -> Result<Tree, String> {
    let root = dir.join(format!("tree-{files}"));
    let stats_file = dir.join(format!("tree-{files}.json"));
    let stats: Value = match std::fs::read_to_string(&stats_file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
    {
        Some(stats) => stats,
        None => {
            let _ = std::fs::remove_dir_all(&root);
            println!(
                "==> writing the search tree {} ({files} files)",
                root.display()
            );
            let output = Command::new(bench_bin)
                .arg("tree")
                .arg("--root")
                .arg(&root)
                .args(["--files", &files.to_string(), "--bytes", &bytes.to_string()])
                .output()
                .map_err(|e| format!("could not run oxpi-bench tree: {e}"))?;
            if !output.status.success() {
                return Err(format!(
                    "oxpi-bench tree failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
            let text = String::from_utf8_lossy(&output.stdout).to_string();
            std::fs::write(&stats_file, &text)
                .map_err(|e| format!("could not write {}: {e}", stats_file.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("tree stats: {e}"))?
        }
    };
    Ok(Tree {
        root,
        files: stats["files"].as_u64().unwrap_or(0) as usize,
        bytes: stats["bytes"].as_u64().unwrap_or(0),
        rs_files: stats["rs_files"].as_u64().unwrap_or(0) as usize,
    })
}

/// Who runs a search row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Runner {
    Oxpi,
    Rg,
    Fd,
    /// pi's tool under Node (`bench/node/driver.mjs tool`), timed around `execute()` by the
    /// driver (Node's start-up and module loading are outside, as for the other Node rows).
    PiTs {
        node: PathBuf,
        driver: PathBuf,
        install_dir: PathBuf,
    },
}

/// Runs `search` once with `runner` and returns a report like the bench programs' (wall time of
/// the whole process), or why it failed.
pub(crate) fn run(
    search: Search,
    runner: &Runner,
    bench_bin: &Path,
    binaries: &Binaries,
    tree: &Tree,
) -> Result<Value, String> {
    let mut command = match runner {
        Runner::Oxpi => {
            let mut c = Command::new(bench_bin);
            let tool = if search == Search::Find {
                "find"
            } else {
                "grep"
            };
            c.arg(tool)
                .arg("--root")
                .arg(&tree.root)
                .arg("--args")
                .arg(search.oxpi_args().to_string());
            c
        }
        Runner::Rg => {
            let rg = binaries.rg.as_ref().ok_or("rg not available")?;
            let mut c = Command::new(rg);
            // As pi runs it, with text output (faster than its --json).
            c.args(["--line-number", "--color=never", "--hidden"]);
            match search {
                Search::GrepLiteral => c.args(["--fixed-strings", "--", LITERAL, "."]),
                _ => c.args(["--", REGEX, "."]),
            };
            c
        }
        Runner::PiTs {
            node,
            driver,
            install_dir,
        } => {
            let tool = if search == Search::Find {
                "find"
            } else {
                "grep"
            };
            let mut c = Command::new(node);
            c.arg(driver)
                .arg(install_dir)
                .arg("tool")
                .arg(tool)
                .arg(&tree.root)
                .arg(search.oxpi_args().to_string());
            c
        }
        Runner::Fd => {
            let fd = binaries.fd.as_ref().ok_or("fd not available")?;
            let mut c = Command::new(fd);
            c.args(["--glob", "--color=never", "--hidden", "--max-results"])
                .arg(FIND_LIMIT.to_string())
                .args(["--", "*.rs", "."]);
            c
        }
    };
    command.current_dir(&tree.root).stdin(Stdio::null());
    let started = Instant::now();
    let output = command
        .output()
        .map_err(|e| format!("could not start: {e}"))?;
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut reported_wall = None;
    let lines = match runner {
        Runner::Oxpi | Runner::PiTs { .. } => {
            let report: Value = stdout
                .lines()
                .rev()
                .find_map(|l| serde_json::from_str(l).ok())
                .ok_or_else(|| format!("no report: {}", String::from_utf8_lossy(&output.stderr)))?;
            if report["status"] != "ok" {
                return Err(report["note"].as_str().unwrap_or("failed").to_string());
            }
            if matches!(runner, Runner::PiTs { .. }) {
                reported_wall = report["wall_ms"].as_f64();
            }
            report["extra"]["lines"].as_u64().unwrap_or(0) as usize
        }
        _ => stdout.lines().count(),
    };
    let expected = search.expected_lines(tree);
    if lines != expected {
        return Err(format!("{lines} lines returned, expected {expected}"));
    }
    let wall_ms = reported_wall.unwrap_or(wall_ms);
    Ok(json!({"status": "ok", "wall_ms": wall_ms, "extra": {"lines": lines}}))
}
