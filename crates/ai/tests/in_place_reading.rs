//! Long streams read the same whatever the network reads are: the deltas the providers read in
//! place (matched whole against the last delta's envelope, in the text of a network read)
//! give exactly the events the ordinary reading gives, for Chat Completions and Anthropic
//! Messages streams of text and tool-call deltas holding escapes, non-ASCII text and control
//! characters, with other events between them and invalid UTF-8 in the middle. The same body
//! is served over real HTTP in one piece and cut into pieces of many sizes (down to single
//! bytes, where almost nothing is read in place); every serving must give the same events.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use futures::StreamExt;
use oxpi_ai::{Context, Message, Model, StreamOptions};
use oxpi_testkit::wire::sse;
use oxpi_testkit::{Part, Reply, TestServer};
use serde_json::{json, Value};

/// Delta texts, cycled: plain, escaped once and twice in JSON, non-ASCII, control characters.
const PIECES: [&str; 9] = [
    "plain words ",
    "a \"quoted\" word",
    "back\\slash and \\\\n",
    "line\nbreak\ttab",
    "ünïcödé 漢字 😀",
    "\u{1}\u{1f}",
    "{\"json\": [1, 2]}",
    "x",
    "a longer piece of text than the eight bytes read at a time, and then some more",
];

/// The tool call's arguments: a JSON object whose text is cut into small fragments.
fn arguments() -> String {
    let content: String = (0..40).map(|i| PIECES[i % PIECES.len()]).collect();
    json!({"path": "notes/ünï.md", "content": content}).to_string()
}

/// `text` cut into pieces of about `size` bytes, on character boundaries.
fn fragments(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// An Anthropic Messages stream: text deltas, a ping, a tool call in fragments.
fn anthropic_body() -> Vec<u8> {
    let ev = |data: Value| sse(data["type"].as_str(), &data);
    let mut body = vec![ev(
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
    )];
    body.push(ev(
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ));
    for i in 0..300 {
        if i == 150 {
            body.push(ev(json!({"type": "ping"})));
        }
        let text = PIECES[i % PIECES.len()];
        body.push(ev(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ));
    }
    body.push(ev(json!({"type": "content_block_stop", "index": 0})));
    body.push(ev(
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}}}),
    ));
    let arguments = arguments();
    for fragment in fragments(&arguments, 7) {
        body.push(ev(
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": fragment}}),
        ));
    }
    body.push(ev(json!({"type": "content_block_stop", "index": 1})));
    body.push(ev(
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 7}}),
    ));
    body.push(ev(json!({"type": "message_stop"})));
    body.concat().into_bytes()
}

/// A Chat Completions stream: text deltas, a tool call in fragments.
fn completions_body() -> Vec<u8> {
    completions_body_with(json!({}))
}

/// [`completions_body`] with `extra`'s fields in every chunk (a gateway's padding, making each
/// event longer than the smallest window the driver checks at once).
fn completions_body_with(extra: Value) -> Vec<u8> {
    let chunk = |delta: Value| {
        let mut chunk = json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]});
        for (key, value) in extra.as_object().into_iter().flatten() {
            chunk[key] = value.clone();
        }
        sse(None, &chunk)
    };
    let mut body = Vec::new();
    for i in 0..300 {
        body.push(chunk(json!({"content": PIECES[i % PIECES.len()]})));
    }
    let arguments = arguments();
    for (i, fragment) in fragments(&arguments, 7).into_iter().enumerate() {
        let call = match i {
            0 => {
                json!({"index": 0, "id": "call_1", "type": "function", "function": {"name": "write", "arguments": fragment}})
            }
            _ => json!({"index": 0, "function": {"arguments": fragment}}),
        };
        body.push(chunk(json!({"tool_calls": [call]})));
    }
    body.push(sse(
        None,
        &json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ));
    body.push(sse(
        None,
        &json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}}),
    ));
    body.push("data: [DONE]\n\n".to_string());
    body.concat().into_bytes()
}

/// `body` with a byte that is not UTF-8 put into the `n`th text delta (a `d` of "words").
fn with_invalid_utf8(mut body: Vec<u8>, n: usize) -> Vec<u8> {
    let at = body
        .windows(5)
        .enumerate()
        .filter(|(_, w)| w == b"words")
        .nth(n)
        .map(|(at, _)| at + 3)
        .unwrap();
    body[at] = 0xFF;
    body
}

/// `body` cut into pieces of the sizes `sizes` cycles through.
fn cut(body: &[u8], sizes: &[usize]) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut start = 0;
    for &size in sizes.iter().cycle() {
        if start >= body.len() {
            break;
        }
        let end = (start + size).min(body.len());
        parts.push(Part::Bytes(body[start..end].to_vec()));
        start = end;
    }
    parts
}

/// Every event of the reply to `parts`, as JSON without timestamps.
async fn events(api: &str, parts: Vec<Part>) -> Vec<Value> {
    let server = TestServer::start(vec![Reply::sse_parts(parts)])
        .await
        .unwrap();
    let mut model = Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
    model.api = api.into();
    model.provider = "in-place".to_string();
    let context = Context::new("Be brief.").with_message(Message::user("go"));
    let options = StreamOptions::default().with_api_key("test-key");
    let mut stream = oxpi_ai::stream(&model, &context, options);
    let mut out = Vec::new();
    while let Some(event) = stream.next().await {
        let mut value = serde_json::to_value(&event).unwrap();
        without_timestamps(&mut value);
        out.push(value);
    }
    out
}

fn without_timestamps(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("timestamp");
            map.values_mut().for_each(without_timestamps);
        }
        Value::Array(items) => items.iter_mut().for_each(without_timestamps),
        _ => {}
    }
}

/// The servings compared: whole, cut in fixed sizes, and in sizes that shift the cuts.
const CUTS: [&[usize]; 7] = [
    &[usize::MAX],
    &[1],
    &[2, 3, 5],
    &[64],
    &[137, 4096],
    &[1000, 7, 20_000],
    &[65_536],
];

async fn every_serving_gives_the_same_events(api: &str, body: Vec<u8>) -> Vec<Value> {
    let whole = events(api, cut(&body, CUTS[0])).await;
    for sizes in &CUTS[1..] {
        let served = events(api, cut(&body, sizes)).await;
        assert_eq!(served.len(), whole.len(), "{api}, pieces of {sizes:?}");
        for (n, (a, b)) in served.iter().zip(&whole).enumerate() {
            assert_eq!(a, b, "{api}, pieces of {sizes:?}, event {n}");
        }
    }
    whole
}

#[tokio::test]
async fn anthropic_deltas_read_the_same_whatever_the_network_reads() {
    let events = every_serving_gives_the_same_events("anthropic-messages", anthropic_body()).await;
    assert_done_with_everything_sent(&events);
}

/// The last event is `done` with the 300 text deltas and the tool call's arguments.
fn assert_done_with_everything_sent(events: &[Value]) {
    let done = events.last().unwrap();
    assert_eq!(done["type"], "done", "{done}");
    let expected_text: String = (0..300).map(|i| PIECES[i % PIECES.len()]).collect();
    assert_eq!(done["message"]["content"][0]["text"], expected_text);
    let arguments: Value = serde_json::from_str(&arguments()).unwrap();
    assert_eq!(done["message"]["content"][1]["arguments"], arguments);
}

#[tokio::test]
async fn completions_deltas_read_the_same_whatever_the_network_reads() {
    let events =
        every_serving_gives_the_same_events("openai-completions", completions_body()).await;
    assert_done_with_everything_sent(&events);
}

#[tokio::test]
async fn chunks_longer_than_the_smallest_window_read_the_same_whatever_the_network_reads() {
    // Chunks of ~500 bytes, as gateways that add their own fields send them.
    let padding = json!({
        "model": "a-long-model-name-2026-12-03",
        "created": 1_764_720_000,
        "system_fingerprint": "fp_0123456789abcdef",
        "service_tier": "default",
        "provider": {"name": "some-gateway", "region": "eu-west-1", "route": "primary"},
        "usage": null,
        "obfuscation": "x".repeat(120),
    });
    let body = completions_body_with(padding);
    let events = every_serving_gives_the_same_events("openai-completions", body).await;
    assert_done_with_everything_sent(&events);
}

#[tokio::test]
async fn invalid_utf8_after_many_deltas_fails_the_same_whatever_the_network_reads() {
    for (api, body) in [
        ("anthropic-messages", anthropic_body()),
        ("openai-completions", completions_body()),
    ] {
        let events = every_serving_gives_the_same_events(api, with_invalid_utf8(body, 20)).await;
        let error = events.last().unwrap();
        assert_eq!(error["type"], "error", "{api}: {error}");
        let text = error["error"]["errorMessage"].as_str().unwrap_or_default();
        assert!(text.contains("UTF-8"), "{api}: {text}");
        // What arrived before it is kept: the deltas before the twentieth "words".
        let kept = error["error"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(kept.matches("words").count(), 20, "{api}");
    }
}
