//! The `execute_tool` seam: it runs each allowed call in place of the tool (a durable runtime
//! answers from its journal), while validation, `before_tool_call`, events and pairing stay the
//! agent's; refused calls never reach it.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use futures::FutureExt;
use oxpi_agent_core::{Agent, AgentToolResult, ToolCallDecision};
use oxpi_ai::faux::FauxReply;
use serde_json::json;

#[tokio::test]
async fn execute_tool_answers_instead_of_the_tool_and_can_run_it_once() {
    let faux = faux();
    let reply = call("c1", "read", json!({"path": "journaled.txt"}));
    let reply = and_call(reply, "c2", "read", json!({"path": "fresh.txt"}));
    faux.push(and_call(
        reply,
        "c3",
        "read",
        json!({"path": "blocked.txt"}),
    ));
    faux.push(FauxReply::text("ok"));
    let read = ReadTool::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let opts = options(&faux)
        .with_tool(handle(read.clone()))
        .with_before_tool_call(|call| async move {
            if call.tool_call.id == "c3" {
                ToolCallDecision::block("no")
            } else {
                ToolCallDecision::Allow
            }
        })
        .with_execute_tool(move |invocation| {
            seen2
                .lock()
                .unwrap()
                .push((invocation.tool_call_id.clone(), invocation.args.clone()));
            async move {
                if invocation.tool_call_id == "c1" {
                    Ok(AgentToolResult::text("recorded earlier"))
                } else {
                    invocation.run().await
                }
            }
            .boxed()
        });
    let agent = Agent::new(opts);
    agent.prompt("go").await.expect("run ends well");

    assert_eq!(
        read.calls(),
        vec!["fresh.txt".to_string()],
        "only c2 ran the tool"
    );
    let seen = seen.lock().unwrap().clone();
    let ids: Vec<&str> = seen.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"], "the blocked call never reaches the seam");
    assert_eq!(
        seen[0].1.get("path"),
        Some(&json!("journaled.txt")),
        "validated arguments"
    );
    let results = tool_results(&agent.messages());
    let texts: Vec<String> = results.iter().map(|r| r.text_content()).collect();
    assert_eq!(texts, ["recorded earlier", "contents of fresh.txt", "no"]);
    assert_pairing(&agent.messages());
}
