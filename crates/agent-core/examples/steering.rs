//! Steering: a message sent while the agent works (`agent.steer`) reaches the model right after
//! the running tool calls, before its next request; `follow_up` would wait until it stops.
//! Run: `cargo run -p oxpi-agent-core --example steering` (scripted local server), or with
//! `OXPI_EXAMPLE_MODEL=provider/id` and its API key set, a real model.

mod support;

use std::sync::Arc;

use oxpi_agent_core::prelude::*;
use tokio::sync::Notify;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct Draft {
    /// The draft's title.
    title: String,
}

/// Steers the agent while its tool runs; returns the roles of the history and the final text.
async fn run(model: Model) -> Result<(Vec<String>, String), Box<dyn std::error::Error>> {
    let (started, proceed) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (s, p) = (started.clone(), proceed.clone());
    let write = AgentToolHandle::from_fn("write_draft", "Write a draft", move |a: Draft| {
        let (started, proceed) = (s.clone(), p.clone());
        async move {
            started.notify_one(); // the tool is running…
            proceed.notified().await; // …until the steering message is queued
            Ok::<_, ToolError>(format!("Draft \"{}\" written.", a.title))
        }
    })?;
    let agent = Agent::new(AgentOptions::new(model).with_tool(write));
    let steer = async {
        started.notified().await;
        agent.steer(Message::user("Also mention the deadline: Friday."));
        proceed.notify_one();
    };
    let (reply, ()) = tokio::join!(agent.prompt("Write the release note draft."), steer);
    let reply = reply?;
    let roles = agent
        .messages()
        .iter()
        .map(|m| m.role().to_string())
        .collect();
    Ok((roles, reply.text()))
}

#[tokio::main]
async fn main() {
    let (model, _server) = support::model(vec![
        support::calls(&[("write_draft", json!({"title": "Release 0.2"}))]),
        support::text("The draft is written; the deadline is Friday."),
    ])
    .await;
    let (roles, text) = run(model).await.expect("the run succeeds");
    println!("{}\n{text}", roles.join(" -> "));
    if support::scripted() {
        assert_eq!(
            roles,
            ["user", "assistant", "toolResult", "user", "assistant"]
        );
        assert_eq!(text, "The draft is written; the deadline is Friday.");
    }
}
