//! Bedrock against a server that answers as an adversary would: a redirect to another origin
//! (SigV4's `authorization` and `x-amz-security-token` must not follow), a frame that declares
//! 4 GB, tool input for a block that was never started or is not open, a model id that would
//! be a dot segment.

use super::with_feature::{event, options, reply, stream, CLAUDE, SESSION};
use super::*;

use std::time::Duration;

use oxpi_testkit::{Part, Reply, TestServer};
use serde_json::{json, Value};

/// The SigV4 headers never reach another origin: the redirect is not followed.
#[tokio::test]
async fn a_redirect_to_another_origin_gets_no_signed_request() {
    let elsewhere = TestServer::start(Vec::new()).await.unwrap();
    let location = format!("{}/model/x/converse-stream", elsewhere.base_url());
    let server = TestServer::start(vec![Reply::Respond {
        status: 307,
        headers: vec![("location".into(), location)],
        body: Vec::new(),
    }])
    .await
    .unwrap();
    let message = stream(&model(&server, CLAUDE), &user_context("hi"), options()).await;
    assert_eq!(elsewhere.requests(), Vec::new());
    assert_eq!(
        server.requests()[0].header("x-amz-security-token"),
        Some(SESSION)
    );
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.unwrap_or_default();
    assert!(
        error.contains(&format!("another origin ({})", elsewhere.base_url())),
        "{error}"
    );
}

/// A prelude that declares 4 GB fails as soon as its 12 bytes arrive, while the server keeps
/// the connection open (it was buffered until the body ended; here, until the idle timer).
#[tokio::test]
async fn a_frame_that_declares_4_gb_fails_at_once() {
    let mut prelude = Vec::new();
    prelude.extend_from_slice(&u32::MAX.to_be_bytes());
    prelude.extend_from_slice(&0u32.to_be_bytes());
    let crc = crc32(&prelude);
    prelude.extend_from_slice(&crc.to_be_bytes());
    let server = TestServer::start(vec![Reply::Respond {
        status: 200,
        headers: vec![(
            "content-type".into(),
            "application/vnd.amazon.eventstream".into(),
        )],
        body: vec![
            Part::Bytes(event("messageStart", json!({"role": "assistant"}))),
            Part::Bytes(prelude),
            Part::Stall,
        ],
    }])
    .await
    .unwrap();
    let options = options().with_idle_timeout(Duration::from_secs(120));
    let started = std::time::Instant::now();
    let message = stream(&model(&server, CLAUDE), &user_context("hi"), options).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("The stream was interrupted: an event-stream frame is invalid (a frame declares 4294967295 bytes, more than the 16777216 allowed)")
    );
    // Far below the idle timer it used to wait for.
    assert!(started.elapsed() < Duration::from_secs(60));
}

/// The CRC-32 (IEEE) of `bytes`, computed here bit by bit so the test does not share the
/// implementation it checks.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn tool_start(index: u64, id: &str) -> Vec<u8> {
    event(
        "contentBlockStart",
        json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": "read"}}}),
    )
}

fn tool_input(index: u64, input: &str) -> Vec<u8> {
    event(
        "contentBlockDelta",
        json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": input}}}),
    )
}

fn text(index: u64, text: &str) -> Vec<u8> {
    event(
        "contentBlockDelta",
        json!({"contentBlockIndex": index, "delta": {"text": text}}),
    )
}

fn stop(index: u64) -> Vec<u8> {
    event("contentBlockStop", json!({"contentBlockIndex": index}))
}

fn ending() -> [Vec<u8>; 2] {
    [
        event("messageStop", json!({"stopReason": "tool_use"})),
        event(
            "metadata",
            json!({"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}),
        ),
    ]
}

/// Tool input for a block that never started, or text interleaved with an open call's input,
/// was dropped (a `toolUse` reply with no call, or a call with `{}`); now each is an error that
/// names the blocks, and the text that did arrive is kept.
#[tokio::test]
async fn tool_input_out_of_order_is_an_error_never_a_loss() {
    let cases: [(Vec<Vec<u8>>, &str); 3] = [
        (
            vec![tool_input(0, r#"{"path":"a.txt"}"#), stop(0)],
            "tool-use input arrived for block 0, which was never started",
        ),
        (
            vec![
                tool_start(1, "t1"),
                tool_input(1, r#"{"path":"#),
                text(0, "meanwhile"),
                tool_input(1, r#""a.txt"}"#),
                stop(1),
            ],
            "a contentBlockDelta arrived for block 0 while block 1 is open",
        ),
        (
            vec![tool_start(0, "t1"), text(0, "not input"), stop(0)],
            "text or reasoning arrived for block 0, which is a tool call",
        ),
    ];
    for (frames, expected) in cases {
        let mut frames = frames;
        frames.insert(0, event("messageStart", json!({"role": "assistant"})));
        frames.extend(ending());
        let server = TestServer::start(vec![reply(frames)]).await.unwrap();
        let message = stream(&model(&server, CLAUDE), &user_context("hi"), options()).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{expected}");
        assert_eq!(message.error_message.as_deref(), Some(expected));
    }
}

/// Two calls whose blocks follow each other, each with its own index, both arrive whole.
#[tokio::test]
async fn two_calls_by_index_both_arrive() {
    let mut frames = vec![
        event("messageStart", json!({"role": "assistant"})),
        tool_start(0, "t1"),
        tool_input(0, r#"{"path":"a"}"#),
        stop(0),
        tool_start(1, "t2"),
        tool_input(1, r#"{"path":"b"}"#),
        stop(1),
    ];
    frames.extend(ending());
    let server = TestServer::start(vec![reply(frames)]).await.unwrap();
    let message = stream(&model(&server, CLAUDE), &user_context("hi"), options()).await;
    let calls: Vec<(String, Value)> = message
        .tool_calls()
        .map(|c| (c.id.clone(), Value::Object(c.arguments.clone())))
        .collect();
    assert_eq!(
        calls,
        [
            ("t1".to_string(), json!({"path": "a"})),
            ("t2".to_string(), json!({"path": "b"}))
        ]
    );
}

/// A model id of `..` would move the request up a path segment (URL parsers resolve it even
/// percent-encoded): refused before anything is sent. Other ids are one encoded segment.
#[tokio::test]
async fn a_model_id_that_is_a_dot_segment_is_refused() {
    let server = TestServer::start(Vec::new()).await.unwrap();
    let message = stream(&model(&server, ".."), &user_context("hi"), options()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some(r#"the model id ".." cannot go into a URL path (it is empty, "." or "..")"#)
    );
    assert_eq!(server.requests(), Vec::new());

    let server = TestServer::start(vec![Reply::json_error(404, "{}")])
        .await
        .unwrap();
    stream(&model(&server, "../x?y#z"), &user_context("hi"), options()).await;
    assert_eq!(
        server.requests()[0].path,
        "/model/..%2Fx%3Fy%23z/converse-stream"
    );
}

/// Two calls with the same `toolUseId` in one reply: the second gets `_2` appended.
#[tokio::test]
async fn a_repeated_tool_use_id_is_made_unique() {
    let mut frames = vec![
        event("messageStart", json!({"role": "assistant"})),
        tool_start(0, "tooluse_1"),
        tool_input(0, r#"{"path":"a"}"#),
        stop(0),
        tool_start(1, "tooluse_1"),
        tool_input(1, r#"{"path":"b"}"#),
        stop(1),
    ];
    frames.extend(ending());
    let server = TestServer::start(vec![reply(frames)]).await.unwrap();
    let message = stream(&model(&server, CLAUDE), &user_context("hi"), options()).await;
    let ids: Vec<&str> = message.tool_calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["tooluse_1", "tooluse_1_2"]);
}
