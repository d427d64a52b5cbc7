//! pi-coding-agent 1.6.0 under Node 22, installed on first use into a private cache
//! (`$OXPI_HOME/pi-session`, else `~/.cache/oxpi/pi-session`): `npm install` of `node@22` and
//! the pinned package, a marker written last so an interrupted install is started over.
//! [`pi`] is `None` (and prints a skip line) when `node` or `npm` is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// What is installed.
pub const PACKAGES: &[&str] = &["node@22", "@earendil-works/pi-coding-agent@1.6.0"];

static INSTALL: Mutex<()> = Mutex::new(());

fn cache_dir() -> PathBuf {
    std::env::var_os("OXPI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/oxpi")))
        .unwrap_or_else(|| std::env::temp_dir().join("oxpi"))
        .join("pi-session")
        .join("pi-1.6.0-node22")
}

/// The install prefix, installing first if needed; `None` without Node.
pub fn pi(test: &str) -> Option<PathBuf> {
    for tool in ["node", "npm"] {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!(
                "SKIP {test}: `{tool}` is not installed (the pi round trip needs Node and npm)"
            );
            return None;
        }
    }
    let prefix = cache_dir();
    let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    let marker = prefix.join(".oxpi-installed");
    if !marker.is_file() {
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::create_dir_all(&prefix).expect("create the pi cache");
        eprintln!(
            "installing {PACKAGES:?} into {} (first use)",
            prefix.display()
        );
        let output = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&prefix)
            .args(PACKAGES)
            .output()
            .expect("run npm");
        assert!(
            output.status.success(),
            "npm install failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::fs::write(&marker, b"").expect("marker");
    }
    Some(prefix)
}

/// Runs one of the scripts in `tests/pi/` with Node 22 and the arguments after the prefix;
/// returns the JSON it prints last (bounded by 120 s).
pub fn run(prefix: &Path, script: &str, source: &str, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().expect("script dir");
    let path = dir.path().join(script);
    std::fs::write(&path, source).expect("write script");
    let node = prefix.join("node_modules/.bin/node");
    let mut child = Command::new(&node)
        .arg(&path)
        .arg(prefix)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", node.display()));
    // Read both pipes while waiting, so a large output cannot fill a pipe and stall the child.
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{script} did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::process::Output {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().last().unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{script} printed {last:?}: {e}"))
}
