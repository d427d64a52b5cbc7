//! oxpi-mcp against a scripted server (`tests/fake_server.py`, run by `python3`) that misbehaves
//! on purpose: no handshake, a handshake that fails after a restart, answers that cannot be
//! read (100,000 levels deep, over 16 MiB), schemas nested too deep, tool names no API takes,
//! and stderr that is not UTF-8.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::future::Future;
use std::time::Duration;

use common::{find, run, text};
use oxpi_mcp::{McpClient, McpError, McpServer};
use serde_json::json;

/// The fake server with `args`.
fn fake(name: &str, args: &[&str]) -> McpServer {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake_server.py");
    McpServer::stdio(name, "python3")
        .arg(script)
        .args(args.iter().copied())
}

/// `work`, which must end within `limit` (the bug being tested is that it never does).
async fn within<T>(limit: Duration, what: &str, work: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or_else(|_| panic!("{what} did not end within {limit:?}"))
}

#[tokio::test]
async fn connect_gives_up_on_a_server_that_never_answers_initialize() {
    let server = fake("silent", &["--handshake", "silent"]).connect_timeout(Duration::from_secs(2));
    let error = within(
        Duration::from_secs(30),
        "connect",
        McpClient::connect(server),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "could not connect to MCP server `silent`: no answer to `initialize` within 2.0s (the \
         connect timeout)"
    );
}

#[tokio::test]
async fn connect_gives_up_on_a_server_that_answers_initialize_with_a_line_that_is_not_json() {
    let server =
        fake("garbage", &["--handshake", "garbage"]).connect_timeout(Duration::from_secs(2));
    let error = within(
        Duration::from_secs(30),
        "connect",
        McpClient::connect(server),
    )
    .await
    .unwrap_err();
    let error = error.to_string();
    assert!(
        error.starts_with(
            "could not connect to MCP server `garbage`: no answer to `initialize` within 2.0s (the \
             connect timeout); its last unreadable line on stdout: `Hello! This is not JSON.` (it \
             is not a JSON-RPC message MCP knows ("
        ),
        "{error}"
    );
}

#[tokio::test]
async fn a_restart_that_never_completes_its_handshake_ends_each_call_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("once:{}", dir.path().join("started").display());
    // The handshake of the restart may take the default 60 s; each call has 2 s in all.
    let server = fake("flaky", &["--handshake", &marker]).call_timeout(Duration::from_secs(2));
    let client = McpClient::connect(server).await.unwrap();
    let tools = client.tools().await.unwrap();
    let crashed = run(find(&tools, "crash"), json!({})).await.unwrap_err();
    assert!(
        crashed
            .to_string()
            .starts_with("MCP server `flaky` closed the connection during the call to crash"),
        "{crashed}"
    );
    // Two calls at once: one restarts the server, the other waits for it; both end in time.
    let echo = find(&tools, "echo");
    let (first, second) = within(Duration::from_secs(30), "the calls", async {
        tokio::join!(
            run(echo, json!({"text": "a"})),
            run(echo, json!({"text": "b"}))
        )
    })
    .await;
    for error in [first.unwrap_err(), second.unwrap_err()] {
        assert_eq!(
            error.to_string(),
            "MCP tool echo (server `flaky`) did not answer within 2.0s: the server was being \
             started again and did not complete its handshake"
        );
    }
}

#[tokio::test]
async fn a_tool_list_100000_levels_deep_is_an_error_at_once() {
    let client = McpClient::connect(fake("deep", &["--tools", "deep-answer"]))
        .await
        .unwrap();
    let error = within(Duration::from_secs(30), "tools/list", client.tools())
        .await
        .unwrap_err();
    let error = error.to_string();
    assert!(
        error.starts_with(
            "MCP server `deep` failed to answer tools/list: Mcp error: -32603: its answer cannot \
             be read: it is not a JSON-RPC message MCP knows (recursion limit exceeded"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn listing_tools_ends_at_the_connect_timeout() {
    let server = fake("mute", &["--tools", "silent"]).connect_timeout(Duration::from_secs(2));
    let client = McpClient::connect(server).await.unwrap();
    let error = within(Duration::from_secs(30), "tools/list", client.tools())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `mute` failed to answer tools/list: no complete answer within 2.0s (the \
         connect timeout)"
    );
}

#[tokio::test]
async fn a_result_over_16_mib_is_cut_to_the_cap_with_a_notice() {
    let server = fake("big", &[])
        .max_result_bytes(1000)
        .call_timeout(Duration::from_secs(30));
    let client = McpClient::connect(server).await.unwrap();
    let tools = client.tools().await.unwrap();
    let bytes = 17 * 1024 * 1024;
    let result = within(
        Duration::from_secs(60),
        "the call",
        run(find(&tools, "big"), json!({ "bytes": bytes })),
    )
    .await
    .unwrap();
    assert_eq!(
        text(&result),
        format!(
            "{}\n\n[Output truncated: 1000 of {bytes} bytes shown]",
            "y".repeat(1000)
        )
    );
    assert_eq!(
        result.details,
        Some(json!({"truncation": {"totalBytes": bytes, "shownBytes": 1000}}))
    );
    // The connection is in step: the next answer is the next call's.
    let echo = run(find(&tools, "echo"), json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "after");
}

#[tokio::test]
async fn a_schema_nested_50_deep_is_refused_by_name() {
    let client = McpClient::connect(fake("deep", &["--tools", "deep-schema"]))
        .await
        .unwrap();
    match client.tools().await {
        Err(McpError::Schema { tools, .. }) => {
            assert_eq!(tools.len(), 1, "{tools:?}");
            assert_eq!(tools[0].tool, "deep");
            assert_eq!(
                tools[0].reason,
                "the schema is nested deeper than 40 levels (objects and arrays)"
            );
        }
        other => panic!("expected a schema error, got {other:?}"),
    }
    let (tools, _) = client.tools_lenient().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
        ["shallow"]
    );
}

#[tokio::test]
async fn tool_names_no_api_accepts_are_refused_by_name() {
    let client = McpClient::connect(fake("names", &["--tools", "bad-names"]))
        .await
        .unwrap();
    let (tools, rejected) = client.tools_lenient().await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name()).collect::<Vec<_>>(), ["good"]);
    let rule = "a tool name must be 1 to 64 ASCII letters, digits, `_` or `-`, as the model APIs \
                require";
    let rejected: Vec<(String, String)> =
        rejected.into_iter().map(|e| (e.tool, e.reason)).collect();
    assert_eq!(
        rejected,
        [
            ("bad name!".into(), format!("the name has ' '; {rule}")),
            (
                format!("{}…", "x".repeat(80)),
                format!("the name has 300 characters; {rule}")
            ),
            (String::new(), format!("the name is empty; {rule}")),
            ("a/b".into(), format!("the name has '/'; {rule}")),
        ]
    );
    assert!(matches!(
        client.tools().await,
        Err(McpError::Schema { tools, .. }) if tools.len() == 4
    ));
    // A prefix that makes a good name bad is refused too.
    let client =
        McpClient::connect(fake("my server", &["--tools", "bad-names"]).prefix_tool_names(true))
            .await
            .unwrap();
    let (tools, rejected) = client.tools_lenient().await.unwrap();
    assert!(tools.is_empty());
    assert_eq!(rejected[0].tool, "my server_good");
}

#[tokio::test]
async fn stderr_that_is_not_utf8_is_read_on_and_the_server_lives() {
    let client = McpClient::connect(fake("noisy", &["--stderr-bad-byte"]))
        .await
        .unwrap();
    let tools = client.tools().await.unwrap();
    let pid = client.server_pid().await.unwrap();
    // Each call writes 1 MiB to stderr, more than a pipe holds: it only ends if stderr is read.
    for _ in 0..3 {
        let result = within(
            Duration::from_secs(30),
            "the call",
            run(find(&tools, "noisy"), json!({})),
        )
        .await
        .unwrap();
        assert_eq!(text(&result), "noisy done");
    }
    assert_eq!(client.server_pid().await, Some(pid));
}

/// A server that stopped reading its stdin, with a write to it stuck on the full pipe (which
/// held the stdin lock): closing the client still ends in time and the process is gone (it
/// waited for the lock for ever, so SIGTERM and SIGKILL never came).
#[tokio::test]
async fn closing_a_client_whose_server_stopped_reading_ends_and_kills_it() {
    let server = fake("deaf", &[]).call_timeout(Duration::from_secs(2));
    let client = McpClient::connect(server).await.unwrap();
    let tools = client.tools().await.unwrap();
    let pid = client.server_pid().await.unwrap();
    let deaf = run(find(&tools, "deaf"), json!({})).await.unwrap_err();
    assert!(
        deaf.to_string().contains("did not answer within 2.0s"),
        "{deaf}"
    );
    // 4 MiB to a server that reads nothing: the write fills the pipe and blocks.
    let big = "x".repeat(4 << 20);
    let stuck = run(find(&tools, "echo"), json!({"text": big}))
        .await
        .unwrap_err();
    assert!(
        stuck.to_string().contains("did not answer within 2.0s"),
        "{stuck}"
    );
    within(Duration::from_secs(30), "close", client.close()).await;
    // Gone: signal 0 reaches no process (or only a zombie already reaped by its parent).
    let alive = std::path::Path::new(&format!("/proc/{pid}/status")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .contains("State:\tZ");
    assert!(!alive, "the server process {pid} is still running");
}
