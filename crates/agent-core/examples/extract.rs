//! A typed struct extracted from text in one call ([`oxpi_agent_core::extract`]).
//! Run: `cargo run -p oxpi-agent-core --example extract` (scripted local server), or with
//! `OXPI_EXAMPLE_MODEL=provider/id` and its API key set, a real model.

mod support;

// --- the program (counted in README's line counts) ---
use oxpi_agent_core::prelude::*;

#[derive(Deserialize, JsonSchema, Debug)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct Person {
    name: String,
    age: u32,
}

async fn run(model: Model) -> Result<Person, AgentError> {
    extract(AgentOptions::new(model), "Ada Lovelace, 36, mathematician").await
}
// --- end of the program ---

#[tokio::main]
async fn main() {
    let (model, _server) = support::model(vec![support::calls(&[(
        "respond",
        json!({"name": "Ada Lovelace", "age": 36}),
    )])])
    .await;
    let person = run(model).await.expect("a person");
    println!("{person:?}");
    if support::scripted() {
        assert_eq!((person.name.as_str(), person.age), ("Ada Lovelace", 36));
    }
}
