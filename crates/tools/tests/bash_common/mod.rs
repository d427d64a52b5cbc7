//! Shared helpers of the `bash` tests: run the tool as an agent does (JSON arguments through an
//! `AgentToolHandle`), collect its partial results, and check processes by pid.

#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxpi_agent_core::{AgentToolHandle, AgentToolResult, ToolCallFailure, ToolError, ToolUpdateFn};
use oxpi_ai::UserContent;
use oxpi_tools::{BashDetails, BashTool};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What one call gave: the result (or the error result) and every partial result.
#[derive(Debug)]
pub struct Outcome {
    pub result: Result<AgentToolResult, ToolError>,
    pub updates: Vec<AgentToolResult>,
}

impl Outcome {
    /// The text of the result or of the error.
    pub fn text(&self) -> String {
        match &self.result {
            Ok(r) => text(r),
            Err(e) => e.message.clone(),
        }
    }

    /// The details of the result or of the error, as `BashDetails`.
    pub fn details(&self) -> BashDetails {
        let details = match &self.result {
            Ok(r) => r.details.clone(),
            Err(e) => e.details.clone(),
        };
        serde_json::from_value(details.expect("details")).expect("BashDetails")
    }

    /// The raw details.
    pub fn raw_details(&self) -> Option<Value> {
        match &self.result {
            Ok(r) => r.details.clone(),
            Err(e) => e.details.clone(),
        }
    }
}

pub fn text(result: &AgentToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            UserContent::Text(t) => Some(t.text.as_str()),
            UserContent::Image(_) => None,
        })
        .collect()
}

/// Runs `tool` with `args`, cancelled by `cancel`; `on_partial` sees each partial result.
pub async fn run_with(
    tool: BashTool,
    args: Value,
    cancel: CancellationToken,
    on_partial: impl Fn(&AgentToolResult) + Send + Sync + 'static,
) -> Outcome {
    let handle = AgentToolHandle::new(tool).expect("schema");
    let updates = Arc::new(Mutex::new(Vec::new()));
    let sink = updates.clone();
    let on_update: ToolUpdateFn = Arc::new(move |partial: AgentToolResult| {
        on_partial(&partial);
        sink.lock().unwrap().push(partial);
    });
    let args = args.as_object().cloned().expect("object arguments");
    let result = handle
        .execute("call-1", args, cancel, on_update)
        .await
        .map_err(|failure| match failure {
            ToolCallFailure::Tool(e) => e,
            ToolCallFailure::Validation(e) => ToolError::new(format!("validation: {e}")),
        });
    let updates = updates.lock().unwrap().clone();
    Outcome { result, updates }
}

/// Runs `tool` with `args`.
pub async fn run(tool: BashTool, args: Value) -> Outcome {
    run_with(tool, args, CancellationToken::new(), |_| {}).await
}

/// Whether process `pid` still runs (a zombie does not).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next().map(str::to_string));
            !matches!(state.as_deref(), Some("Z" | "X") | None)
        }
        Err(_) => false,
    }
}

/// Waits (up to `limit`) until `cond` holds.
pub async fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cond()
}

/// The pids written one per line into `file` (once it has `n` of them).
pub fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// A command that starts a tree of three `sleep 300` processes and writes their pids into
/// `pids.txt`: one in the background of the shell, one that left the process group and the
/// session (`setsid`), and one that a subshell started before exiting (so it was reparented),
/// then waits.
pub const TREE: &str = "sleep 300 & echo $! >> pids.txt; \
     setsid sleep 300 & echo $! >> pids.txt; \
     ( setsid sh -c 'sleep 300 & echo $! >> pids.txt' & ); \
     setsid env -i sleep 300 & echo $! >> pids.txt; \
     wait";

/// How many pids [`TREE`] writes.
pub const TREE_SIZE: usize = 4;

/// Kills `pid` if it still runs (cleanup after a test that let a process live).
pub fn kill(pid: i32) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
}
