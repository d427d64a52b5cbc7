//! Steering and follow-up queues: when queued messages reach the model.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;
use oxpi_agent_core::{Agent, AgentEvent};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::Message;
use serde_json::json;

#[tokio::test(start_paused = true)]
async fn steering_during_a_tool_is_delivered_after_the_batch_before_the_next_request() {
    let faux = faux();
    let reply = call("c1", "sleep", json!({"ms": 100}));
    faux.push(and_call(reply, "c2", "sleep", json!({"ms": 50})));
    faux.push(FauxReply::text("ok, switching"));
    let tracker = Arc::new(Tracker::default());
    let agent = Agent::new(options(&faux).with_tool(handle(SleepTool::new("sleep", &tracker))));
    let (log, _log_sub) = EventLog::attach(&agent);

    // Steer from another task while both tools are running.
    let steerer = agent.clone();
    let running = tracker.clone();
    let steer_task = tokio::spawn(async move {
        until("both tools run", || running.running() == 2).await;
        steerer.steer(Message::user("stop, do X instead"));
    });
    agent.prompt("go").await.unwrap();
    steer_task.await.unwrap();

    // The tools were not cut short: both finished and have their results.
    assert_eq!(tracker.finished(), ["c2", "c1"]);
    let requests = faux.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].roles,
        ["user", "assistant", "toolResult", "toolResult", "user"]
    );
    let messages = agent.messages();
    assert_eq!(user_text(&messages[4]), "stop, do X instead");
    // Events: the steering message opens the second turn.
    let seen = log.names();
    let second_turn = seen.iter().rposition(|n| n == "turn_start").unwrap();
    assert_eq!(
        seen[second_turn..second_turn + 4],
        names(&[
            "turn_start",
            "message_start(user)",
            "message_end(user)",
            "message_start(assistant)"
        ])
    );
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn steering_after_a_final_reply_keeps_the_run_going() {
    let faux = faux();
    faux.push(FauxReply::text("first answer"));
    faux.push(FauxReply::text("second answer"));
    let agent = Agent::new(options(&faux));
    let steerer = agent.clone();
    let sub = agent.subscribe(move |e| {
        if let AgentEvent::MessageEnd {
            message: Message::Assistant(a),
        } = e
        {
            if a.text() == "first answer" {
                steerer.steer(Message::user("one more thing"));
            }
        }
    });
    agent.prompt("hi").await.unwrap();
    drop(sub);
    let requests = faux.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].roles, ["user", "assistant", "user"]);
    assert_eq!(last_assistant(&agent.messages()).text(), "second answer");
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn follow_up_is_delivered_only_when_the_agent_would_stop() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("read it"));
    faux.push(FauxReply::text("and the follow-up"));
    let agent = Agent::new(options(&faux).with_tool(handle(ReadTool::default())));
    let (log, _log_sub) = EventLog::attach(&agent);
    // Queued right at the start, while the model still has tool calls to make.
    let queued = Arc::new(AtomicBool::new(false));
    let (follower, flag) = (agent.clone(), queued.clone());
    let sub = agent.subscribe(move |e| {
        if matches!(e, AgentEvent::AgentStart) {
            follower.follow_up(Message::user("then summarize"));
            flag.store(true, Ordering::SeqCst);
        }
    });
    agent.prompt("go").await.unwrap();
    drop(sub);
    assert!(queued.load(Ordering::SeqCst));

    let requests = faux.requests();
    assert_eq!(requests.len(), 3, "the follow-up produced another request");
    assert_eq!(
        requests[1].roles,
        ["user", "assistant", "toolResult"],
        "not delivered mid-run"
    );
    assert_eq!(
        requests[2].roles,
        ["user", "assistant", "toolResult", "assistant", "user"]
    );
    let messages = agent.messages();
    assert_eq!(user_text(&messages[4]), "then summarize");
    assert_eq!(last_assistant(&messages).text(), "and the follow-up");
    // One run: a single agent_start/agent_end pair, carrying all six messages.
    let ends = log.agent_ends();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].0.len(), 6);
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn follow_up_queued_while_idle_is_used_by_the_next_run() {
    let faux = faux();
    faux.push(FauxReply::text("one"));
    faux.push(FauxReply::text("two"));
    let agent = Agent::new(options(&faux));
    agent.follow_up(Message::user("later"));
    agent.prompt("now").await.unwrap();
    assert_eq!(faux.requests()[1].roles, ["user", "assistant", "user"]);
    assert_eq!(last_assistant(&agent.messages()).text(), "two");
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn steering_wins_over_follow_up() {
    let faux = faux();
    faux.push(FauxReply::text("one"));
    faux.push(FauxReply::text("two"));
    faux.push(FauxReply::text("three"));
    let agent = Agent::new(options(&faux));
    agent.follow_up(Message::user("follow"));
    let steerer = agent.clone();
    let sub = agent.subscribe(move |e| {
        if let AgentEvent::TurnEnd {
            message: Message::Assistant(a),
            ..
        } = e
        {
            if a.text() == "one" {
                steerer.steer(Message::user("steer"));
            }
        }
    });
    agent.prompt("start").await.unwrap();
    drop(sub);
    let users: Vec<String> = agent
        .messages()
        .iter()
        .filter(|m| m.role() == "user")
        .map(user_text)
        .collect();
    assert_eq!(users, ["start", "steer", "follow"]);
    assert_idle_and_paired(&agent);
}

/// pi's Agent polls the steering queue when a run starts, so a message steered while idle goes
/// out with the prompt in the first request. oxpi only drains steering after a reply, so the
/// first request lacks it and an extra request follows. With `with_max_turns(1)` such a message
/// can never be delivered: every run drains it after its only reply, hits the limit, pushes it
/// back and ends with the max-turns error.
#[tokio::test]
async fn steering_queued_while_idle_goes_out_with_the_prompt() {
    let faux = faux();
    faux.push(FauxReply::text("answer"));
    let agent = Agent::new(options(&faux));
    agent.steer(Message::user("queued earlier"));
    agent.prompt("the prompt").await.unwrap();
    assert_eq!(faux.requests()[0].roles, ["user", "user"]);
    assert_eq!(faux.call_count(), 1);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn steering_is_not_lost_when_the_turn_limit_is_reached() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("one"));
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(ReadTool::default()))
            .with_max_turns(2),
    );
    let steerer = agent.clone();
    let sub = agent.subscribe(move |e| {
        if let AgentEvent::TurnEnd {
            message: Message::Assistant(a),
            ..
        } = e
        {
            if a.text() == "one" {
                steerer.steer(Message::user("queued at the limit"));
            }
        }
    });
    agent.prompt("hi").await.ran();
    drop(sub);
    // The steering message would need a third request: the limit stops the run instead...
    assert_eq!(faux.call_count(), 2);
    assert!(agent.error_message().unwrap().contains("maximum"));
    assert_idle_and_paired(&agent);

    // ...and keeps the message queued: the next run sends it with its prompt.
    faux.push(FauxReply::text("two"));
    agent.prompt("next").await.unwrap();
    assert_eq!(
        faux.requests()[2]
            .roles
            .iter()
            .filter(|r| **r == "user")
            .count(),
        3
    );
    assert_eq!(agent.error_message(), None);
    let users: Vec<String> = agent
        .messages()
        .iter()
        .filter(|m| m.role() == "user")
        .map(user_text)
        .collect();
    assert_eq!(users, ["hi", "next", "queued at the limit"]);
    assert_eq!(last_assistant(&agent.messages()).text(), "two");
    assert_idle_and_paired(&agent);
}
