//! A command printing 1 GB: the tool keeps the tail in memory and streams the rest to the file.
//! Alone in its test binary, so the process's peak memory is this test's.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

mod bash_common;

use bash_common::run;
use oxpi_tools::{BashTool, Sandbox, Workspace};
use serde_json::json;

/// The peak resident memory of this process (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_of_output_keeps_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let tool = BashTool::new(Workspace::new(dir.path()).unwrap())
        .with_sandbox(Sandbox::None)
        .output_dir(out_dir.path());
    let before = peak_rss();
    // 1 GiB of 17-byte lines; the last one is 13 bytes without a line break.
    let out = run(
        tool,
        json!({"command": "yes 0123456789abcdef | head -c 1073741824"}),
    )
    .await;
    let grown = peak_rss().saturating_sub(before);
    let details = out.details();
    let file = details.full_output_file.clone().unwrap();
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 1 << 30);
    let text = out.text();
    let mut want: String = "0123456789abcdef\n".repeat(1999);
    want.push_str("0123456789abc");
    want.push_str(&format!(
        "\n\n[Showing lines 63159285-63161284 of 63161284. Full output: {file}]"
    ));
    assert!(
        text == want,
        "unexpected text, ending {:?}",
        &text[text.len().saturating_sub(200)..]
    );
    // The structured output keeps its first and last 512 KB.
    assert!(details.truncated);
    assert_eq!(details.full_output_path.as_deref(), Some(file.as_str()));
    assert!(details
        .output
        .contains("\n\n[... 1072693248 bytes omitted ...]\n\n"));
    // Generous: a tool that kept the output would have grown by a gigabyte.
    assert!(
        grown < 200 * 1024 * 1024,
        "peak memory grew by {grown} bytes"
    );
    std::fs::remove_file(file).unwrap();
}
