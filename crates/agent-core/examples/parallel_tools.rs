//! Parallel tools: the calls of one reply run at the same time (pi's default). Here both
//! calls wait for each other at a barrier, which they pass only when they run at once; a tool
//! that must not overlap with others says `ToolExecution::Sequential`
//! (`AgentToolHandle::with_execution_mode`).
//! Run: `cargo run -p oxpi-agent-core --example parallel_tools` (scripted local server), or with
//! `OXPI_EXAMPLE_MODEL=provider/id` and its API key set, a real model.

mod support;

use std::sync::Arc;
use std::time::Duration;

use oxpi_agent_core::prelude::*;
use tokio::sync::Barrier;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct Url {
    /// The page to fetch.
    url: String,
}

/// Asks for two pages; returns each tool result's text.
async fn run(model: Model) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let barrier = Arc::new(Barrier::new(2));
    let fetch = AgentToolHandle::from_fn("fetch", "Fetch a web page", move |a: Url| {
        let barrier = barrier.clone();
        async move {
            // Both calls must be running for either to pass (a generous bound, not a race).
            tokio::time::timeout(Duration::from_secs(60), barrier.wait())
                .await
                .map_err(|_| format!("{} ran alone: the calls were not parallel", a.url))?;
            Ok::<_, String>(format!("{}: fetched alongside the other call", a.url))
        }
    })?;
    let agent = Agent::new(AgentOptions::new(model).with_tool(fetch));
    agent
        .prompt("Fetch https://a.example and https://b.example at once.")
        .await?;
    let results = agent
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.text_content()),
            _ => None,
        })
        .collect();
    Ok(results)
}

#[tokio::main]
async fn main() {
    let (model, _server) = support::model(vec![
        support::calls(&[
            ("fetch", json!({"url": "https://a.example"})),
            ("fetch", json!({"url": "https://b.example"})),
        ]),
        support::text("Both pages are fetched."),
    ])
    .await;
    let results = run(model).await.expect("the run succeeds");
    for result in &results {
        println!("{result}");
    }
    if support::scripted() {
        assert_eq!(
            results,
            [
                "https://a.example: fetched alongside the other call",
                "https://b.example: fetched alongside the other call"
            ]
        );
    }
}
