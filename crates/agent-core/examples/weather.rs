//! An agent with one custom tool: asks for the weather, the model calls `get_weather`, the agent
//! runs it and the model answers. Dependencies: `oxpi-agent-core` and `tokio` only.
//! Run: `cargo run -p oxpi-agent-core --example weather` (scripted local server), or with
//! `OXPI_EXAMPLE_MODEL=anthropic/claude-sonnet-4-5` and `ANTHROPIC_API_KEY` set, a real model.

mod support;

// --- the program (counted in README's line counts) ---
use oxpi_agent_core::prelude::*;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct City {
    /// The city's name.
    city: String,
}

async fn run(model: Model) -> Result<String, Box<dyn std::error::Error>> {
    let weather = AgentToolHandle::from_fn(
        "get_weather",
        "Current weather of a city",
        |a: City| async move { Ok::<_, ToolError>(format!("{}: 21°C, sunny", a.city)) },
    )?;
    let agent = Agent::new(AgentOptions::new(model).with_tool(weather));
    let reply = agent.prompt("What's the weather in Paris?").await?;
    Ok(reply.text())
}
// --- end of the program ---

#[tokio::main]
async fn main() {
    let (model, _server) = support::model(vec![
        support::calls(&[("get_weather", json!({"city": "Paris"}))]),
        support::text("It is 21°C and sunny in Paris."),
    ])
    .await;
    let text = run(model).await.expect("the run succeeds");
    println!("{text}");
    if support::scripted() {
        assert_eq!(text, "It is 21°C and sunny in Paris.");
    }
}
