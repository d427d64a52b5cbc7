//! A local Restate server for tests, labs and the chaos run: the `restate-server` binary from
//! npm (`@restatedev/restate-server-linux-x64`, or `-linux-arm64`, at [`RESTATE_VERSION`]),
//! installed on first use into a private cache (`$OXPI_HOME/restate/<version>`, else
//! `~/.cache/oxpi/restate/<version>`), started on free loopback ports with a temporary base
//! directory, and stopped (killed) when dropped. `OXPI_RESTATE_SERVER` names a binary to use
//! instead.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The Restate server release installed.
pub const RESTATE_VERSION: &str = "1.7.12";

/// Installs are serialized within a process (tests run in parallel).
static INSTALL: Mutex<()> = Mutex::new(());

/// Where the server is installed (the directory that holds `node_modules`).
pub fn install_dir() -> PathBuf {
    let home = std::env::var_os("OXPI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/oxpi")))
        .unwrap_or_else(|| std::env::temp_dir().join("oxpi"));
    home.join("restate").join(RESTATE_VERSION)
}

/// The npm package that ships the binary for this machine.
fn platform_package() -> Result<&'static str, String> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Ok("@restatedev/restate-server-linux-x64"),
        ("linux", "aarch64") => Ok("@restatedev/restate-server-linux-arm64"),
        ("macos", "aarch64") => Ok("@restatedev/restate-server-darwin-arm64"),
        ("macos", "x86_64") => Ok("@restatedev/restate-server-darwin-x64"),
        (os, arch) => Err(format!("no restate-server package for {os}/{arch}")),
    }
}

/// The `restate-server` binary: `OXPI_RESTATE_SERVER` if set, else the cached install
/// (installed with `npm` on first use). An `Err` says why it could not be had (no npm, no
/// network to the npm registry…).
pub fn restate_server_binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("OXPI_RESTATE_SERVER").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let package = platform_package()?;
    let dir = install_dir();
    let binary = dir
        .join("node_modules")
        .join(package)
        .join("bin/restate-server");
    let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    let marker = dir.join(".oxpi-installed");
    if marker.is_file() && binary.is_file() {
        return Ok(binary);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    eprintln!(
        "installing restate-server {RESTATE_VERSION} into {} (first use)",
        dir.display()
    );
    let spec = format!("{package}@{RESTATE_VERSION}");
    let output = Command::new("npm")
        .args([
            "install",
            "--save-exact",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&dir)
        .arg(&spec)
        .output()
        .map_err(|e| format!("could not run npm (needed to install restate-server): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "npm install {spec} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if !binary.is_file() {
        return Err(format!(
            "npm installed {spec} but {} is missing",
            binary.display()
        ));
    }
    std::fs::write(&marker, b"")
        .map_err(|e| format!("could not write {}: {e}", marker.display()))?;
    Ok(binary)
}

/// A free TCP port on 127.0.0.1 (free when asked; bind it soon).
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// A running Restate server (one node, every role), killed when dropped.
#[derive(Debug)]
pub struct RestateServer {
    child: Child,
    ingress_port: u16,
    admin_port: u16,
    _dir: tempfile::TempDir,
}

impl RestateServer {
    /// Installs (if needed) and starts a server on free loopback ports with a temporary base
    /// directory, and waits until its admin and ingress APIs answer (at most 120 s).
    pub async fn start() -> Result<Self, String> {
        let binary = tokio::task::spawn_blocking(restate_server_binary)
            .await
            .map_err(|e| format!("install task failed: {e}"))??;
        let dir = tempfile::tempdir().map_err(|e| format!("no temp dir: {e}"))?;
        let (node_port, admin_port, ingress_port) = (free_port()?, free_port()?, free_port()?);
        let config = config_toml(dir.path(), node_port, admin_port, ingress_port);
        let config_path = dir.path().join("restate.toml");
        std::fs::write(&config_path, config).map_err(|e| format!("could not write config: {e}"))?;
        let log = std::fs::File::create(dir.path().join("restate.log"))
            .map_err(|e| format!("could not create the log: {e}"))?;
        let child = Command::new(&binary)
            .arg("--config-file")
            .arg(&config_path)
            .arg("--no-logo")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
        let server = Self {
            child,
            ingress_port,
            admin_port,
            _dir: dir,
        };
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        for url in [
            format!("{}/health", server.admin_url()),
            format!("{}/restate/health", server.ingress_url()),
        ] {
            loop {
                let ok = client
                    .get(&url)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success());
                if ok {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("restate-server did not answer {url} within 120 s"));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Ok(server)
    }

    /// The ingress URL (`http://127.0.0.1:<port>`): `POST /OxpiAgent/<run id>/prompt`.
    pub fn ingress_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ingress_port)
    }

    /// The admin API's URL.
    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.admin_port)
    }

    /// Registers a deployment (a service endpoint such as `http://127.0.0.1:9080`), retrying
    /// while it does not answer yet (at most 60 s).
    pub async fn register(&self, uri: &str) -> Result<(), String> {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let sent = client
                .post(format!("{}/deployments", self.admin_url()))
                .json(&serde_json::json!({"uri": uri, "force": true}))
                .send()
                .await;
            let last = match sent {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) => format!("{}: {}", r.status(), r.text().await.unwrap_or_default()),
                Err(e) => e.to_string(),
            };
            if Instant::now() > deadline {
                return Err(format!("could not register {uri}: {last}"));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The server's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("restate.log")).unwrap_or_default()
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn config_toml(base: &Path, node: u16, admin: u16, ingress: u16) -> String {
    format!(
        r#"cluster-name = "oxpi-durable"
node-name = "oxpi-durable"
auto-provision = true
default-num-partitions = 4
disable-telemetry = true
rocksdb-total-memory-size = "256 MiB"
bind-address = "127.0.0.1:{node}"
listen-mode = "tcp"
base-dir = "{base}"
log-filter = "warn"

[admin]
bind-address = "127.0.0.1:{admin}"
disable-web-ui = true

[admin.query-engine]
memory-size = "64 MiB"

[ingress]
bind-address = "127.0.0.1:{ingress}"

[worker.invoker]
memory-limit = "256 MiB"
"#,
        base = base.join("data").display()
    )
}

/// A service process (a program serving a Restate endpoint on a port), killed with SIGKILL
/// when dropped or on [`kill`](Self::kill): no cleanup runs, as when a machine is lost.
#[derive(Debug)]
pub struct ServiceProcess {
    child: Child,
}

impl ServiceProcess {
    /// Starts `command` and waits until `port` on 127.0.0.1 accepts connections (at most
    /// 60 s).
    pub async fn start(mut command: Command, port: u16) -> Result<Self, String> {
        let child = command
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("could not start {command:?}: {e}"))?;
        let mut process = Self { child };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Ok(process);
            }
            if let Ok(Some(status)) = process.child.try_wait() {
                return Err(format!("{command:?} exited before serving: {status}"));
            }
            if Instant::now() > deadline {
                process.kill();
                return Err(format!("{command:?} did not listen on {port} within 60 s"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process at once (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
