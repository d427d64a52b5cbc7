//! One conformance suite for every wire API: the same scenarios (text, thinking, one and
//! parallel tool calls, length stop, abort) and the same faults (HTTP errors, retries, resets,
//! cut streams, garbage, stalls, huge events, invalid UTF-8, missing terminal events, error
//! events mid-stream), each rendered in the API's own wire format and served over real HTTP.
//! RELIABILITY.md lists the resulting matrix.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::time::Duration;

use futures::StreamExt;
use oxpi_ai::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Context, Message, Model, StopReason,
    StreamOptions,
};
use oxpi_testkit::wire::{anthropic, completions, gemini, responses, sse, Script};
use oxpi_testkit::{Part, Reply, TestServer};
use serde_json::{json, Value};

#[path = "conformance/failure_kinds.rs"]
mod failure_kinds;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Api {
    Completions,
    Responses,
    Anthropic,
    Gemini,
    /// The Responses API on Azure (its own endpoint and `api-key` header).
    Azure,
    /// Mistral's chat API (its own request; Chat Completions chunks).
    Mistral,
    /// Gemini on Vertex AI (express mode: the key in a header, the publisher path).
    Vertex,
    /// The ChatGPT (Codex) backend's Responses API (its terminal `response.done`).
    Codex,
}

const APIS: [Api; 8] = [
    Api::Completions,
    Api::Responses,
    Api::Anthropic,
    Api::Gemini,
    Api::Azure,
    Api::Mistral,
    Api::Vertex,
    Api::Codex,
];

/// A key every API takes: the Codex backend reads an account id from its JWT payload.
const TEST_KEY: &str = "eyJhbGciOiJub25lIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdC1jb25mb3JtYW5jZSJ9fQ.dGVzdC1rZXk";

impl Api {
    fn model(self, server: &TestServer) -> Model {
        let (api, path) = match self {
            Api::Completions => ("openai-completions", "/v1"),
            Api::Mistral => ("mistral-conversations", ""),
            Api::Responses => ("openai-responses", "/v1"),
            Api::Azure => ("azure-openai-responses", "/openai/v1"),
            Api::Anthropic => ("anthropic-messages", "/v1"),
            Api::Gemini => ("google-generative-ai", "/v1beta"),
            Api::Vertex => ("google-vertex", ""),
            Api::Codex => ("openai-codex-responses", "/backend-api"),
        };
        let mut model =
            Model::openai_compatible(format!("{}{path}", server.base_url()), "conformance-model");
        model.api = api.into();
        model.provider = "conformance".to_string();
        model
    }

    /// The stream of `script`: (content events, terminal events).
    fn render(self, script: &Script) -> (Vec<String>, Vec<String>) {
        match self {
            Api::Completions | Api::Mistral => completions(script),
            Api::Responses | Api::Azure => responses(script),
            Api::Codex => {
                let (body, end) = responses(script);
                let end = end
                    .into_iter()
                    .map(|e| e.replace("response.completed", "response.done"))
                    .collect();
                (body, end)
            }
            Api::Anthropic => anthropic(script),
            Api::Gemini | Api::Vertex => gemini(script),
        }
    }

    /// An error event in the middle of the stream, carrying `message`.
    fn error_event(self, message: &str) -> String {
        match self {
            Api::Completions | Api::Mistral => sse(None, &json!({"error": {"message": message}})),
            Api::Responses | Api::Azure | Api::Codex => sse(
                Some("error"),
                &json!({"type": "error", "code": "server_error", "message": message}),
            ),
            Api::Anthropic => sse(
                Some("error"),
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
            ),
            Api::Gemini | Api::Vertex => sse(
                None,
                &json!({"error": {"code": 500, "message": message, "status": "INTERNAL"}}),
            ),
        }
    }

    /// An event of a kind the client does not know, which must be tolerated.
    fn unknown_event(self) -> String {
        match self {
            Api::Completions | Api::Mistral => sse(
                None,
                &json!({"object": "chat.completion.chunk", "choices": [], "novel": {"x": 1}}),
            ),
            Api::Responses | Api::Azure | Api::Codex => sse(
                Some("response.novel"),
                &json!({"type": "response.novel", "x": 1}),
            ),
            Api::Anthropic => sse(Some("novel"), &json!({"type": "novel", "x": 1})),
            Api::Gemini | Api::Vertex => {
                sse(None, &json!({"candidates": [], "novelField": {"x": 1}}))
            }
        }
    }

    fn error_body(self, message: &str) -> String {
        match self {
            Api::Anthropic => json!({"type": "error", "error": {"type": "authentication_error", "message": message}}),
            Api::Gemini | Api::Vertex => json!({"error": {"code": 401, "message": message, "status": "UNAUTHENTICATED"}}),
            _ => json!({"error": {"message": message, "type": "invalid_request_error"}}),
        }
        .to_string()
    }
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key(TEST_KEY)
        .with_retry_base_delay(Duration::from_millis(5))
        .with_idle_timeout(Duration::from_secs(10))
}

fn context() -> Context {
    Context::new("Be brief.").with_message(Message::user("go"))
}

async fn run_with(
    api: Api,
    replies: Vec<Reply>,
    options: StreamOptions,
) -> (AssistantMessage, usize, Vec<AssistantMessageEvent>) {
    let server = TestServer::start(replies).await.unwrap();
    let mut stream = oxpi_ai::stream(&api.model(&server), &context(), options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    assert_eq!(
        events.iter().filter(|e| e.is_terminal()).count(),
        1,
        "{api:?}: one terminal event"
    );
    let message = events
        .last()
        .and_then(|e| e.final_message())
        .cloned()
        .unwrap();
    (message, server.requests().len(), events)
}

async fn run(api: Api, replies: Vec<Reply>) -> (AssistantMessage, usize) {
    let (message, requests, _) = run_with(api, replies, options()).await;
    (message, requests)
}

fn ok_reply(api: Api, script: &Script) -> Reply {
    let (mut body, end) = api.render(script);
    body.extend(end);
    Reply::sse(body)
}

fn thinking_of(message: &AssistantMessage) -> String {
    message
        .content
        .iter()
        .filter_map(|c| match c {
            AssistantContent::Thinking(t) => Some(t.thinking.as_str()),
            _ => None,
        })
        .collect()
}

fn calls_of(message: &AssistantMessage) -> Vec<(String, Value)> {
    message
        .tool_calls()
        .map(|c| (c.name.clone(), Value::Object(c.arguments.clone())))
        .collect()
}

fn hello() -> Script {
    Script {
        text: vec!["Hel", "lo ", "world"],
        ..Script::default()
    }
}

#[tokio::test]
async fn scenarios_produce_the_same_message_on_every_api() {
    let scenarios = [
        ("text", hello(), StopReason::Stop),
        (
            "thinking and text",
            Script {
                thinking: Some("Let me think."),
                ..hello()
            },
            StopReason::Stop,
        ),
        (
            "one tool call",
            Script {
                calls: vec![("read", json!({"path": "a.txt"}))],
                ..Script::default()
            },
            StopReason::ToolUse,
        ),
        (
            "text and parallel tool calls",
            Script {
                text: vec!["Reading both."],
                calls: vec![
                    ("read", json!({"path": "a.txt"})),
                    ("read", json!({"path": "b.txt", "limit": 3})),
                ],
                ..Script::default()
            },
            StopReason::ToolUse,
        ),
        (
            "length stop",
            Script {
                length: true,
                ..hello()
            },
            StopReason::Length,
        ),
    ];
    for api in APIS {
        for (name, script, stop) in &scenarios {
            let (message, requests) = run(api, vec![ok_reply(api, script)]).await;
            let label = format!("{api:?} / {name}: {:?}", message.error_message);
            assert_eq!(message.stop_reason, *stop, "{label}");
            assert_eq!(message.text(), script.text.concat(), "{label}");
            assert_eq!(
                thinking_of(&message),
                script.thinking.unwrap_or(""),
                "{label}"
            );
            let expected: Vec<(String, Value)> = script
                .calls
                .iter()
                .map(|(n, a)| (n.to_string(), a.clone()))
                .collect();
            assert_eq!(calls_of(&message), expected, "{label}");
            let ids: std::collections::HashSet<String> =
                message.tool_calls().map(|c| c.id.clone()).collect();
            assert_eq!(ids.len(), script.calls.len(), "{label}: distinct ids");
            assert_eq!(message.usage.output, 7, "{label}");
            assert_eq!(requests, 1, "{label}");
        }
    }
}

#[tokio::test]
async fn unknown_events_are_tolerated() {
    for api in APIS {
        let (mut body, end) = api.render(&hello());
        body.insert(1, api.unknown_event());
        body.extend(end);
        let (message, _) = run(api, vec![Reply::sse(body)]).await;
        assert_eq!(
            (message.stop_reason, message.text()),
            (StopReason::Stop, "Hello world".to_string()),
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn http_errors_show_status_and_message_and_4xx_is_not_retried() {
    for api in APIS {
        let replies = vec![
            Reply::json_error(401, &api.error_body("bad key")),
            ok_reply(api, &hello()),
        ];
        let (message, requests) = run(api, replies).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert_eq!(
            message.error_message.as_deref(),
            Some("401 bad key"),
            "{api:?}"
        );
        assert_eq!(requests, 1, "{api:?}");
    }
}

#[tokio::test]
async fn retryable_failures_before_the_first_event_are_retried() {
    for api in APIS {
        for (label, first) in [
            ("429", Reply::json_error(429, &api.error_body("slow down"))),
            (
                "429 retry-after",
                Reply::json_error(429, &api.error_body("slow down"))
                    .with_header("retry-after", "0"),
            ),
            ("500", Reply::json_error(500, &api.error_body("oops"))),
            ("502", Reply::json_error(502, "bad gateway")),
            ("503", Reply::json_error(503, &api.error_body("busy"))),
            ("529", Reply::json_error(529, &api.error_body("overloaded"))),
            ("reset", Reply::Reset),
        ] {
            let (message, requests) = run(api, vec![first, ok_reply(api, &hello())]).await;
            assert_eq!(
                (message.stop_reason, message.text()),
                (StopReason::Stop, "Hello world".into()),
                "{api:?} {label}"
            );
            assert_eq!(requests, 2, "{api:?} {label}");
        }
    }
}

#[tokio::test]
async fn retries_stop_at_the_limit_and_at_a_long_retry_after() {
    for api in APIS {
        let down = || Reply::json_error(503, &api.error_body("down"));
        let (message, requests) = run(api, vec![down(), down(), down(), down()]).await;
        assert_eq!(
            message.error_message.as_deref(),
            Some("503 down (after 2 retries)"),
            "{api:?}"
        );
        assert_eq!(requests, 3, "{api:?}");

        let slow =
            Reply::json_error(429, &api.error_body("later")).with_header("retry-after", "3600");
        let (message, requests) = run(api, vec![slow, ok_reply(api, &hello())]).await;
        let error = message.error_message.unwrap_or_default();
        assert!(
            error.starts_with("429 later (the server asked to retry after 3600.0s"),
            "{api:?}: {error}"
        );
        assert_eq!(requests, 1, "{api:?}");
    }
}

#[tokio::test]
async fn a_cut_stream_keeps_what_arrived_and_is_never_resent() {
    for api in APIS {
        let (body, _) = api.render(&hello());
        let mut parts: Vec<Part> = body
            .into_iter()
            .map(|e| Part::Bytes(e.into_bytes()))
            .collect();
        parts.push(Part::Cut);
        let (message, requests) =
            run(api, vec![Reply::sse_parts(parts), ok_reply(api, &hello())]).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert_eq!(message.text(), "Hello world", "{api:?}");
        assert_eq!(requests, 1, "{api:?}");
    }
}

#[tokio::test]
async fn a_stream_without_its_terminal_event_is_an_error() {
    for api in APIS {
        let (body, _) = api.render(&hello());
        let (message, _) = run(api, vec![Reply::sse(body)]).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert_eq!(message.text(), "Hello world", "{api:?}");
    }
}

#[tokio::test]
async fn garbage_and_invalid_utf8_are_errors_that_say_so() {
    for api in APIS {
        let (mut body, end) = api.render(&hello());
        body.insert(2, "data: {truncated json\n\n".to_string());
        body.extend(end.clone());
        let (message, _) = run(api, vec![Reply::sse(body)]).await;
        let error = message.error_message.unwrap_or_default();
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert!(
            error.contains("{truncated json"),
            "{api:?} quotes the chunk: {error}"
        );

        let (body, end) = api.render(&hello());
        let mut parts: Vec<Part> = body
            .into_iter()
            .take(2)
            .map(|e| Part::Bytes(e.into_bytes()))
            .collect();
        parts.push(Part::Bytes(b"data: {\"x\": \"\xff\xfe\"}\n\n".to_vec()));
        parts.extend(end.into_iter().map(|e| Part::Bytes(e.into_bytes())));
        let (message, _) = run(api, vec![Reply::sse_parts(parts)]).await;
        let error = message.error_message.unwrap_or_default();
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert!(error.contains("UTF-8"), "{api:?}: {error}");
    }
}

#[tokio::test]
async fn an_error_event_mid_stream_ends_the_reply_with_its_message() {
    for api in APIS {
        let (mut body, _) = api.render(&hello());
        body.push(api.error_event("upstream exploded"));
        let (message, _) = run(api, vec![Reply::sse(body)]).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert_eq!(message.text(), "Hello world", "{api:?}");
        let error = message.error_message.unwrap_or_default();
        assert!(error.contains("upstream exploded"), "{api:?}: {error}");
    }
}

#[tokio::test]
async fn a_ten_megabyte_event_streams_through() {
    let big = "x".repeat(10 * 1024 * 1024);
    let big: &'static str = Box::leak(big.into_boxed_str());
    for api in APIS {
        let script = Script {
            text: vec!["start ", big],
            ..Script::default()
        };
        let (message, _) = run(api, vec![ok_reply(api, &script)]).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{api:?}: {:?}",
            message.error_message
        );
        assert_eq!(message.text().len(), 6 + big.len(), "{api:?}");
    }
}

#[tokio::test]
async fn stalls_end_on_the_idle_timer_and_keep_partial_content() {
    for api in APIS {
        let (body, _) = api.render(&hello());
        let mut parts: Vec<Part> = body
            .into_iter()
            .map(|e| Part::Bytes(e.into_bytes()))
            .collect();
        parts.push(Part::Stall);
        let options = options().with_idle_timeout(Duration::from_millis(200));
        let (message, requests, _) =
            run_with(api, vec![Reply::sse_parts(parts)], options.clone()).await;
        assert_eq!(message.text(), "Hello world", "{api:?}");
        assert_eq!(
            message.error_message.as_deref(),
            Some("The stream stalled: no data for 0.2s (idle_timeout)"),
            "{api:?}"
        );
        assert_eq!(requests, 1, "{api:?}");

        let (message, _, _) =
            run_with(api, vec![Reply::StallAfterHeaders { status: 200 }], options).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
    }
}

#[tokio::test]
async fn cancel_mid_stream_ends_as_aborted_with_partial_content() {
    for api in APIS {
        let (body, _) = api.render(&hello());
        let mut parts: Vec<Part> = body
            .into_iter()
            .map(|e| Part::Bytes(e.into_bytes()))
            .collect();
        parts.push(Part::Stall);
        let server = TestServer::start(vec![Reply::sse_parts(parts)])
            .await
            .unwrap();
        let options = options();
        let cancel = options.cancel.clone();
        let mut stream = oxpi_ai::stream(&api.model(&server), &context(), options);
        let mut last = None;
        while let Some(event) = stream.next().await {
            if let AssistantMessageEvent::TextDelta { delta, .. } = &event {
                if delta == "world" {
                    cancel.cancel();
                }
            }
            last = event.final_message().cloned();
        }
        let message = last.unwrap();
        assert_eq!(message.stop_reason, StopReason::Aborted, "{api:?}");
        assert_eq!(message.text(), "Hello world", "{api:?}");
        assert_eq!(
            message.error_message.as_deref(),
            Some("Request was aborted"),
            "{api:?}"
        );
    }
}

/// A server that echoes the API key anywhere in an error (an error event mid-stream, an
/// unparsable chunk, a long HTTP error body cut at 1,000 characters right inside the key) never
/// gets it into the reply's `errorMessage`, on any API.
#[tokio::test]
async fn the_key_never_reaches_an_error_message() {
    // A JWT, as the Codex backend needs one; its last part is the canary.
    const KEY: &str = "eyJhbGciOiJub25lIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdC1jb25mb3JtYW5jZSJ9fQ.sk-oxpi-canary-0123456789abcdef0123456789";
    let with_key = || options().with_api_key(KEY);
    for api in APIS {
        let (mut body, _) = api.render(&hello());
        body.push(api.error_event(&format!("upstream rejected Bearer {KEY} here")));
        let (in_stream, _, _) = run_with(api, vec![Reply::sse(body)], with_key()).await;

        let (mut body, end) = api.render(&hello());
        body.insert(
            2,
            format!("data: <html>proxy error for Bearer {KEY}</html>\n\n"),
        );
        body.extend(end);
        let (garbage, _, _) = run_with(api, vec![Reply::sse(body)], with_key()).await;

        // A chunk quoted for the error is cut at 500 characters, here 20 characters into the key.
        let (mut body, end) = api.render(&hello());
        body.insert(2, format!("data: {} {KEY}\n\n", "y".repeat(479)));
        body.extend(end);
        let (cut_chunk, _, _) = run_with(api, vec![Reply::sse(body)], with_key()).await;

        // 970 characters, then the key: the text is cut at 1,000, 30 characters into the key.
        let long = format!("{} {KEY} trailing words", "x".repeat(969));
        let (cut, _, _) = run_with(
            api,
            vec![Reply::json_error(401, &api.error_body(&long))],
            with_key(),
        )
        .await;

        for (label, message, shown) in [
            (
                "error event",
                &in_stream,
                "upstream rejected Bearer <redacted> here",
            ),
            (
                "garbage",
                &garbage,
                "<html>proxy error for Bearer <redacted></html>",
            ),
            ("cut body", &cut, "x <redacted> trailing words"),
            ("cut chunk", &cut_chunk, "y <redacted>… ("),
        ] {
            let error = message.error_message.clone().unwrap_or_default();
            assert_eq!(message.stop_reason, StopReason::Error, "{api:?} {label}");
            assert!(error.contains(shown), "{api:?} {label}: {error}");
            assert!(!error.contains(&KEY[..8]), "{api:?} {label} leaks: {error}");
            assert!(
                !error.contains(&KEY[KEY.len() - 8..]),
                "{api:?} {label}: {error}"
            );
        }
    }
}

/// Keep-alive comments (`: ping`) count as data for the idle timer, so a server that only pings
/// keeps a request open; `StreamOptions::deadline` bounds the whole request, retries included.
///
/// Margins are wide so a loaded machine cannot fail it: pings every 100 ms against a 2 s idle
/// timer (a ping would have to be 20 times late), a 3 s deadline against pings for 100 s and a
/// retry wait of 30 s. The APIs run at once, so the test takes about 10 s.
#[tokio::test]
async fn pings_keep_a_stream_alive_and_the_deadline_bounds_it() {
    futures::future::join_all(APIS.map(pings_and_deadline)).await;
}

async fn pings_and_deadline(api: Api) {
    let pings = |n: usize| -> Vec<Part> {
        (0..n)
            .flat_map(|_| {
                [
                    Part::Sleep(Duration::from_millis(100)),
                    Part::Bytes(b": ping\n\n".to_vec()),
                ]
            })
            .collect()
    };
    let (body, end) = api.render(&hello());
    let (first, rest) = body.split_at(body.len() - 1);
    let bytes = |events: &[String]| -> Vec<Part> {
        events
            .iter()
            .map(|e| Part::Bytes(e.clone().into_bytes()))
            .collect()
    };
    let idle = options().with_idle_timeout(Duration::from_secs(2));

    // 4 s of pings, two idle timeouts long, then the rest: the reply completes.
    let mut parts = bytes(first);
    parts.extend(pings(40));
    parts.extend(bytes(rest));
    parts.extend(bytes(&end));
    let (message, _, _) = run_with(api, vec![Reply::sse_parts(parts)], idle.clone()).await;
    assert_eq!(
        (message.stop_reason, message.text()),
        (StopReason::Stop, "Hello world".to_string()),
        "{api:?}: {:?}",
        message.error_message
    );

    // Pings for ever: the deadline ends it, keeping what arrived.
    let mut parts = bytes(first);
    parts.extend(pings(1000));
    let with_deadline = idle.clone().with_deadline(Duration::from_secs(3));
    let (message, requests, _) =
        run_with(api, vec![Reply::sse_parts(parts)], with_deadline.clone()).await;
    assert_eq!(
        (message.stop_reason, message.error_message.as_deref()),
        (
            StopReason::Error,
            Some("The request did not complete within 3.0s (deadline)")
        ),
        "{api:?}"
    );
    // Whatever text the events before the last content event carry in this API.
    let kept = message.text();
    assert!(
        !kept.is_empty() && "Hello world".starts_with(&kept),
        "{api:?}: {kept:?}"
    );
    assert_eq!(requests, 1, "{api:?}");

    // The deadline also covers retries and their waits.
    let busy = Reply::json_error(503, &api.error_body("busy")).with_header("retry-after", "30");
    let (message, requests, _) =
        run_with(api, vec![busy, ok_reply(api, &hello())], with_deadline).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("The request did not complete within 3.0s (deadline)"),
        "{api:?}"
    );
    assert_eq!(requests, 1, "{api:?}");
}
