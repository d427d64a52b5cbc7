//! Mistral's stream is Chat Completions chunks, except that a delta's `content` may be a list of
//! chunks (`text`, and `thinking` from reasoning models); [`normalize_chunk`] turns such a
//! delta into the `content` / `reasoning_content` strings the Chat Completions reader takes.

use serde_json::{Map, Value};

/// The chunk with list `content` flattened (`None` when there is nothing to change; the common
/// string content costs one substring search).
pub fn normalize_chunk(data: &str) -> Option<String> {
    if !data.contains("\"content\":[") && !data.contains("\"content\": [") {
        return None;
    }
    let mut chunk: Value = serde_json::from_str(data).ok()?;
    let choices = chunk.get_mut("choices")?.as_array_mut()?;
    let mut changed = false;
    for choice in choices {
        let Some(delta) = choice.get_mut("delta").and_then(Value::as_object_mut) else {
            continue;
        };
        let Some(Value::Array(parts)) = delta.get("content").cloned() else {
            continue;
        };
        let (text, thinking) = flatten(&parts);
        delta.insert("content".into(), Value::String(text));
        if !thinking.is_empty() {
            delta.insert("reasoning_content".into(), Value::String(thinking));
        }
        changed = true;
    }
    changed.then(|| chunk.to_string())
}

/// `(text, thinking)` of a list of content chunks.
fn flatten(parts: &[Value]) -> (String, String) {
    let mut text = String::new();
    let mut thinking = String::new();
    for part in parts {
        let Some(part) = part.as_object() else {
            continue;
        };
        match part.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(str_field(part, "text")),
            Some("thinking") => match part.get("thinking") {
                Some(Value::Array(inner)) => {
                    for item in inner.iter().filter_map(Value::as_object) {
                        thinking.push_str(str_field(item, "text"));
                    }
                }
                Some(Value::String(s)) => thinking.push_str(s),
                _ => {}
            },
            _ => {}
        }
    }
    (text, thinking)
}

fn str_field<'a>(object: &'a Map<String, Value>, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod doc_examples {
    #[test]
    fn normalize_chunk_example() {
        use crate::providers::mistral_conversations::stream::normalize_chunk;
        let chunk = r#"{"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hmm"}]},{"type":"text","text":"Hi"}]}}]}"#;
        let fixed: serde_json::Value =
            serde_json::from_str(&normalize_chunk(chunk).unwrap()).unwrap();
        assert_eq!(fixed["choices"][0]["delta"]["reasoning_content"], "hmm");
        assert_eq!(fixed["choices"][0]["delta"]["content"], "Hi");
        assert_eq!(
            normalize_chunk(r#"{"choices":[{"delta":{"content":"Hi"}}]}"#),
            None
        );
    }
}
