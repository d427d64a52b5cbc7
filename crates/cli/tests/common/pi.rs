//! pi-coding-agent 1.6.0 under Node 22, for the comparisons: installed on first use with npm
//! (`node@22` and the pinned package) into the cache the session tests use
//! (`$OXPI_HOME/pi-session/pi-1.6.0-node22`, else `~/.cache/oxpi/…`), a marker written last.
//! [`pi`] is `None` (with a skip line) when `node` or `npm` is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::{json, Value};

const PACKAGES: &[&str] = &["node@22", "@earendil-works/pi-coding-agent@1.6.0"];

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

/// The install prefix (installing first if needed); `None` without Node.
pub fn pi(test: &str) -> Option<PathBuf> {
    for tool in ["node", "npm"] {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!(
                "SKIP {test}: `{tool}` is not installed (comparing with pi needs Node and npm)"
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

/// Node 22 of the install.
pub fn node(prefix: &Path) -> PathBuf {
    prefix.join("node_modules/.bin/node")
}

/// pi's command-line entry.
pub fn cli(prefix: &Path) -> PathBuf {
    prefix.join("node_modules/@earendil-works/pi-coding-agent/dist/cli.js")
}

/// Writes `<home>/.pi/agent/models.json` naming the scripted server as provider `scripted`
/// with the model `scripted-1`.
pub fn configure(home: &Path, base_url: &str) {
    let dir = home.join(".pi/agent");
    std::fs::create_dir_all(&dir).expect("pi agent dir");
    let models = json!({"providers": {"scripted": {
        "baseUrl": format!("{base_url}/v1"),
        "api": "openai-completions",
        "apiKey": "scripted-key",
        "models": [{"id": "scripted-1"}],
    }}});
    std::fs::write(dir.join("models.json"), models.to_string()).expect("models.json");
}

/// The shape of a JSON value: objects keep their keys (sorted, by serde_json's map) with the
/// shapes of their values, arrays the shapes of their items, scalars only their kind.
pub fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        Value::String(_) => json!("string"),
        Value::Number(_) => json!("number"),
        Value::Bool(_) => json!("bool"),
        Value::Null => json!("null"),
    }
}

/// `value` with the keys `drop` removed at every depth.
pub fn without(value: &Value, drop: &[&str]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !drop.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), without(v, drop)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| without(v, drop)).collect()),
        other => other.clone(),
    }
}

/// What pi's `SessionManager` sees in the session `file` (tests/common/pi_session.mjs): the
/// header, the entry ids, the leaf, the name, and the context's messages as `{role, text,
/// toolCallId, stopReason}`. Panics with pi's stderr when pi cannot open it.
pub fn open_session(prefix: &Path, file: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/pi_session.mjs");
    let output = Command::new(node(prefix))
        .arg(script)
        .arg(prefix)
        .arg(file)
        .output()
        .expect("run node");
    assert!(
        output.status.success(),
        "pi could not open {}: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("pi printed {stdout:?}: {e}"))
}
