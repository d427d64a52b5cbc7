//! Helpers of the session tests: files in a temporary directory, and the file's lines.

#![allow(dead_code)]

pub mod pi;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A temporary directory with a `sessions` directory and a working directory `proj` inside.
pub struct Dirs {
    pub temp: tempfile::TempDir,
    pub sessions: PathBuf,
    pub cwd: PathBuf,
}

pub fn dirs() -> Dirs {
    let temp = tempfile::tempdir().expect("tempdir");
    let sessions = temp.path().join("sessions");
    let cwd = temp.path().join("proj");
    std::fs::create_dir_all(&cwd).expect("cwd");
    Dirs {
        temp,
        sessions,
        cwd,
    }
}

/// The JSON objects of a file, one per line (every line must parse).
pub fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("read session")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("line {l:?}: {e}")))
        .collect()
}

/// Writes `lines` (JSON values) as a session file.
pub fn write_lines(path: &Path, lines: &[Value]) {
    let mut text = String::new();
    for line in lines {
        text.push_str(&serde_json::to_string(line).expect("json"));
        text.push('\n');
    }
    std::fs::write(path, text).expect("write session");
}

/// `value` as JavaScript reads it: JavaScript has one number type, so a float with no
/// fraction (`0.0`, which serde_json writes for an `f64` zero) is the integer it equals.
pub fn as_js(value: &Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(as_js).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), as_js(v))).collect())
        }
        other => other.clone(),
    }
}
