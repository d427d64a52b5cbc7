//! pi itself, for tests that compare with it: pi-ai and pi-agent-core 1.6.0 from npm, installed
//! on first use into a private cache (`$OXPI_HOME/pi/node-pi-1.6.0`, else
//! `~/.cache/oxpi/pi/node-pi-1.6.0`), and a script of the repository run under Node against them.
//!
//! [`run_pi16_script`] gives `Ok(None)` when `node` or `npm` is missing, so a test can print a
//! skip line and rely on the committed recording instead. Node 20 works (npm warns that the
//! packages ask for Node 22.19; nothing these scripts use needs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The pi release the scripts run against.
pub const PI16_VERSION: &str = "1.6.0";

/// The npm packages installed, at [`PI16_VERSION`].
pub const PI16_PACKAGES: [&str; 2] = ["@earendil-works/pi-ai", "@earendil-works/pi-agent-core"];

/// Installs are serialized within a process (tests run in parallel).
static INSTALL: Mutex<()> = Mutex::new(());

/// Where pi 1.6 is installed (the directory that holds `node_modules`).
pub fn pi16_install_dir() -> PathBuf {
    let home = std::env::var_os("OXPI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/oxpi")))
        .unwrap_or_else(|| std::env::temp_dir().join("oxpi"));
    home.join("pi").join(format!("node-pi-{PI16_VERSION}"))
}

/// True when `node` and `npm` both run.
pub fn node_available() -> bool {
    ["node", "npm"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Installs pi 1.6 if needed and returns its install directory; `Ok(None)` without Node.
pub fn pi16() -> Result<Option<PathBuf>, String> {
    if !node_available() {
        return Ok(None);
    }
    let dir = pi16_install_dir();
    let _guard = INSTALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let marker = dir.join(".oxpi-installed");
    if marker.is_file() {
        return Ok(Some(dir));
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    eprintln!(
        "installing pi {PI16_VERSION} into {} (first use)",
        dir.display()
    );
    let specs: Vec<String> = PI16_PACKAGES
        .iter()
        .map(|p| format!("{p}@{PI16_VERSION}"))
        .collect();
    let mut npm = Command::new("npm");
    npm.args([
        "install",
        "--save-exact",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        "--prefix",
    ])
    .arg(&dir)
    .args(&specs);
    let output = npm
        .output()
        .map_err(|e| format!("could not run npm: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "npm install {} failed ({}): {}",
            specs.join(" "),
            output.status,
            tail(&output.stderr)
        ));
    }
    std::fs::write(&marker, b"")
        .map_err(|e| format!("could not write {}: {e}", marker.display()))?;
    Ok(Some(dir))
}

/// Runs `script` (a path relative to the repository root, e.g. `bench/node/pi16/messages.mjs`)
/// with the install directory as its argument and returns what it printed; `Ok(None)` without
/// Node. A failing script is an `Err` with the end of its stderr.
pub fn run_pi16_script(script: &str) -> Result<Option<String>, String> {
    let Some(dir) = pi16()? else {
        return Ok(None);
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(script);
    run_node(&path, &dir).map(Some)
}

fn run_node(script: &Path, dir: &Path) -> Result<String, String> {
    let output = Command::new("node")
        .arg(script)
        .arg(dir)
        .output()
        .map_err(|e| format!("could not run node {}: {e}", script.display()))?;
    if !output.status.success() {
        return Err(format!(
            "node {} failed ({}): {}",
            script.display(),
            output.status,
            tail(&output.stderr)
        ));
    }
    String::from_utf8(output.stdout)
        .map_err(|e| format!("node {} printed no UTF-8: {e}", script.display()))
}

fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().rev().take(15).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join("\n")
}
