//! Unit tests of the text tool-call parser and detector (the recorded replies of the embedded
//! model are measured in `crates/ai/tests/text_tool_calls_recorded.rs`).

use super::*;
use serde_json::json;

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn call(name: &str, v: Value) -> TextPart {
    TextPart::Call(name.to_string(), args(v))
}

fn text(t: &str) -> TextPart {
    TextPart::Text(t.to_string())
}

#[test]
fn accepts_the_forms_small_models_write() {
    let tools = ["read", "write"];
    let expected = Some(vec![call("read", json!({"path": "note.txt"}))]);
    for reply in [
        "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}\n```",
        "```\n{\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}\n```\n",
        "  {\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}",
        "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"read\", \"arguments\": \"{\\\"path\\\": \\\"note.txt\\\"}\"}",
        "[{\"name\": \"read\", \"parameters\": {\"path\": \"note.txt\"}}]",
        "<tools>\n{\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}\n</tools>",
        "{{\"name\": \"read\", \"arguments\": {{\"path\": \"note.txt\"}}}}",
        "<tools>{{\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}}</tools>",
        "<tool_call>\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}\n```\n</tool_call>",
        "{\"type\": \"function\", \"function\": {\"name\": \"read\", \"arguments\": \"{\\\"path\\\":\\\"note.txt\\\"}\"}}",
    ] {
        assert_eq!(parse_text_tool_calls(reply, &tools), expected, "{reply}");
    }
}

#[test]
fn reads_several_calls_and_keeps_the_prose_around_them() {
    let tools = ["read", "write"];
    let two = "<tool_call>{\"name\":\"read\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"write\",\"arguments\":{\"path\":\"a\",\"content\":\"b\"}}</tool_call>";
    assert_eq!(
        parse_text_tool_calls(two, &tools),
        Some(vec![
            call("read", json!({})),
            call("write", json!({"path": "a", "content": "b"})),
        ])
    );
    let lines = "{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n{\"name\": \"read\", \"arguments\": {\"path\": \"b\"}}\n";
    assert_eq!(
        parse_text_tool_calls(lines, &tools),
        Some(vec![
            call("read", json!({"path": "a"})),
            call("read", json!({"path": "b"})),
        ])
    );
    let prose = "I will read the file first.\n\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```\nThen I answer.";
    assert_eq!(
        parse_text_tool_calls(prose, &tools),
        Some(vec![
            text("I will read the file first."),
            call("read", json!({"path": "a"})),
            text("Then I answer."),
        ])
    );
}

#[test]
fn anything_else_stays_text() {
    let tools = ["read"];
    for reply in [
        "read-123456",
        "Sure! {\"name\": \"read\", \"arguments\": {}}",
        "{\"name\": \"delete\", \"arguments\": {}}",
        "{\"name\": \"read\", \"arguments\": [1]}",
        "{\"name\": \"read\", \"arguments\": {\"path\": ",
        "```python\nprint(1)\n```",
        "```json\n{\"name\": \"read\", \"version\": \"1.0\"}\n```",
        "```json\n{\"name\": \"read\", \"arguments\": {}}\nnot json\n```",
        "{\"path\": \"note.txt\"}",
        "{\"name\": \"read\", \"arguments\": {}, \"description\": \"a package\"}",
        "[]",
        "[docs](https://example.com) and {braces}",
        "{{ template }}",
        "",
    ] {
        assert_eq!(parse_text_tool_calls(reply, &tools), None, "{reply}");
    }
}

#[test]
fn detector_streams_plain_lines_and_holds_from_a_possible_call() {
    let mut d = TextToolCallDetector::default();
    assert_eq!(d.push("  "), "");
    assert_eq!(d.push("re"), "  re");
    assert_eq!(d.push("ad-1"), "ad-1");
    assert_eq!(d.take_held(), "");

    let mut d = TextToolCallDetector::default();
    assert_eq!(d.push("``"), "");
    assert_eq!(d.push("`json\n{"), "");
    assert_eq!(d.take_held(), "```json\n{");

    let mut d = TextToolCallDetector::default();
    assert_eq!(d.push("<tool"), "");
    assert_eq!(d.push("bar>"), "<toolbar>");

    // Prose streams line by line; a fence on a later line is held with what follows.
    let mut d = TextToolCallDetector::default();
    assert_eq!(
        d.push("Let me look. {not a line start}\n"),
        "Let me look. {not a line start}\n"
    );
    assert_eq!(d.push("\n<to"), "\n");
    assert_eq!(d.push("ols>{\"name\""), "");
    assert_eq!(d.push(": 1}</tools>\nmore"), "");
    assert_eq!(d.take_held(), "<tools>{\"name\": 1}</tools>\nmore");
}

/// Replies the embedded model (Qwen2.5-Coder-1.5B, llama.cpp) really gave on the tasks of
/// `tasks/`, recorded through a logging proxy: each line's `calls` is what a reader sees in
/// the reply (empty: it holds no call), and the parser must find exactly that.
#[test]
fn recorded_replies_of_the_embedded_model_are_read_as_recorded() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/local-model/replies.jsonl"
    );
    let recorded = std::fs::read_to_string(path).unwrap();
    let mut checked = 0;
    for line in recorded.lines().filter(|l| !l.trim().is_empty()) {
        let entry: Value = serde_json::from_str(line).unwrap();
        let tools: Vec<&str> = entry["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let reply = entry["text"].as_str().unwrap();
        let expected: Vec<(String, Map<String, Value>)> = entry["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["arguments"].as_object().unwrap().clone(),
                )
            })
            .collect();
        let found: Vec<(String, Map<String, Value>)> = parse_text_tool_calls(reply, &tools)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|part| match part {
                TextPart::Call(name, arguments) => Some((name, arguments)),
                TextPart::Text(_) => None,
            })
            .collect();
        assert_eq!(found, expected, "{reply}");
        checked += 1;
    }
    assert!(checked >= 5, "{checked} recorded replies");
}
