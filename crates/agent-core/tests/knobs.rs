//! pi-agent-core's agent knobs: steering and follow-up modes and queue control, per-tool
//! execution mode, `terminate`, and — against a local HTTP server —
//! `session_id`, `get_api_key` and `on_payload` on every request of a run.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use oxpi_agent_core::{
    AfterToolCallResult, Agent, AgentOptions, AgentTool, AgentToolResult, QueueMode, ToolError,
    ToolExecution, ToolUpdateFn,
};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::{ApiKey, FailureKind, Message, StopReason, StreamOptions};
use oxpi_testkit::{Reply, TestServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// `finish`: returns a result that asks the agent to stop after the batch.
struct FinishTool;

impl AgentTool for FinishTool {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "finish"
    }
    fn description(&self) -> &str {
        "Declare the task finished"
    }
    async fn execute(
        &self,
        _id: &str,
        _args: NoArgs,
        _cancel: CancellationToken,
        _update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        Ok(AgentToolResult::text("finished").terminating())
    }
}

/// The texts of the user messages in the history, in order.
fn user_texts(agent: &Agent) -> Vec<String> {
    agent
        .messages()
        .iter()
        .filter(|m| matches!(m, Message::User(_)))
        .map(user_text)
        .collect()
}

/// A run whose first tool call (a 30 ms sleep) gives time to queue `queued` steering messages.
async fn steer_during_a_tool(mode: QueueMode, queued: &[&str]) -> (Agent, usize) {
    let faux = faux();
    faux.push(call("c1", "sleep", json!({"ms": 30})));
    for _ in 0..4 {
        faux.push(FauxReply::text("ok"));
    }
    let tracker = Arc::new(Tracker::default());
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(SleepTool::new("sleep", &tracker)))
            .with_steering_mode(mode),
    );
    let steerer = agent.clone();
    let queued: Vec<String> = queued.iter().map(|s| s.to_string()).collect();
    let _sub = agent.subscribe(move |event| {
        if matches!(
            event,
            oxpi_agent_core::AgentEvent::ToolExecutionStart { .. }
        ) {
            for text in &queued {
                steerer.steer(Message::user(text.as_str()));
            }
        }
    });
    agent.prompt("start").await.unwrap();
    (agent, faux.call_count())
}

#[tokio::test]
async fn steering_one_at_a_time_delivers_one_message_per_turn() {
    let (agent, requests) = steer_during_a_tool(QueueMode::OneAtATime, &["s1", "s2"]).await;
    assert_eq!(user_texts(&agent), ["start", "s1", "s2"]);
    // start → tool call; s1 → reply; s2 → reply.
    assert_eq!(requests, 3);
    assert_eq!(
        roles(&agent.messages()),
        [
            "user",
            "assistant",
            "toolResult",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert!(!agent.has_queued_messages());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn steering_all_delivers_every_queued_message_at_once() {
    let (agent, requests) = steer_during_a_tool(QueueMode::All, &["s1", "s2"]).await;
    assert_eq!(user_texts(&agent), ["start", "s1", "s2"]);
    assert_eq!(requests, 2);
    assert_eq!(
        roles(&agent.messages()),
        [
            "user",
            "assistant",
            "toolResult",
            "user",
            "user",
            "assistant"
        ]
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn follow_up_modes_and_queue_control() {
    let faux = faux();
    for _ in 0..4 {
        faux.push(FauxReply::text("ok"));
    }
    let agent = Agent::new(options(&faux));
    assert_eq!(
        agent.follow_up_mode(),
        QueueMode::OneAtATime,
        "pi's default"
    );
    assert!(!agent.has_queued_messages());
    agent.follow_up(Message::user("f1"));
    agent.follow_up(Message::user("f2"));
    assert!(agent.has_queued_messages());
    agent.prompt("start").await.unwrap();
    // One follow-up per extra turn: start, f1, f2, three requests.
    assert_eq!(user_texts(&agent), ["start", "f1", "f2"]);
    assert_eq!(faux.call_count(), 3);

    agent.set_follow_up_mode(QueueMode::All);
    agent.follow_up(Message::user("g1"));
    agent.follow_up(Message::user("g2"));
    agent.prompt("again").await.ran();
    assert_eq!(user_texts(&agent)[3..], ["again", "g1", "g2"]);
    assert_eq!(faux.call_count(), 5, "g1 and g2 went out together");

    agent.steer(Message::user("s"));
    agent.follow_up(Message::user("f"));
    agent.clear_steering_queue();
    assert!(agent.has_queued_messages(), "the follow-up is still queued");
    agent.clear_follow_up_queue();
    assert!(!agent.has_queued_messages());
    agent.steer(Message::user("s"));
    agent.follow_up(Message::user("f"));
    agent.clear_all_queues();
    assert!(!agent.has_queued_messages());
}

async fn max_parallel(sequential_tool: bool) -> usize {
    let faux = faux();
    faux.push(and_call(
        call("c1", "sleep_a", json!({"ms": 20})),
        "c2",
        "sleep_b",
        json!({"ms": 20}),
    ));
    faux.push(FauxReply::text("done"));
    let tracker = Arc::new(Tracker::default());
    let mut a = handle(SleepTool::new("sleep_a", &tracker));
    if sequential_tool {
        a = a.with_execution_mode(ToolExecution::Sequential);
    }
    let agent = Agent::new(
        options(&faux)
            .with_tool(a)
            .with_tool(handle(SleepTool::new("sleep_b", &tracker))),
    );
    agent.prompt("go").await.unwrap();
    assert_idle_and_paired(&agent);
    assert_eq!(tracker.finished().len(), 2);
    tracker.max_running()
}

#[tokio::test]
async fn one_sequential_tool_makes_its_batch_sequential() {
    assert_eq!(max_parallel(false).await, 2);
    assert_eq!(max_parallel(true).await, 1);
}

#[tokio::test]
async fn a_batch_that_asks_to_terminate_ends_the_run() {
    let faux = faux();
    faux.push(call("c1", "finish", json!({})));
    faux.push(FauxReply::text("never asked"));
    let agent = Agent::new(options(&faux).with_tool(handle(FinishTool)));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert_eq!(faux.call_count(), 1);
    assert_eq!(
        roles(&agent.messages()),
        ["user", "assistant", "toolResult"]
    );
    assert_eq!(agent.error_message(), None, "terminating is a normal end");
    // The tool's wish shows in its `tool_execution_end` result (pi's `terminate: true`).
    let end = log
        .events()
        .into_iter()
        .find_map(|e| match e {
            oxpi_agent_core::AgentEvent::ToolExecutionEnd { result, .. } => Some(result),
            _ => None,
        })
        .unwrap();
    assert_eq!(serde_json::to_value(&end).unwrap()["terminate"], true);
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn terminate_needs_every_result_of_the_batch() {
    let faux = faux();
    faux.push(and_call(
        call("c1", "finish", json!({})),
        "c2",
        "read",
        json!({"path": "a"}),
    ));
    faux.push(FauxReply::text("carried on"));
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(FinishTool))
            .with_tool(handle(ReadTool::default())),
    );
    agent.prompt("go").await.unwrap();
    assert_eq!(faux.call_count(), 2);
    assert_eq!(last_assistant(&agent.messages()).text(), "carried on");

    // An after_tool_call hook may set it too.
    let faux = common::faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("never asked"));
    let mut options = options(&faux).with_tool(handle(ReadTool::default()));
    options.after_tool_call = Some(Arc::new(|seen| {
        let _ = seen;
        Box::pin(async move { Some(AfterToolCallResult::new().with_terminate(true)) })
    }));
    let agent = Agent::new(options);
    agent.prompt("go").await.unwrap();
    assert_eq!(faux.call_count(), 1);
}

/// A Chat Completions stream: one tool call, or one text.
fn tool_call_reply() -> Reply {
    Reply::sse([
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    ])
}

fn text_reply() -> Reply {
    Reply::sse([
        "data: {\"id\":\"c2\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    ])
}

fn http_agent_options(server: &TestServer) -> AgentOptions {
    let mut model = oxpi_ai::Model::openai_compatible(format!("{}/v1", server.base_url()), "qwen");
    model.compat = Some(json!({"sendSessionAffinityHeaders": true}));
    let stream_options = StreamOptions::default()
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(10))
        .with_on_payload(|mut body, _| async move {
            body["user"] = json!("team-a");
            Ok(Some(body))
        });
    AgentOptions::new(model)
        .with_stream_options(stream_options)
        .with_tool(handle(ReadTool::default()))
}

#[tokio::test]
async fn every_request_gets_the_session_a_fresh_key_and_the_payload_hook() {
    let server = TestServer::start(vec![tool_call_reply(), text_reply()])
        .await
        .unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let agent = Agent::new(
        http_agent_options(&server)
            .with_session_id("session-9")
            .with_get_api_key(move |provider| {
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                let provider = provider.to_string();
                async move { Ok(Some(ApiKey::new(format!("{provider}-key-{n}")))) }
            }),
    );
    agent.prompt("read a").await.unwrap();
    assert_eq!(agent.error_message(), None);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let seen: Vec<(Option<&str>, Option<&str>, serde_json::Value)> = requests
        .iter()
        .map(|r| {
            (
                r.header("authorization"),
                r.header("x-session-affinity"),
                r.json()["user"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                Some("Bearer openai-compatible-key-1"),
                Some("session-9"),
                json!("team-a")
            ),
            (
                Some("Bearer openai-compatible-key-2"),
                Some("session-9"),
                json!("team-a")
            ),
        ]
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn a_failing_get_api_key_ends_the_run_before_anything_is_sent() {
    let server = TestServer::start(vec![text_reply()]).await.unwrap();
    let agent = Agent::new(
        http_agent_options(&server)
            .with_get_api_key(|_| async { Err("the vault is sealed".to_string()) }),
    );
    agent.prompt("hi").await.ran();
    assert!(server.requests().is_empty());
    let text = "get_api_key failed for provider openai-compatible: the vault is sealed";
    assert_eq!(agent.error_message().as_deref(), Some(text));
    let messages = agent.messages();
    assert_eq!(roles(&messages), ["user", "assistant"]);
    let last = last_assistant(&messages);
    assert_eq!(
        (
            last.stop_reason,
            last.error_message.as_deref(),
            last.failure_kind
        ),
        (StopReason::Error, Some(text), Some(FailureKind::Auth)),
        "a key source that failed is an auth failure, not retried"
    );
    assert_idle_and_paired(&agent);
}
