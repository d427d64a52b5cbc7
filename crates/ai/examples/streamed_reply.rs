//! One streamed reply, printed as it arrives; a failed request is an error.
//! Run: `cargo run -p oxpi-ai --example streamed_reply` (a scripted local server), or with
//! `OXPI_EXAMPLE_MODEL=provider/id` and that provider's API key set, a catalogue model.
//! `cargo test -p oxpi-ai --examples` runs it.

use std::io::Write;

use oxpi_testkit::wire::{completions, reply, Script};

// --- the program (counted in README's line counts) ---
use futures::StreamExt;
use oxpi_ai::{AssistantMessageEvent, Context, Message, Model, StreamOptions};

async fn run(model: &Model) -> Result<String, Box<dyn std::error::Error>> {
    let context = Context::new("You are terse.").with_message(Message::user("Name three primes."));
    let mut events = oxpi_ai::stream(model, &context, StreamOptions::default());
    while let Some(event) = events.next().await {
        match event {
            AssistantMessageEvent::TextDelta { delta, .. } => print!("{delta}"),
            AssistantMessageEvent::Done { message, .. } => return Ok(message.text()),
            AssistantMessageEvent::Error { error, .. } => {
                return Err(error.error_message.unwrap_or_default().into())
            }
            _ => {}
        }
    }
    Err("the stream ended without its last event".into())
}
// --- end of the program ---

#[tokio::main]
async fn main() {
    let scripted = std::env::var("OXPI_EXAMPLE_MODEL").is_err();
    let (model, _server) = match std::env::var("OXPI_EXAMPLE_MODEL") {
        Ok(name) => {
            let (provider, id) = name
                .split_once('/')
                .expect("OXPI_EXAMPLE_MODEL is provider/id");
            let model = oxpi_ai::Models::new()
                .model(provider, id)
                .expect("a catalogue model")
                .clone();
            (model, None)
        }
        Err(_) => {
            let server = oxpi_testkit::TestServer::start(vec![reply(completions(&Script::text(
                "2, 3 and 5.",
            )))])
            .await
            .expect("a local server");
            let model = Model::openai_compatible(format!("{}/v1", server.base_url()), "scripted");
            (model, Some(server))
        }
    };
    let text = run(&model).await.expect("a reply");
    println!();
    let _ = std::io::stdout().flush();
    if scripted {
        assert_eq!(text, "2, 3 and 5.");
        // A server that is not there is an error, not an empty reply.
        let gone = Model::openai_compatible("http://127.0.0.1:9/v1", "nobody");
        let err = run(&gone)
            .await
            .expect_err("connection refused is an error");
        assert!(!err.to_string().is_empty());
    }
}
