//! The `bash` tool: runs a shell command in the workspace root (pi 1.6's tool, with a sandbox).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxpi_agent_core::{AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::bash_output::{
    BashTruncation, OutputAccumulator, Snapshot, STRUCTURED_OUTPUT_MAX_BYTES,
};
use crate::fsutil::format_size;
use crate::process::{self, Ended, RunSpec, Sink};
use crate::running::RunningCommands;
use crate::sandbox::Sandbox;
use crate::workspace::{Workspace, DEFAULT_MAX_BYTES};

/// The longest timeout pi accepts, in milliseconds (the largest 32-bit timer).
const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;
/// How often partial output is sent while a command runs (pi's `BASH_UPDATE_THROTTLE_MS`).
const UPDATE_EVERY: Duration = Duration::from_millis(100);
/// How long the output must stay quiet after the shell exited (pi's `EXIT_STDIO_GRACE_MS`).
pub const DEFAULT_EXIT_GRACE: Duration = Duration::from_millis(100);

/// Arguments of the `bash` tool.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    /// Shell command to execute
    pub command: String,
    /// Timeout in seconds (optional, no default timeout)
    #[serde(default)]
    pub timeout: Option<f64>,
}

impl BashArgs {
    /// Runs `command` without a timeout.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            timeout: None,
        }
    }
}

/// What a finished command did, in the result's details (also of the error result a non-zero
/// exit code gives). The snake-case fields are pi's `structuredContent`; `truncation` and
/// `fullOutputPath` are pi's `details`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BashDetails {
    /// Stdout and stderr as they came, up to 1 MB (longer output keeps its first and last
    /// 512 KB around `[... N bytes omitted ...]`).
    pub output: String,
    /// Whether [`output`](Self::output) left something out.
    pub truncated: bool,
    /// The file with the whole output, when [`output`](Self::output) left something out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// The shell's exit code (128 + the signal for a shell killed by one).
    pub exit_code: i32,
    /// How long the command ran, in seconds, to a tenth.
    pub wall_time_seconds: f64,
    /// What was cut from the text shown to the model, when something was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation: Option<BashTruncation>,
    /// The file with the whole output, when the text shown to the model was cut.
    #[serde(
        default,
        rename = "fullOutputPath",
        skip_serializing_if = "Option::is_none"
    )]
    pub full_output_file: Option<String>,
}

/// The `bash` tool, bound to a [`Workspace`].
///
/// Runs `bash -c <command>` in the workspace root, with stdin from `/dev/null` and stdout and
/// stderr combined in one pipe, in its own process group. The result is the last 2,000 lines
/// or 50 KB of the output, with pi's notice when something was cut
/// (`[Showing lines 501-2500 of 2500. Full output: /tmp/oxpi-bash-….log]`,
/// `[Showing lines 1201-2500 of 2500 (50KB limit). Full output: …]`, or for one long line
/// `[Showing last 50KB of line 1 (line is 1.2MB). Full output: …]`); the whole output then goes
/// to that file (mode 0600, in [`output_dir`](Self::output_dir)), and memory stays bounded
/// however much the command prints. A non-zero exit code is an error result ending
/// `Command exited with code N`, with [`BashDetails`] as for a success.
///
/// Partial output is sent as `tool_execution_update` at most every 100 ms. On abort or timeout
/// the whole tree of processes is killed, also those that left the process group; pi's texts
/// `Command aborted` and `Command timed out after N seconds` end the error result. After the
/// shell exits the tool returns once the output stays quiet for
/// [`exit_grace`](Self::exit_grace), so a daemon that keeps stdout open does not hold it.
///
/// Commands run under [`Sandbox::workspace`] unless [`with_sandbox`](Self::with_sandbox) says
/// otherwise: they may read the system but write only inside the workspace root and the tool's
/// own temporary directory (`$TMPDIR`).
#[derive(Debug, Clone)]
pub struct BashTool {
    workspace: Workspace,
    sandbox: Sandbox,
    shell: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
    output_dir: PathBuf,
    exit_grace: Duration,
    own_tmp: Arc<Mutex<Option<Arc<tempfile::TempDir>>>>,
    tracker: Option<RunningCommands>,
    command_prefix: Option<String>,
    sandbox_advice: Option<String>,
}

impl BashTool {
    /// A `bash` tool running in `workspace`'s root, under [`Sandbox::workspace`].
    pub fn new(workspace: Workspace) -> Self {
        Self {
            workspace,
            sandbox: Sandbox::default(),
            shell: None,
            env: Vec::new(),
            output_dir: std::env::temp_dir(),
            exit_grace: DEFAULT_EXIT_GRACE,
            own_tmp: Arc::default(),
            tracker: None,
            command_prefix: None,
            sandbox_advice: None,
        }
    }

    /// Registers its running command trees and its temporary directory in `commands`, so a
    /// program ending on a signal can kill and remove them ([`RunningCommands::kill_all`]).
    pub fn tracked_by(mut self, commands: RunningCommands) -> Self {
        self.tracker = Some(commands);
        self
    }

    /// Runs `<prefix>\n<command>` instead of the command (pi's `shellCommandPrefix`).
    pub fn command_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.command_prefix = Some(prefix.into()).filter(|p: &String| !p.is_empty());
        self
    }

    /// What a refusal by the sandbox says about turning it off, instead of naming
    /// [`BashTool::with_sandbox`] (an application names its own option or setting).
    pub fn sandbox_advice(mut self, advice: impl Into<String>) -> Self {
        self.sandbox_advice = Some(advice.into());
        self
    }

    /// Runs commands under `sandbox` ([`Sandbox::None`] for pi's unconfined behaviour).
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Uses this shell (called as `<shell> -c <command>`) instead of `/bin/bash`, `bash` on
    /// `PATH` or `sh`.
    pub fn shell(mut self, path: impl Into<PathBuf>) -> Self {
        self.shell = Some(path.into());
        self
    }

    /// Sets an environment variable for every command (on top of the program's environment),
    /// as pi sets `PI_MODEL` and its own tools' directory in `PATH`.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Where full-output files go (the system's temporary directory by default).
    pub fn output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = dir.into();
        self
    }

    /// How long the output must stay quiet after the shell exited before the tool returns
    /// (100 ms, pi's value, by default). Output that arrives meanwhile restarts the wait.
    pub fn exit_grace(mut self, grace: Duration) -> Self {
        self.exit_grace = grace;
        self
    }

    /// The workspace it runs in.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The sandbox its commands run under.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The tool's own temporary directory (created on first use, removed with the last clone
    /// of the tool); commands get it as `TMPDIR`.
    pub fn temp_dir(&self) -> Result<PathBuf, ToolError> {
        Ok(self.own_tmp()?.path().to_path_buf())
    }

    fn own_tmp(&self) -> Result<Arc<tempfile::TempDir>, ToolError> {
        let mut slot = self
            .own_tmp
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(dir) = slot.as_ref() {
            return Ok(dir.clone());
        }
        let dir = tempfile::Builder::new()
            .prefix("oxpi-bash-tmp-")
            .tempdir()
            .map_err(|e| {
                ToolError::new(format!(
                    "Cannot create the bash tool's temporary directory: {e}"
                ))
            })?;
        if let Some(tracker) = &self.tracker {
            tracker.track_temp_dir(dir.path().to_path_buf());
        }
        let dir = Arc::new(dir);
        *slot = Some(dir.clone());
        Ok(dir)
    }

    fn resolve_shell(&self) -> Result<PathBuf, ToolError> {
        if let Some(shell) = &self.shell {
            if shell.exists() {
                return Ok(shell.clone());
            }
            return Err(ToolError::new(format!(
                "Custom shell path not found: {}",
                shell.display()
            )));
        }
        let bin_bash = Path::new("/bin/bash");
        if bin_bash.exists() {
            return Ok(bin_bash.to_path_buf());
        }
        let on_path = std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("bash"))
                .find(|candidate| candidate.is_file())
        });
        Ok(on_path.unwrap_or_else(|| PathBuf::from("sh")))
    }
}

/// Checks `timeout` as pi does and turns it into a duration.
fn timeout_of(timeout: Option<f64>) -> Result<Option<Duration>, ToolError> {
    let Some(seconds) = timeout else {
        return Ok(None);
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(ToolError::new(
            "Invalid timeout: must be a finite number of seconds",
        ));
    }
    if seconds * 1000.0 > MAX_TIMEOUT_MS {
        return Err(ToolError::new(format!(
            "Invalid timeout: maximum is {} seconds",
            MAX_TIMEOUT_MS / 1000.0
        )));
    }
    Ok(Some(Duration::from_secs_f64(seconds)))
}

/// Seconds to a tenth, as pi rounds them.
fn tenths(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 10.0).round() / 10.0
}

impl AgentTool for BashTool {
    type Args = BashArgs;

    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        "Execute a bash command in the current working directory. Returns stdout and stderr. \
         Output is truncated to last 2000 lines or 50KB (whichever is hit first). If \
         truncated, full output is saved to a temp file. Optionally provide a timeout in \
         seconds."
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: BashArgs,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        let timeout = timeout_of(args.timeout)?;
        if cancel.is_cancelled() {
            return Err(ToolError::new("Command aborted"));
        }
        let cwd = self.workspace.root().to_path_buf();
        if !cwd.is_dir() {
            return Err(ToolError::new(format!(
                "Working directory does not exist: {}\nCannot execute bash commands.",
                cwd.display()
            )));
        }
        let shell = self.resolve_shell()?;
        let mut env = self.env.clone();
        let mut setup = None;
        let mut prelude = None;
        if let Sandbox::Workspace(policy) = &self.sandbox {
            let tmp = self.own_tmp()?;
            let prepared = crate::sandbox::prepare(policy, &cwd, tmp.path()).map_err(|e| {
                let text = match &self.sandbox_advice {
                    Some(advice) => e.to_string().replace(crate::sandbox::CHOOSE, advice),
                    None => e.to_string(),
                };
                ToolError::new(format!("Cannot run the command: {text}"))
            })?;
            env.extend(prepared.env);
            setup = prepared.setup;
            prelude = prepared.prelude;
        }
        let spec = RunSpec {
            shell,
            command: match &self.command_prefix {
                Some(prefix) => format!("{prefix}\n{}", args.command),
                None => args.command,
            },
            cwd,
            env,
            timeout,
            exit_grace: self.exit_grace,
            setup,
            prelude,
            tracker: self.tracker.clone(),
        };
        on_update(AgentToolResult::default());
        let mut sink = UpdateSink {
            output: OutputAccumulator::new(&self.output_dir),
            on_update,
            last_sent: None,
            dirty: false,
        };
        let started = Instant::now();
        let ended = process::run(spec, &cancel, &mut sink).await;
        sink.output.finish();
        // The last partial result, if output came since the previous one (as pi sends it).
        sink.send();
        let ended = ended.map_err(|e| ToolError::new(format!("Cannot run the command: {e}")))?;
        let snapshot = sink.output.snapshot();
        let output = &sink.output;
        let exit_code = match ended {
            Ended::Aborted => {
                return Err(ToolError::new(with_status(
                    &shown_text(&snapshot, output, ""),
                    "Command aborted",
                )))
            }
            Ended::TimedOut(shell_exit) => {
                let seconds = args.timeout.unwrap_or_default();
                let mut status = format!("Command timed out after {seconds} seconds");
                if let Some((code, after)) = shell_exit {
                    status.push_str(&format!(
                        ". The shell exited with code {code} after {} seconds, but background \
                         processes it started kept writing output until the timeout.",
                        tenths(after)
                    ));
                }
                return Err(ToolError::new(with_status(
                    &shown_text(&snapshot, output, ""),
                    &status,
                )));
            }
            Ended::Exited(code) => code,
        };
        let text = shown_text(&snapshot, output, "(no output)");
        let (full, cut) = output.full_output(STRUCTURED_OUTPUT_MAX_BYTES);
        let path = snapshot
            .full_output_path
            .as_ref()
            .map(|p| p.display().to_string());
        let details = BashDetails {
            output: full,
            truncated: cut,
            full_output_path: if cut { path.clone() } else { None },
            exit_code,
            wall_time_seconds: tenths(started.elapsed()),
            truncation: snapshot
                .truncation
                .truncated
                .then(|| snapshot.truncation.clone()),
            full_output_file: if snapshot.truncation.truncated {
                path
            } else {
                None
            },
        };
        let details = serde_json::to_value(&details).unwrap_or(serde_json::Value::Null);
        if exit_code != 0 {
            let text = with_status(&text, &format!("Command exited with code {exit_code}"));
            return Err(ToolError::new(text).with_details(details));
        }
        Ok(AgentToolResult::text(text).with_details(details))
    }
}

/// `text`, a blank line and `status` (just `status` when there is no text).
fn with_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_string()
    } else {
        format!("{text}\n\n{status}")
    }
}

/// The text for the model: the output's tail (or `empty`) and pi's notice when it was cut.
fn shown_text(snapshot: &Snapshot, output: &OutputAccumulator, empty: &str) -> String {
    let mut text = if snapshot.text.is_empty() {
        empty.to_string()
    } else {
        snapshot.text.clone()
    };
    let t = &snapshot.truncation;
    if !t.truncated {
        return text;
    }
    let file = match (&snapshot.full_output_path, output.file_error()) {
        (Some(path), None) => path.display().to_string(),
        (_, Some(error)) => format!("(not saved: {error})"),
        (None, None) => "(not saved)".to_string(),
    };
    let start = t.total_lines.saturating_sub(t.output_lines) + 1;
    let end = t.total_lines;
    let notice = if t.last_line_partial {
        format!(
            "[Showing last {} of line {end} (line is {}). Full output: {file}]",
            format_size(t.output_bytes),
            format_size(output.last_line_bytes())
        )
    } else if t.truncated_by.as_deref() == Some("lines") {
        format!("[Showing lines {start}-{end} of {end}. Full output: {file}]")
    } else {
        format!(
            "[Showing lines {start}-{end} of {end} ({} limit). Full output: {file}]",
            format_size(DEFAULT_MAX_BYTES as u64)
        )
    };
    text.push_str("\n\n");
    text.push_str(&notice);
    text
}

/// Feeds the output to the accumulator and sends throttled partial results.
struct UpdateSink {
    output: OutputAccumulator,
    on_update: ToolUpdateFn,
    last_sent: Option<Instant>,
    dirty: bool,
}

impl UpdateSink {
    fn send(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.last_sent = Some(Instant::now());
        let snapshot = self.output.snapshot();
        let mut details = serde_json::Map::new();
        if snapshot.truncation.truncated {
            details.insert("truncation".into(), json!(snapshot.truncation));
        }
        if let Some(path) = &snapshot.full_output_path {
            details.insert("fullOutputPath".into(), json!(path.display().to_string()));
        }
        (self.on_update)(
            AgentToolResult::text(snapshot.text).with_details(serde_json::Value::Object(details)),
        );
    }
}

impl Sink for UpdateSink {
    fn data(&mut self, bytes: &[u8]) {
        self.output.append(bytes);
        self.dirty = true;
        if self.wake_at().is_some_and(|at| at <= Instant::now()) {
            self.send();
        }
    }

    fn wake_at(&self) -> Option<Instant> {
        if !self.dirty {
            return None;
        }
        Some(
            self.last_sent
                .map_or_else(Instant::now, |at| at + UPDATE_EVERY),
        )
    }

    fn wake(&mut self) {
        self.send();
    }
}
