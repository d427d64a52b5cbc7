//! The README's first example (tests/readme_example.rs keeps the two equal):
//! `cargo run -p oxpi-ai --example readme`.

use futures::StreamExt;
use oxpi_ai::{
    AssistantMessageEvent, Context, Message, Models, SimpleStreamOptions, ThinkingLevel,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Keys from pi's ~/.pi/agent/auth.json, else the provider's variable (ANTHROPIC_API_KEY).
    let models = Models::with_pi_auth();
    // An unknown id is an error naming the closest ones ("did you mean …?").
    let model = models.model("anthropic", "claude-haiku-4-5")?;
    let context = Context::new("You are terse.").with_message(Message::user("Name three primes."));
    let options = SimpleStreamOptions::new().with_reasoning(ThinkingLevel::Low);
    // pi: models.streamSimple(model, context, { reasoning: "low" })
    let mut events = models.stream_simple(model, &context, options);
    while let Some(event) = events.next().await {
        match event {
            AssistantMessageEvent::TextDelta { delta, .. } => print!("{delta}"),
            AssistantMessageEvent::Error { error, .. } => {
                return Err(error.error_message.unwrap_or_default().into())
            }
            _ => {}
        }
    }
    println!();
    Ok(())
}
