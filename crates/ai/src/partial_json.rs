//! An incremental JSON parser for streamed tool-call arguments.
//!
//! Fragments are pushed as they arrive; each byte is looked at once, so the total work is
//! O(argument bytes) however the text is split. [`PartialJson::snapshot`] shows the value
//! parsed so far (for progress UIs) without copying it: the open arrays, objects and string are
//! moved into one tree for the caller to read, and moved back out when the next fragment comes,
//! so a snapshot costs O(nesting depth) whatever the size of the value.
//! [`PartialJson::finish`] returns the complete value or an error that says what was wrong.
//!
//! ```
//! use oxpi_ai::partial_json::PartialJson;
//!
//! let mut p = PartialJson::new();
//! p.push(r#"{"path": "no"#);
//! assert_eq!(p.snapshot(), Some(&serde_json::json!({"path": "no"})));
//! p.push(r#"te.txt", "limit": 3}"#);
//! assert_eq!(p.finish().unwrap(), serde_json::json!({"path": "note.txt", "limit": 3}));
//! ```

use serde_json::{Map, Number, Value};

use crate::json_text::{plain_run, short_escape};

/// Why streamed JSON could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartialJsonError {
    /// A character that cannot appear where it did.
    #[error("unexpected character {ch:?} at byte {offset}")]
    Unexpected {
        /// The character.
        ch: char,
        /// Byte offset in the whole input.
        offset: usize,
    },
    /// A number that is not valid JSON.
    #[error("invalid number {text:?} at byte {offset}")]
    InvalidNumber {
        /// The number's text.
        text: String,
        /// Byte offset where it ended.
        offset: usize,
    },
    /// A `\u` escape that does not form a valid character.
    #[error("invalid unicode escape at byte {offset}")]
    InvalidEscape {
        /// Byte offset.
        offset: usize,
    },
    /// The input ended before the value was complete.
    #[error("unexpected end of JSON input after {offset} bytes")]
    Incomplete {
        /// Bytes received.
        offset: usize,
    },
    /// No value at all.
    #[error("empty input")]
    Empty,
    /// Arrays and objects nested deeper than [`MAX_DEPTH`] (serde_json's own limit).
    #[error("nested more than {MAX_DEPTH} levels deep at byte {offset}")]
    TooDeep {
        /// Byte offset of the bracket that went too deep.
        offset: usize,
    },
}

/// The deepest nesting of arrays and objects accepted: serde_json's limit (its recursion
/// limit of 128 lets 127 levels through).
pub const MAX_DEPTH: usize = 127;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value (root, after `:` or after `,` in an array).
    Value,
    /// A value or `]` right after `[`.
    ValueOrArrayEnd,
    /// A key or `}` right after `{`.
    KeyOrObjectEnd,
    /// A key after `,` in an object.
    Key,
    /// `:` after a key.
    Colon,
    /// `,` or the closing bracket of the current container.
    CommaOrEnd,
    /// The root value is complete; only whitespace may follow.
    End,
}

#[derive(Debug, Clone)]
enum Frame {
    Array(Vec<Value>),
    Object(Map<String, Value>, Option<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    Backslash,
    Unicode { digits: u8, code: u32 },
}

#[derive(Debug, Clone)]
enum Token {
    None,
    Str {
        buf: String,
        is_key: bool,
        escape: Escape,
        high_surrogate: Option<u32>,
    },
    Number(String),
    Literal {
        text: &'static str,
        matched: usize,
    },
}

/// Push parser for one JSON value. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct PartialJson {
    stack: Vec<Frame>,
    expect: Expect,
    token: Token,
    root: Option<Value>,
    offset: usize,
    error: Option<PartialJsonError>,
    /// While a snapshot is out: the open containers (and open string) moved into one tree.
    view: Option<Value>,
    /// While a snapshot is out: per frame, bottom first, whether its open child is attached.
    attached: Option<Vec<Attached>>,
}

/// Whether a frame's open child is in the linked snapshot tree.
#[derive(Debug, Clone, PartialEq)]
enum Attached {
    /// Not attached (no open child, or one that is not a value yet).
    No,
    /// Attached; for an object, the value its key held before (a repeated key), put back on
    /// unlink.
    Yes { displaced: Option<Value> },
}

impl Default for PartialJson {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialJson {
    /// A parser with no input yet.
    pub fn new() -> Self {
        Self {
            stack: Vec::new(),
            expect: Expect::Value,
            token: Token::None,
            root: None,
            offset: 0,
            error: None,
            view: None,
            attached: None,
        }
    }

    /// Bytes pushed so far.
    pub fn len(&self) -> usize {
        self.offset
    }

    /// True before any input.
    pub fn is_empty(&self) -> bool {
        self.offset == 0
    }

    /// The first error met, if any. Input after an error is ignored.
    pub fn error(&self) -> Option<&PartialJsonError> {
        self.error.as_ref()
    }

    /// Feeds the next fragment.
    pub fn push(&mut self, fragment: &str) {
        if self.error.is_some() {
            return;
        }
        self.unlink();
        let bytes = fragment.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            // Inside a string, a run of plain characters is copied at once (found eight bytes
            // at a time), and a two-character escape is decoded in place.
            if let Token::Str {
                buf,
                escape: Escape::None,
                high_surrogate: None,
                ..
            } = &mut self.token
            {
                let run = plain_run(&bytes[at..]);
                if run > 0 {
                    // The run ends before an ASCII byte or at the end: a character boundary.
                    buf.push_str(&fragment[at..at + run]);
                    self.offset += run;
                    at += run;
                    continue;
                }
                if bytes[at] == b'\\' {
                    if let Some(decoded) = bytes.get(at + 1).and_then(|&b| short_escape(b)) {
                        buf.push(decoded);
                        self.offset += 2;
                        at += 2;
                        continue;
                    }
                }
            }
            let Some(ch) = fragment[at..].chars().next() else {
                break;
            };
            if let Err(e) = self.step(ch) {
                self.error = Some(e);
                return;
            }
            self.offset += ch.len_utf8();
            at += ch.len_utf8();
        }
    }

    fn step(&mut self, ch: char) -> Result<(), PartialJsonError> {
        match &mut self.token {
            Token::Str { .. } => return self.string_char(ch),
            Token::Number(buf) => {
                if matches!(ch, '0'..='9' | '-' | '+' | '.' | 'e' | 'E') {
                    buf.push(ch);
                    return Ok(());
                }
                self.finish_number()?;
            }
            Token::Literal { text, matched } => {
                let expected = text.as_bytes().get(*matched).copied().map(char::from);
                if expected != Some(ch) {
                    return Err(self.unexpected(ch));
                }
                *matched += 1;
                if *matched == text.len() {
                    let value = match *text {
                        "true" => Value::Bool(true),
                        "false" => Value::Bool(false),
                        _ => Value::Null,
                    };
                    self.token = Token::None;
                    self.complete_value(value);
                }
                return Ok(());
            }
            Token::None => {}
        }
        self.structural(ch)
    }

    fn structural(&mut self, ch: char) -> Result<(), PartialJsonError> {
        if matches!(ch, ' ' | '\t' | '\n' | '\r') {
            return Ok(());
        }
        match (self.expect, ch) {
            (Expect::ValueOrArrayEnd, ']') => self.close(ch),
            (Expect::Value | Expect::ValueOrArrayEnd, _) => self.start_value(ch),
            (Expect::KeyOrObjectEnd, '}') => self.close(ch),
            (Expect::KeyOrObjectEnd | Expect::Key, '"') => {
                self.token = Token::Str {
                    buf: String::new(),
                    is_key: true,
                    escape: Escape::None,
                    high_surrogate: None,
                };
                Ok(())
            }
            (Expect::Colon, ':') => {
                self.expect = Expect::Value;
                Ok(())
            }
            (Expect::CommaOrEnd, ',') => {
                self.expect = match self.stack.last() {
                    Some(Frame::Array(_)) => Expect::Value,
                    _ => Expect::Key,
                };
                Ok(())
            }
            (Expect::CommaOrEnd, ']' | '}') => self.close(ch),
            _ => Err(self.unexpected(ch)),
        }
    }

    fn start_value(&mut self, ch: char) -> Result<(), PartialJsonError> {
        match ch {
            '{' | '[' if self.stack.len() >= MAX_DEPTH => {
                return Err(PartialJsonError::TooDeep {
                    offset: self.offset,
                })
            }
            '{' => {
                self.stack.push(Frame::Object(Map::new(), None));
                self.expect = Expect::KeyOrObjectEnd;
            }
            '[' => {
                self.stack.push(Frame::Array(Vec::new()));
                self.expect = Expect::ValueOrArrayEnd;
            }
            '"' => {
                self.token = Token::Str {
                    buf: String::new(),
                    is_key: false,
                    escape: Escape::None,
                    high_surrogate: None,
                }
            }
            '-' | '0'..='9' => self.token = Token::Number(ch.to_string()),
            't' => {
                self.token = Token::Literal {
                    text: "true",
                    matched: 1,
                }
            }
            'f' => {
                self.token = Token::Literal {
                    text: "false",
                    matched: 1,
                }
            }
            'n' => {
                self.token = Token::Literal {
                    text: "null",
                    matched: 1,
                }
            }
            _ => return Err(self.unexpected(ch)),
        }
        Ok(())
    }

    fn close(&mut self, ch: char) -> Result<(), PartialJsonError> {
        let value = match (self.stack.pop(), ch) {
            (Some(Frame::Array(items)), ']') => Value::Array(items),
            (Some(Frame::Object(map, None)), '}') => Value::Object(map),
            (frame, _) => {
                if let Some(frame) = frame {
                    self.stack.push(frame);
                }
                return Err(self.unexpected(ch));
            }
        };
        self.complete_value(value);
        Ok(())
    }

    fn complete_value(&mut self, value: Value) {
        match self.stack.last_mut() {
            None => {
                self.root = Some(value);
                self.expect = Expect::End;
            }
            Some(Frame::Array(items)) => {
                items.push(value);
                self.expect = Expect::CommaOrEnd;
            }
            Some(Frame::Object(map, key)) => {
                if let Some(key) = key.take() {
                    map.insert(key, value);
                }
                self.expect = Expect::CommaOrEnd;
            }
        }
    }

    fn finish_number(&mut self) -> Result<(), PartialJsonError> {
        let Token::Number(text) = std::mem::replace(&mut self.token, Token::None) else {
            return Ok(());
        };
        let number = parse_number(&text).ok_or(PartialJsonError::InvalidNumber {
            text,
            offset: self.offset,
        })?;
        self.complete_value(Value::Number(number));
        Ok(())
    }

    fn string_char(&mut self, ch: char) -> Result<(), PartialJsonError> {
        let offset = self.offset;
        let Token::Str {
            buf,
            is_key,
            escape,
            high_surrogate,
        } = &mut self.token
        else {
            return Ok(());
        };
        match *escape {
            Escape::None => match ch {
                '"' => {
                    if high_surrogate.is_some() {
                        return Err(PartialJsonError::InvalidEscape { offset });
                    }
                    let text = std::mem::take(buf);
                    let is_key = *is_key;
                    self.token = Token::None;
                    if is_key {
                        if let Some(Frame::Object(_, key)) = self.stack.last_mut() {
                            *key = Some(text);
                        }
                        self.expect = Expect::Colon;
                    } else {
                        self.complete_value(Value::String(text));
                    }
                }
                '\\' => *escape = Escape::Backslash,
                c if (c as u32) < 0x20 => return Err(PartialJsonError::Unexpected { ch, offset }),
                c => {
                    if high_surrogate.is_some() {
                        return Err(PartialJsonError::InvalidEscape { offset });
                    }
                    buf.push(c);
                }
            },
            Escape::Backslash => {
                if high_surrogate.is_some() && ch != 'u' {
                    return Err(PartialJsonError::InvalidEscape { offset });
                }
                if ch == 'u' {
                    *escape = Escape::Unicode { digits: 0, code: 0 };
                    return Ok(());
                }
                let decoded = u8::try_from(ch)
                    .ok()
                    .and_then(short_escape)
                    .ok_or(PartialJsonError::Unexpected { ch, offset })?;
                buf.push(decoded);
                *escape = Escape::None;
            }
            Escape::Unicode { digits, code } => {
                let digit = ch
                    .to_digit(16)
                    .ok_or(PartialJsonError::InvalidEscape { offset })?;
                let code = code * 16 + digit;
                if digits < 3 {
                    *escape = Escape::Unicode {
                        digits: digits + 1,
                        code,
                    };
                    return Ok(());
                }
                *escape = Escape::None;
                let scalar = match (high_surrogate.take(), code) {
                    (None, 0xD800..=0xDBFF) => {
                        *high_surrogate = Some(code);
                        return Ok(());
                    }
                    (None, 0xDC00..=0xDFFF) => {
                        return Err(PartialJsonError::InvalidEscape { offset })
                    }
                    (None, c) => c,
                    (Some(high), low @ 0xDC00..=0xDFFF) => {
                        0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                    }
                    (Some(_), _) => return Err(PartialJsonError::InvalidEscape { offset }),
                };
                buf.push(char::from_u32(scalar).ok_or(PartialJsonError::InvalidEscape { offset })?);
            }
        }
        Ok(())
    }

    fn unexpected(&self, ch: char) -> PartialJsonError {
        PartialJsonError::Unexpected {
            ch,
            offset: self.offset,
        }
    }

    /// The value parsed so far, with open strings, arrays and objects closed where they stand
    /// and an unfinished key, literal or number left out (a number counts with the digits so
    /// far once they form one). `None` before any value starts.
    ///
    /// Nothing is copied: the open containers and string are moved into one tree, which stays
    /// until the next [`push`](Self::push), so this costs O(nesting depth) plus the length of
    /// the open keys, however large the value. Clone the value to keep it.
    pub fn snapshot(&mut self) -> Option<&Value> {
        if self.root.is_some() {
            return self.root.as_ref();
        }
        self.link();
        self.view.as_ref()
    }

    /// Moves the open string (or a copy of the number so far) and the open containers into
    /// `view`, innermost first, each as the open child of the one below.
    fn link(&mut self) {
        if self.attached.is_some() {
            return;
        }
        let mut pending: Option<Value> = match &mut self.token {
            Token::Str {
                buf, is_key: false, ..
            } => Some(Value::String(std::mem::take(buf))),
            Token::Number(text) => parse_number(text).map(Value::Number),
            _ => None,
        };
        let mut attached = vec![Attached::No; self.stack.len()];
        for (frame, attached) in self.stack.iter_mut().zip(attached.iter_mut()).rev() {
            let container = match frame {
                Frame::Array(items) => {
                    let mut items = std::mem::take(items);
                    if let Some(child) = pending.take() {
                        items.push(child);
                        *attached = Attached::Yes { displaced: None };
                    }
                    Value::Array(items)
                }
                Frame::Object(map, key) => {
                    let mut map = std::mem::take(map);
                    if let (Some(key), Some(child)) = (key.as_ref(), pending.take()) {
                        // A repeated key shows its open value (the last one wins, as in
                        // serde_json); the earlier value comes back when the snapshot goes.
                        let displaced = map.insert(key.clone(), child);
                        *attached = Attached::Yes { displaced };
                    }
                    Value::Object(map)
                }
            };
            pending = Some(container);
        }
        self.view = pending;
        self.attached = Some(attached);
    }

    /// Undoes [`link`](Self::link): the containers go back to their frames and the open
    /// string back to its token.
    fn unlink(&mut self) {
        let Some(attached) = self.attached.take() else {
            return;
        };
        let mut node = self.view.take();
        for (frame, attached) in self.stack.iter_mut().zip(attached) {
            node = match (frame, node) {
                (Frame::Array(items), Some(Value::Array(mut linked))) => {
                    let child = match attached {
                        Attached::Yes { .. } => linked.pop(),
                        Attached::No => None,
                    };
                    *items = linked;
                    child
                }
                (Frame::Object(map, key), Some(Value::Object(mut linked))) => {
                    let child = match (attached, key.as_ref()) {
                        // A repeated key gets its earlier value back in place; a new one goes.
                        (
                            Attached::Yes {
                                displaced: Some(earlier),
                            },
                            Some(key),
                        ) => linked
                            .get_mut(key)
                            .map(|slot| std::mem::replace(slot, earlier)),
                        (Attached::Yes { displaced: None }, Some(key)) => linked.remove(key),
                        _ => None,
                    };
                    *map = linked;
                    child
                }
                _ => None,
            };
        }
        if let (
            Token::Str {
                buf, is_key: false, ..
            },
            Some(Value::String(text)),
        ) = (&mut self.token, node)
        {
            *buf = text;
        }
    }

    /// Ends the input and returns the value, or why it is not valid JSON.
    pub fn finish(mut self) -> Result<Value, PartialJsonError> {
        self.unlink();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if matches!(self.token, Token::Number(_)) && self.stack.is_empty() {
            self.finish_number()?;
        }
        match self.root.take() {
            Some(root) => Ok(root),
            None if self.offset == 0
                || (self.stack.is_empty() && matches!(self.token, Token::None)) =>
            {
                Err(PartialJsonError::Empty)
            }
            None => Err(PartialJsonError::Incomplete {
                offset: self.offset,
            }),
        }
    }
}

fn parse_number(text: &str) -> Option<Number> {
    // serde_json accepts exactly JSON's number grammar here.
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Number(n)) => Some(n),
        _ => None,
    }
}

#[cfg(test)]
#[path = "partial_json_tests.rs"]
mod tests;
