//! Tool calls written as text, for models that never emit native `tool_calls` (small local
//! models such as Qwen2.5-Coder-1.5B): a reply that is nothing but one or more calls — a fenced
//! ```` ```json ```` block, a bare object, or `<tool_call>…</tool_call>` — each naming an offered
//! tool with a JSON object of arguments, becomes real tool calls. Anything else stays text.
//!
//! Only on when the model's compat sets `toolCallsInText`. Text that cannot start a call streams
//! as usual; text that might be a call is held until the reply ends.

use serde_json::{Map, Value};

/// Decides, delta by delta, whether text can be streamed or must be held.
#[derive(Debug, Default)]
pub struct TextToolCallDetector {
    held: String,
    streaming: bool,
}

const OPENERS: [&str; 4] = ["{", "[", "```", "<tool_call>"];

impl TextToolCallDetector {
    /// Takes a text delta; returns the text that can be streamed now (possibly empty).
    pub fn push(&mut self, delta: &str) -> String {
        if self.streaming {
            return delta.to_string();
        }
        self.held.push_str(delta);
        let start = self.held.trim_start();
        if start.is_empty() {
            return String::new();
        }
        let may_be_call = OPENERS
            .iter()
            .any(|opener| start.starts_with(opener) || opener.starts_with(start));
        if may_be_call {
            String::new()
        } else {
            self.streaming = true;
            std::mem::take(&mut self.held)
        }
    }

    /// The held text (empty when everything was streamed).
    pub fn take_held(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// Parses a whole reply as tool calls to the named tools; `None` unless the reply is nothing
/// but valid calls.
pub fn parse_text_tool_calls(
    text: &str,
    tool_names: &[&str],
) -> Option<Vec<(String, Map<String, Value>)>> {
    let text = text.trim();
    let segments: Vec<&str> = if text.contains("<tool_call>") {
        tagged_segments(text)?
    } else if text.starts_with("```") {
        fenced_segments(text)?
    } else {
        vec![text]
    };
    let mut calls = Vec::new();
    for segment in segments {
        for value in serde_json::Deserializer::from_str(segment).into_iter::<Value>() {
            match value.ok()? {
                Value::Array(items) => {
                    for item in items {
                        calls.push(call_from(item, tool_names)?);
                    }
                }
                item => calls.push(call_from(item, tool_names)?),
            }
        }
    }
    (!calls.is_empty()).then_some(calls)
}

fn call_from(value: Value, tool_names: &[&str]) -> Option<(String, Map<String, Value>)> {
    let Value::Object(mut object) = value else {
        return None;
    };
    let name = match object.remove("name")? {
        Value::String(name) if tool_names.contains(&name.as_str()) => name,
        _ => return None,
    };
    let arguments = object
        .remove("arguments")
        .or_else(|| object.remove("parameters"))
        .unwrap_or_else(|| Value::Object(Map::new()));
    let arguments = match arguments {
        Value::Object(map) => map,
        Value::String(raw) => match serde_json::from_str(&raw).ok()? {
            Value::Object(map) => map,
            _ => return None,
        },
        _ => return None,
    };
    Some((name, arguments))
}

/// The insides of `<tool_call>…</tool_call>` blocks; text outside them must be blank.
fn tagged_segments(text: &str) -> Option<Vec<&str>> {
    let mut segments = Vec::new();
    let mut rest = text;
    while !rest.trim().is_empty() {
        let after_open = rest.trim_start().strip_prefix("<tool_call>")?;
        match after_open.find("</tool_call>") {
            Some(end) => {
                segments.push(&after_open[..end]);
                rest = &after_open[end + "</tool_call>".len()..];
            }
            None => {
                segments.push(after_open);
                rest = "";
            }
        }
    }
    Some(segments)
}

/// The insides of ```` ``` ```` fences (an optional language word after the opening fence);
/// text outside them must be blank.
fn fenced_segments(text: &str) -> Option<Vec<&str>> {
    let mut segments = Vec::new();
    let mut rest = text;
    while !rest.trim().is_empty() {
        let after_open = rest.trim_start().strip_prefix("```")?;
        let body_start = after_open.find('\n').unwrap_or(after_open.len());
        let language = after_open[..body_start].trim();
        if !(language.is_empty() || language.eq_ignore_ascii_case("json")) {
            return None;
        }
        let body = &after_open[body_start..];
        let end = body.find("```")?;
        segments.push(&body[..end]);
        rest = &body[end + 3..];
    }
    Some(segments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn accepts_the_forms_small_models_write() {
        let tools = ["read", "write"];
        let expected = Some(vec![(
            "read".to_string(),
            args(json!({"path": "note.txt"})),
        )]);
        for text in [
            "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}\n```",
            "```\n{\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}\n```\n",
            "  {\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}",
            "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"note.txt\"}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"read\", \"arguments\": \"{\\\"path\\\": \\\"note.txt\\\"}\"}",
            "[{\"name\": \"read\", \"parameters\": {\"path\": \"note.txt\"}}]",
        ] {
            assert_eq!(parse_text_tool_calls(text, &tools), expected, "{text}");
        }
        let two = "<tool_call>{\"name\":\"read\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"write\",\"arguments\":{\"path\":\"a\",\"content\":\"b\"}}</tool_call>";
        assert_eq!(
            parse_text_tool_calls(two, &tools),
            Some(vec![
                ("read".to_string(), Map::new()),
                (
                    "write".to_string(),
                    args(json!({"path": "a", "content": "b"}))
                ),
            ])
        );
    }

    #[test]
    fn anything_else_stays_text() {
        let tools = ["read"];
        for text in [
            "read-123456",
            "Sure! {\"name\": \"read\", \"arguments\": {}}",
            "{\"name\": \"delete\", \"arguments\": {}}",
            "{\"name\": \"read\", \"arguments\": [1]}",
            "{\"name\": \"read\", \"arguments\": {\"path\": ",
            "```python\nprint(1)\n```",
            "```json\n{\"name\": \"read\"}\n``` and then some words",
            "{\"path\": \"note.txt\"}",
            "",
        ] {
            assert_eq!(parse_text_tool_calls(text, &tools), None, "{text}");
        }
    }

    #[test]
    fn detector_streams_plain_text_and_holds_possible_calls() {
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
    }
}
