//! The chunk readers that skip a repeated envelope (`ChunkReader` for Chat Completions,
//! `BlockDeltaReader` for Anthropic Messages) against plain serde_json: over every recorded
//! stream, and over generated streams whose fragments hold anything (quotes, backslashes,
//! control characters, escapes, non-ASCII text, broken literals), every chunk reads exactly as
//! parsing it in full does, including which chunks fail and serde_json's error text. And the
//! Chat Completions chunks that are a fragment alone, applied without building the chunk
//! (`ChunkProcessor::process_data`), give exactly the events that building and processing
//! every chunk gives.

use futures::StreamExt;
use oxpi_ai::internals::BlockDeltaData;
use oxpi_ai::internals::BlockDeltaReader;
use oxpi_ai::internals::ChatChunk;
use oxpi_ai::internals::ChunkReader;
use oxpi_ai::internals::{ChunkProcessor, OpenAiCompat};
use oxpi_ai::sse::{SseDecoder, SseEvent};
use oxpi_ai::{AssistantMessageEvent, AssistantMessageEventStream, Model, ReplyBuilder};
use oxpi_testkit::recorded_requests;
use proptest::prelude::*;

/// The events of a recorded response body.
fn events(body: &[u8]) -> Vec<SseEvent> {
    let mut events = Vec::new();
    SseDecoder::new()
        .feed(body, &mut events)
        .expect("recorded bodies are UTF-8");
    events
}

/// Every recorded response body of `provider` whose request went to a path ending in `path`.
fn recorded_bodies(provider: &str, path: &str) -> Vec<(String, Vec<u8>)> {
    recorded_requests(provider)
        .into_iter()
        .filter_map(|request_path| {
            let request: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&request_path).ok()?).ok()?;
            if !request["path"].as_str()?.ends_with(path) {
                return None;
            }
            let stem = request_path
                .to_string_lossy()
                .trim_end_matches(".request.json")
                .to_string();
            let body = std::fs::read(format!("{stem}.response.sse")).ok()?;
            Some((stem, body))
        })
        .collect()
}

/// Reads `chunks` in order with a [`ChunkReader`]; each result must equal serde_json's
/// (the same chunk, or the same error). Returns how many went through the envelope.
fn check_chat_chunks<'a>(
    chunks: impl IntoIterator<Item = &'a str>,
    context: &str,
) -> Result<u64, String> {
    let mut reader = ChunkReader::new();
    for (n, data) in chunks.into_iter().enumerate() {
        let expected = serde_json::from_str::<ChatChunk<'_>>(data).map_err(|e| e.to_string());
        let got = reader.read(data).map_err(|e| e.to_string());
        if got != expected {
            return Err(format!(
                "{context}, chunk {n}: {data}\n  reader {got:?}\n  serde  {expected:?}"
            ));
        }
    }
    Ok(reader.repeats())
}

/// The same for Anthropic `content_block_delta` data and [`BlockDeltaReader`].
fn check_block_deltas<'a>(
    deltas: impl IntoIterator<Item = &'a str>,
    context: &str,
) -> Result<u64, String> {
    let mut reader = BlockDeltaReader::new();
    for (n, data) in deltas.into_iter().enumerate() {
        let expected = BlockDeltaData::parse(data);
        let got = reader.read(data);
        if got != expected {
            return Err(format!(
                "{context}, delta {n}: {data}\n  reader {got:?}\n  parse  {expected:?}"
            ));
        }
    }
    Ok(reader.repeats())
}

/// The events of a Chat Completions reply made of `chunks`: each chunk read and applied by
/// `ChunkProcessor::process_data` (`fast`), or read whole with `ChunkReader::read` and applied
/// with `process`, as JSON. Generated tool-call ids (random) read `call_generated`, and the
/// message timestamps (the clock) are left out.
fn chat_events(chunks: &[&str], fast: bool, text_calls: bool) -> Vec<serde_json::Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let events: Vec<AssistantMessageEvent> = runtime.block_on(async {
        let mut model = Model::openai_compatible("http://test.invalid/v1", "m");
        model.compat = Some(serde_json::json!({ "toolCallsInText": text_calls }));
        let compat = OpenAiCompat::for_model(&model).expect("compat");
        let (sink, events) = AssistantMessageEventStream::channel(None);
        let producer = async move {
            let out = ReplyBuilder::new(&model, sink);
            let mut processor = ChunkProcessor::new(out, &model, &compat, vec!["read".into()]);
            let mut reader = ChunkReader::new();
            for data in chunks {
                let applied = if fast {
                    processor.process_data(&mut reader, data).await
                } else {
                    match reader.read(data) {
                        Ok(mut chunk) => processor.process(&mut chunk).await,
                        // For the same failure text: a chunk that does not parse leaves the
                        // reader as it was, and fails again.
                        Err(_) => processor.process_data(&mut reader, data).await,
                    }
                };
                if let Err(failure) = applied {
                    processor.fail(failure).await;
                    return;
                }
            }
            processor.finish().await;
        };
        let ((), events) = futures::join!(producer, events.collect::<Vec<_>>());
        events
    });
    events
        .iter()
        .map(|event| {
            let mut value = serde_json::to_value(event).expect("events serialize");
            forget_random_parts(&mut value);
            value
        })
        .collect()
}

/// Replaces every generated tool-call id (`call_` and 24 hex digits) in `value`, and removes
/// every `timestamp`.
fn forget_random_parts(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => {
            let hex = text.strip_prefix("call_").unwrap_or_default();
            if hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                *text = "call_generated".into();
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(forget_random_parts),
        serde_json::Value::Object(map) => {
            map.remove("timestamp");
            map.values_mut().for_each(forget_random_parts);
        }
        _ => {}
    }
}

/// `chunks` applied through their fragments give the same events as built and processed.
fn check_chat_events(chunks: &[&str], text_calls: bool) -> Result<(), String> {
    let slow = chat_events(chunks, false, text_calls);
    let fast = chat_events(chunks, true, text_calls);
    if fast == slow {
        return Ok(());
    }
    let at = fast.iter().zip(&slow).take_while(|(a, b)| a == b).count();
    Err(format!(
        "event {at} differs ({} and {} events):\n  fast {:?}\n  slow {:?}",
        fast.len(),
        slow.len(),
        fast.get(at),
        slow.get(at)
    ))
}

#[test]
fn every_recorded_chat_completions_chunk_reads_as_serde_json_parses_it() {
    let providers = [
        "openai",
        "openrouter",
        "deepseek",
        "mistral",
        "groq",
        "llamacpp",
        "copilot",
        "venice",
        "perplexity",
        "doubleword",
        "mistralrs",
        "xai",
    ];
    let (mut streams, mut chunks, mut repeats) = (0, 0, 0);
    for provider in providers {
        for (stem, body) in recorded_bodies(provider, "/chat/completions") {
            let events = events(&body);
            let data: Vec<&str> = events
                .iter()
                .map(|e| e.data.trim())
                .filter(|d| !d.is_empty() && *d != "[DONE]")
                .collect();
            repeats += check_chat_chunks(data.iter().copied(), &stem).unwrap();
            if let Err(e) = check_chat_events(&data, false) {
                panic!("{stem}: {e}");
            }
            chunks += data.len() as u64;
            streams += 1;
        }
    }
    eprintln!("{streams} streams, {chunks} chunks, {repeats} read through their envelope");
    assert!(streams > 200, "only {streams} recorded streams found");
    // Most recorded servers repeat their envelope; OpenAI's own pads each chunk differently.
    assert!(
        repeats * 4 > chunks,
        "only {repeats} of {chunks} chunks were read through their envelope"
    );
}

#[test]
fn every_recorded_anthropic_delta_reads_as_a_full_parse_does() {
    let (mut streams, mut deltas, mut repeats) = (0, 0, 0);
    for (stem, body) in recorded_bodies("anthropic", "/messages") {
        let events = events(&body);
        let data: Vec<&str> = events
            .iter()
            .filter(|e| e.event == "content_block_delta")
            .map(|e| e.data.trim())
            .collect();
        repeats += check_block_deltas(data.iter().copied(), &stem).unwrap();
        deltas += data.len() as u64;
        streams += 1;
    }
    eprintln!("{streams} streams, {deltas} deltas, {repeats} read through their envelope");
    assert!(streams > 100, "only {streams} recorded streams found");
    // Recorded replies are short: the first delta of each block is always parsed in full.
    assert!(
        repeats * 3 > deltas,
        "only {repeats} of {deltas} deltas were read through their envelope"
    );
}

/// A fragment as it could appear between the quotes of a chunk: usually a correctly escaped
/// string, sometimes raw text that may not be a valid literal at all.
fn arb_fragment() -> impl Strategy<Value = String> {
    let text = prop_oneof![
        any::<String>(),
        "[\"\\\\/\u{0}-\u{1f}ab \u{e9}\u{1F600}{}:,\\[\\]]{0,12}",
    ];
    prop_oneof![
        3 => text.clone().prop_map(|s| {
            let quoted = serde_json::to_string(&s).expect("strings serialize");
            quoted[1..quoted.len() - 1].to_string()
        }),
        1 => text,
        1 => "(\\\\[\"\\\\/bfnrtu]|\\\\u[0-9a-fA-FdD]{0,4}|[a\"\\\\}\\],:]){0,6}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Chat Completions chunks of every kind of delta, in runs of one envelope each.
    #[test]
    fn chat_chunks_read_as_serde_json_parses_them(
        runs in prop::collection::vec((0usize..6, 0u8..3, prop::collection::vec(arb_fragment(), 1..8)), 1..6)
    ) {
        let parts = runs.iter().flat_map(|(shape, id, fragments)| fragments.iter().map(move |f| (shape, id, f)));
        let chunks: Vec<String> = parts
            .map(|(shape, id, fragment)| {
                let envelope = format!(r#""id":"c{id}","object":"chat.completion.chunk","created":1"#);
                match shape {
                    0 => format!(r#"{{{envelope},"choices":[{{"index":0,"delta":{{"content":"{fragment}"}},"finish_reason":null}}]}}"#),
                    1 => format!(r#"{{{envelope},"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":"{fragment}"}}}}]}}}}]}}"#),
                    2 => format!(r#"{{"choices":[{{"delta":{{"reasoning_content":"{fragment}"}}}}],{envelope}}}"#),
                    3 => format!(r#"{{{envelope},"choices":[{{"delta":{{"reasoning":"{fragment}","content":"x"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":3}}}}"#),
                    4 => format!(r#"{{"choices":[{{"delta":{{"reasoning":"{fragment}"}}}}],{envelope},"usage":null}}"#),
                    _ => format!(r#"{{{envelope},"choices":[{{"delta":{{"tool_calls":[{{"index":1,"id":"t","function":{{"name":"n","arguments":"{fragment}"}}}}]}}}}]}}"#),
                }
            })
            .collect();
        let result = check_chat_chunks(chunks.iter().map(String::as_str), "generated");
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        for text_calls in [false, true] {
            let result = check_chat_events(&chunks, text_calls);
            prop_assert!(result.is_ok(), "{}", result.unwrap_err());
        }
    }

    /// Anthropic deltas of every type, in runs of one block and type each.
    #[test]
    fn block_deltas_read_as_a_full_parse_does(
        runs in prop::collection::vec((0usize..5, 0u8..3, prop::collection::vec(arb_fragment(), 1..8)), 1..6)
    ) {
        let parts = runs.iter().flat_map(|(kind, index, fragments)| fragments.iter().map(move |f| (kind, index, f)));
        let deltas: Vec<String> = parts
            .map(|(kind, index, fragment)| match kind {
                0 => format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{fragment}"}}}}"#),
                1 => format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"input_json_delta","partial_json":"{fragment}"}}}}"#),
                2 => format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"thinking_delta","thinking":"{fragment}"}}}}"#),
                3 => format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"signature_delta","signature":"{fragment}"}}}}"#),
                _ => format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{fragment}","partial_json":"x"}}}}"#),
            })
            .collect();
        let result = check_block_deltas(deltas.iter().map(String::as_str), "generated");
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}
