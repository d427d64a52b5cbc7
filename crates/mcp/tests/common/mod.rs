//! What the oxpi-mcp tests share: the in-tree fault server's binary, a log it writes, and
//! waiting for a condition without sleeping a fixed time.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use oxpi_agent_core::{AgentToolHandle, AgentToolResult, ToolCallFailure};
use oxpi_mcp::McpServer;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The `oxpi-mcp-test-server` binary beside this test's own target directory, built first if
/// `cargo test` did not build it (it does not for a package selected without its bin).
pub fn test_server_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
            let binary = profile_dir.join("oxpi-mcp-test-server");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = std::process::Command::new(cargo)
                .args(["build", "-p", "oxpi-mcp-test-server"])
                .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap())
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building oxpi-mcp-test-server failed");
            assert!(binary.is_file(), "{} is missing", binary.display());
            binary
        })
        .clone()
}

/// The fault server, writing its call log to `log`.
pub fn fault_server(log: &Path) -> McpServer {
    McpServer::stdio("faults", test_server_binary().display().to_string())
        .env("OXPI_MCP_TEST_LOG", log.display().to_string())
}

/// The lines of the fault server's log so far.
pub fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Waits until `cond` holds, checking every 20 ms, for at most `limit`.
pub async fn eventually(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < limit, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether the process `pid` is gone (exited and reaped, or a zombie).
pub fn process_is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

/// The tool called `name` among `tools`.
pub fn find<'a>(tools: &'a [AgentToolHandle], name: &str) -> &'a AgentToolHandle {
    tools.iter().find(|t| t.name() == name).unwrap_or_else(|| {
        panic!(
            "no tool {name} among {:?}",
            tools.iter().map(|t| t.name()).collect::<Vec<_>>()
        )
    })
}

/// Runs `tool` on `args` (a JSON object) as an agent would, without cancellation.
pub async fn run(tool: &AgentToolHandle, args: Value) -> Result<AgentToolResult, ToolCallFailure> {
    tool.execute(
        "call_1",
        args.as_object().cloned().unwrap(),
        CancellationToken::new(),
        std::sync::Arc::new(|_| {}),
    )
    .await
}

/// The text blocks of a tool result, concatenated.
pub fn text(result: &AgentToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            oxpi_ai::UserContent::Text(t) => Some(t.text.as_str()),
            oxpi_ai::UserContent::Image(_) => None,
        })
        .collect()
}
