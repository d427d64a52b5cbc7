//! Streaming an agent's events to the terminal: the reply's text as it arrives, each tool call
//! with its arguments and its result.
//! Run: `cargo run -p oxpi-agent-core --example stream_events` (scripted local server), or with
//! `OXPI_EXAMPLE_MODEL=provider/id` and its API key set, a real model.

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use oxpi_agent_core::oxpi_ai::AssistantMessageEvent;
use oxpi_agent_core::prelude::*;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct Word {
    /// The word to define.
    word: String,
}

/// Runs the agent, printing as it goes; returns what it printed.
async fn run(model: Model) -> Result<String, Box<dyn std::error::Error>> {
    let define = AgentToolHandle::from_fn("define", "A word's meaning", |a: Word| async move {
        Ok::<_, ToolError>(format!("{}: a Rust port of pi", a.word))
    })?;
    let agent = Agent::new(AgentOptions::new(model).with_tool(define));
    let shown = Arc::new(Mutex::new(String::new()));
    let sink = shown.clone();
    let _subscription = agent.subscribe(move |event| {
        let piece = match event {
            AgentEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. },
                ..
            } => delta.to_string(),
            AgentEvent::ToolExecutionStart {
                tool_name, args, ..
            } => format!("\n[{tool_name} {}]\n", json!(args)),
            AgentEvent::ToolExecutionEnd { result, .. } => {
                format!("[= {}]\n", result.text_content())
            }
            _ => return,
        };
        print!("{piece}");
        let _ = std::io::stdout().flush();
        sink.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_str(&piece);
    });
    agent.prompt("What is oxpi?").await?;
    println!();
    let shown = shown.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(shown)
}

#[tokio::main]
async fn main() {
    let (model, _server) = support::model(vec![
        support::calls(&[("define", json!({"word": "oxpi"}))]),
        support::text("oxpi is a Rust port of pi."),
    ])
    .await;
    let shown = run(model).await.expect("the run succeeds");
    if support::scripted() {
        assert_eq!(
            shown,
            "\n[define {\"word\":\"oxpi\"}]\n[= oxpi: a Rust port of pi]\noxpi is a Rust port of pi."
        );
    }
}
