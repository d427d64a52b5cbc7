//! Copies of a finished tool call that reuse the buffer its raw argument text was streamed
//! into.
//!
//! A tool call's arguments are streamed as text into one growing `String`, parsed when the call
//! ends, and the call is then copied (into its `toolcall_end` event, and into the stream's
//! partial message). The raw text is dropped right there, and for a large call (a file being
//! written) its buffer is the size of the copy's largest string. A fresh megabyte is paid page
//! by page as it is first written (about a microsecond a page on the machines the benchmarks
//! run on), and a freed one usually goes back to the system: writing the copy's largest string
//! into the raw text's buffer, whose pages are already in memory, saves both.

use serde_json::{Map, Value};

use crate::types::content::ToolCall;

/// Strings shorter than this are copied as usual: for them a fresh allocation is cheap and the
/// raw text's buffer, far larger, would be wasted on them.
const MIN_REUSED_LEN: usize = 64 * 1024;

/// A copy of `call` whose longest string of at least [`MIN_REUSED_LEN`] bytes, if it has one
/// and `spare` has room for it, is written into `spare`'s buffer (then shrunk to the string),
/// the rest copied as [`Clone`] copies it. Equal to `call.clone()` in every case.
pub(crate) fn clone_tool_call(call: &ToolCall, spare: String) -> ToolCall {
    let longest = longest_string(&call.arguments);
    let mut spare = (longest >= MIN_REUSED_LEN && spare.capacity() >= longest).then_some(spare);
    ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        arguments: clone_map(&call.arguments, longest, &mut spare),
        thought_signature: call.thought_signature.clone(),
        namespace: call.namespace.clone(),
        arguments_error: call.arguments_error.clone(),
    }
}

/// The length of the longest string value in `map`, at any depth (0 when it has none).
fn longest_string(map: &Map<String, Value>) -> usize {
    fn longest(value: &Value) -> usize {
        match value {
            Value::String(s) => s.len(),
            Value::Array(items) => items.iter().map(longest).max().unwrap_or(0),
            Value::Object(map) => longest_string(map),
            Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        }
    }
    map.values().map(longest).max().unwrap_or(0)
}

fn clone_map(
    map: &Map<String, Value>,
    longest: usize,
    spare: &mut Option<String>,
) -> Map<String, Value> {
    if spare.is_none() {
        return map.clone();
    }
    map.iter()
        .map(|(key, value)| (key.clone(), clone_value(value, longest, spare)))
        .collect()
}

fn clone_value(value: &Value, longest: usize, spare: &mut Option<String>) -> Value {
    if spare.is_none() {
        return value.clone();
    }
    match value {
        Value::String(s) if s.len() == longest => {
            let mut buffer = spare.take().unwrap_or_default();
            buffer.clear();
            buffer.push_str(s);
            buffer.shrink_to_fit();
            Value::String(buffer)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| clone_value(item, longest, spare))
                .collect(),
        ),
        Value::Object(map) => Value::Object(clone_map(map, longest, spare)),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(arguments: Value) -> ToolCall {
        let Value::Object(arguments) = arguments else {
            panic!("arguments must be an object");
        };
        let mut call = ToolCall::new("call_1", "write", arguments);
        call.thought_signature = Some("sig".into());
        call
    }

    #[test]
    fn the_longest_string_goes_into_the_spare_buffer() {
        let content = "x".repeat(MIN_REUSED_LEN + 10);
        let original = call(json!({
            "path": "a.txt",
            "nested": [{"content": content}, {"short": "y".repeat(MIN_REUSED_LEN)}],
            "n": 3
        }));
        // A spare of exactly the string's size: shrinking it moves nothing, so its address
        // says whether it was used.
        let spare = String::with_capacity(content.len());
        let spare_address = spare.as_ptr();
        let copy = clone_tool_call(&original, spare);
        assert_eq!(copy, original);
        let Value::String(reused) = &copy.arguments["nested"][0]["content"] else {
            panic!("content is a string");
        };
        assert_eq!(reused.as_ptr(), spare_address);
        assert_eq!(reused.capacity(), reused.len());
    }

    #[test]
    fn a_larger_spare_is_shrunk_to_the_string() {
        let original = call(json!({"content": "x".repeat(MIN_REUSED_LEN)}));
        let copy = clone_tool_call(&original, String::with_capacity(8 * MIN_REUSED_LEN));
        assert_eq!(copy, original);
        let Value::String(reused) = &copy.arguments["content"] else {
            panic!("content is a string");
        };
        assert_eq!(reused.capacity(), reused.len());
    }

    #[test]
    fn a_copy_without_a_usable_spare_is_a_plain_clone() {
        let small = call(json!({"path": "a.txt", "content": "short"}));
        assert_eq!(
            clone_tool_call(&small, String::with_capacity(1 << 20)),
            small
        );
        let large = call(json!({"content": "z".repeat(MIN_REUSED_LEN * 2)}));
        // A spare too small for the string is not used.
        assert_eq!(clone_tool_call(&large, String::with_capacity(16)), large);
        assert_eq!(clone_tool_call(&large, String::new()), large);
    }

    #[test]
    fn two_strings_of_the_longest_length_are_both_copied() {
        let text = "q".repeat(MIN_REUSED_LEN);
        let original = call(json!({"a": text, "b": text}));
        let copy = clone_tool_call(&original, String::with_capacity(2 * MIN_REUSED_LEN));
        assert_eq!(copy, original);
    }
}
