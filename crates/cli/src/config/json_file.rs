//! Reading one of pi's JSON configuration files: missing is empty, a byte-order mark is
//! skipped, and a file that is not JSON (or not an object) is an error naming the file, line and
//! column, never a panic.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Why a configuration file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FileError {
    /// The file exists but could not be read.
    #[error("{path}: cannot be read: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        reason: String,
    },
    /// Not JSON.
    #[error("{path}:{line}:{column}: invalid JSON: {reason}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's description (without its position).
        reason: String,
    },
    /// JSON, but not an object at the top.
    #[error("{path}: expected a JSON object at the top level, found {found}")]
    NotObject {
        /// The file.
        path: PathBuf,
        /// What was found (`an array`, …).
        found: &'static str,
    },
}

/// The name of a JSON value's kind, for error texts.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `value` as JSON text, at most 60 characters (for error texts).
pub(crate) fn quote(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 60 {
        text
    } else {
        format!("{}…", text.chars().take(60).collect::<String>())
    }
}

/// The object in `path`: `Ok(None)` when there is no such file.
pub(crate) fn read_object(path: &Path) -> Result<Option<Map<String, Value>>, FileError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(FileError::Read {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })
        }
    };
    parse_object(path, &text).map(Some)
}

/// `text` (the contents of `path`) as an object; an empty or blank file is an empty object, as
/// pi treats an empty settings file.
pub(crate) fn parse_object(path: &Path, text: &str) -> Result<Map<String, Value>, FileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(FileError::NotObject {
            path: path.to_path_buf(),
            found: kind(&other),
        }),
        Err(e) => {
            let full = e.to_string();
            let reason = match full.rfind(" at line ") {
                Some(at) => full[..at].to_string(),
                None => full,
            };
            Err(FileError::Syntax {
                path: path.to_path_buf(),
                line: e.line(),
                column: e.column(),
                reason,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_file_line_and_column() {
        let path = Path::new("/x/settings.json");
        assert_eq!(
            parse_object(path, "{\n  \"a\": 1,\n  oops\n}").unwrap_err(),
            FileError::Syntax {
                path: path.into(),
                line: 3,
                column: 3,
                reason: "key must be a string".into()
            }
        );
        assert_eq!(
            parse_object(path, "[1]").unwrap_err().to_string(),
            "/x/settings.json: expected a JSON object at the top level, found an array"
        );
        assert_eq!(parse_object(path, "\u{feff}  \n").unwrap(), Map::new());
        let map = parse_object(path, "\u{feff}{\"a\":true}").unwrap();
        assert_eq!(map.get("a"), Some(&Value::Bool(true)));
    }

    #[test]
    fn a_missing_file_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_object(&dir.path().join("nope.json")).unwrap(), None);
    }
}
