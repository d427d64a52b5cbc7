//! Tests of [`PartialJson`] (`crate::partial_json`).

use super::*;
use serde_json::json;

fn parse_split(text: &str, size: usize) -> Result<Value, PartialJsonError> {
    let mut p = PartialJson::new();
    let chars: Vec<char> = text.chars().collect();
    for chunk in chars.chunks(size.max(1)) {
        p.push(&chunk.iter().collect::<String>());
    }
    p.finish()
}

#[test]
fn every_split_of_valid_json_gives_the_whole_value() {
    let samples = [
        r#"{"path":"note.txt","offset":1,"limit":20}"#,
        r#" { "a" : [1, -2.5e3, true, false, null, {"b": []}, "x\"y\\z\u00e9\ud83d\ude00\n"] , "c": {} } "#,
        r#"[]"#,
        r#""just a string""#,
        r#"12345"#,
        r#"{"emoji":"本次验证代号","n":0,"neg":-0.0,"big":12345678901234567890}"#,
        // Plain runs longer than a word (read eight bytes at a time) between escapes, with
        // multibyte characters on and across the word boundaries.
        r#"{"path":"src/some/longer/path.txt","content":"line one of the file\nline two \"quoted\" 本次验证代号 and more plain text\\\/\t\r\b\f\u00e9\ud83d\ude00 tail after the escapes"}"#,
    ];
    for text in samples {
        let whole: Value = serde_json::from_str(text).unwrap();
        for size in 1..=text.chars().count() {
            assert_eq!(
                parse_split(text, size),
                Ok(whole.clone()),
                "{text} split by {size}"
            );
        }
    }
}

#[test]
fn snapshot_shows_progress() {
    let mut p = PartialJson::new();
    assert_eq!(p.snapshot(), None);
    p.push(r#"{"items": [1, 2"#);
    assert_eq!(p.snapshot(), Some(&json!({"items": [1, 2]})));
    p.push(r#"], "na"#);
    assert_eq!(p.snapshot(), Some(&json!({"items": [1, 2]})));
    p.push(r#"me": "ab"#);
    assert_eq!(p.snapshot(), Some(&json!({"items": [1, 2], "name": "ab"})));
    p.push(r#"c", "ok": tr"#);
    assert_eq!(p.snapshot(), Some(&json!({"items": [1, 2], "name": "abc"})));
}

/// A repeated key whose new value is still open: a snapshot shows the open value while it
/// is one, and the key's earlier value (not nothing) while it is not (found by
/// `tests/partial_json_props.rs`: `{"":null,"": 17.e2` cut after `17`).
#[test]
fn a_repeated_key_keeps_its_earlier_value_between_snapshots() {
    let mut p = PartialJson::new();
    p.push(r#"{"a": 1, "b": 2, "a": 17"#);
    assert_eq!(p.snapshot(), Some(&json!({"a": 17, "b": 2})));
    p.push(".");
    assert_eq!(p.snapshot(), Some(&json!({"a": 1, "b": 2})));
    p.push("5}");
    assert_eq!(p.snapshot(), Some(&json!({"a": 17.5, "b": 2})));
    assert_eq!(p.finish(), Ok(json!({"a": 17.5, "b": 2})));
}

#[test]
fn snapshots_follow_strings_numbers_and_nesting_as_they_grow() {
    let mut p = PartialJson::new();
    let steps = [
        ("[", json!([])),
        ("-", json!([])),
        ("1", json!([-1])),
        // "-1." is not a number (yet): left out until it is one again.
        (".", json!([])),
        ("5", json!([-1.5])),
        (", {\"a\": [\"x", json!([-1.5, {"a": ["x"]}])),
        ("y\\u00", json!([-1.5, {"a": ["xy"]}])),
        ("e9\"], \"b\": {", json!([-1.5, {"a": ["xyé"], "b": {}}])),
        ("}}, nul", json!([-1.5, {"a": ["xyé"], "b": {}}])),
        ("l]", json!([-1.5, {"a": ["xyé"], "b": {}}, null])),
    ];
    for (fragment, expected) in steps {
        p.push(fragment);
        assert_eq!(p.snapshot(), Some(&expected), "after {fragment:?}");
    }
    assert_eq!(p.finish(), Ok(json!([-1.5, {"a": ["xyé"], "b": {}}, null])));
}

#[test]
fn nesting_is_limited_like_serde_json() {
    let deep = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert!(serde_json::from_str::<Value>(&deep).is_ok());
    assert_eq!(parse_split(&deep, 7).map(|_| ()), Ok(()));
    let deeper = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert!(serde_json::from_str::<Value>(&deeper).is_err());
    assert_eq!(
        parse_split(&deeper, 7),
        Err(PartialJsonError::TooDeep { offset: MAX_DEPTH })
    );
}

#[test]
fn invalid_input_is_an_error_not_a_panic() {
    let cases = [
        (r#"{"a":1"#, PartialJsonError::Incomplete { offset: 6 }),
        (
            r#"{"a" 1}"#,
            PartialJsonError::Unexpected { ch: '1', offset: 5 },
        ),
        (
            r#"{"a":1}}"#,
            PartialJsonError::Unexpected { ch: '}', offset: 7 },
        ),
        (
            r#"{"a":tru}"#,
            PartialJsonError::Unexpected { ch: '}', offset: 8 },
        ),
        (
            r#"{"a":1,}"#,
            PartialJsonError::Unexpected { ch: '}', offset: 7 },
        ),
        (
            r#"[1,]"#,
            PartialJsonError::Unexpected { ch: ']', offset: 3 },
        ),
        // A control character after a long plain run, and after an escape.
        (
            "{\"a\":\"plain text longer than a word\u{1}\"}",
            PartialJsonError::Unexpected {
                ch: '\u{1}',
                offset: 35,
            },
        ),
        (
            "{\"a\":\"x\\n\u{1f}\"}",
            PartialJsonError::Unexpected {
                ch: '\u{1f}',
                offset: 9,
            },
        ),
        ("", PartialJsonError::Empty),
        ("   ", PartialJsonError::Empty),
        (
            r#"{"a":"\ud800"}"#,
            PartialJsonError::InvalidEscape { offset: 12 },
        ),
        (
            r#"{"a":01x}"#,
            PartialJsonError::InvalidNumber {
                text: "01".into(),
                offset: 7,
            },
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_split(text, 1), Err(expected.clone()), "{text:?}");
        assert_eq!(parse_split(text, 1000), Err(expected), "{text:?} whole");
    }
}
