//! Where the local model lives and how it runs: [`LocalModelConfig`].

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Environment variable: the cache directory (default: the user's cache dir + `oxpi`).
pub const ENV_HOME: &str = "OXPI_HOME";
/// Environment variable: use this GGUF model file instead of downloading the default weights.
pub const ENV_LOCAL_MODEL: &str = "OXPI_LOCAL_MODEL";
/// Environment variable: use this `llama-server` binary instead of installing the Python engine.
pub const ENV_LLAMA_SERVER: &str = "OXPI_LLAMA_SERVER";

/// Default CPU threads for generation and prompt processing.
pub const DEFAULT_THREADS: u32 = 2;
/// Default context size in tokens.
pub const DEFAULT_CTX_SIZE: u32 = 4096;
/// Default maximum output tokens advertised on the returned model.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;
/// Default time allowed for the server to load the model and answer `/health`.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(180);

/// How to install and run the local model.
///
/// Build it with [`LocalModelConfig::from_env`] in programs, or with
/// [`LocalModelConfig::new`] (no environment access) in tests; every field is public and
/// may be changed afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModelConfig {
    /// Cache directory holding the engine's venv (`venv/`) and the weights (`models/`).
    pub home: PathBuf,
    /// A GGUF model to serve instead of the default Qwen2.5-Coder weights (nothing is downloaded).
    pub model_path: Option<PathBuf>,
    /// A llama.cpp `llama-server` binary to run instead of the `xllamacpp` Python engine.
    pub server_path: Option<PathBuf>,
    /// Python interpreter used to create the venv (`python3`, looked up on `PATH`).
    pub python: PathBuf,
    /// CPU threads.
    pub threads: u32,
    /// Context size in tokens (also the returned model's `context_window`).
    pub ctx_size: u32,
    /// Maximum output tokens advertised on the returned model.
    pub max_tokens: u32,
    /// How long [`crate::start`] waits for the server to become healthy.
    pub start_timeout: Duration,
    /// Print progress (downloads, assembly, start-up) on stderr.
    pub progress: bool,
}

impl LocalModelConfig {
    /// Defaults with the given cache directory; reads no environment variables.
    pub fn new(home: impl Into<PathBuf>) -> Self {
        Self {
            home: home.into(),
            model_path: None,
            server_path: None,
            python: PathBuf::from(if cfg!(windows) { "python" } else { "python3" }),
            threads: DEFAULT_THREADS,
            ctx_size: DEFAULT_CTX_SIZE,
            max_tokens: DEFAULT_MAX_TOKENS,
            start_timeout: DEFAULT_START_TIMEOUT,
            progress: true,
        }
    }

    /// Defaults overridden by `OXPI_HOME`, `OXPI_LOCAL_MODEL` and `OXPI_LLAMA_SERVER`.
    ///
    /// This is the only place the crate reads the process environment.
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// Like [`from_env`](Self::from_env), but reads variables through `lookup`.
    ///
    /// Empty values count as unset.
    ///
    /// ```
    /// use oxpi_local::LocalModelConfig;
    /// let config = LocalModelConfig::from_vars(|name| match name {
    ///     "OXPI_HOME" => Some("/tmp/oxpi-doc".into()),
    ///     _ => None,
    /// });
    /// assert_eq!(config.home, std::path::Path::new("/tmp/oxpi-doc"));
    /// assert!(config.model_path.is_none());
    /// ```
    pub fn from_vars(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        let var = |name: &str| {
            lookup(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        let mut config = Self::new(var(ENV_HOME).unwrap_or_else(Self::default_home));
        config.model_path = var(ENV_LOCAL_MODEL);
        config.server_path = var(ENV_LLAMA_SERVER);
        config
    }

    /// The default cache directory: `~/.cache/oxpi` on Linux (the platform cache dir plus
    /// `oxpi`), or `oxpi` in the temp dir when the platform has none.
    pub fn default_home() -> PathBuf {
        dirs::cache_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("oxpi")
    }

    /// The Python virtual environment holding the `xllamacpp` engine.
    pub fn venv_dir(&self) -> PathBuf {
        self.home.join("venv")
    }

    /// The interpreter inside [`venv_dir`](Self::venv_dir).
    pub fn venv_python(&self) -> PathBuf {
        if cfg!(windows) {
            self.venv_dir().join("Scripts").join("python.exe")
        } else {
            self.venv_dir().join("bin").join("python")
        }
    }

    /// Directory of assembled model files.
    pub fn models_dir(&self) -> PathBuf {
        self.home.join("models")
    }

    /// Scratch directory for downloaded weight wheels (removed after assembly).
    pub fn downloads_dir(&self) -> PathBuf {
        self.home.join("downloads")
    }

    /// Prints a progress line on stderr (when [`progress`](Self::progress) is on) and logs it.
    pub(crate) fn say(&self, message: impl AsRef<str>) {
        let message = message.as_ref();
        tracing::info!(target: "oxpi_local", "{message}");
        if self.progress {
            eprintln!("oxpi-local: {message}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn new_has_documented_defaults() {
        let config = LocalModelConfig::new("/x");
        assert_eq!(config.home, PathBuf::from("/x"));
        assert_eq!(config.threads, 2);
        assert_eq!(config.ctx_size, 4096);
        assert_eq!(config.max_tokens, 1024);
        assert!(config.model_path.is_none() && config.server_path.is_none());
        assert!(config.progress);
        assert_eq!(config.venv_dir(), PathBuf::from("/x/venv"));
        assert_eq!(config.models_dir(), PathBuf::from("/x/models"));
        assert_eq!(config.downloads_dir(), PathBuf::from("/x/downloads"));
    }

    #[test]
    fn from_vars_reads_all_three_variables() {
        let config = LocalModelConfig::from_vars(vars(&[
            ("OXPI_HOME", "/h"),
            ("OXPI_LOCAL_MODEL", "/m.gguf"),
            ("OXPI_LLAMA_SERVER", "/bin/llama-server"),
        ]));
        assert_eq!(config.home, PathBuf::from("/h"));
        assert_eq!(config.model_path, Some(PathBuf::from("/m.gguf")));
        assert_eq!(config.server_path, Some(PathBuf::from("/bin/llama-server")));
    }

    #[test]
    fn from_vars_treats_empty_as_unset_and_defaults_home() {
        let config =
            LocalModelConfig::from_vars(vars(&[("OXPI_HOME", ""), ("OXPI_LOCAL_MODEL", "")]));
        assert_eq!(config.home, LocalModelConfig::default_home());
        assert!(config.home.ends_with("oxpi"));
        assert!(config.model_path.is_none());
    }
}
