//! oxpi-mcp against the in-tree fault server (`crates/mcp/test-server`, rmcp's server side over
//! stdio): results of every kind, bad arguments and schemas, a crash, a hang, a timeout, an
//! abort, a tool-list change, and the process ending with the client.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use oxpi_agent_core::{AgentToolHandle, AgentToolResult};
use oxpi_ai::UserContent;
use oxpi_mcp::{McpClient, McpError};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

struct Setup {
    _dir: tempfile::TempDir,
    log: std::path::PathBuf,
    client: McpClient,
    tools: Vec<AgentToolHandle>,
}

async fn setup(configure: impl FnOnce(oxpi_mcp::McpServer) -> oxpi_mcp::McpServer) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let client = McpClient::connect(configure(fault_server(&log)))
        .await
        .unwrap();
    let (tools, rejected) = client.tools_lenient().await.unwrap();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    Setup {
        _dir: dir,
        log,
        client,
        tools,
    }
}

#[tokio::test]
async fn every_tool_is_listed_and_the_bad_schema_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let client = McpClient::connect(fault_server(&dir.path().join("log")))
        .await
        .unwrap();
    match client.tools().await {
        Err(McpError::Schema { server, tools }) => {
            assert_eq!(server, "faults");
            assert_eq!(tools.len(), 1);
            assert_eq!(tools[0].tool, "bad_schema");
        }
        other => panic!("expected a schema error, got {other:?}"),
    }
    let (tools, _) = client.tools_lenient().await.unwrap();
    let names: BTreeSet<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "add", "crash", "echo", "fail", "grow", "hang", "huge", "image", "link", "pair", "slow"
        ])
    );
    let echo = find(&tools, "echo");
    assert_eq!(echo.definition().description, "Repeat the text");
    assert_eq!(echo.definition().parameters["required"], json!(["text"]));
}

#[tokio::test]
async fn a_schema_the_target_api_cannot_express_fails_at_setup() {
    let dir = tempfile::tempdir().unwrap();
    let server = fault_server(&dir.path().join("log")).target_api("google-generative-ai");
    let client = McpClient::connect(server).await.unwrap();
    let (tools, rejected) = client.tools_lenient().await.unwrap();
    let rejected: Vec<(String, String)> =
        rejected.into_iter().map(|e| (e.tool, e.reason)).collect();
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert_eq!(rejected[1].0, "pair");
    assert!(rejected[1].1.contains("prefixItems"), "{rejected:?}");
    assert!(tools.iter().all(|t| t.name() != "pair"));
    // Without a target API, the OpenAI-style default takes the tuple as it is.
    let s = setup(|server| server).await;
    let pair = run(find(&s.tools, "pair"), json!({"point": [1, 2]}))
        .await
        .unwrap();
    assert_eq!(text(&pair), "paired");
}

#[tokio::test]
async fn tool_names_can_carry_the_server_name() {
    let s = setup(|server| server.prefix_tool_names(true)).await;
    let echo = find(&s.tools, "faults_echo");
    let result = run(echo, json!({"text": "hi"})).await.unwrap();
    assert_eq!(text(&result), "hi");
}

#[tokio::test]
async fn results_keep_text_images_structured_content_and_errors() {
    let s = setup(|server| server).await;
    // Arguments are converted like any tool's ("2" → 2) before the call.
    let sum = run(find(&s.tools, "add"), json!({"a": "2", "b": 3}))
        .await
        .unwrap();
    assert_eq!(
        sum,
        AgentToolResult::new(vec![UserContent::text("5")])
            .with_details(json!({"structuredContent": {"sum": 5}}))
    );
    let image = run(find(&s.tools, "image"), json!({})).await.unwrap();
    assert_eq!(image.content.len(), 2);
    match &image.content[1] {
        UserContent::Image(image) => assert_eq!(image.mime_type, "image/png"),
        other => panic!("expected an image, got {other:?}"),
    }
    let link = run(find(&s.tools, "link"), json!({})).await.unwrap();
    assert_eq!(
        text(&link),
        "[Resource link] report <file:///srv/report.txt>: The weekly report"
    );
    let failed = run(find(&s.tools, "fail"), json!({})).await.unwrap_err();
    assert_eq!(failed.to_string(), "the disk is full");
}

#[tokio::test]
async fn a_huge_result_is_cut_with_a_notice() {
    let s = setup(|server| server.max_result_bytes(1000)).await;
    let result = run(find(&s.tools, "huge"), json!({"bytes": 3_000_000}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        format!(
            "{}\n\n[Output truncated: 1000 of 3000000 bytes shown]",
            "x".repeat(1000)
        )
    );
    assert_eq!(
        result.details,
        Some(json!({"truncation": {"totalBytes": 3_000_000, "shownBytes": 1000}}))
    );
}

#[tokio::test]
async fn bad_arguments_never_reach_the_server() {
    let s = setup(|server| server).await;
    let error = run(find(&s.tools, "echo"), json!({"text": ["x"]}))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("Validation failed for tool \"echo\":\n  - text: must be string"),
        "{error}"
    );
    run(find(&s.tools, "echo"), json!({"text": "ok"}))
        .await
        .unwrap();
    assert_eq!(log_lines(&s.log), ["call echo", "done echo"]);
}

#[tokio::test]
async fn a_crash_mid_call_is_an_error_and_the_next_call_restarts_the_server() {
    let s = setup(|server| server).await;
    let first_pid = s.client.server_pid().await.unwrap();
    let error = run(find(&s.tools, "crash"), json!({})).await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("MCP server `faults` closed the connection during the call to crash"),
        "{error}"
    );
    let echo = run(find(&s.tools, "echo"), json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "back");
    let second_pid = s.client.server_pid().await.unwrap();
    assert_ne!(first_pid, second_pid);
    assert!(process_is_gone(first_pid));
}

#[tokio::test]
async fn an_abort_cancels_the_call_on_the_server() {
    let s = setup(|server| server).await;
    let cancel = CancellationToken::new();
    let hang = find(&s.tools, "hang").clone();
    let token = cancel.clone();
    let call = tokio::spawn(async move {
        hang.execute("call_1", Map::new(), token, std::sync::Arc::new(|_| {}))
            .await
    });
    let log = s.log.clone();
    eventually(
        "the call reached the server",
        Duration::from_secs(10),
        || log_lines(&log).contains(&"call hang".to_string()),
    )
    .await;
    cancel.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.to_string(), "Operation aborted");
    eventually(
        "the server saw notifications/cancelled",
        Duration::from_secs(10),
        || log_lines(&log).contains(&"cancelled hang".to_string()),
    )
    .await;
    // The connection is still good.
    let echo = run(find(&s.tools, "echo"), json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "still here");
}

#[tokio::test]
async fn a_call_past_its_timeout_is_cancelled_and_the_connection_stays() {
    let s = setup(|server| server.call_timeout(Duration::from_millis(300))).await;
    let error = run(find(&s.tools, "hang"), json!({})).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP tool hang (server `faults`) did not answer within 0.3s; the call was cancelled"
    );
    let log = s.log.clone();
    eventually(
        "the server saw notifications/cancelled",
        Duration::from_secs(10),
        || log_lines(&log).contains(&"cancelled hang".to_string()),
    )
    .await;
    let slow = run(find(&s.tools, "slow"), json!({"ms": 10}))
        .await
        .unwrap();
    assert_eq!(text(&slow), "slept");
}

#[tokio::test]
async fn a_tool_list_change_is_noticed_and_refreshed() {
    let s = setup(|server| server).await;
    assert!(!s.client.tools_changed());
    run(find(&s.tools, "grow"), json!({})).await.unwrap();
    let client = s.client.clone();
    eventually(
        "tools/list_changed arrived",
        Duration::from_secs(10),
        || client.tools_changed(),
    )
    .await;
    let (tools, _) = s.client.tools_lenient().await.unwrap();
    assert!(!s.client.tools_changed());
    let late = run(find(&tools, "late"), json!({})).await.unwrap();
    assert_eq!(text(&late), "late");
}

#[tokio::test]
async fn the_server_process_ends_when_the_client_and_its_tools_are_dropped() {
    let s = setup(|server| server).await;
    let pid = s.client.server_pid().await.unwrap();
    assert!(!process_is_gone(pid));
    drop(s.tools);
    drop(s.client);
    eventually("the server process ended", Duration::from_secs(10), || {
        process_is_gone(pid)
    })
    .await;
}

#[tokio::test]
async fn the_server_process_ends_when_its_owner_panics() {
    let s = setup(|server| server).await;
    let pid = s.client.server_pid().await.unwrap();
    let client = s.client;
    let tools = s.tools;
    let owner = tokio::spawn(async move {
        let _owned = (client, tools);
        panic!("the owner of the MCP client panics");
    });
    assert!(owner.await.unwrap_err().is_panic());
    eventually("the server process ended", Duration::from_secs(10), || {
        process_is_gone(pid)
    })
    .await;
}

#[tokio::test]
async fn a_program_that_does_not_exist_is_a_clear_error() {
    let error = McpClient::connect(oxpi_mcp::McpServer::stdio(
        "nothing",
        "/nonexistent/mcp-server",
    ))
    .await
    .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("could not start MCP server `nothing` (/nonexistent/mcp-server):"),
        "{error}"
    );
}

/// An agent whose model calls `crash`, then `echo`: the crash is that call's error result, the
/// server comes back for the next call, and every call has exactly one result.
#[tokio::test]
async fn an_agent_goes_on_after_the_server_crashes_mid_call() {
    use oxpi_agent_core::{Agent, AgentOptions};
    use oxpi_ai::faux::{FauxProvider, FauxReply};
    use oxpi_ai::{Message, ProviderRegistry};

    let s = setup(|server| server).await;
    let faux = FauxProvider::new();
    let call = |id: &str, name: &str, args: Value| {
        FauxReply::new().with_raw_tool_call(Some(id.to_string()), name, args.to_string())
    };
    faux.push(call("c1", "crash", json!({})));
    faux.push(call("c2", "echo", json!({"text": "after the crash"})));
    faux.push(FauxReply::text("done"));
    let mut registry = ProviderRegistry::new();
    registry.register(faux.clone());
    let mut options = AgentOptions::new(faux.model()).with_registry(registry);
    for tool in s.tools.clone() {
        options = options.with_tool(tool);
    }
    let agent = Agent::new(options);
    agent.prompt("go").await.unwrap();

    let results: Vec<_> = agent
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results
            .iter()
            .map(|r| r.tool_call_id.as_str())
            .collect::<Vec<_>>(),
        ["c1", "c2"]
    );
    assert!(results[0].is_error);
    assert!(
        results[0]
            .text_content()
            .starts_with("MCP server `faults` closed the connection during the call to crash"),
        "{}",
        results[0].text_content()
    );
    assert!(!results[1].is_error);
    assert_eq!(results[1].text_content(), "after the crash");
    match agent.messages().last() {
        Some(Message::Assistant(last)) => assert_eq!(last.text(), "done"),
        other => panic!("expected the final reply, got {other:?}"),
    }
}
