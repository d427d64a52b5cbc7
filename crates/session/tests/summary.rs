//! pi's summarizer: the serialized conversation's format, the prompt's sections, and replies
//! that are no summary (cut at the token cap, a tool call) leaving the session unchanged.

mod common;

use oxpi_ai::faux::{FauxProvider, FauxReply};
use oxpi_ai::{Message, ProviderRegistry, StopReason};
use oxpi_session::{
    compact_with, serialize_conversation, CompactError, CompactionSettings, ModelSummarizer,
    NewSessionOptions, SessionManager, SummarizeError,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[test]
fn the_conversation_is_serialized_as_pi_does_and_long_results_are_cut() {
    let messages: Vec<Message> = serde_json::from_value(json!([
        {"role": "user", "content": "read a.rs", "timestamp": 1},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hidden"},
            {"type": "text", "text": "Reading."},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.rs"}}],
         "api": "faux", "provider": "faux", "model": "m", "stopReason": "toolUse", "timestamp": 2,
         "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                   "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
         "content": [{"type": "text", "text": "é".repeat(2005)}], "isError": false, "timestamp": 3}
    ]))
    .expect("messages");
    let text = serialize_conversation(&messages);
    let expected = format!(
        "[User]: read a.rs\n\n[Assistant]: Reading.\n\n[Assistant tool calls]: read(path=\"a.rs\")\n\n[Tool result]: {}\n\n[... 5 more characters truncated]",
        "é".repeat(2000)
    );
    assert_eq!(text, expected);
    assert!(!text.contains("hidden"), "thinking is left out");
}

async fn compact_against(
    reply: FauxReply,
) -> (
    SessionManager,
    Result<Option<String>, CompactError<SummarizeError>>,
    usize,
) {
    let d = common::dirs();
    let mut s =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    for t in 0..4 {
        s.append_message(&Message::user(format!("{t} {}", "u".repeat(400))))
            .expect("user");
    }
    let before = s.entries().count();
    let faux = FauxProvider::new();
    faux.push(reply);
    let mut registry = ProviderRegistry::new();
    registry.register(faux.clone());
    let summarizer = ModelSummarizer::new(faux.model()).with_registry(registry);
    let result = compact_with(
        &mut s,
        &CompactionSettings::new().keep_recent_tokens(100),
        &summarizer,
        CancellationToken::new(),
    )
    .await;
    (s, result, before)
}

#[tokio::test]
async fn a_reply_cut_at_the_token_cap_or_a_tool_call_is_no_summary() {
    for (reply, words) in [
        (
            FauxReply::text("## Goal\nhalf").with_stop_reason(StopReason::Length),
            "token cap",
        ),
        (
            FauxReply::tool_call("read", json!({"path": "x"})),
            "tool call",
        ),
        (FauxReply::error("500 server error"), "500 server error"),
    ] {
        let (s, result, before) = compact_against(reply).await;
        let err = result.expect_err("no summary");
        assert!(err.to_string().contains("summarizer failed"), "{err}");
        match &err {
            CompactError::Summarize(SummarizeError::Model(text)) => {
                assert!(text.contains(words), "{text}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.entries().count(), before, "nothing appended");
    }
}

#[tokio::test]
async fn a_summary_is_appended_with_pi_s_fields() {
    let (s, result, _) = compact_against(FauxReply::text("## Goal\nTest.")).await;
    let id = result.expect("compact").expect("an entry");
    let entry = s.entry(&id).expect("entry");
    assert_eq!(entry.get("summary"), Some(&json!("## Goal\nTest.")));
    assert_eq!(entry.get("fromHook"), Some(&json!(false)));
    assert_eq!(
        entry.get("details"),
        Some(&json!({"readFiles": [], "modifiedFiles": []}))
    );
    assert!(entry.get("usage").is_some());
}

/// A one-shot Chat Completions server: answers one request with a summary as SSE and hands
/// back the request's JSON body.
fn summary_server() -> (String, std::thread::JoinHandle<serde_json::Value>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .expect("timeout");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("header");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().expect("length");
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).expect("body");
        let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
            format!(
                "data: {}\n\n",
                json!({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            )
        };
        let events = format!(
            "{}{}data: [DONE]\n\n",
            chunk(
                json!({"role": "assistant", "content": "## Goal\nKeep going."}),
                json!(null)
            ),
            chunk(json!({}), json!("stop")),
        );
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{events}"
        )
        .expect("reply");
        serde_json::from_slice(&body).expect("json body")
    });
    (url, handle)
}

/// The body of the summary request `summarizer` sends for a short session.
async fn summary_request(summarizer: impl FnOnce(String) -> ModelSummarizer) -> serde_json::Value {
    let d = common::dirs();
    let mut s =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    for t in 0..4 {
        s.append_message(&Message::user(format!("{t} {}", "u".repeat(400))))
            .expect("user");
    }
    let (url, server) = summary_server();
    let summarizer = summarizer(url);
    let id = compact_with(
        &mut s,
        &CompactionSettings::new().keep_recent_tokens(50),
        &summarizer,
        CancellationToken::new(),
    )
    .await
    .expect("compact");
    assert!(id.is_some());
    tokio::task::spawn_blocking(move || server.join().expect("server"))
        .await
        .expect("join")
}

fn reasoning_model(url: &str) -> oxpi_ai::Model {
    let mut model = oxpi_ai::Model::openai_compatible(url, "m");
    model.reasoning = true;
    model.max_tokens = 2_000;
    model
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_asks_at_most_the_models_output_limit_with_the_agents_thinking_level() {
    // The template asks for more than the model gives: the request asks for the model's limit.
    let body = summary_request(|url| {
        ModelSummarizer::new(reasoning_model(&url))
            .with_options(oxpi_ai::StreamOptions::default().with_max_tokens(50_000))
            .with_thinking_level(Some(oxpi_ai::ReasoningLevel::High))
    })
    .await;
    let limit = body.get("max_completion_tokens").or(body.get("max_tokens"));
    assert_eq!(limit, Some(&json!(2_000)), "{body}");
    assert_eq!(body["reasoning_effort"], "high", "{body}");
    assert_eq!(body["messages"][0]["role"], "system", "{body}");

    // No limit in the template: the model's (pi 1.6 asks for it, #9512); a lower one stays.
    let body = summary_request(|url| ModelSummarizer::new(reasoning_model(&url))).await;
    let limit = body.get("max_completion_tokens").or(body.get("max_tokens"));
    assert_eq!(limit, Some(&json!(2_000)), "{body}");
    assert!(
        body.get("reasoning_effort").is_none(),
        "thinking off: {body}"
    );
    let body = summary_request(|url| {
        ModelSummarizer::new(reasoning_model(&url))
            .with_options(oxpi_ai::StreamOptions::default().with_max_tokens(700))
    })
    .await;
    let limit = body.get("max_completion_tokens").or(body.get("max_tokens"));
    assert_eq!(limit, Some(&json!(700)), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_does_not_reason_gets_no_reasoning_level_in_a_summary_request() {
    let body = summary_request(|url| {
        let mut model = reasoning_model(&url);
        model.reasoning = false;
        ModelSummarizer::new(model).with_thinking_level(Some(oxpi_ai::ReasoningLevel::High))
    })
    .await;
    assert!(body.get("reasoning_effort").is_none(), "{body}");
    assert!(body.get("reasoning").is_none(), "{body}");
    assert!(body.get("thinking").is_none(), "{body}");
}
