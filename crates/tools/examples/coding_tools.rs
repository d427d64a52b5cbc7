//! pi's coding tools (`read`, `bash`, `edit`, `write`) on a temporary workspace: the model
//! writes a file, edits it and reads it back; every path stays inside the workspace.
//! Run: `cargo run -p oxpi-tools --example coding_tools` (a scripted local server), or with
//! `OXPI_EXAMPLE_MODEL=provider/id` and its API key set, a real model.
//! `cargo test -p oxpi-tools --examples` runs it.

#[path = "../../agent-core/examples/support/mod.rs"]
mod support;

use serde_json::json;

// --- the program (counted in README's line counts) ---
use oxpi_agent_core::{Agent, AgentOptions};
use oxpi_ai::Model;
use oxpi_tools::{coding_tools, Workspace};

async fn run(model: Model, dir: &std::path::Path) -> Result<String, Box<dyn std::error::Error>> {
    let tools = coding_tools(Workspace::new(dir)?)?; // read, bash, edit, write; confined to dir
    let agent = Agent::new(AgentOptions::new(model).with_tools(tools));
    let reply = agent
        .prompt("Create hello.txt saying hi, then change hi to hello.")
        .await?;
    Ok(reply.text())
}
// --- end of the program ---

#[tokio::main]
async fn main() {
    let (model, _server) = support::model(vec![
        support::calls(&[("write", json!({"path": "hello.txt", "content": "hi\n"}))]),
        support::calls(&[(
            "edit",
            json!({"path": "hello.txt", "edits": [{"oldText": "hi", "newText": "hello"}]}),
        )]),
        support::calls(&[("read", json!({"path": "hello.txt"}))]),
        support::calls(&[("write", json!({"path": "../outside.txt", "content": "x"}))]),
        support::text("hello.txt now says hello."),
    ])
    .await;
    let parent = tempfile::tempdir().expect("a temporary directory");
    let dir = parent.path().join("workspace");
    std::fs::create_dir(&dir).expect("the workspace");
    let text = run(model, &dir).await.expect("the run succeeds");
    println!("{text}");
    if support::scripted() {
        assert_eq!(text, "hello.txt now says hello.");
        let written = std::fs::read_to_string(dir.join("hello.txt")).expect("hello.txt");
        assert_eq!(written, "hello\n");
        assert!(
            !parent.path().join("outside.txt").exists(),
            "a path outside the workspace is refused"
        );
    }
}
