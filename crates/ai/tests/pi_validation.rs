//! Argument validation against pi's own: `fixtures/pi/validation.json` holds cases (a schema and
//! the arguments a model sent) with what pi-ai 0.73.1's `validateToolArguments` returned or threw
//! (`bench/node/validation.mjs` wrote it). oxpi must give the same arguments or the same error
//! text, except where a case records oxpi's own answer and why it differs (also listed in
//! docs/differences-from-pi.md).

use oxpi_ai::tool::ArgumentValidator;
use oxpi_ai::Tool;
use serde_json::{json, Value};

fn cases() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/pi/validation.json"
    );
    let text =
        std::fs::read_to_string(path).expect("fixtures/pi/validation.json is in the repository");
    serde_json::from_str(&text).expect("the fixture is JSON")
}

/// An answer with its error text split into the problem lines and the received arguments as a
/// value: oxpi's maps are ordered by key, pi's by insertion, so the same arguments print in a
/// different order.
fn comparable(answer: &Value) -> Value {
    let Some(text) = answer["error"].as_str() else {
        return answer.clone();
    };
    match text.split_once("\n\nReceived arguments:\n") {
        Some((problems, received)) => json!({
            "error": problems,
            "received": serde_json::from_str::<Value>(received).unwrap_or_else(|_| json!(received)),
        }),
        None => answer.clone(),
    }
}

fn oxpi_answer(schema: &Value, arguments: &Value) -> Value {
    let tool = Tool {
        name: "tool".to_string(),
        description: String::new(),
        parameters: schema.clone(),
        constrained_sampling: None,
    };
    let validator = ArgumentValidator::new(&tool).expect("the case's schema compiles");
    let arguments = arguments
        .as_object()
        .expect("the case's arguments are an object");
    match validator.validate(arguments) {
        Ok(valid) => json!({"ok": valid}),
        Err(error) => json!({"error": error.to_string()}),
    }
}

#[test]
fn oxpi_validates_like_pi() {
    let cases = cases();
    assert!(cases.len() >= 20, "the fixture lost its cases");
    let mut differing = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        let expected = match case.get("oxpi") {
            Some(own) => {
                assert!(
                    case["why"].as_str().is_some_and(|why| !why.is_empty()),
                    "case {name}: an answer of oxpi's own needs a reason"
                );
                assert_ne!(
                    own, &case["pi"],
                    "case {name}: recorded as differing, yet equal"
                );
                differing += 1;
                own
            }
            None => &case["pi"],
        };
        assert_eq!(
            comparable(&oxpi_answer(&case["schema"], &case["arguments"])),
            comparable(expected),
            "case {name}"
        );
    }
    assert!(
        differing * 4 < cases.len(),
        "most cases must match pi exactly"
    );
}
