//! oxpi-mcp against MCP servers that no one here wrote: the Python reference servers
//! `mcp-server-time` and `mcp-server-git` (PyPI, pinned, installed into a private venv on first
//! use), and, where Node is present, `@modelcontextprotocol/server-everything` (stdio and
//! streamable HTTP) and `server-filesystem` (npm, pinned). Without Node those tests say they
//! skip; a failed install fails.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{eventually, find, run};
use oxpi_agent_core::AgentToolResult;
use oxpi_ai::UserContent;
use oxpi_mcp::{McpClient, McpServer};
use oxpi_testkit::mcp_servers::{node_server, python_server};
use serde_json::{json, Value};

fn text(result: &AgentToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            UserContent::Text(t) => Some(t.text.as_str()),
            UserContent::Image(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn python_time_server_answers_in_the_asked_time_zone() {
    let program = python_server("mcp-server-time").unwrap();
    let client = McpClient::connect(McpServer::stdio("time", program.display().to_string()))
        .await
        .unwrap();
    let tools = client.tools().await.unwrap();
    let now = run(
        find(&tools, "get_current_time"),
        json!({"timezone": "Asia/Tokyo"}),
    )
    .await
    .unwrap();
    let answer: Value = serde_json::from_str(&text(&now)).unwrap();
    assert_eq!(answer["timezone"], "Asia/Tokyo");
    assert!(
        answer["datetime"].as_str().unwrap().ends_with("+09:00"),
        "{answer}"
    );
    let converted = run(
        find(&tools, "convert_time"),
        json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Kolkata"}),
    )
    .await
    .unwrap();
    let answer: Value = serde_json::from_str(&text(&converted)).unwrap();
    assert!(
        answer["target"]["datetime"]
            .as_str()
            .unwrap()
            .contains("T17:30:00"),
        "{answer}"
    );
    // A bad time zone is the server's error, reported as the call's error.
    let error = run(
        find(&tools, "get_current_time"),
        json!({"timezone": "Mars/Olympus"}),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("Mars/Olympus"), "{error}");
}

#[tokio::test]
async fn python_git_server_reads_the_log_of_a_repository() {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q"]);
    std::fs::write(repo.path().join("a.txt"), "one").unwrap();
    git(repo.path(), &["add", "a.txt"]);
    git(repo.path(), &["commit", "-q", "-m", "Add the first file"]);
    std::fs::write(repo.path().join("a.txt"), "two").unwrap();
    git(
        repo.path(),
        &["commit", "-q", "-am", "Say two instead of one"],
    );

    let program = python_server("mcp-server-git").unwrap();
    let client = McpClient::connect(
        McpServer::stdio("git", program.display().to_string())
            .args(["--repository", &repo.path().display().to_string()])
            .prefix_tool_names(true),
    )
    .await
    .unwrap();
    let tools = client.tools().await.unwrap();
    let repo_path = repo.path().display().to_string();
    let log = run(
        find(&tools, "git_git_log"),
        json!({"repo_path": repo_path, "max_count": "5"}),
    )
    .await
    .unwrap();
    let log = text(&log);
    let newest = log.find("Say two instead of one").expect("newest commit");
    let oldest = log.find("Add the first file").expect("oldest commit");
    assert!(newest < oldest, "{log}");
    assert!(log.contains("Ada"), "{log}");
    let status = run(
        find(&tools, "git_git_status"),
        json!({"repo_path": repo_path}),
    )
    .await
    .unwrap();
    assert!(
        text(&status).contains("working tree clean"),
        "{}",
        text(&status)
    );
}

/// The bin of a Node server, or `None` (with a message) when Node is missing.
fn node(program: &str) -> Option<String> {
    match node_server(program).unwrap() {
        Some(path) => Some(path.display().to_string()),
        None => {
            eprintln!("SKIPPED: node/npm not installed, so {program} cannot run");
            None
        }
    }
}

#[tokio::test]
async fn node_everything_server_over_stdio() {
    let Some(program) = node("mcp-server-everything") else {
        return;
    };
    let client = McpClient::connect(McpServer::stdio("everything", program).arg("stdio"))
        .await
        .unwrap();
    let tools = client.tools().await.unwrap();
    let echo = run(find(&tools, "echo"), json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "Echo: hi");
    let image = run(find(&tools, "get-tiny-image"), json!({}))
        .await
        .unwrap();
    let images: Vec<&oxpi_ai::ImageContent> = image
        .content
        .iter()
        .filter_map(|c| match c {
            UserContent::Image(i) => Some(i),
            UserContent::Text(_) => None,
        })
        .collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].mime_type, "image/png");
    let sum = run(find(&tools, "get-sum"), json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(text(&sum).contains("42"), "{}", text(&sum));
    let structured = run(
        find(&tools, "get-structured-content"),
        json!({"location": "New York"}),
    )
    .await
    .unwrap();
    assert!(
        structured
            .details
            .as_ref()
            .and_then(|d| d.get("structuredContent"))
            .is_some(),
        "{structured:?}"
    );
}

#[tokio::test]
async fn node_everything_server_over_streamable_http() {
    let Some(program) = node("mcp-server-everything") else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new(program)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    eventually("the HTTP server listens", Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    })
    .await;
    let client = McpClient::connect(McpServer::http(
        "everything",
        format!("http://127.0.0.1:{port}/mcp"),
    ))
    .await
    .unwrap();
    assert_eq!(client.server_pid().await, None);
    let tools = client.tools().await.unwrap();
    let echo = run(find(&tools, "echo"), json!({"message": "over http"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "Echo: over http");
    client.close().await;
    let _ = child.kill().await;
}

#[tokio::test]
async fn node_filesystem_server_reads_only_its_directory() {
    let Some(program) = node("mcp-server-filesystem") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("note.txt"), "the code is 7").unwrap();
    let client =
        McpClient::connect(McpServer::stdio("fs", program).arg(root.display().to_string()))
            .await
            .unwrap();
    let tools = client.tools().await.unwrap();
    let read = run(
        find(&tools, "read_text_file"),
        json!({"path": root.join("note.txt").display().to_string()}),
    )
    .await
    .unwrap();
    assert_eq!(text(&read), "the code is 7");
    let outside = run(
        find(&tools, "read_text_file"),
        json!({"path": "/etc/hostname"}),
    )
    .await
    .unwrap_err();
    assert!(outside.to_string().contains("denied"), "{outside}");
}
