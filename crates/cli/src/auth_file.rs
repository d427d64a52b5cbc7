//! The API keys of pi's `auth.json` (`<agent dir>/auth.json`): entries of `"type": "api_key"`
//! with a literal `key`, and which providers have a stored OAuth login oxpi can use (Anthropic,
//! OpenAI Codex, GitHub Copilot), whose requests go through oxpi-ai's `Models` (the token
//! refreshed under pi's lock, see `runtime.rs`). `!command` keys are left to pi (see
//! docs/differences-from-pi.md).

use std::collections::{BTreeMap, BTreeSet};
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
    /// Providers with a stored OAuth login oxpi can use.
    logins: BTreeSet<String>,
    /// The file, when one was read.
    path: Option<PathBuf>,
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
        let mut keys = Self::parse(&text).map_err(|reason| AuthFileError::Malformed {
            path: path.clone(),
            reason,
        })?;
        keys.path = Some(path);
        Ok(keys)
    }

    /// The keys of an `auth.json` text.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let Value::Object(entries) = value else {
            return Err("the top level is not an object".to_string());
        };
        let logins = entries
            .iter()
            .filter(|(provider, entry)| {
                entry.get("type").and_then(Value::as_str) == Some("oauth")
                    && oxpi_ai::oauth::OAuthConfig::for_provider(provider).is_some()
            })
            .map(|(provider, _)| provider.clone())
            .collect();
        let keys = entries
            .into_iter()
            .filter_map(|(provider, entry)| {
                let is_key = entry.get("type").and_then(Value::as_str) == Some("api_key");
                let key = entry.get("key").and_then(Value::as_str)?.trim().to_string();
                (is_key && !key.is_empty() && !key.starts_with('!')).then_some((provider, key))
            })
            .collect();
        Ok(Self {
            keys,
            logins,
            path: None,
        })
    }

    /// The stored key of `provider`.
    pub(crate) fn get(&self, provider: &str) -> Option<&str> {
        self.keys.get(provider).map(String::as_str)
    }

    /// Whether `provider` has a stored OAuth login oxpi can use.
    pub(crate) fn has_login(&self, provider: &str) -> bool {
        self.logins.contains(provider)
    }

    /// The file the keys were read from (`None` when none was read).
    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
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
        assert!(keys.has_login("anthropic") && !keys.has_login("openai"));
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
