//! A server that writes 100 MB to stderr without a newline costs oxpi a bounded amount of
//! memory. Alone in its test binary, so the process's peak memory is this test's.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

use oxpi_mcp::{McpClient, McpServer};

/// The process's peak resident memory (`VmHWM`), in bytes.
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

#[tokio::test]
async fn a_100_mb_stderr_line_costs_little_memory() {
    let before = peak_memory();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake_server.py");
    let flood = 100 * 1000 * 1000;
    let server = McpServer::stdio("flood", "python3")
        .arg(script)
        .args(["--stderr-flood", &flood.to_string()]);
    // The server answers `initialize` only after it wrote all of it, so by now oxpi read it.
    let client = McpClient::connect(server).await.unwrap();
    let tools = client.tools().await.unwrap();
    assert_eq!(tools.len(), 5, "echo, crash, big, noisy, deaf");
    let grown = peak_memory().saturating_sub(before);
    assert!(
        grown < 30 * 1000 * 1000,
        "the peak memory grew by {grown} bytes reading {flood} bytes of stderr"
    );
}
