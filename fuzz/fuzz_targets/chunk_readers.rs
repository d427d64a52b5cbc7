//! Arbitrary lines through the readers that skip a repeated envelope (`ChunkReader` for Chat
//! Completions, `BlockDeltaReader` for Anthropic deltas): every line reads exactly as parsing
//! it in full with serde_json does, including which lines fail and serde_json's error text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxpi_ai::internals::{BlockDeltaData, BlockDeltaReader, ChatChunk, ChunkReader};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut chunks = ChunkReader::new();
    let mut deltas = BlockDeltaReader::new();
    for line in text.lines() {
        let expected = serde_json::from_str::<ChatChunk>(line).map_err(|e| e.to_string());
        let got = chunks.read(line).map_err(|e| e.to_string());
        assert_eq!(got, expected, "{line}");
        assert_eq!(deltas.read(line), BlockDeltaData::parse(line), "{line}");
    }
});
