//! A conversation persisted in pi's session format and continued in a second process: this
//! program runs the first turn, then starts itself again (`--second`) for the second turn, which
//! reads the session file and sends the whole conversation.
//! Run: `cargo run -p oxpi-session --example continue_session` (a scripted local server), or
//! with `OXPI_EXAMPLE_MODEL=provider/id` and its API key set, a real model.
//! `cargo test -p oxpi-session --examples` runs it.

#[path = "../../agent-core/examples/support/mod.rs"]
mod support;

use serde_json::Value;

// --- the program (counted in README's line counts) ---
use std::path::Path;

use oxpi_agent_core::{Agent, AgentOptions};
use oxpi_ai::Model;
use oxpi_session::{bind_agent, SessionManager};

/// One turn of the conversation kept in `dir` (its most recent session, or a new one).
async fn turn(model: Model, dir: &Path, text: &str) -> Result<String, Box<dyn std::error::Error>> {
    let session = SessionManager::continue_recent(dir, dir)?;
    let agent = Agent::new(AgentOptions::new(model));
    let binding = bind_agent(&agent, session)?; // the history in, each new message appended
    let reply = binding.prompt(&agent, text).await?;
    Ok(reply.text())
}
// --- end of the program ---

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, dir, url] = args.as_slice() {
        if flag == "--second" {
            // The second process: the same directory, the first process's server (or model).
            let model = match support::scripted() {
                true => Model::openai_compatible(url, "scripted"),
                false => support::model(vec![]).await.0,
            };
            let text = turn(model, Path::new(dir), "What is my name?")
                .await
                .expect("turn 2");
            println!("{text}");
            return;
        }
    }
    let (model, server) = support::model(vec![
        support::text("Hello, Ada."),
        support::text("Your name is Ada."),
    ])
    .await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let first = turn(model.clone(), dir.path(), "My name is Ada.")
        .await
        .expect("turn 1");
    println!("{first}");
    let (exe, dir_arg, url) = (
        std::env::current_exe().expect("this program"),
        dir.path().to_path_buf(),
        model.base_url.clone(),
    );
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .args(["--second".as_ref(), dir_arg.as_os_str(), url.as_ref()])
            .output()
    })
    .await
    .expect("the wait")
    .expect("the second process runs");
    let second = String::from_utf8_lossy(&output.stdout);
    print!("{second}");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    if let Some(server) = server {
        assert_eq!(second.trim(), "Your name is Ada.");
        // The second process sent the first process's conversation.
        let requests = server.requests();
        let messages: Vec<String> = requests[1].json()["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| {
                format!(
                    "{}: {}",
                    m["role"].as_str().unwrap_or(""),
                    text_of(&m["content"])
                )
            })
            .collect();
        assert_eq!(
            messages[messages.len() - 3..],
            [
                "user: My name is Ada.",
                "assistant: Hello, Ada.",
                "user: What is my name?"
            ]
        );
    }
}

/// A Chat Completions message's text (a string, or text parts).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}
