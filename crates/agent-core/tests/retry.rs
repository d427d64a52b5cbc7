//! Retrying a failed turn (`AgentOptions::retry`): pi-ai 1.6's classification and delays (the
//! table recorded from pi itself, `fixtures/pi/retry16.json`), and the agent's handling on the
//! faux provider (paused time) and over HTTP: an in-stream `overloaded` error, a stream cut
//! after it began, a 429 whose body says the quota is exhausted, an abort during the wait, a
//! context overflow, a spent budget. A retried turn keeps one assistant message and never runs
//! a tool twice.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use oxpi_agent_core::{is_retryable_assistant_error, Agent, AgentEvent, AgentOptions, RetryPolicy};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::{AssistantMessage, Model, StopReason, StreamOptions};
use oxpi_testkit::{Part, Reply, TestServer};
use serde_json::{json, Value};

fn fixture() -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pi/retry16.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn classification_and_delays_match_what_pi_1_6_returned() {
    let recorded = fixture();
    let table = recorded["isRetryableAssistantError"].as_object().unwrap();
    assert!(table.len() > 20);
    for (text, expected) in table {
        let mut reply = AssistantMessage::empty("faux", "faux", "faux-model");
        reply.stop_reason = StopReason::Error;
        reply.error_message = Some(text.clone());
        assert_eq!(
            is_retryable_assistant_error(&reply),
            expected.as_bool().unwrap(),
            "{text}"
        );
    }
    let millis = |policy: RetryPolicy, n: u32| {
        (1..=n)
            .map(|a| json!(u64::try_from(policy.delay(a).as_millis()).unwrap()))
            .collect::<Vec<_>>()
    };
    let base = RetryPolicy::new(3, Duration::from_millis(2000));
    assert_eq!(json!(millis(base, 7)), recorded["retryDelayMs_base2000"]);
    let capped = base.with_max_delay(Duration::from_millis(5000));
    assert_eq!(json!(millis(capped, 4)), recorded["retryDelayMs_cap5000"]);
}

/// The retry events of a run: `(type, attempt, detail)`.
fn retry_events(log: &EventLog) -> Vec<Value> {
    log.events()
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::AutoRetryStart { .. }
                    | AgentEvent::RetryAttemptStart { .. }
                    | AgentEvent::AutoRetryEnd { .. }
            )
        })
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn an_overloaded_reply_is_retried_and_the_turn_keeps_one_assistant_message() {
    let faux = faux();
    faux.push(FauxReply::error("overloaded").with_text("half an ans"));
    faux.push(FauxReply::text("the answer"));
    let agent = Agent::new(options(&faux).with_retry(RetryPolicy::new(3, Duration::from_secs(2))));
    let (log, _sub) = EventLog::attach(&agent);
    let started = tokio::time::Instant::now();
    agent.prompt("go").await.unwrap();
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(2),
        "one wait of the base delay"
    );
    assert_eq!(faux.call_count(), 2);
    assert_eq!(
        retry_events(&log),
        [
            json!({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "overloaded"}),
            json!({"type": "retry_attempt_start", "attempt": 1}),
            json!({"type": "auto_retry_end", "success": true, "attempt": 1}),
        ]
    );
    let names = log.names();
    let first_end = names
        .iter()
        .position(|n| n == "message_end(assistant)")
        .unwrap();
    assert_eq!(names[first_end + 1], "auto_retry_start");
    assert_eq!(roles(&agent.messages()), ["user", "assistant"]);
    assert_eq!(last_assistant(&agent.messages()).text(), "the answer");
    let (messages, error) = log.agent_ends().pop().unwrap();
    assert_eq!((roles(&messages), error), (vec!["user", "assistant"], None));
    assert_eq!(log.names().iter().filter(|n| *n == "turn_start").count(), 1);
    assert_event_grammar(&log.events());
}

#[tokio::test(start_paused = true)]
async fn a_failed_reply_with_a_tool_call_is_retried_and_the_tool_runs_once() {
    let faux = faux();
    // The connection drops after the call was streamed: the call is never run.
    faux.push(FauxReply {
        error: Some("Connection closed.".into()),
        ..call("c0", "count", json!({}))
    });
    faux.push(call("c1", "count", json!({})));
    faux.push(FauxReply::text("done"));
    let count = CountTool::default();
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(count.clone()))
            .with_retry(RetryPolicy::new(1, Duration::from_secs(1))),
    );
    agent.prompt("go").await.unwrap();
    assert_eq!(faux.call_count(), 3);
    assert_eq!(
        count.executed.load(Ordering::SeqCst),
        1,
        "only the retried reply's call ran"
    );
    assert_eq!(
        roles(&agent.messages()),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(tool_results(&agent.messages())[0].tool_call_id, "c1");
    assert_idle_and_paired(&agent);
}

#[tokio::test(start_paused = true)]
async fn the_budget_runs_out_and_the_last_failure_stays() {
    let faux = faux();
    faux.push(FauxReply::error("overloaded"));
    faux.push(FauxReply::error("overloaded"));
    faux.push(FauxReply::text("never asked"));
    let agent = Agent::new(options(&faux).with_retry(RetryPolicy::new(1, Duration::from_secs(2))));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.ran();
    assert_eq!(faux.call_count(), 2);
    assert_eq!(
        retry_events(&log).last().unwrap(),
        &json!({"type": "auto_retry_end", "success": false, "attempt": 1, "finalError": "overloaded"})
    );
    assert_eq!(roles(&agent.messages()), ["user", "assistant"]);
    assert_eq!(agent.error_message().as_deref(), Some("overloaded"));
}

#[tokio::test(start_paused = true)]
async fn no_policy_no_retry_and_a_context_overflow_is_never_retried() {
    let faux = faux();
    faux.push(FauxReply::error("overloaded"));
    let agent = Agent::new(options(&faux));
    agent.prompt("go").await.ran();
    assert_eq!(
        (faux.call_count(), agent.error_message().as_deref()),
        (1, Some("overloaded"))
    );

    // The text matches a retryable pattern ("internal error") and an overflow: not retried.
    let text = "Internal error: This model's maximum context length is 8192 tokens";
    let faux = common::faux();
    faux.push(FauxReply::error(text));
    faux.push(FauxReply::text("never asked"));
    let agent = Agent::new(options(&faux).with_retry(RetryPolicy::new(3, Duration::from_secs(2))));
    agent.prompt("go").await.ran();
    assert_eq!(faux.call_count(), 1);
    assert_eq!(agent.error_message().as_deref(), Some(text));
}

#[tokio::test(start_paused = true)]
async fn an_abort_during_the_wait_ends_the_turn_as_aborted_without_a_second_request() {
    let faux = faux();
    faux.push(FauxReply::error("overloaded"));
    faux.push(FauxReply::text("never asked"));
    let agent = Agent::new(options(&faux).with_retry(RetryPolicy::new(3, Duration::from_secs(30))));
    let (log, _sub) = EventLog::attach(&agent);
    let running = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.prompt("go").await })
    };
    until("the retry is scheduled", || {
        log.names().iter().any(|n| n == "auto_retry_start")
    })
    .await;
    let waited = tokio::time::Instant::now();
    agent.abort();
    running.await.unwrap().ran();
    assert!(
        waited.elapsed() < Duration::from_secs(30),
        "the wait was cut short"
    );
    assert_eq!(faux.call_count(), 1);
    assert_eq!(
        retry_events(&log).last().unwrap(),
        &json!({"type": "auto_retry_end", "success": false, "attempt": 1, "finalError": "Retry cancelled"})
    );
    let last = last_assistant(&agent.messages());
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(roles(&agent.messages()), ["user", "assistant"]);
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Request was aborted")
    );
    assert_event_grammar(&log.events());
}

#[tokio::test(start_paused = true)]
async fn set_retry_policy_turns_retrying_on_and_off_between_runs() {
    let faux = faux();
    faux.push(FauxReply::error("overloaded"));
    faux.push(FauxReply::text("the answer"));
    faux.push(FauxReply::error("overloaded"));
    let agent = Agent::new(options(&faux));
    assert_eq!(agent.retry_policy(), None);
    let policy = RetryPolicy::new(3, Duration::from_secs(2));
    agent.set_retry_policy(Some(policy));
    assert_eq!(agent.retry_policy(), Some(policy));
    agent.prompt("first").await.unwrap();
    assert_eq!(faux.call_count(), 2, "the overloaded reply was retried");
    assert_eq!(last_assistant(&agent.messages()).text(), "the answer");

    agent.set_retry_policy(None);
    agent.prompt("second").await.ran();
    assert_eq!(faux.call_count(), 3, "no retry once the policy is off");
    let last = last_assistant(&agent.messages());
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        roles(&agent.messages()),
        ["user", "assistant", "user", "assistant"]
    );
}

#[tokio::test(start_paused = true)]
async fn abort_retry_ends_the_wait_and_the_failed_reply_stays_as_an_error() {
    let faux = faux();
    faux.push(FauxReply::error("overloaded"));
    faux.push(FauxReply::text("never asked"));
    let agent = Agent::new(options(&faux).with_retry(RetryPolicy::new(3, Duration::from_secs(30))));
    assert!(!agent.abort_retry(), "no wait to cancel before a run");
    let (log, _sub) = EventLog::attach(&agent);
    let running = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.prompt("go").await })
    };
    until("the retry is scheduled", || {
        log.names().iter().any(|n| n == "auto_retry_start")
    })
    .await;
    let waited = tokio::time::Instant::now();
    assert!(agent.abort_retry(), "the wait in progress was cancelled");
    running.await.unwrap().ran();
    assert!(
        waited.elapsed() < Duration::from_secs(30),
        "the wait was cut short"
    );
    assert_eq!(faux.call_count(), 1);
    assert_eq!(
        retry_events(&log).last().unwrap(),
        &json!({"type": "auto_retry_end", "success": false, "attempt": 1, "finalError": "Retry cancelled"})
    );
    let last = last_assistant(&agent.messages());
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(last.error_message.as_deref(), Some("overloaded"));
    assert_eq!(roles(&agent.messages()), ["user", "assistant"]);
    assert_event_grammar(&log.events());
}

// ---------------------------------------------------------------------------------------------
// Over HTTP (real time, short delays; nothing depends on how long they take)
// ---------------------------------------------------------------------------------------------

fn http_options(model: Model) -> AgentOptions {
    AgentOptions::new(model)
        .with_stream_options(
            StreamOptions::default()
                .with_api_key("test-key")
                .with_max_retries(0)
                .with_timeout(Duration::from_secs(10)),
        )
        .with_retry(RetryPolicy::new(3, Duration::from_millis(20)))
}

fn chat_model(server: &TestServer) -> Model {
    Model::openai_compatible(format!("{}/v1", server.base_url()), "qwen")
}

fn chat_text(text: &str) -> Reply {
    Reply::sse([
        format!("data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":\"stop\"}}]}}\n\n"),
        "data: [DONE]\n\n".to_string(),
    ])
}

#[tokio::test]
async fn a_stream_cut_after_it_began_is_retried_and_the_run_ends_stop() {
    let begun = format!(
        "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
        "a partial answer ".repeat(8)
    );
    assert!(begun.len() > 100);
    let server = TestServer::start(vec![
        Reply::sse_parts(vec![Part::Bytes(begun.into_bytes()), Part::Cut]),
        chat_text("whole answer"),
    ])
    .await
    .unwrap();
    let agent = Agent::new(http_options(chat_model(&server)));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("hi").await.unwrap();
    assert_eq!(server.requests().len(), 2);
    let first_failure = log.events().iter().find_map(|e| match e {
        AgentEvent::AutoRetryStart { error_message, .. } => Some(error_message.clone()),
        _ => None,
    });
    assert!(
        first_failure.is_some(),
        "a retry was scheduled: {:?}",
        log.names()
    );
    let messages = agent.messages();
    assert_eq!(roles(&messages), ["user", "assistant"]);
    let last = last_assistant(&messages);
    assert_eq!(
        (last.stop_reason, last.text().as_str()),
        (StopReason::Stop, "whole answer")
    );
    assert_eq!(agent.error_message(), None);
}

#[tokio::test]
async fn an_in_stream_overloaded_error_is_retried() {
    let event = |data: Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap()
        )
    };
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "content": [], "model": "claude-test", "stop_reason": null, "usage": {"input_tokens": 5, "output_tokens": 1}}});
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let text = |t: &str| {
        vec![
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 3}}),
            json!({"type": "message_stop"}),
        ]
    };
    let failing: Vec<String> = [start.clone(), overloaded].into_iter().map(event).collect();
    let ok: Vec<String> = std::iter::once(start)
        .chain(text("fine now"))
        .map(event)
        .collect();
    let server = TestServer::start(vec![Reply::sse(failing), Reply::sse(ok)])
        .await
        .unwrap();
    let mut model = Model::openai_compatible(format!("{}/v1", server.base_url()), "claude-test");
    model.api = "anthropic-messages".into();
    model.provider = "anthropic".into();
    let agent = Agent::new(http_options(model));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("hi").await.unwrap();
    assert_eq!(server.requests().len(), 2, "{:?}", log.names());
    let scheduled = log.events().iter().find_map(|e| match e {
        AgentEvent::AutoRetryStart { error_message, .. } => Some(error_message.clone()),
        _ => None,
    });
    assert!(scheduled.unwrap().contains("Overloaded"));
    assert_eq!(roles(&agent.messages()), ["user", "assistant"]);
    assert_eq!(last_assistant(&agent.messages()).text(), "fine now");
}

#[tokio::test]
async fn a_429_whose_body_says_the_quota_is_exhausted_is_not_retried() {
    let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    let server = TestServer::start(vec![Reply::json_error(429, body), chat_text("never sent")])
        .await
        .unwrap();
    let agent = Agent::new(http_options(chat_model(&server)));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("hi").await.ran();
    assert_eq!(server.requests().len(), 1);
    assert!(retry_events(&log).is_empty());
    let last = last_assistant(&agent.messages());
    assert_eq!(last.stop_reason, StopReason::Error);
    assert!(
        last.error_message.as_deref().unwrap().contains("quota"),
        "{:?}",
        last.error_message
    );
}
