//! Installing the engine (a venv with `xllamacpp`) and the weights, idempotently.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use tokio::process::Command;

use crate::cmd;
use crate::config::LocalModelConfig;
use crate::error::{IoContext, LocalError};
use crate::weights::{self, DEFAULT_WEIGHTS};

/// The engine wheel: llama.cpp's server as a Python extension (prebuilt CPU build, MIT).
pub const ENGINE_REQUIREMENT: &str = "xllamacpp==2026.10.11549";
/// Model id the default weights are served under.
pub const DEFAULT_MODEL_ID: &str = "qwen2.5-coder-1.5b-instruct";
/// Human-readable name of the default weights.
pub const DEFAULT_MODEL_NAME: &str = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (local)";

/// Written into the venv once the engine is installed; holds [`ENGINE_REQUIREMENT`].
const ENGINE_MARKER: &str = "oxpi-engine.txt";
/// How long to wait for another process's install before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(30 * 60);

/// Which program serves the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engine {
    /// The `xllamacpp` wheel, run by this venv interpreter with an embedded script.
    Xllamacpp {
        /// The venv's Python.
        python: PathBuf,
    },
    /// A user-supplied llama.cpp `llama-server` binary.
    LlamaServer {
        /// The binary.
        path: PathBuf,
    },
}

/// What [`ensure_installed`] found or put in place: everything needed to start a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The engine to run.
    pub engine: Engine,
    /// The GGUF model file.
    pub model_path: PathBuf,
    /// Model id to serve it under (sent as `model` in requests).
    pub model_id: String,
    /// Human-readable model name.
    pub model_name: String,
}

/// Makes sure the engine and the weights are in place, installing what is missing.
///
/// Idempotent and fast once done: a second call only checks marker files and sizes.
/// With `server_path` set no engine is installed; with `model_path` set nothing is
/// downloaded. Concurrent callers (other processes too) are serialised by a lock file
/// in [`LocalModelConfig::home`]. Progress goes to stderr when `config.progress` is on.
pub async fn ensure_installed(config: &LocalModelConfig) -> Result<Installed, LocalError> {
    if let Some(path) = &config.server_path {
        if !path.is_file() {
            return Err(LocalError::ServerNotFound { path: path.clone() });
        }
    }
    let (model_id, model_name) = match &config.model_path {
        Some(path) if !path.is_file() => {
            return Err(LocalError::ModelNotFound { path: path.clone() })
        }
        Some(path) => {
            let stem = path
                .file_stem()
                .map_or_else(|| "local".into(), |s| s.to_string_lossy().into_owned());
            (stem.clone(), format!("{stem} (local)"))
        }
        None => (DEFAULT_MODEL_ID.to_string(), DEFAULT_MODEL_NAME.to_string()),
    };
    let need_engine = config.server_path.is_none() && !engine_ready(config);
    let need_weights = config.model_path.is_none()
        && !weights::is_ready(&DEFAULT_WEIGHTS, &DEFAULT_WEIGHTS.path(config));

    let mut model_path = config
        .model_path
        .clone()
        .unwrap_or_else(|| DEFAULT_WEIGHTS.path(config));
    if need_engine || need_weights {
        let started = Instant::now();
        std::fs::create_dir_all(&config.home)
            .ctx(|| format!("creating {}", config.home.display()))?;
        let _lock = InstallLock::acquire(config).await?;
        config.say(format!(
            "setting up the local model in {} (first use downloads about 1.1 GB; set OXPI_HOME to put it elsewhere)",
            config.home.display()
        ));
        let python = ensure_venv(config).await?;
        if config.server_path.is_none() {
            ensure_engine(config, &python).await?;
        }
        if config.model_path.is_none() {
            model_path = weights::ensure(config, &python, &DEFAULT_WEIGHTS).await?;
        }
        config.say(format!(
            "local model ready in {:.1}s (cache: {})",
            started.elapsed().as_secs_f64(),
            config.home.display()
        ));
    }
    let engine = match &config.server_path {
        Some(path) => Engine::LlamaServer { path: path.clone() },
        None => Engine::Xllamacpp {
            python: config.venv_python(),
        },
    };
    Ok(Installed {
        engine,
        model_path,
        model_id,
        model_name,
    })
}

fn engine_ready(config: &LocalModelConfig) -> bool {
    config.venv_python().is_file()
        && std::fs::read_to_string(config.venv_dir().join(ENGINE_MARKER))
            .is_ok_and(|text| text.trim() == ENGINE_REQUIREMENT)
}

/// Checks the system Python and creates the venv if it is missing. Returns the venv's Python.
async fn ensure_venv(config: &LocalModelConfig) -> Result<PathBuf, LocalError> {
    let python = config.venv_python();
    if python.is_file() {
        return Ok(python);
    }
    let mut cmd = Command::new(&config.python);
    cmd.args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"]);
    let version = match cmd::run_quiet("checking the Python version", cmd).await {
        Ok(out) => out.trim().to_string(),
        Err(err) => {
            return Err(LocalError::PythonMissing {
                python: config.python.clone(),
                detail: err
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            })
        }
    };
    let parsed: Vec<u32> = version.split('.').filter_map(|p| p.parse().ok()).collect();
    if parsed.len() != 2 || (parsed[0], parsed[1]) < (3, 10) {
        return Err(LocalError::PythonTooOld {
            python: config.python.clone(),
            version,
        });
    }
    let venv = config.venv_dir();
    config.say(format!(
        "creating a Python {version} venv at {}",
        venv.display()
    ));
    let started = Instant::now();
    let _ = std::fs::remove_dir_all(&venv);
    let mut cmd = Command::new(&config.python);
    cmd.args(["-m", "venv"]).arg(&venv);
    if let Err(err) = cmd::run_quiet("creating the venv", cmd).await {
        let _ = std::fs::remove_dir_all(&venv);
        let stderr_tail = match err {
            LocalError::CommandFailed {
                stderr_tail,
                status,
                ..
            } => format!("{status}\n{stderr_tail}"),
            other => other.to_string(),
        };
        return Err(LocalError::VenvFailed {
            path: venv,
            stderr_tail,
        });
    }
    config.say(format!(
        "venv created in {:.1}s",
        started.elapsed().as_secs_f64()
    ));
    Ok(python)
}

/// Installs the engine wheel into the venv unless its marker says it is there.
async fn ensure_engine(config: &LocalModelConfig, python: &Path) -> Result<(), LocalError> {
    if engine_ready(config) {
        return Ok(());
    }
    config.say(format!(
        "installing the llama.cpp engine ({ENGINE_REQUIREMENT}, ~34 MB) into {}",
        config.venv_dir().display()
    ));
    let started = Instant::now();
    let mut cmd = Command::new(python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--only-binary=:all:",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--no-input",
    ])
    .arg(ENGINE_REQUIREMENT);
    cmd::run(
        "installing the engine",
        cmd,
        Duration::from_secs(10),
        || async {
            config.say(format!(
                "  still installing the engine ({:.0}s)",
                started.elapsed().as_secs_f64()
            ));
        },
    )
    .await?;
    let marker = config.venv_dir().join(ENGINE_MARKER);
    std::fs::write(&marker, ENGINE_REQUIREMENT).ctx(|| format!("writing {}", marker.display()))?;
    config.say(format!(
        "engine installed in {:.1}s",
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// An exclusive lock file in the cache dir, removed on drop.
#[derive(Debug)]
struct InstallLock {
    path: PathBuf,
}

impl InstallLock {
    async fn acquire(config: &LocalModelConfig) -> Result<Self, LocalError> {
        let path = config.home.join("install.lock");
        let started = Instant::now();
        let mut told = false;
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut file) => {
                    // Best effort: the pid only helps detect a stale lock.
                    let _ = writeln!(file, "{}", std::process::id());
                    return Ok(Self { path });
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                    if lock_is_stale(&path) {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    if started.elapsed() > LOCK_WAIT {
                        return Err(LocalError::LockTimeout {
                            path,
                            waited: started.elapsed(),
                        });
                    }
                    if !told {
                        config.say(format!(
                            "waiting for another install to finish (lock file {})",
                            path.display()
                        ));
                        told = true;
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(err) => {
                    return Err(LocalError::io(format!("creating {}", path.display()), err))
                }
            }
        }
    }
}

impl Drop for InstallLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A lock is stale when its holder is gone (where `/proc` tells) or it is over an hour old.
fn lock_is_stale(path: &Path) -> bool {
    let pid = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok());
    let proc = Path::new("/proc");
    if let Some(pid) = pid {
        if proc.join("self").exists() {
            return !proc.join(pid.to_string()).exists();
        }
    }
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|modified| SystemTime::now().duration_since(modified).ok())
        .is_some_and(|age| age > Duration::from_secs(3600))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(home: &Path) -> LocalModelConfig {
        let mut config = LocalModelConfig::new(home);
        config.progress = false;
        config
    }

    #[tokio::test]
    async fn bring_your_own_model_and_server_installs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("my-model.Q8.gguf");
        let server = dir.path().join("llama-server");
        std::fs::write(&model, b"gguf").unwrap();
        std::fs::write(&server, b"#!/bin/sh\n").unwrap();
        let mut config = quiet(&dir.path().join("home"));
        config.model_path = Some(model.clone());
        config.server_path = Some(server.clone());
        config.python = PathBuf::from("/nonexistent/python3");
        let installed = ensure_installed(&config).await.unwrap();
        assert_eq!(installed.engine, Engine::LlamaServer { path: server });
        assert_eq!(installed.model_path, model);
        assert_eq!(installed.model_id, "my-model.Q8");
        assert!(!config.home.exists(), "nothing should be created");
    }

    #[tokio::test]
    async fn missing_user_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = quiet(dir.path());
        config.model_path = Some(dir.path().join("nope.gguf"));
        let err = ensure_installed(&config).await.unwrap_err().to_string();
        assert!(
            err.contains("nope.gguf") && err.contains("OXPI_LOCAL_MODEL"),
            "{err}"
        );
        config.server_path = Some(dir.path().join("no-server"));
        let err = ensure_installed(&config).await.unwrap_err().to_string();
        assert!(
            err.contains("no-server") && err.contains("OXPI_LLAMA_SERVER"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn missing_python_says_what_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = quiet(dir.path());
        config.python = PathBuf::from("/nonexistent/python3");
        let err = ensure_installed(&config).await.unwrap_err();
        assert!(matches!(err, LocalError::PythonMissing { .. }), "{err}");
        assert!(err.to_string().contains("python3-venv"), "{err}");
        assert!(!dir.path().join("install.lock").exists(), "lock released");
    }

    #[tokio::test]
    async fn lock_is_exclusive_and_stale_locks_are_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let config = quiet(dir.path());
        let lock = InstallLock::acquire(&config).await.unwrap();
        assert!(!lock_is_stale(&lock.path), "our own pid is alive");
        let second =
            tokio::time::timeout(Duration::from_millis(300), InstallLock::acquire(&config)).await;
        assert!(second.is_err(), "second acquire must wait");
        drop(lock);
        let lock = InstallLock::acquire(&config).await.unwrap();
        if Path::new("/proc/self").exists() {
            std::fs::write(&lock.path, "4294967295\n").unwrap();
            assert!(lock_is_stale(&lock.path));
            let _taken = InstallLock::acquire(&config).await.unwrap();
        }
    }
}
