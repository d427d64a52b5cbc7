//! The streamable HTTP transport sends the configured headers and bearer token on every request.
//! The server is oxpi-testkit's local HTTP server answering as MCP's streamable HTTP transport
//! specifies: JSON responses to requests, 202 to notifications, 405 to the optional GET stream.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use oxpi_mcp::{McpClient, McpServer};
use oxpi_testkit::{Part, Recorded, Reply, TestServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

fn json_reply(body: Value) -> Reply {
    Reply::Respond {
        status: 200,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("mcp-session-id".into(), "session-1".into()),
        ],
        body: vec![Part::Bytes(body.to_string().into_bytes())],
    }
}

fn empty(status: u16) -> Reply {
    Reply::Respond {
        status,
        headers: Vec::new(),
        body: Vec::new(),
    }
}

/// One MCP server with a tool `hello`.
fn answer(request: &Recorded) -> Reply {
    if request.method != "POST" {
        return empty(if request.method == "DELETE" { 200 } else { 405 });
    }
    let message = request.json();
    let Some(id) = message.get("id").cloned() else {
        return empty(202);
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "1.0.0"}
        }),
        "tools/list" => json!({"tools": [{
            "name": "hello",
            "description": "Say hello",
            "inputSchema": {"type": "object", "properties": {}}
        }]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "hello back"}]}),
        other => {
            return json_reply(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": other}}),
            )
        }
    };
    json_reply(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

#[tokio::test]
async fn every_request_carries_the_headers_and_the_bearer_token() {
    let server = TestServer::start_fn(answer).await.unwrap();
    let client = McpClient::connect(
        McpServer::http("scripted", format!("{}/mcp", server.base_url()))
            .header("x-tenant", "acme")
            .bearer_token("secret-token"),
    )
    .await
    .unwrap();
    let tools = client.tools().await.unwrap();
    let hello = tools.iter().find(|t| t.name() == "hello").unwrap();
    let result = hello
        .execute(
            "call_1",
            serde_json::Map::new(),
            CancellationToken::new(),
            Arc::new(|_| {}),
        )
        .await
        .unwrap();
    assert_eq!(
        result.content,
        vec![oxpi_ai::UserContent::text("hello back")]
    );

    let posts: Vec<Recorded> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    let methods: Vec<String> = posts
        .iter()
        .map(|r| r.json()["method"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    for post in &posts {
        assert_eq!(post.path, "/mcp");
        assert_eq!(post.header("authorization"), Some("Bearer secret-token"));
        assert_eq!(post.header("x-tenant"), Some("acme"));
    }
    // After the handshake, the session the server gave is sent back.
    assert!(posts[1..]
        .iter()
        .all(|p| p.header("mcp-session-id") == Some("session-1")));
}
