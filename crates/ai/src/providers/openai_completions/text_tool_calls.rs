//! Tool calls written as text, for models that never emit native `tool_calls` (small local
//! models such as Qwen2.5-Coder-1.5B behind llama.cpp, Ollama or vLLM).
//!
//! A call is a whole JSON object naming an offered tool (`name`, with `arguments` or
//! `parameters` holding an object or a JSON string of one; OpenAI's `{"function": {…}}`
//! wrapping too), standing at the start of a line in one of the forms such models write:
//! `<tool_call>…</tool_call>`, `<tools>…</tools>` (also `<tool_calls>`, `<function_call>`), a
//! fenced ```` ```json ```` block, a bare object or an array of them, each possibly with its
//! braces doubled (`{{"name": …}}`). A reply may hold several calls and prose around them; the
//! prose stays text. Anything else stays text: an object naming no offered tool, a fragment, an
//! object inside a sentence, a block that holds anything besides calls.
//!
//! Only on when the model's compat sets `toolCallsInText`. Lines that cannot start a call stream
//! as usual; from the first line that might, the text is held until the reply ends.

use serde_json::{Map, Value};

/// Decides, delta by delta, whether text can be streamed or must be held.
#[derive(Debug)]
pub struct TextToolCallDetector {
    /// Text not streamed yet.
    pending: String,
    /// Once a line that may start a call was seen, everything is held.
    holding: bool,
    /// Whether `pending` begins at the start of a line.
    at_line_start: bool,
}

impl Default for TextToolCallDetector {
    fn default() -> Self {
        Self {
            pending: String::new(),
            holding: false,
            at_line_start: true,
        }
    }
}

/// Tags whose insides are calls.
const TAGS: [&str; 4] = ["tool_call", "tools", "tool_calls", "function_call"];
/// What a line that may start a call begins with (after blanks).
const OPENERS: [&str; 7] = [
    "{",
    "[",
    "```",
    "<tool_call>",
    "<tools>",
    "<tool_calls>",
    "<function_call>",
];

/// How a line's start relates to the openers.
enum LineStart {
    /// It begins with an opener.
    Opener,
    /// Too short to tell.
    Undecided,
    /// It cannot start a call.
    Plain,
}

fn line_start(line: &str) -> LineStart {
    let start = line.trim_start();
    if start.is_empty() {
        return LineStart::Undecided;
    }
    if OPENERS.iter().any(|o| start.starts_with(o)) {
        LineStart::Opener
    } else if OPENERS.iter().any(|o| o.starts_with(start)) {
        LineStart::Undecided
    } else {
        LineStart::Plain
    }
}

impl TextToolCallDetector {
    /// Takes a text delta; returns the text that can be streamed now (possibly empty).
    pub fn push(&mut self, delta: &str) -> String {
        self.pending.push_str(delta);
        let mut out = String::new();
        while !self.holding && !self.pending.is_empty() {
            let newline = self.pending.find('\n');
            if !self.at_line_start {
                // The rest of a line already judged plain.
                let end = newline.map_or(self.pending.len(), |i| i + 1);
                out.extend(self.pending.drain(..end));
                self.at_line_start = newline.is_some();
                continue;
            }
            let line = &self.pending[..newline.unwrap_or(self.pending.len())];
            match (line_start(line), newline) {
                (LineStart::Opener, _) => self.holding = true,
                (LineStart::Undecided, None) => break,
                (_, Some(i)) => out.extend(self.pending.drain(..=i)),
                (LineStart::Plain, None) => {
                    out.push_str(&std::mem::take(&mut self.pending));
                    self.at_line_start = false;
                }
            }
        }
        out
    }

    /// The held text (empty when everything was streamed).
    pub fn take_held(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

/// A part of a reply written as text: prose, or a call to an offered tool.
#[derive(Debug, Clone, PartialEq)]
pub enum TextPart {
    /// Text that is not a call (trimmed of surrounding blank lines).
    Text(String),
    /// A call: the tool's name and its arguments.
    Call(String, Map<String, Value>),
}

/// Reads `text` for calls to the named tools; `None` when it holds none (then it is all text).
pub fn parse_text_tool_calls(text: &str, tool_names: &[&str]) -> Option<Vec<TextPart>> {
    let mut parts = Vec::new();
    let mut prose = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let line_end = rest.find('\n').map_or(rest.len(), |i| i + 1);
        match calls_at(rest, tool_names) {
            Some((calls, used)) => {
                flush(&mut prose, &mut parts);
                parts.extend(calls.into_iter().map(|(n, a)| TextPart::Call(n, a)));
                rest = &rest[used..];
            }
            None => {
                // A fenced block that is not calls is prose as a whole: what it holds is data.
                let end = fenced_block_end(rest).unwrap_or(line_end);
                prose.push_str(&rest[..end]);
                rest = &rest[end..];
            }
        }
    }
    flush(&mut prose, &mut parts);
    parts
        .iter()
        .any(|p| matches!(p, TextPart::Call(..)))
        .then_some(parts)
}

/// Where the fenced block that `text` opens (at a line start) ends, past its closing fence.
fn fenced_block_end(text: &str) -> Option<usize> {
    let after = text.trim_start_matches([' ', '\t']).strip_prefix("```")?;
    let body_start = text.len() - after.len() + after.find('\n')?;
    let close = text[body_start..].find("```")?;
    Some(body_start + close + 3)
}

fn flush(prose: &mut String, parts: &mut Vec<TextPart>) {
    let text = prose.trim();
    if !text.is_empty() {
        parts.push(TextPart::Text(text.to_string()));
    }
    prose.clear();
}

type Call = (String, Map<String, Value>);

/// The calls that `text` (at a line start) begins with, and how many bytes they take; `None`
/// unless the line opens a block, fence or JSON value that holds nothing but calls.
fn calls_at(text: &str, tool_names: &[&str]) -> Option<(Vec<Call>, usize)> {
    let indent = text.len() - text.trim_start_matches([' ', '\t']).len();
    let start = &text[indent..];
    let (calls, used) =
        if let Some(tag) = TAGS.iter().find(|t| start.starts_with(&format!("<{t}>"))) {
            let inner = &start[tag.len() + 2..];
            let close = format!("</{tag}>");
            let (body, used) = match inner.find(&close) {
                Some(end) => (&inner[..end], end + close.len()),
                None => (inner, inner.len()),
            };
            (segment_calls(body, tool_names)?, tag.len() + 2 + used)
        } else if let Some(after) = start.strip_prefix("```") {
            let body_start = after.find('\n')?;
            let language = after[..body_start].trim();
            let known = ["", "json", "tool_call", "tool_code"];
            if !known.iter().any(|k| language.eq_ignore_ascii_case(k)) {
                return None;
            }
            let body = &after[body_start..];
            let end = body.find("```")?;
            (
                segment_calls(&body[..end], tool_names)?,
                3 + body_start + end + 3,
            )
        } else if start.starts_with('{') || start.starts_with('[') {
            json_calls(start, tool_names)?
        } else {
            return None;
        };
    (!calls.is_empty()).then_some((calls, indent + used))
}

/// The calls in the inside of a tag or fence: JSON values (or one fenced block), nothing else.
fn segment_calls(body: &str, tool_names: &[&str]) -> Option<Vec<Call>> {
    let body = body.trim();
    if body.starts_with("```") {
        let (calls, used) = calls_at(body, tool_names)?;
        return body[used..].trim().is_empty().then_some(calls);
    }
    let mut calls = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (more, used) = json_calls(rest, tool_names)?;
        calls.extend(more);
        rest = rest[used..].trim_start();
    }
    Some(calls)
}

/// The calls in the JSON value(s) `text` starts with, braces doubled or not, and the bytes
/// they take (through the end of their last line when only blanks follow).
fn json_calls(text: &str, tool_names: &[&str]) -> Option<(Vec<Call>, usize)> {
    let (value, used) = match first_value(text) {
        Some(found) => found,
        None if text.starts_with("{{") => undoubled_value(text)?,
        None => return None,
    };
    let calls = match value {
        Value::Array(items) if !items.is_empty() => items
            .into_iter()
            .map(|item| call_from(item, tool_names))
            .collect::<Option<Vec<_>>>()?,
        item => vec![call_from(item, tool_names)?],
    };
    Some((calls, used))
}

/// The JSON value at the start of `text` and its length in bytes.
fn first_value(text: &str) -> Option<(Value, usize)> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let value = values.next()?.ok()?;
    Some((value, values.byte_offset()))
}

/// A value written with every brace doubled (`{{"a": {{"b": 1}}}}`), as templates leak them.
fn undoubled_value(text: &str) -> Option<(Value, usize)> {
    let mut single = String::with_capacity(text.len());
    // For each byte of `single`, where it came from in `text`.
    let mut origin = Vec::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let doubled = (c == '{' || c == '}') && chars.peek().is_some_and(|&(_, n)| n == c);
        let width = if doubled {
            chars.next();
            2
        } else {
            c.len_utf8()
        };
        single.push(c);
        origin.extend(std::iter::repeat_n(i + width, c.len_utf8()));
    }
    let (value, used) = first_value(&single)?;
    let used = if used == 0 { 0 } else { origin[used - 1] };
    Some((value, used))
}

fn call_from(value: Value, tool_names: &[&str]) -> Option<Call> {
    let Value::Object(mut object) = value else {
        return None;
    };
    if let Some(Value::Object(function)) = object.remove("function") {
        object = function;
    }
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
    // Anything besides name and arguments (an id or type is fine) means ordinary data.
    let only_call_keys = object.keys().all(|k| k == "id" || k == "type");
    only_call_keys.then_some((name, arguments))
}

#[cfg(test)]
#[path = "text_tool_calls_tests.rs"]
mod tests;
