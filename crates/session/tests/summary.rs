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
