//! The incremental JSON parser on arbitrary input cut at arbitrary places: never panics, and
//! agrees with serde_json on every input (same value when valid, an error when not).
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxpi_ai::partial_json::PartialJson;

fuzz_target!(|data: &[u8]| {
    let Some((&step, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let step = usize::from(step % 16) + 1;
    let chars: Vec<char> = text.chars().collect();
    let mut parser = PartialJson::new();
    for chunk in chars.chunks(step) {
        parser.push(&chunk.iter().collect::<String>());
        let _ = parser.snapshot();
    }
    let ours = parser.finish();
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(value) => assert_eq!(ours.ok(), Some(value), "valid JSON must parse the same: {text:?}"),
        Err(_) => assert!(ours.is_err(), "invalid JSON must fail: {text:?}"),
    }
});
