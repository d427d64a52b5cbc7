//! Issue 39's small traps: a closure tool ([`AgentToolHandle::from_fn`]), [`AgentEvent::kind`]
//! equal to the event's JSON `type`, [`AgentToolResult::text_content`], and the prelude naming
//! everything a program needs (this file imports only `oxpi_agent_core`).

mod common;

use std::sync::{Arc, Mutex};

use common::{call, faux, options};
use oxpi_agent_core::oxpi_ai::faux::FauxReply;
use oxpi_agent_core::oxpi_ai::UserContent;
use oxpi_agent_core::prelude::*;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct City {
    /// The city's name.
    city: String,
}

fn weather() -> AgentToolHandle {
    AgentToolHandle::from_fn("get_weather", "Current weather", |a: City| async move {
        if a.city == "Atlantis" {
            return Err(format!("No weather for {}", a.city));
        }
        Ok(format!("{}: sunny", a.city))
    })
    .expect("schema")
}

#[tokio::test]
async fn a_closure_tool_runs_validated_arguments_and_its_error_reaches_the_model() {
    let faux = faux();
    faux.push(
        call("c1", "get_weather", json!({"city": "Paris"})).with_raw_tool_call(
            Some("c2".into()),
            "get_weather",
            json!({"city": "Atlantis"}).to_string(),
        ),
    );
    faux.push(call("c3", "get_weather", json!({"town": "Rome"})));
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(options(&faux).with_tool(weather()));
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let _sub = agent.subscribe(move |e| {
        let json = serde_json::to_value(e).expect("serializes");
        sink.lock().unwrap().push((e.kind(), json["type"].clone()));
    });

    let reply = agent.prompt("weather?").await.expect("the run succeeds");

    assert_eq!(reply.text(), "done");
    let results: Vec<(String, bool)> = agent
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.text_content(), r.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results[0], ("Paris: sunny".to_string(), false));
    assert_eq!(results[1], ("No weather for Atlantis".to_string(), true));
    assert!(
        results[2].1,
        "a missing argument is refused: {:?}",
        results[2]
    );
    assert!(results[2].0.contains("city"), "{:?}", results[2]);
    // kind() is the JSON `type` of every event of the run.
    let events = events.lock().unwrap();
    assert!(events.len() > 10);
    for (kind, json_type) in events.iter() {
        assert_eq!(json!(kind), *json_type);
    }
}

#[test]
fn tool_result_text_content_joins_text_blocks() {
    let image = UserContent::Image(
        serde_json::from_value(json!({"data": "AA==", "mimeType": "image/png"})).unwrap(),
    );
    let result = AgentToolResult::new(vec![
        UserContent::text("one"),
        image,
        UserContent::text("two"),
    ]);
    assert_eq!(result.text_content(), "one\ntwo");
    assert_eq!(AgentToolResult::from("x").text_content(), "x");
}

#[test]
fn thinking_levels_are_named_and_typed_alike() {
    let model = faux().model();
    let by_thinking = AgentOptions::new(model.clone()).with_thinking_level(ThinkingLevel::High);
    let by_reasoning = AgentOptions::new(model.clone()).with_thinking_level(ReasoningLevel::High);
    assert_eq!(by_thinking.thinking_level, Some(ReasoningLevel::High));
    assert_eq!(by_reasoning.thinking_level, Some(ReasoningLevel::High));
    let off = AgentOptions::new(model).with_thinking_level(ThinkingLevel::Off);
    assert_eq!(off.thinking_level, None);
    let simple = oxpi_agent_core::oxpi_ai::SimpleStreamOptions::new()
        .with_thinking_level(ThinkingLevel::High);
    assert_eq!(simple.reasoning, Some(ThinkingLevel::High));
}

/// The README's weather program is the example's, and its line count in the README is true.
#[test]
fn the_readme_weather_program_is_the_example() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/../../README.md")).unwrap();
    let section = readme
        .split_once("### An agent with a tool, with `oxpi-agent-core` and `tokio` only")
        .expect("the README section")
        .1;
    let block = section
        .split_once("```rust,ignore\n")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .expect("a Rust block")
        .0;
    let example = std::fs::read_to_string(format!("{root}/examples/weather.rs")).unwrap();
    let program = example
        .split_once("// --- the program (counted in README's line counts) ---\n")
        .and_then(|(_, rest)| rest.split_once("// --- end of the program ---"))
        .expect("the markers")
        .0;
    assert_eq!(block.trim(), program.trim());
    let lines = program.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(
        section.contains(&format!(
            "| Agent with one custom tool (`agent-core/examples/weather.rs`) | {lines} |"
        )),
        "the README's count is not {lines}"
    );
    let example = std::fs::read_to_string(format!("{root}/examples/extract.rs")).unwrap();
    let program = example
        .split_once("// --- the program (counted in README's line counts) ---\n")
        .and_then(|(_, rest)| rest.split_once("// --- end of the program ---"))
        .expect("the markers")
        .0;
    let lines = program.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(
        section.contains(&format!(
            "| Typed struct extracted from text (`agent-core/examples/extract.rs`) | {lines} |"
        )),
        "the README's typed-output count is not {lines}"
    );
}

#[derive(Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct Person {
    name: String,
    age: u32,
}

#[tokio::test]
async fn extract_returns_the_struct_and_forces_the_tool() {
    let faux = faux();
    faux.push(call(
        "c1",
        EXTRACT_TOOL_NAME,
        json!({"name": "Ada", "age": 36}),
    ));
    let person: Person = oxpi_agent_core::extract(options(&faux), "Ada, 36")
        .await
        .expect("a person");
    assert_eq!(
        person,
        Person {
            name: "Ada".into(),
            age: 36
        }
    );
    let requests = faux.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].tools, vec![EXTRACT_TOOL_NAME.to_string()]);
}

#[tokio::test]
async fn extract_gives_one_repair_turn_then_a_clear_error() {
    let faux = faux();
    faux.push(call("c1", EXTRACT_TOOL_NAME, json!({"name": "Ada"})));
    faux.push(call(
        "c2",
        EXTRACT_TOOL_NAME,
        json!({"name": "Ada", "age": 36}),
    ));
    let person: Person = oxpi_agent_core::extract(options(&faux), "Ada, 36")
        .await
        .expect("repaired");
    assert_eq!(person.age, 36);
    assert_eq!(faux.requests().len(), 2);

    let faux = faux_two_misses();
    let error = oxpi_agent_core::extract::<Person>(options(&faux), "Ada")
        .await
        .expect_err("no age twice");
    assert!(matches!(error, AgentError::Extract(_)), "{error:?}");
    assert!(error.to_string().contains("age"), "{error}");
    assert_eq!(faux.requests().len(), 2, "one repair turn only");
}

const EXTRACT_TOOL_NAME: &str = oxpi_agent_core::EXTRACT_TOOL;

fn faux_two_misses() -> oxpi_agent_core::oxpi_ai::faux::FauxProvider {
    let faux = faux();
    faux.push(call("c1", EXTRACT_TOOL_NAME, json!({"name": "Ada"})));
    faux.push(call("c2", EXTRACT_TOOL_NAME, json!({"name": "Ada"})));
    faux.push(call(
        "c3",
        EXTRACT_TOOL_NAME,
        json!({"name": "Ada", "age": 1}),
    ));
    faux
}
