//! Starting, health-checking and stopping the model server process.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use oxpi_ai::Model;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use crate::cmd;
use crate::config::LocalModelConfig;
use crate::error::LocalError;
use crate::install::{ensure_installed, Engine, Installed};

/// Lines of server output kept for error messages.
const LOG_LINES: usize = 40;
/// Time between health polls.
const POLL_EVERY: Duration = Duration::from_millis(200);

/// Runs `xllamacpp`'s embedded llama.cpp HTTP server until stdin closes.
///
/// Arguments: model path, port, context size, threads, model alias. `xllamacpp.Server`
/// loads the model and starts listening in its constructor. SIGINT is reset to its
/// default so Ctrl-C in a terminal ends it at once; stdin reaching EOF (the owner closed
/// it, or died) ends it too, so the server never outlives its owner. (`Server()` holds
/// the GIL while loading, so an owner killed during the load is noticed right after it.)
/// Sampling is greedy (temperature 0) unless a request asks otherwise: a small model
/// makes its tool calls best greedy.
const RUNNER_PY: &str = r#"
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
import xllamacpp as xlc
model, port, ctx, threads, alias = sys.argv[1:6]
params = xlc.CommonParams()
params.model.path = model
params.hostnames = ["127.0.0.1"]
params.port = int(port)
params.n_ctx = int(ctx)
params.n_parallel = 1
params.cpuparams.n_threads = int(threads)
params.cpuparams_batch.n_threads = int(threads)
params.use_jinja = True
params.sampling.temp = 0.0
params.model_alias = {alias}
server = xlc.Server(params)
print("oxpi-local: listening on", server.listening_address, flush=True)
sys.stdin.read()
del server
os._exit(0)
"#;

/// A running local model server. Dropping it kills the process; prefer [`shutdown`](Self::shutdown).
/// Keep it alive as long as its [`model`](Self::model) is used: a request after the drop fails
/// with a connection error that names this cause.
#[derive(Debug)]
#[must_use = "the model server stops when this value is dropped"]
pub struct LocalServer {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    port: u16,
    model: Model,
    log: Log,
}

/// The last lines the server printed (stdout and stderr interleaved).
#[derive(Debug, Clone, Default)]
struct Log(Arc<Mutex<VecDeque<String>>>);

impl Log {
    fn push(&self, line: String) {
        let mut lines = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if lines.len() == LOG_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn tail(&self, n: usize) -> String {
        let lines = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let skip = lines.len().saturating_sub(n);
        lines
            .iter()
            .skip(skip)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Drains `pipe` into the log until EOF, so the child never blocks on a full pipe.
    fn drain(&self, pipe: impl AsyncRead + Unpin + Send + 'static) {
        let log = self.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(pipe);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                        tracing::debug!(target: "oxpi_local::server", "{line}");
                        log.push(line);
                    }
                }
            }
        });
    }
}

/// Installs what is missing ([`ensure_installed`]), then starts the server and waits
/// until it is healthy.
pub async fn start(config: &LocalModelConfig) -> Result<LocalServer, LocalError> {
    let installed = ensure_installed(config).await?;
    start_installed(config, &installed).await
}

/// Starts the server for an existing installation on a free port of 127.0.0.1 and
/// waits (up to `config.start_timeout`) until `GET /health` answers 200.
pub async fn start_installed(
    config: &LocalModelConfig,
    installed: &Installed,
) -> Result<LocalServer, LocalError> {
    let port = free_port()?;
    let cmd = server_command(config, installed, port);
    config.say(format!(
        "starting the model server on 127.0.0.1:{port} ({})",
        installed.model_path.display()
    ));
    let started = Instant::now();
    let model = local_model(config, installed, port);
    let server = launch(cmd, port, model, config.start_timeout).await?;
    config.say(format!(
        "model server ready in {:.1}s at {}",
        started.elapsed().as_secs_f64(),
        server.base_url()
    ));
    Ok(server)
}

/// The line the embedded model reads after each tool result (`compat.toolResultHint`). Without
/// it the model called `get_weather` again after its result, greedy or not (3 calls in one run
/// of `lab-15`); with it, it answered from the result.
pub const TOOL_RESULT_HINT: &str =
    "(Tool result above. If it answers the request, reply to the user now; otherwise call the next tool.)";

/// The `oxpi_ai::Model` for a server on `port` (OpenAI-compatible, provider `local`).
pub fn local_model(config: &LocalModelConfig, installed: &Installed, port: u16) -> Model {
    let mut model =
        Model::openai_compatible(format!("http://127.0.0.1:{port}/v1"), &installed.model_id);
    model.provider = "local".into();
    model.name = installed.model_name.clone();
    model.context_window = u64::from(config.ctx_size);
    model.max_tokens = u64::from(config.max_tokens);
    model.compat = Some(serde_json::json!({
        "toolCallsInText": true,
        "toolChoiceAsJsonSchema": true,
        "toolResultHint": TOOL_RESULT_HINT,
        "supportsUsageInStreaming": true,
    }));
    model
}

/// The command line that serves `installed` on `port`.
pub fn server_command(config: &LocalModelConfig, installed: &Installed, port: u16) -> Command {
    let (ctx, threads) = (config.ctx_size.to_string(), config.threads.to_string());
    match &installed.engine {
        Engine::Xllamacpp { python } => {
            let mut cmd = Command::new(python);
            cmd.arg("-u")
                .arg("-c")
                .arg(RUNNER_PY)
                .arg(&installed.model_path);
            cmd.args([port.to_string(), ctx, threads, installed.model_id.clone()]);
            cmd
        }
        Engine::LlamaServer { path } => {
            let mut cmd = Command::new(path);
            cmd.arg("--model").arg(&installed.model_path);
            cmd.args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--ctx-size",
                &ctx,
            ]);
            cmd.args([
                "--threads",
                &threads,
                "--parallel",
                "1",
                "--jinja",
                "--temp",
                "0",
                "--alias",
                &installed.model_id,
            ]);
            cmd
        }
    }
}

/// Asks the OS for a free TCP port on 127.0.0.1.
fn free_port() -> Result<u16, LocalError> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| LocalError::io("finding a free port on 127.0.0.1", e))
}

/// Spawns `cmd` (a server that will listen on `port`) and waits until it is healthy.
///
/// The child stays in our process group, so a terminal's Ctrl-C reaches it as well;
/// a group of its own would survive the owner being killed by that very signal.
pub(crate) async fn launch(
    mut cmd: Command,
    port: u16,
    model: Model,
    timeout: Duration,
) -> Result<LocalServer, LocalError> {
    let command = cmd::command_line(&cmd);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|source| LocalError::Spawn { command, source })?;
    let log = Log::default();
    if let Some(out) = child.stdout.take() {
        log.drain(out);
    }
    if let Some(err) = child.stderr.take() {
        log.drain(err);
    }
    let stdin = child.stdin.take();
    let mut server = LocalServer {
        child: Some(child),
        stdin,
        port,
        model,
        log,
    };
    let url = format!("{}/health", server.base_url());
    let outcome = {
        let mut child = server.child.as_mut();
        let exited = move || match child.as_mut() {
            Some(child) => child.try_wait().ok().flatten().map(cmd::describe_status),
            None => Some("no process".to_string()),
        };
        wait_healthy(&url, timeout, exited).await
    };
    let Err(failure) = outcome else {
        return Ok(server);
    };
    // Give the drain tasks a moment to collect the last words, then stop the process.
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.kill().await;
    let stderr_tail = server.log.tail(cmd::TAIL_LINES);
    Err(match failure {
        HealthFailure::Exited(status) => LocalError::ServerExited {
            status,
            stderr_tail,
        },
        HealthFailure::Timeout(waited) => LocalError::StartTimeout {
            url,
            waited,
            stderr_tail,
        },
    })
}

/// Why [`wait_healthy`] gave up.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HealthFailure {
    /// The process ended (how).
    Exited(String),
    /// No 200 within the timeout.
    Timeout(Duration),
}

/// Polls `GET url` until it answers 200 (llama-server answers 503 while loading).
///
/// Between polls `exited` is asked whether the process has ended (returning how).
pub(crate) async fn wait_healthy(
    url: &str,
    timeout: Duration,
    mut exited: impl FnMut() -> Option<String>,
) -> Result<(), HealthFailure> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap_or_default();
    let started = Instant::now();
    loop {
        if let Some(status) = exited() {
            return Err(HealthFailure::Exited(status));
        }
        match client.get(url).send().await {
            Ok(response) if response.status() == reqwest::StatusCode::OK => return Ok(()),
            Ok(response) => tracing::trace!(target: "oxpi_local", "{url}: {}", response.status()),
            Err(err) => tracing::trace!(target: "oxpi_local", "{url}: {err}"),
        }
        if started.elapsed() >= timeout {
            return Err(HealthFailure::Timeout(started.elapsed()));
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

impl LocalServer {
    /// Root URL of the server, e.g. `http://127.0.0.1:41234` (`/health` lives here).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// OpenAI-compatible API base, e.g. `http://127.0.0.1:41234/v1` (the model's `base_url`).
    pub fn api_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// The port the server listens on (127.0.0.1 only).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The model to pass to `oxpi_ai` calls: OpenAI-compatible, provider `local`,
    /// `compat.toolCallsInText` set (the model writes tool calls as JSON text) and
    /// `compat.toolChoiceAsJsonSchema` (forced calls decoded under a JSON-schema grammar).
    pub fn model(&self) -> Model {
        self.model.clone()
    }

    /// The process id of the server, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// The last `lines` lines the server printed (stdout and stderr interleaved).
    pub fn log_tail(&self, lines: usize) -> String {
        self.log.tail(lines)
    }

    /// Stops the server: closes its stdin (the embedded engine exits cleanly on EOF),
    /// waits up to 5 s, then kills it. Returns how it ended.
    pub async fn shutdown(mut self) -> Result<String, LocalError> {
        drop(self.stdin.take());
        let Some(mut child) = self.child.take() else {
            return Ok("already stopped".to_string());
        };
        match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
            Ok(status) => status
                .map(cmd::describe_status)
                .map_err(|e| LocalError::io("waiting for the model server to exit", e)),
            Err(_) => {
                let _ = child.kill().await;
                Ok("killed after 5 s".to_string())
            }
        }
    }

    /// Kills the process and reaps it.
    async fn kill(&mut self) {
        drop(self.stdin.take());
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }
}

impl Drop for LocalServer {
    /// Kills the server (also on panic unwinding). Should the owner die without
    /// unwinding, the embedded engine still exits because its stdin closes.
    fn drop(&mut self) {
        drop(self.stdin.take());
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
