//! A look into one line from a server without parsing it: the top-level `id` and whether the
//! message has a `method`, found in one pass with no recursion (any depth, any length); and,
//! for a line too long to parse, a copy with each `"text"` string cut to a number of bytes.

/// How many bytes of a top-level `id` value are kept (longer ids are not ids we sent).
const MAX_ID_BYTES: usize = 64;

/// How deep containers are told apart (object or array); the JSON parser refuses deeper lines
/// anyway, so past this only the depth is counted.
const TRACKED_DEPTH: usize = 128;

/// What a pass over a line found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The raw text of the top-level `id` value, if it was a number or a short string.
    pub(crate) id: Option<String>,
    /// Whether the top-level object has a `method` (a request or notification, not an answer).
    pub(crate) has_method: bool,
    /// The copy with `"text"` strings cut, when one was asked for and it fit.
    pub(crate) cut: Option<Vec<u8>>,
    /// How many bytes (decoded) the cuts removed from `"text"` strings.
    pub(crate) cut_bytes: u64,
}

/// Where in a string the scanner is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// Not in an escape.
    None,
    /// After a backslash.
    Backslash,
    /// In `\u`, with this many hex digits still to come and the value so far.
    Unicode(u8, u32),
}

/// One top-level key being read, or its value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Top {
    Other,
    /// After the key `id`, before its colon.
    IdKey,
    /// In the value of `id`.
    Id,
}

/// Scans a line fed in pieces.
pub(crate) struct Scanner {
    /// The containers open (`true` for an object), up to [`TRACKED_DEPTH`].
    stack: Vec<bool>,
    depth: u64,
    /// The next string in an object is a key.
    key_position: bool,
    in_string: bool,
    string_is_key: bool,
    escape: Escape,
    /// The first bytes of the key being read (enough for `id`, `text`, `method`).
    key: Vec<u8>,
    key_too_long: bool,
    /// The last key read at the current level, if short.
    last_key: Option<Vec<u8>>,
    top: Top,
    id: Vec<u8>,
    id_bad: bool,
    has_method: bool,
    /// The cut copy: its cap per string, its cap in all, and what it holds.
    cut_at: Option<(usize, usize)>,
    out: Vec<u8>,
    out_full: bool,
    /// In a `"text"` string: decoded bytes kept so far, and whether it is past the cut.
    cutting: bool,
    kept: usize,
    past_cut: bool,
    /// The last unit was a `\u` high surrogate (its pair must not be split from it).
    after_high_surrogate: bool,
    cut_bytes: u64,
}

impl Scanner {
    /// A scanner that only looks; with `cut = Some((per_string, total))`, it also copies the
    /// line with each `"text"` string cut to about `per_string` bytes, giving up (no copy) if
    /// the copy grows past `total` bytes.
    pub(crate) fn new(cut: Option<(usize, usize)>) -> Self {
        Self {
            stack: Vec::new(),
            depth: 0,
            key_position: false,
            in_string: false,
            string_is_key: false,
            escape: Escape::None,
            key: Vec::new(),
            key_too_long: false,
            last_key: None,
            top: Top::Other,
            id: Vec::new(),
            id_bad: false,
            has_method: false,
            cut_at: cut,
            out: Vec::new(),
            out_full: false,
            cutting: false,
            kept: 0,
            past_cut: false,
            after_high_surrogate: false,
            cut_bytes: 0,
        }
    }

    /// Scans the next piece of the line.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.step(byte);
        }
    }

    /// What was found.
    pub(crate) fn finish(self) -> Scan {
        let id = (!self.id_bad && !self.id.is_empty())
            .then(|| String::from_utf8_lossy(self.id.trim_ascii()).into_owned())
            .filter(|id| !id.is_empty());
        Scan {
            id,
            has_method: self.has_method,
            cut: (self.cut_at.is_some() && !self.out_full).then_some(self.out),
            cut_bytes: self.cut_bytes,
        }
    }

    fn in_object(&self) -> bool {
        self.depth as usize <= TRACKED_DEPTH && self.stack.last() == Some(&true)
    }

    fn emit(&mut self, byte: u8) {
        if let Some((_, total)) = self.cut_at {
            if self.out_full {
                return;
            }
            if self.out.len() >= total {
                self.out_full = true;
                self.out = Vec::new();
                return;
            }
            self.out.push(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        if self.in_string {
            self.string_byte(byte);
            return;
        }
        if self.top == Top::IdKey && self.depth == 1 && byte == b':' {
            self.top = Top::Id;
        } else if self.top == Top::Id && self.depth == 1 && !matches!(byte, b',' | b'}') {
            if matches!(byte, b'{' | b'[') || self.id.len() >= MAX_ID_BYTES {
                self.id_bad = true;
            } else {
                self.id.push(byte);
            }
        }
        self.emit(byte);
        match byte {
            b'"' => {
                self.in_string = true;
                self.string_is_key = self.key_position && self.in_object();
                self.key.clear();
                self.key_too_long = false;
                self.cutting = !self.string_is_key
                    && self.cut_at.is_some()
                    && self.last_key.as_deref() == Some(b"text");
                self.kept = 0;
                self.past_cut = false;
                self.after_high_surrogate = false;
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth as usize <= TRACKED_DEPTH {
                    self.stack.push(byte == b'{');
                }
                self.key_position = byte == b'{';
                self.last_key = None;
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.top = Top::Other;
                }
                if self.depth as usize <= TRACKED_DEPTH {
                    self.stack.pop();
                }
                self.depth = self.depth.saturating_sub(1);
                self.key_position = false;
                self.last_key = None;
            }
            b',' => {
                if self.depth == 1 {
                    self.top = Top::Other;
                }
                self.key_position = self.in_object();
            }
            b':' => self.key_position = false,
            _ => {}
        }
    }

    fn string_byte(&mut self, byte: u8) {
        if self.string_is_key {
            self.emit(byte);
            match self.escape {
                Escape::None if byte == b'"' => {
                    self.in_string = false;
                    self.end_key();
                }
                Escape::None if byte == b'\\' => {
                    self.escape = Escape::Backslash;
                    self.key_too_long = true;
                }
                Escape::None => {
                    if self.key.len() < 8 {
                        self.key.push(byte);
                    } else {
                        self.key_too_long = true;
                    }
                }
                _ => self.escape = Escape::None,
            }
            return;
        }
        if self.top == Top::Id && self.depth == 1 {
            if self.id.len() >= MAX_ID_BYTES {
                self.id_bad = true;
            } else {
                self.id.push(byte);
            }
        }
        match self.escape {
            Escape::None if byte == b'"' => {
                self.in_string = false;
                self.emit(byte);
                return;
            }
            Escape::None => {
                let unit_start = byte == b'\\' || byte & 0xC0 != 0x80;
                if self.cutting && unit_start && !self.past_cut && !self.after_high_surrogate {
                    if let Some((per_string, _)) = self.cut_at {
                        if self.kept >= per_string {
                            self.past_cut = true;
                        }
                    }
                }
                if byte == b'\\' {
                    self.escape = Escape::Backslash;
                } else {
                    self.after_high_surrogate = false;
                    self.count(1);
                }
            }
            Escape::Backslash => {
                self.escape = if byte == b'u' {
                    Escape::Unicode(4, 0)
                } else {
                    self.after_high_surrogate = false;
                    self.count(1);
                    Escape::None
                };
            }
            Escape::Unicode(left, value) => {
                let digit = (byte as char).to_digit(16).unwrap_or(0);
                let value = value * 16 + digit;
                if left > 1 {
                    self.escape = Escape::Unicode(left - 1, value);
                } else {
                    self.escape = Escape::None;
                    let (bytes, high) = match value {
                        0..=0x7F => (1, false),
                        0x80..=0x7FF => (2, false),
                        0xD800..=0xDBFF => (4, true),
                        0xDC00..=0xDFFF if self.after_high_surrogate => (0, false),
                        _ => (3, false),
                    };
                    self.after_high_surrogate = high;
                    self.count(bytes);
                }
            }
        }
        if !(self.cutting && self.past_cut) {
            self.emit(byte);
        }
    }

    /// Counts `bytes` decoded bytes of the current string as kept or cut.
    fn count(&mut self, bytes: usize) {
        if !self.cutting {
            return;
        }
        if self.past_cut {
            self.cut_bytes += bytes as u64;
        } else {
            self.kept += bytes;
        }
    }

    fn end_key(&mut self) {
        let key = (!self.key_too_long).then(|| self.key.clone());
        if self.depth == 1 {
            match key.as_deref() {
                Some(b"id") => {
                    self.top = Top::IdKey;
                    self.id.clear();
                    self.id_bad = false;
                }
                Some(b"method") => self.has_method = true,
                _ => {}
            }
        }
        self.last_key = key;
    }
}

/// Scans a whole line, without a cut copy.
pub(crate) fn scan(line: &[u8]) -> Scan {
    let mut scanner = Scanner::new(None);
    scanner.feed(line);
    scanner.finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::{json, Value};

    fn cut(line: &str, per_string: usize) -> (Value, u64) {
        let mut scanner = Scanner::new(Some((per_string, 1 << 20)));
        for piece in line.as_bytes().chunks(3) {
            scanner.feed(piece);
        }
        let scan = scanner.finish();
        (
            serde_json::from_slice(&scan.cut.unwrap()).unwrap(),
            scan.cut_bytes,
        )
    }

    #[test]
    fn finds_the_top_level_id_and_method() {
        let found = scan(br#"{"jsonrpc":"2.0","result":{"id":7,"x":[{"id":8}]},"id": 12 }"#);
        assert_eq!((found.id.as_deref(), found.has_method), (Some("12"), false));
        let found = scan(br#"{"method":"ping","id":"a\"b","params":{}}"#);
        assert_eq!(
            (found.id.as_deref(), found.has_method),
            (Some(r#""a\"b""#), true)
        );
        let deep = format!(
            r#"{{"id":3,"result":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(scan(deep.as_bytes()).id.as_deref(), Some("3"));
        assert_eq!(scan(b"not json at all").id, None);
        assert_eq!(scan(br#"{"id":{"a":1}}"#).id, None);
    }

    #[test]
    fn cuts_text_strings_only_and_counts_the_cut() {
        let line = json!({"id": 1, "result": {"content": [
            {"type": "text", "text": "abcdefghij"},
            {"type": "image", "data": "0123456789"},
        ]}})
        .to_string();
        let (value, removed) = cut(&line, 4);
        assert_eq!(value["result"]["content"][0]["text"], "abcd");
        assert_eq!(value["result"]["content"][1]["data"], "0123456789");
        assert_eq!(removed, 6);
    }

    #[test]
    fn never_splits_a_character_an_escape_or_a_surrogate_pair() {
        // "é" is 2 bytes, "\n" one, "\u00e9" two, "\ud83d\ude00" (😀) four.
        for (text, per_string) in [
            ("ééééé", 3),
            ("a\nb\nc\n", 2),
            ("\u{e9}\u{e9}\u{e9}", 1),
            ("😀😀😀", 2),
            ("😀😀😀", 5),
        ] {
            for line in [
                json!({"text": text}).to_string(),
                // The same text with every character escaped as \uXXXX.
                format!(
                    r#"{{"text":"{}"}}"#,
                    text.encode_utf16()
                        .map(|u| format!("\\u{u:04x}"))
                        .collect::<String>()
                ),
            ] {
                let (value, removed) = cut(&line, per_string);
                let kept = value["text"].as_str().unwrap();
                assert!(text.starts_with(kept), "{line} → {kept:?}");
                assert!(
                    kept.len() >= per_string.min(text.len()),
                    "{line} → {kept:?}"
                );
                assert_eq!(kept.len() as u64 + removed, text.len() as u64, "{line}");
            }
        }
    }

    #[test]
    fn gives_up_the_copy_when_it_grows_past_its_cap() {
        let mut scanner = Scanner::new(Some((4, 100)));
        scanner.feed(
            json!({"id": 2, "result": {"data": "x".repeat(500)}})
                .to_string()
                .as_bytes(),
        );
        let scan = scanner.finish();
        assert!(scan.cut.is_none());
        assert_eq!(scan.id.as_deref(), Some("2"));
    }
}
