//! Scaffolding of the examples, not part of what they show: the model they talk to.
//!
//! With `OXPI_EXAMPLE_MODEL=provider/id` (and that provider's API key in the environment) an
//! example talks to that catalogue model. Without it — as under `cargo test --examples` — it
//! talks to a local server (oxpi-testkit) that streams the Chat Completions replies the example
//! scripts, so every example runs offline and its assertions hold.

#![allow(dead_code)] // each example uses part of it

use oxpi_agent_core::oxpi_ai::Model;
use oxpi_testkit::wire::{self, Script};
use oxpi_testkit::{Reply, TestServer};
use serde_json::Value;

/// The model to use, and the local server behind it (keep it alive while the model is used).
pub async fn model(script: Vec<Reply>) -> (Model, Option<TestServer>) {
    if let Ok(name) = std::env::var("OXPI_EXAMPLE_MODEL") {
        let (provider, id) = name
            .split_once('/')
            .expect("OXPI_EXAMPLE_MODEL is provider/id");
        let model = oxpi_agent_core::oxpi_ai::models::get_model(provider, id)
            .unwrap_or_else(|| panic!("no model {name} in the catalogue"));
        return (model, None);
    }
    let server = TestServer::start(script).await.expect("local server");
    let model = Model::openai_compatible(format!("{}/v1", server.base_url()), "scripted");
    (model, Some(server))
}

/// True when the example talks to the scripted server (its assertions apply).
pub fn scripted() -> bool {
    std::env::var("OXPI_EXAMPLE_MODEL").is_err()
}

/// A streamed text reply (Chat Completions chunks, one per word).
pub fn text(text: &'static str) -> Reply {
    wire::reply(wire::completions(&Script::text(text)))
}

/// A reply calling each `(name, arguments)` in one batch.
pub fn calls(calls: &[(&'static str, Value)]) -> Reply {
    wire::reply(wire::completions(&Script::calls(calls)))
}

/// A reply with an HTTP error status.
pub fn status(code: u16, body: &str) -> Reply {
    Reply::json_error(code, body)
}
