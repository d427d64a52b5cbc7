//! The SSE decoder on arbitrary bytes split at an arbitrary point: never panics, and the split
//! never changes the outcome.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxpi_ai::sse::SseDecoder;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, bytes)) = data.split_first() else { return };
    let cut = usize::from(cut).min(bytes.len());
    let mut whole = SseDecoder::new();
    let mut whole_events = Vec::new();
    let whole_result = whole.feed(bytes, &mut whole_events);
    let mut split = SseDecoder::new();
    let mut split_events = Vec::new();
    let split_result = split
        .feed(&bytes[..cut], &mut split_events)
        .and_then(|()| split.feed(&bytes[cut..], &mut split_events));
    assert_eq!(whole_result.is_ok(), split_result.is_ok());
    if whole_result.is_ok() {
        assert_eq!(whole_events, split_events);
    }
});
