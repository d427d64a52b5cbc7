//! pi-agent-core 1.6's turn hooks: `finish_turn` (after every turn, before `turn_end`: end or
//! continue), `prepare_request` (before every request: context, model, reasoning level for the
//! rest of the run) and `prepare_next_turn` / `prepare_next_turn_with_context` (messages and
//! changes for the next turn). The model switch is checked against two local HTTP servers.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use oxpi_agent_core::{
    Agent, AgentContext, AgentEvent, AgentOptions, RequestUpdate, TurnAction, TurnUpdate,
};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::{Message, ReasoningLevel, StopReason, StreamOptions};
use oxpi_testkit::{Reply, TestServer};
use serde_json::json;

type Log = Arc<Mutex<Vec<String>>>;

/// What `prepare_request` saw: model id, reasoning level, number of messages.
type Seen = Arc<Mutex<Vec<(String, Option<ReasoningLevel>, usize)>>>;

/// Subscribes a listener that writes event names into `log`, beside the hooks' own lines.
fn log_events(agent: &Agent, log: &Log) -> oxpi_agent_core::Subscription {
    let log = log.clone();
    agent.subscribe(move |e| {
        if matches!(
            e,
            AgentEvent::TurnStart | AgentEvent::TurnEnd { .. } | AgentEvent::AgentEnd { .. }
        ) {
            log.lock().unwrap().push(event_name(e));
        }
    })
}

#[tokio::test]
async fn finish_turn_runs_before_turn_end_for_every_turn_and_continue_asks_once_more() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("first answer"));
    faux.push(FauxReply::text("second thought"));
    let log: Log = Arc::default();
    let hook_log = log.clone();
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(ReadTool::default()))
            .with_finish_turn(move |turn, _cancel| {
                let mut log = hook_log.lock().unwrap();
                log.push(format!(
                    "finish_turn {:?} results={} context={} new={}",
                    turn.message.stop_reason,
                    turn.tool_results.len(),
                    turn.context.messages.len(),
                    turn.new_messages.len()
                ));
                // Continue once after the first plain answer.
                let n = log.iter().filter(|l| l.starts_with("finish_turn")).count();
                async move { (n == 2).then_some(TurnAction::Continue) }
            }),
    );
    let _sub = log_events(&agent, &log);
    agent.prompt("go").await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        [
            "turn_start",
            "finish_turn ToolUse results=1 context=3 new=3",
            "turn_end",
            "turn_start",
            "finish_turn Stop results=0 context=4 new=4",
            "turn_end",
            // The continue: a request without a new message.
            "turn_start",
            "finish_turn Stop results=0 context=5 new=5",
            "turn_end",
            "agent_end",
        ]
    );
    assert_eq!(
        faux.requests()[2].roles,
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(agent.error_message(), None);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn finish_turn_end_stops_a_run_that_wanted_more_and_keeps_the_queues() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("never asked"));
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(ReadTool::default()))
            .with_finish_turn(|_turn, _cancel| async { Some(TurnAction::End) }),
    );
    agent.follow_up(Message::user("later"));
    agent.prompt("go").await.unwrap();
    assert_eq!(faux.call_count(), 1);
    assert_eq!(
        roles(&agent.messages()),
        ["user", "assistant", "toolResult"]
    );
    assert_eq!(agent.error_message(), None);
    assert!(
        agent.has_queued_messages(),
        "the follow-up waits for the next run"
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn finish_turn_sees_an_error_turn_and_cannot_continue_it() {
    let faux = faux();
    faux.push(FauxReply::error("boom"));
    faux.push(FauxReply::text("never asked"));
    let seen: Arc<Mutex<Vec<StopReason>>> = Arc::default();
    let log = seen.clone();
    let agent = Agent::new(options(&faux).with_finish_turn(move |turn, _cancel| {
        log.lock().unwrap().push(turn.message.stop_reason);
        async { Some(TurnAction::Continue) }
    }));
    agent.prompt("go").await.ran();
    assert_eq!(*seen.lock().unwrap(), [StopReason::Error]);
    assert_eq!(faux.call_count(), 1);
    assert_eq!(agent.error_message().as_deref(), Some("boom"));
}

#[tokio::test]
async fn a_panicking_finish_turn_ends_the_run_naming_the_hook() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("never asked"));
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(ReadTool::default()))
            .with_finish_turn(|_turn, _cancel| async { panic!("no decision") }),
    );
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.ran();
    assert_eq!(faux.call_count(), 1);
    assert_eq!(
        agent.error_message().as_deref(),
        Some("The finish_turn hook panicked: no decision")
    );
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

/// A Chat Completions stream with one tool call, or with one text.
fn tool_call_reply() -> Reply {
    Reply::sse([
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    ])
}

fn text_reply(text: &str) -> Reply {
    Reply::sse([
        format!("data: {{\"id\":\"c2\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":\"stop\"}}]}}\n\n"),
        "data: [DONE]\n\n".to_string(),
    ])
}

#[tokio::test]
async fn prepare_request_switches_the_model_and_request_two_goes_to_the_second_server() {
    let first = TestServer::start(vec![tool_call_reply()]).await.unwrap();
    let second = TestServer::start(vec![text_reply("from the second model")])
        .await
        .unwrap();
    let model_a = oxpi_ai::Model::openai_compatible(format!("{}/v1", first.base_url()), "model-a");
    let model_b = oxpi_ai::Model::openai_compatible(format!("{}/v1", second.base_url()), "model-b");
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let options = AgentOptions::new(model_a)
        .with_thinking_level(ReasoningLevel::High)
        .with_stream_options(
            StreamOptions::default()
                .with_max_retries(0)
                .with_timeout(Duration::from_secs(10)),
        )
        .with_tool(handle(ReadTool::default()))
        .with_prepare_request(move |request, _cancel| {
            let mut log = log.lock().unwrap();
            log.push((
                request.model.id.clone(),
                request.thinking_level,
                request.context.messages.len(),
            ));
            let update = (log.len() == 2).then(|| {
                RequestUpdate::new()
                    .with_model(model_b.clone())
                    .with_thinking_level(None)
            });
            async move { update }
        });
    let agent = Agent::new(options);
    agent.prompt("read a").await.unwrap();
    assert_eq!(agent.error_message(), None);
    assert_eq!(first.requests().len(), 1);
    assert_eq!(
        second.requests().len(),
        1,
        "request 2 went to the second model's server"
    );
    assert_eq!(second.requests()[0].json()["model"], json!("model-b"));
    // Called before each request, the first included; the change holds for the run only.
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("model-a".to_string(), Some(ReasoningLevel::High), 1),
            ("model-a".to_string(), Some(ReasoningLevel::High), 3),
        ]
    );
    let answers = assistants(&agent.messages());
    assert_eq!(
        answers.iter().map(|a| a.model.as_str()).collect::<Vec<_>>(),
        ["model-a", "model-b"]
    );
    assert_eq!(
        agent.model().id,
        "model-a",
        "the agent's own model is not changed"
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn a_context_from_prepare_request_is_what_later_requests_are_built_from() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(ReadTool::default()))
            .with_prepare_request(|request, _cancel| {
                // Keep only the newest user message on the first request (trimming).
                let first = request.context.messages.len() == 2;
                let trimmed = first.then(|| {
                    let last = request.context.messages.last().cloned().unwrap();
                    RequestUpdate::new()
                        .with_context(AgentContext::new(vec![last], request.context.tools.clone()))
                });
                async move { trimmed }
            }),
    );
    agent
        .replace_messages(vec![Message::user("old question")])
        .unwrap();
    agent.prompt("new question").await.unwrap();
    let requests = faux.requests();
    assert_eq!(requests[0].roles, ["user"]);
    // The run went on pushing onto the replaced context.
    assert_eq!(requests[1].roles, ["user", "assistant", "toolResult"]);
    // The agent's history holds everything.
    assert_eq!(
        roles(&agent.messages()),
        ["user", "user", "assistant", "toolResult", "assistant"]
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn a_panicking_prepare_request_ends_the_turn_without_a_request() {
    let faux = faux();
    faux.push(FauxReply::text("never asked"));
    let agent = Agent::new(
        options(&faux).with_prepare_request(|_request, _cancel| async { panic!("no route") }),
    );
    agent.prompt("go").await.ran();
    assert_eq!(faux.call_count(), 0);
    let text = "The prepare_request hook panicked: no route";
    assert_eq!(agent.error_message().as_deref(), Some(text));
    let last = last_assistant(&agent.messages());
    assert_eq!(last.stop_reason, StopReason::Error);
}

#[tokio::test]
async fn prepare_next_turn_with_context_adds_messages_before_steering_and_wins() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("done"));
    let log: Log = Arc::default();
    let (with_context_log, plain_log) = (log.clone(), log.clone());
    let steer_agent: Arc<Mutex<Option<Agent>>> = Arc::default();
    let steer_from_hook = steer_agent.clone();
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(ReadTool::default()))
            .with_prepare_next_turn(move |_cancel| {
                plain_log.lock().unwrap().push("prepare_next_turn".into());
                async { None }
            })
            .with_prepare_next_turn_with_context(move |turn, _cancel| {
                with_context_log.lock().unwrap().push(format!(
                    "prepare_next_turn_with_context {:?} results={}",
                    turn.message.stop_reason,
                    turn.tool_results.len()
                ));
                // Steering queued while the hook runs is taken for the same turn.
                if let Some(agent) = steer_from_hook.lock().unwrap().as_ref() {
                    agent.steer(Message::user("steer"));
                }
                async {
                    Some(TurnUpdate::new().with_messages([Message::user("note from the hook")]))
                }
            }),
    );
    *steer_agent.lock().unwrap() = Some(agent.clone());
    let _sub = log_events(&agent, &log);
    agent.prompt("go").await.unwrap();
    *steer_agent.lock().unwrap() = None;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "turn_start",
            "turn_end",
            "prepare_next_turn_with_context ToolUse results=1",
            "turn_start",
            "turn_end",
            "agent_end",
        ]
    );
    let messages = agent.messages();
    assert_eq!(
        roles(&messages),
        [
            "user",
            "assistant",
            "toolResult",
            "user",
            "user",
            "assistant"
        ]
    );
    assert_eq!(user_text(&messages[3]), "note from the hook");
    assert_eq!(user_text(&messages[4]), "steer");
    assert_eq!(faux.requests()[1].roles.len(), 5);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn prepare_next_turn_can_switch_the_model_for_the_next_turn() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("done"));
    let mut second = faux.model();
    second.id = "faux-2".into();
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(ReadTool::default()))
            .with_prepare_next_turn(move |_cancel| {
                let update = TurnUpdate::new().with_model(second.clone());
                async move { Some(update) }
            }),
    );
    agent.prompt("go").await.unwrap();
    let models: Vec<String> = assistants(&agent.messages())
        .into_iter()
        .map(|a| a.model)
        .collect();
    assert_eq!(models, ["faux-model", "faux-2"]);
}
