//! The API keys of pi's `auth.json` (`<agent dir>/auth.json`): entries of `"type": "api_key"`
//! with a literal `key`. OAuth entries and `!command` keys are left to pi (see
//! docs/differences-from-pi.md).
//!
//! Kept in one small file on purpose: oxpi-ai's `CredentialStore` will take its place.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Why `auth.json` could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthFileError {
    /// The file exists but could not be read.
    #[error("could not read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a JSON object.
    #[error("{path} is not a JSON object of provider credentials: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
}

/// The literal API keys stored per provider.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct AuthKeys {
    keys: BTreeMap<String, String>,
}

impl AuthKeys {
    /// Reads `<agent_dir>/auth.json`; a missing file is no keys.
    pub(crate) fn load(agent_dir: &Path) -> Result<Self, AuthFileError> {
        let path = agent_dir.join("auth.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(AuthFileError::Read { path, source }),
        };
        Self::parse(&text).map_err(|reason| AuthFileError::Malformed { path, reason })
    }

    /// The keys of an `auth.json` text.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let Value::Object(entries) = value else {
            return Err("the top level is not an object".to_string());
        };
        let keys = entries
            .into_iter()
            .filter_map(|(provider, entry)| {
                let is_key = entry.get("type").and_then(Value::as_str) == Some("api_key");
                let key = entry.get("key").and_then(Value::as_str)?.trim().to_string();
                (is_key && !key.is_empty() && !key.starts_with('!')).then_some((provider, key))
            })
            .collect();
        Ok(Self { keys })
    }

    /// The stored key of `provider`.
    pub(crate) fn get(&self, provider: &str) -> Option<&str> {
        self.keys.get(provider).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_literal_api_keys_are_taken() {
        let keys = AuthKeys::parse(
            r#"{"openai": {"type": "api_key", "key": "sk-1"},
                "anthropic": {"type": "oauth", "access": "x", "refresh": "y", "expires": 1},
                "groq": {"type": "api_key", "key": "!pass show groq"},
                "xai": {"type": "api_key", "key": "  "}}"#,
        )
        .unwrap();
        assert_eq!(keys.get("openai"), Some("sk-1"));
        assert_eq!(keys.get("anthropic"), None);
        assert_eq!(keys.get("groq"), None);
        assert_eq!(keys.get("xai"), None);
    }

    #[test]
    fn a_missing_file_is_no_keys_and_a_broken_one_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(AuthKeys::load(dir.path()).unwrap(), AuthKeys::default());
        std::fs::write(dir.path().join("auth.json"), "[1]").unwrap();
        let error = AuthKeys::load(dir.path()).unwrap_err().to_string();
        assert!(error.contains("auth.json is not a JSON object"), "{error}");
    }
}
