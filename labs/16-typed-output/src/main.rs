//! Lab 16: typed output in one call. `extract::<Person>` asks a live model for a struct about a
//! sentence, with the library's defaults (the forced `respond` tool; on the embedded model that
//! call is decoded under a JSON-schema grammar).
//!
//! Checks: the `Person` returned equals the one the sentence describes (a name and an age that
//! differ from run to run, so the model cannot know them), and at most two requests were made
//! (one, plus the one repair turn `extract` allows).
//!
//! ```text
//! cargo run -p lab-16                                   # the embedded default model
//! cargo run -p lab-16 -- --provider openai              # OPENAI_API_KEY
//! ```

use std::process::ExitCode;

use oxpi_agent_core::prelude::*;
use oxpi_labkit::lab::{fresh_code, run_lab, RequestLog};
use oxpi_labkit::LiveModel;

#[derive(Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct Person {
    name: String,
    age: u32,
}

const FIRST: [&str; 6] = ["Mira", "Tomas", "Ines", "Kofi", "Lena", "Arjun"];
const LAST: [&str; 6] = [
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Tanaka",
    "Ferreira",
    "Novak",
];
const JOBS: [&str; 4] = ["carpenter", "pilot", "chemist", "librarian"];

#[tokio::main]
async fn main() -> ExitCode {
    run_lab("16", "typed output passed", |live| async move {
        let outcome = run(&live).await;
        (live, outcome)
    })
    .await
}

async fn run(live: &LiveModel) -> Result<(), String> {
    let digits: String = fresh_code().chars().filter(char::is_ascii_digit).collect();
    let n: usize = digits.parse().unwrap_or(0);
    let expected = Person {
        name: format!("{} {}", FIRST[n % 6], LAST[(n / 6) % 6]),
        age: 20 + (n / 36 % 60) as u32,
    };
    let sentence = format!(
        "{}, {}, {}",
        expected.name,
        expected.age,
        JOBS[(n / 2160) % 4]
    );
    println!("model: {}/{}", live.model.provider, live.model.id);
    println!("input: {sentence}");
    let requests = RequestLog::default();
    let mut options = AgentOptions::new(live.model.clone());
    options.stream_options.api_key = live.api_key.clone();
    options.stream_fn = Some(requests.stream_fn());
    // --- the README's program ---
    let person: Person = extract(options, sentence.as_str())
        .await
        .map_err(|e| e.to_string())?;
    // --- end of the program ---
    println!("output: {person:?}");
    let made = requests.requests().len();
    println!("requests: {made}");
    if person != expected {
        return Err(format!("extracted {person:?}, expected {expected:?}"));
    }
    if made > 2 {
        return Err(format!("{made} requests, expected at most 2"));
    }
    Ok(())
}
