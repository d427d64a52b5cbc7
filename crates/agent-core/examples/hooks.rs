//! Hooks: `before_tool_call` decides whether a validated call may run (here: no deleting),
//! `after_tool_call` changes a result before the model sees it (here: a secret is redacted).
//! Run: `cargo run -p oxpi-agent-core --example hooks` (scripted local server), or with
//! `OXPI_EXAMPLE_MODEL=provider/id` and its API key set, a real model.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use oxpi_agent_core::oxpi_ai::UserContent;
use oxpi_agent_core::prelude::*;
use oxpi_agent_core::{AfterToolCallResult, ToolCallDecision};

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct Path {
    /// The file.
    path: String,
}

/// Runs the agent with both hooks; returns each tool result (text, is_error) and whether the
/// delete tool ever ran.
async fn run(model: Model) -> Result<(Vec<(String, bool)>, bool), Box<dyn std::error::Error>> {
    let read = AgentToolHandle::from_fn("read", "Read a file", |a: Path| async move {
        Ok::<_, ToolError>(format!("{}: token=sk-secret-123", a.path))
    })?;
    let deleted = Arc::new(AtomicBool::new(false));
    let flag = deleted.clone();
    let delete = AgentToolHandle::from_fn("delete", "Delete a file", move |_: Path| {
        flag.store(true, Ordering::SeqCst);
        async { Ok::<_, ToolError>("deleted") }
    })?;
    let options = AgentOptions::new(model)
        .with_tools([read, delete])
        .with_before_tool_call(|call| async move {
            if call.tool_call.name == "delete" {
                return ToolCallDecision::block("Deleting files is not allowed here.");
            }
            ToolCallDecision::Allow
        })
        .with_after_tool_call(|done| async move {
            let text = done.result.text_content();
            text.contains("sk-secret").then(|| {
                let redacted = text.replace("sk-secret-123", "[redacted]");
                AfterToolCallResult::new().with_content(vec![UserContent::text(redacted)])
            })
        });
    let agent = Agent::new(options);
    agent.prompt("Show config.txt, then delete it.").await?;
    let results = agent
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.text_content(), r.is_error)),
            _ => None,
        })
        .collect();
    Ok((results, deleted.load(Ordering::SeqCst)))
}

#[tokio::main]
async fn main() {
    let (model, _server) = support::model(vec![
        support::calls(&[
            ("read", json!({"path": "config.txt"})),
            ("delete", json!({"path": "config.txt"})),
        ]),
        support::text("The token is redacted, and I may not delete files."),
    ])
    .await;
    let (results, deleted) = run(model).await.expect("the run succeeds");
    println!("{results:?}, delete ran: {deleted}");
    if support::scripted() {
        assert_eq!(
            results,
            [
                ("config.txt: token=[redacted]".to_string(), false),
                ("Deleting files is not allowed here.".to_string(), true)
            ]
        );
        assert!(!deleted, "the blocked call never ran");
    }
}
