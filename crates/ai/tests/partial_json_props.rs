//! Property tests of `partial_json::PartialJson` against serde_json: any JSON value, compact or pretty, split anywhere into any chunks, parses to serde_json's value; arbitrary text never panics and is rejected whenever serde_json rejects it.

use oxpi_ai::partial_json::PartialJson;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Number, Value};

/// Arbitrary JSON values: every scalar kind (full i64/u64 range, finite floats, any Unicode
/// strings including control characters and quotes), nested arrays and objects.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        any::<String>().prop_map(Value::String),
        "[\"\\\\/\u{0}-\u{1f}a\u{e9}\u{1F600}]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// `text` cut at the char boundaries picked by `cuts` (any number, any places, repeats allowed).
fn split<'a>(text: &'a str, cuts: &[Index]) -> Vec<&'a str> {
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect();
    let mut points: Vec<usize> = cuts.iter().map(|c| *c.get(&boundaries)).collect();
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    points.dedup();
    points.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

/// Feeds `chunks`, then finishes. After each chunk the snapshot must be what a parser given
/// the same text in one piece shows, and taking it must not change what follows: how the
/// text was split and when snapshots were taken never shows.
fn parse_chunks(chunks: &[&str]) -> Result<Value, oxpi_ai::partial_json::PartialJsonError> {
    let mut parser = PartialJson::new();
    let mut fed = String::new();
    for chunk in chunks {
        parser.push(chunk);
        fed.push_str(chunk);
        if parser.error().is_none() {
            let mut whole = PartialJson::new();
            whole.push(&fed);
            assert_eq!(parser.snapshot(), whole.snapshot(), "after {fed:?}");
        }
    }
    if parser.error().is_none() {
        assert_eq!(parser.len(), chunks.iter().map(|c| c.len()).sum::<usize>());
    }
    parser.finish()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        // Failures are reported with their minimal input; nothing is written next to the tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_value_split_anywhere_parses_like_serde_json(
        value in arb_json(),
        cuts in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        for text in [
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap(),
        ] {
            let expected: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(parse_chunks(&split(&text, &cuts)), Ok(expected.clone()), "{}", text);
            // One char at a time, and all at once.
            let chars: Vec<String> = text.chars().map(String::from).collect();
            let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
            prop_assert_eq!(parse_chunks(&chars), Ok(expected.clone()));
            prop_assert_eq!(parse_chunks(&[text.as_str()]), Ok(expected));
        }
    }

    #[test]
    fn a_snapshot_of_a_complete_object_is_the_object(
        pairs in prop::collection::vec((any::<String>(), arb_json()), 0..5),
        cuts in prop::collection::vec(any::<Index>(), 0..8),
    ) {
        let value = Value::Object(pairs.into_iter().collect());
        let text = serde_json::to_string(&value).unwrap();
        let mut parser = PartialJson::new();
        for chunk in split(&text, &cuts) {
            parser.push(chunk);
            // Every prefix of an object snapshots to an object (once `{` arrived).
            let snapshot = parser.snapshot();
            prop_assert!(matches!(snapshot, Some(Value::Object(_))), "{:?}", snapshot);
        }
        prop_assert_eq!(parser.snapshot(), Some(&value));
        prop_assert_eq!(parser.finish(), Ok(value));
    }

    #[test]
    fn arbitrary_text_never_panics_and_errs_when_serde_json_does(
        text in prop_oneof![
            any::<String>(),
            // Near-JSON: the characters JSON is made of, so many inputs are almost valid.
            "[{}\\[\\]\":, \n0-9a-zE.+\\-\\\\]{0,60}",
            // Objects with damage: valid prefixes, stray or missing punctuation.
            "\\{(\"[a-z\\\\u0-9]{0,4}\" ?: ?(-?[0-9.eE+]{1,5}|\"[a-z\\\\]{0,3}\"|true|fals|null|\\[[0-9,]{0,4}\\]?)(, ?)?){0,4}\\}?",
        ],
        cuts in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        let ours = parse_chunks(&split(&text, &cuts));
        match serde_json::from_str::<Value>(&text) {
            Err(_) => prop_assert!(ours.is_err(), "serde_json rejects {:?} but PartialJson gave {:?}", text, ours),
            Ok(expected) => prop_assert_eq!(ours, Ok(expected), "{:?}", text),
        }
    }
}
