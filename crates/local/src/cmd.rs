//! Running helper commands (python, pip) with captured output and clear errors.

use std::future::Future;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::Command;

use crate::error::LocalError;

/// How many trailing output lines error messages quote.
pub(crate) const TAIL_LINES: usize = 20;

/// The command line of `cmd`, for messages.
pub(crate) fn command_line(cmd: &Command) -> String {
    let std = cmd.as_std();
    std::iter::once(std.get_program())
        .chain(std.get_args())
        .map(|part| {
            let part = part.to_string_lossy();
            if part.contains(char::is_whitespace) {
                format!("'{}'", part.chars().take(60).collect::<String>())
            } else {
                part.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last `lines` lines of `text`.
pub(crate) fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Describes how a process ended.
pub(crate) fn describe_status(status: ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exit code {code}"),
        None => format!("{status}"),
    }
}

/// Runs `cmd` to completion, capturing stdout and stderr, and returns stdout.
///
/// `what` names the step in errors ("installing the engine"). While it runs, `tick`
/// is called every `every` (used for progress lines).
pub(crate) async fn run<F, Fut>(
    what: &str,
    mut cmd: Command,
    every: Duration,
    mut tick: F,
) -> Result<String, LocalError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let line = command_line(&cmd);
    tracing::debug!(target: "oxpi_local", "running {line}");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().map_err(|source| LocalError::CommandFailed {
        what: what.to_string(),
        command: line.clone(),
        status: format!("could not start: {source}"),
        stderr_tail: String::new(),
    })?;
    let output = child.wait_with_output();
    tokio::pin!(output);
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let output = loop {
        tokio::select! {
            output = &mut output => break output,
            _ = interval.tick() => tick().await,
        }
    }
    .map_err(|source| LocalError::io(format!("waiting for `{line}`"), source))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let combined = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr.into_owned()
    };
    Err(LocalError::CommandFailed {
        what: what.to_string(),
        command: line,
        status: describe_status(output.status),
        stderr_tail: tail(&combined, TAIL_LINES),
    })
}

/// [`run`] without progress ticks.
pub(crate) async fn run_quiet(what: &str, cmd: Command) -> Result<String, LocalError> {
    run(what, cmd, Duration::from_secs(3600), || async {}).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
        assert_eq!(tail("", 5), "");
    }

    #[test]
    fn command_line_quotes_spaced_args() {
        let mut cmd = Command::new("python3");
        cmd.arg("-c").arg("print( 1 )");
        assert_eq!(command_line(&cmd), "python3 -c 'print( 1 )'");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn run_reports_failure_with_stderr_tail() {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("echo out; echo first >&2; echo boom >&2; exit 3");
        let err = run_quiet("testing", cmd).await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains("testing failed (exit code 3)"), "{text}");
        assert!(text.contains("boom"), "{text}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn run_returns_stdout_and_ticks() {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("sleep 0.3; echo hello");
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = ticks.clone();
        let out = run("testing", cmd, Duration::from_millis(50), move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async {}
        })
        .await
        .unwrap();
        assert_eq!(out.trim(), "hello");
        assert!(ticks.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    }
}
