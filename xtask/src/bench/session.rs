//! The session-load row's file: a long session written once by pi-coding-agent's own
//! `SessionManager` under Node 22, or by oxpi's with the same turns when pi cannot run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::env::Node;

/// Who writes the session-load row's file.
pub(crate) enum Writer<'a> {
    /// pi-coding-agent's own `SessionManager` (`bench/node/session_load.mjs write`).
    Pi(&'a Node),
    /// oxpi's (`oxpi-bench session-write`, the same turns), when pi cannot run; the release
    /// directory holding `oxpi-bench`.
    Oxpi(&'a Path),
}

/// The session file of `entries` entries, written once into `dir` and reused (a folder for
/// each writer).
pub(crate) fn file(
    root: &Path,
    dir: &Path,
    writer: Writer<'_>,
    entries: usize,
) -> Result<PathBuf, String> {
    let by = match writer {
        Writer::Pi(_) => "pi",
        Writer::Oxpi(_) => "oxpi",
    };
    let folder = dir.join(format!("session-{entries}-{by}"));
    let existing = |folder: &Path| {
        std::fs::read_dir(folder).ok().and_then(|list| {
            list.filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        })
    };
    if let Some(file) = existing(&folder) {
        return Ok(file);
    }
    std::fs::create_dir_all(&folder)
        .map_err(|e| format!("could not create {}: {e}", folder.display()))?;
    println!(
        "==> {by} writes a {entries}-entry session into {} (once)",
        folder.display()
    );
    let mut command = match writer {
        Writer::Pi(node) => {
            let mut c = Command::new(&node.node);
            c.arg(root.join("bench").join("node").join("session_load.mjs"))
                .arg(&node.install_dir)
                .arg("write")
                .arg(&folder)
                .arg(entries.to_string());
            c
        }
        Writer::Oxpi(bin) => {
            let mut c = Command::new(bin.join("oxpi-bench"));
            c.arg("session-write")
                .arg("--dir")
                .arg(&folder)
                .args(["--entries", &entries.to_string()]);
            c
        }
    };
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run the {by} session writer: {e}"))?;
    existing(&folder)
        .filter(|_| output.status.success())
        .ok_or_else(|| {
            format!(
                "{by} did not write the session ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )
        })
}
