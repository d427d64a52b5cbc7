//! Lab 15: the README's first agent, a custom tool made from a function (`get_weather(city)`),
//! on a live model with the library's defaults: no system prompt, no tuned wording, only what a
//! newcomer writes.
//!
//! Checks: `get_weather` ran exactly once, with a `city` naming the asked city; its result (a
//! temperature that differs from run to run, so the model cannot know it) is in the final
//! answer; every call has its result; the history is user → assistant → toolResult → assistant.
//!
//! ```text
//! cargo run -p lab-15                                   # the embedded default model
//! cargo run -p lab-15 -- --provider anthropic           # ANTHROPIC_API_KEY
//! ```

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use oxpi_agent_core::prelude::*;
use oxpi_labkit::lab::{
    check_pairing, fresh_code, print_tool_event, provider_error, roles, run_lab,
};
use oxpi_labkit::LiveModel;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct City {
    /// The city's name.
    city: String,
}

const CITY: &str = "Paris";

#[tokio::main]
async fn main() -> ExitCode {
    run_lab("15", "custom tool passed", |live| async move {
        let outcome = run(&live).await;
        (live, outcome)
    })
    .await
}

/// A temperature from 5 to 34 °C that differs from run to run.
fn fresh_temperature() -> u32 {
    let digits: String = fresh_code().chars().filter(char::is_ascii_digit).collect();
    5 + digits.parse::<u32>().unwrap_or(0) % 30
}

async fn run(live: &LiveModel) -> Result<(), String> {
    let temperature = fresh_temperature();
    let cities = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = cities.clone();
    // --- the README's program, with the tool's answer made fresh ---
    let weather = AgentToolHandle::from_fn(
        "get_weather",
        "Current weather of a city",
        move |a: City| {
            seen.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(a.city.clone());
            async move { Ok::<_, ToolError>(format!("{}: {temperature}°C, sunny", a.city)) }
        },
    )
    .map_err(|e| e.to_string())?;
    let mut options = AgentOptions::new(live.model.clone())
        .with_tool(weather)
        .with_max_turns(4);
    options.stream_options.api_key = live.api_key.clone();
    let agent = Agent::new(options);
    let _subscription = agent.subscribe(print_tool_event);
    println!("model: {}/{}", live.model.provider, live.model.id);
    let prompt = format!("What's the weather in {CITY}?");
    println!("input: {prompt}");
    let reply = agent.prompt(prompt).await.map_err(|e| e.to_string())?;
    // --- end of the program ---

    if let Some(error) = provider_error(&reply.message) {
        return Err(format!("the model request failed: {error}"));
    }
    let answer = reply.text();
    println!("final answer: {}", answer.trim());
    let history = agent.messages();
    println!("history roles: {}", roles(&history).join(" -> "));
    let cities = cities.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match cities.as_slice() {
        [city] if city.to_lowercase().contains(&CITY.to_lowercase()) => {}
        [city] => return Err(format!("get_weather ran for {city:?}, not {CITY}")),
        calls => {
            return Err(format!(
                "get_weather ran {} times, expected once",
                calls.len()
            ))
        }
    }
    if !answer.contains(&temperature.to_string()) {
        return Err(format!(
            "the final answer {answer:?} does not give the tool's {temperature}°C"
        ));
    }
    check_pairing(&history)?;
    let history_roles = roles(&history);
    if history_roles != ["user", "assistant", "toolResult", "assistant"] {
        return Err(format!(
            "the history is {}, expected user -> assistant -> toolResult -> assistant",
            history_roles.join(" -> ")
        ));
    }
    Ok(())
}
