//! Reference MCP servers that no one here wrote, installed on first use into a private cache
//! (`$OXPI_HOME/mcp`, else `~/.cache/oxpi/mcp`), the way oxpi-local installs its engine:
//!
//! - Python servers from PyPI into a venv (`python3 -m venv`, then `pip install` of pinned
//!   versions): [`python_server`] gives the path of a server's console script.
//! - Node servers from npm (`npm install --prefix`, pinned): [`node_server`] gives the path of
//!   a server's bin, or `Ok(None)` when `node`/`npm` are missing, so a test can say it skips.
//!
//! An install writes a marker file last, so an interrupted one is started over, never used.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The Python servers and their pinned versions.
pub const PYTHON_SERVERS: &[&str] = &["mcp-server-time==2026.10.19", "mcp-server-git==2026.10.19"];

/// The Node servers and their pinned versions.
pub const NODE_SERVERS: &[&str] = &[
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
];

/// Installs are serialized within a process (tests run in parallel).
static INSTALL: Mutex<()> = Mutex::new(());

/// Where the servers are installed.
pub fn cache_dir() -> PathBuf {
    let home = std::env::var_os("OXPI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/oxpi")))
        .unwrap_or_else(|| std::env::temp_dir().join("oxpi"));
    home.join("mcp")
}

/// The console script `program` (e.g. `mcp-server-git`) of the Python servers' venv,
/// installing the venv first if needed.
pub fn python_server(program: &str) -> Result<PathBuf, String> {
    let venv = cache_dir().join(format!("venv-{}", version_tag(PYTHON_SERVERS)));
    install_once(&venv, |staging| {
        run(Command::new("python3").args(["-m", "venv"]).arg(staging))?;
        run(Command::new(staging.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(PYTHON_SERVERS))
    })?;
    let script = venv.join("bin").join(program);
    if script.is_file() {
        Ok(script)
    } else {
        Err(format!("{} has no {program}", venv.display()))
    }
}

/// The bin `program` (e.g. `mcp-server-everything`) of the Node servers, installing them first
/// if needed; `Ok(None)` when `node` or `npm` is not installed.
pub fn node_server(program: &str) -> Result<Option<PathBuf>, String> {
    for tool in ["node", "npm"] {
        if Command::new(tool).arg("--version").output().is_err() {
            return Ok(None);
        }
    }
    let prefix = cache_dir().join(format!("node-{}", version_tag(NODE_SERVERS)));
    install_once(&prefix, |staging| {
        run(Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(staging)
            .args(NODE_SERVERS))
    })?;
    let bin = prefix.join("node_modules/.bin").join(program);
    if bin.exists() {
        Ok(Some(bin))
    } else {
        Err(format!("{} has no {program}", prefix.display()))
    }
}

/// A short tag that changes when the pinned versions do.
fn version_tag(pins: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in pins.join(" ").bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", hash >> 32)
}

/// Runs `install` into `target` unless its marker says a previous install finished (a venv
/// cannot be moved after it is made: its scripts name their interpreter by absolute path).
fn install_once(
    target: &Path,
    install: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    let _guard = INSTALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let marker = target.join(".oxpi-installed");
    if marker.is_file() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(target);
    std::fs::create_dir_all(target)
        .map_err(|e| format!("could not create {}: {e}", target.display()))?;
    eprintln!(
        "installing reference MCP servers into {} (first use)",
        target.display()
    );
    install(target)?;
    std::fs::write(&marker, b"").map_err(|e| format!("could not write {}: {e}", marker.display()))
}

/// Runs a command, failing with its output's end.
fn run(command: &mut Command) -> Result<(), String> {
    let line = format!("{command:?}");
    let output = command
        .output()
        .map_err(|e| format!("could not run {line}: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
    Err(format!(
        "{line} failed ({}):\n{}",
        output.status,
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    ))
}
