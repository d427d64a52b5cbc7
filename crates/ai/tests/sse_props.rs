//! Property: however a valid Chat Completions event stream is cut into network writes (and
//! whichever line ending it uses), the provider produces the same final message.

use std::time::Duration;

use oxpi_ai::{Context, Message, Model, StopReason, StreamOptions};
use oxpi_testkit::{Part, Reply, TestServer};
use proptest::prelude::*;
use serde_json::{json, Value};

fn body(deltas: &[String], args: &Value, crlf: bool) -> Vec<u8> {
    let mut chunks: Vec<Value> = deltas
        .iter()
        .map(|d| json!({"choices": [{"index": 0, "delta": {"content": d}}]}))
        .collect();
    let raw = args.to_string();
    let middle = (0..=raw.len() / 2)
        .rev()
        .find(|i| raw.is_char_boundary(*i))
        .unwrap_or(0);
    let (head, tail) = raw.split_at(middle);
    chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": head}}]}}]}));
    chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}}]}));
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut out = String::new();
    for chunk in chunks {
        out.push_str(&format!(": keep-alive comment{eol}data: {chunk}{eol}{eol}"));
    }
    out.push_str(&format!("data: [DONE]{eol}{eol}"));
    out.into_bytes()
}

fn args_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z0-9 é漢\\\\\"\n]{0,12}".prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .prop_map(|v| json!({"value": v}))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_split_of_the_stream_gives_the_same_message(
        deltas in prop::collection::vec("[a-zA-Z0-9 é漢\n:]{1,8}", 1..6),
        args in args_strategy(),
        crlf in any::<bool>(),
        cuts in prop::collection::vec(1usize..64, 0..24),
    ) {
        let bytes = body(&deltas, &args, crlf);
        let mut parts = Vec::new();
        let mut at = 0;
        for cut in cuts {
            let end = (at + cut).min(bytes.len());
            parts.push(Part::Bytes(bytes[at..end].to_vec()));
            parts.push(Part::Sleep(Duration::from_millis(1)));
            at = end;
        }
        parts.push(Part::Bytes(bytes[at..].to_vec()));
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let message = runtime.block_on(async {
            let server = TestServer::start(vec![Reply::sse_parts(parts)]).await.unwrap();
            let model = Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
            let context = Context::default().with_message(Message::user("x"));
            oxpi_ai::stream(&model, &context, StreamOptions::default()).result().await
        });
        prop_assert_eq!(message.stop_reason, StopReason::ToolUse, "{:?}", message.error_message);
        prop_assert_eq!(message.text(), deltas.concat());
        let call = message.tool_calls().next().cloned().unwrap_or_default();
        prop_assert_eq!(Value::Object(call.arguments), args);
    }
}

fn encode(events: &[(String, Vec<String>)], eol: &str) -> Vec<u8> {
    let mut out = String::new();
    for (name, lines) in events {
        out.push_str(&format!(": comment{eol}event: {name}{eol}"));
        for line in lines {
            out.push_str(&format!("data: {line}{eol}"));
        }
        out.push_str(eol);
    }
    out.into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// The SSE decoder: any events, any line ending, any split → the same events.
    #[test]
    fn the_sse_decoder_is_split_invariant(
        events in prop::collection::vec(("[a-z_.]{1,12}", prop::collection::vec("[^\r\n]{0,20}", 1..4)), 0..8),
        eol in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        cuts in prop::collection::vec(0usize..40, 0..32),
    ) {
        use oxpi_ai::sse::{SseDecoder, SseEvent};
        let bytes = encode(&events, eol);
        let mut decoder = SseDecoder::new();
        let mut got: Vec<SseEvent> = Vec::new();
        let mut at = 0;
        for cut in cuts {
            let end = (at + cut).min(bytes.len());
            decoder.feed(&bytes[at..end], &mut got).unwrap();
            at = end;
        }
        decoder.feed(&bytes[at..], &mut got).unwrap();
        let expected: Vec<SseEvent> = events
            .iter()
            .map(|(name, lines)| SseEvent { event: name.clone().into(), data: lines.join("\n"), id: String::new() })
            .collect();
        prop_assert_eq!(got, expected);
    }

    /// Arbitrary bytes never panic, and the result does not depend on how they are split.
    #[test]
    fn the_sse_decoder_takes_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300), cut in 0usize..300) {
        use oxpi_ai::sse::SseDecoder;
        let whole = {
            let mut d = SseDecoder::new();
            let mut out = Vec::new();
            d.feed(&bytes, &mut out).map(|_| out)
        };
        let split = {
            let mut d = SseDecoder::new();
            let mut out = Vec::new();
            let cut = cut.min(bytes.len());
            d.feed(&bytes[..cut], &mut out).and_then(|_| d.feed(&bytes[cut..], &mut out)).map(|_| out)
        };
        prop_assert_eq!(whole.is_ok(), split.is_ok());
        if let (Ok(a), Ok(b)) = (whole, split) {
            prop_assert_eq!(a, b);
        }
    }
}
