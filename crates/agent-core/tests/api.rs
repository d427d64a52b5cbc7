//! The `Agent` API around runs: misuse errors, subscriptions (sync and async), state visible
//! while a run is in progress, and runs whose caller goes away.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use oxpi_agent_core::{Agent, AgentError, AgentEvent, AgentOptions};
use oxpi_ai::faux::{FauxProvider, FauxReply};
use oxpi_ai::{AssistantMessage, Message, StopReason};
use serde_json::json;

fn slow_faux() -> FauxProvider {
    FauxProvider::new()
        .with_chunk_chars(4)
        .with_chunk_delay(Duration::from_millis(10))
}

#[tokio::test(start_paused = true)]
async fn prompt_while_busy_is_rejected_and_the_run_is_unaffected() {
    let faux = slow_faux();
    faux.push(FauxReply::text("a fairly long answer to stream"));
    let agent = Agent::new(options(&faux));
    let runner = agent.clone();
    let run = tokio::spawn(async move { runner.prompt("first").await });
    until("streaming", || agent.is_streaming()).await;

    assert_eq!(agent.prompt("second").await, Err(AgentError::Busy));
    assert_eq!(agent.continue_().await, Err(AgentError::Busy));
    assert_eq!(agent.replace_messages(Vec::new()), Err(AgentError::Busy));
    assert_eq!(
        AgentError::Busy.to_string(),
        "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, or wait_for_idle()."
    );

    run.await.unwrap().unwrap();
    assert_eq!(roles(&agent.messages()), ["user", "assistant"]);
    assert_eq!(user_text(&agent.messages()[0]), "first");
    assert_eq!(faux.call_count(), 1);
    assert_idle_and_paired(&agent);
}

/// pi's `continue()` checks `isStreaming` first and throws "already processing"; oxpi checks the
/// last message first, so while tools run (the last message is the assistant's) it answers
/// `CannotContinueFromAssistant` instead of `Busy`.
#[tokio::test(start_paused = true)]
async fn continue_while_tools_run_is_busy() {
    let faux = faux();
    faux.push(call("c1", "sleep", json!({"ms": 100})));
    faux.push(FauxReply::text("done"));
    let tracker = Arc::new(Tracker::default());
    let agent = Agent::new(options(&faux).with_tool(handle(SleepTool::new("sleep", &tracker))));
    let runner = agent.clone();
    let run = tokio::spawn(async move { runner.prompt("go").await });
    until("the tool runs", || tracker.running() == 1).await;
    let answer = agent.continue_().await;
    run.await.unwrap().unwrap();
    assert_idle_and_paired(&agent);
    assert_eq!(answer, Err(AgentError::Busy));
}

#[tokio::test]
async fn continue_on_an_empty_history_is_no_messages() {
    let faux = faux();
    let agent = Agent::new(options(&faux));
    assert_eq!(agent.continue_().await, Err(AgentError::NoMessages));
    assert_eq!(
        AgentError::NoMessages.to_string(),
        "No messages to continue from"
    );
    assert_eq!(faux.call_count(), 0);
    assert!(!agent.is_streaming());
    assert_pairing(&agent.messages());
}

#[tokio::test]
async fn continue_after_an_assistant_message_is_rejected() {
    let faux = faux();
    faux.push(FauxReply::text("hello"));
    let agent = Agent::new(options(&faux));
    agent.prompt("hi").await.unwrap();
    assert_eq!(
        agent.continue_().await,
        Err(AgentError::CannotContinueFromAssistant)
    );
    assert_eq!(
        AgentError::CannotContinueFromAssistant.to_string(),
        "Cannot continue from message role: assistant"
    );
    assert_eq!(faux.call_count(), 1);
    assert_idle_and_paired(&agent);

    // Also after a failed reply: the error assistant message ends the history.
    faux.push(FauxReply::error("boom"));
    agent.prompt("again").await.ran();
    assert_eq!(
        agent.continue_().await,
        Err(AgentError::CannotContinueFromAssistant)
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn continue_from_a_user_message_in_the_initial_history() {
    let faux = faux();
    faux.push(FauxReply::text("answer"));
    let mut opts = options(&faux);
    opts.messages = vec![Message::user("pending question")];
    let agent = Agent::new(opts);
    let (log, _sub) = EventLog::attach(&agent);
    agent.continue_().await.unwrap();
    assert_eq!(faux.requests()[0].roles, ["user"]);
    assert_eq!(roles(&agent.messages()), ["user", "assistant"]);
    // No message events for the existing history; agent_end carries only the new message.
    assert_eq!(
        log.names(),
        names(&[
            "agent_start",
            "turn_start",
            "message_start(assistant)",
            "message_update(text_start)",
            "message_update(text_delta)",
            "message_update(text_end)",
            "message_end(assistant)",
            "turn_end",
            "agent_end",
        ])
    );
    assert_eq!(log.agent_ends()[0].0.len(), 1);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn prompt_with_several_messages_and_an_initial_history() {
    let faux = faux();
    faux.push(FauxReply::text("ok"));
    let mut earlier = AssistantMessage::empty("faux", "faux", "faux-model");
    earlier
        .content
        .push(oxpi_ai::AssistantContent::text("earlier answer"));
    let mut opts = options(&faux);
    opts.messages = vec![Message::user("earlier"), Message::Assistant(earlier)];
    let agent = Agent::new(opts);
    let (log, _sub) = EventLog::attach(&agent);
    agent
        .prompt(vec![Message::user("part one"), Message::user("part two")])
        .await
        .unwrap();
    assert_eq!(
        faux.requests()[0].roles,
        ["user", "assistant", "user", "user"]
    );
    assert_eq!(
        log.names()[..6],
        names(&[
            "agent_start",
            "turn_start",
            "message_start(user)",
            "message_end(user)",
            "message_start(user)",
            "message_end(user)",
        ])
    );
    assert_eq!(log.agent_ends()[0].0.len(), 3);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn state_setters_apply_to_the_next_request() {
    let faux = faux();
    faux.push(FauxReply::text("one"));
    faux.push(FauxReply::text("two"));
    let agent = Agent::new(options(&faux).with_system_prompt("first prompt"));
    agent.prompt("a").await.unwrap();
    agent.set_system_prompt(Some("second prompt".into()));
    assert_eq!(agent.system_prompt().as_deref(), Some("second prompt"));
    agent.prompt("b").await.unwrap();
    let requests = faux.requests();
    assert_eq!(requests[0].system_prompt.as_deref(), Some("first prompt"));
    assert_eq!(requests[1].system_prompt.as_deref(), Some("second prompt"));
    assert_eq!(agent.model().id, faux.model().id);

    agent
        .replace_messages(vec![Message::user("fresh")])
        .unwrap();
    faux.push(FauxReply::text("three"));
    agent.continue_().await.unwrap();
    assert_eq!(faux.requests()[2].roles, ["user"]);
    assert_idle_and_paired(&agent);
}

#[tokio::test(start_paused = true)]
async fn streaming_message_is_visible_mid_stream() {
    let faux = slow_faux();
    faux.push(FauxReply::text("streaming slowly here"));
    let agent = Agent::new(options(&faux));
    let runner = agent.clone();
    let run = tokio::spawn(async move { runner.prompt("go").await });
    until("partial text", || {
        agent
            .streaming_message()
            .is_some_and(|m| !m.text().is_empty())
    })
    .await;
    let partial = agent.streaming_message().unwrap();
    assert!("streaming slowly here".starts_with(&partial.text()));
    assert!(agent.is_streaming());
    run.await.unwrap().unwrap();
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn dropped_subscription_gets_no_more_events() {
    let faux = faux();
    faux.push(FauxReply::text("one"));
    faux.push(FauxReply::text("two"));
    let agent = Agent::new(options(&faux));
    let (kept, _kept_sub) = EventLog::attach(&agent);
    let (dropped, sub) = EventLog::attach(&agent);
    agent.prompt("a").await.unwrap();
    let seen = dropped.len();
    assert_eq!(seen, kept.len());
    drop(sub);
    agent.prompt("b").await.unwrap();
    assert_eq!(
        dropped.len(),
        seen,
        "events after the subscription was dropped"
    );
    assert_eq!(kept.len(), 2 * seen);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn subscription_dropped_mid_run_stops_delivery_at_once() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(options(&faux).with_tool(handle(ReadTool::default())));
    let (all, _all_sub) = EventLog::attach(&agent);
    let slot: Arc<Mutex<Option<oxpi_agent_core::Subscription>>> = Arc::default();
    let got = EventLog::default();
    let (slot2, got2) = (slot.clone(), got.clone());
    let sub = agent.subscribe(move |e| {
        got2.push(e.clone());
        if matches!(e, AgentEvent::TurnEnd { .. }) {
            // Unsubscribe from inside the listener.
            drop(slot2.lock().unwrap().take());
        }
    });
    *slot.lock().unwrap() = Some(sub);
    agent.prompt("go").await.unwrap();
    let names = got.names();
    assert_eq!(names.last().map(String::as_str), Some("turn_end"));
    assert_eq!(names.iter().filter(|n| *n == "turn_end").count(), 1);
    assert!(all.len() > got.len());
    assert!(slot.lock().unwrap().is_none());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn subscription_outliving_the_agent_is_harmless() {
    let faux = faux();
    let agent = Agent::new(options(&faux));
    let sub = agent.subscribe(|_| {});
    drop(agent);
    drop(sub);
}

#[tokio::test(start_paused = true)]
async fn async_listeners_are_awaited_in_order() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(options(&faux).with_tool(handle(ReadTool::default())));
    let trace: Arc<Mutex<Vec<String>>> = Arc::default();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let streaming_at_end = Arc::new(AtomicBool::new(false));

    let (t, f, o, s, a) = (
        trace.clone(),
        in_flight.clone(),
        overlaps.clone(),
        streaming_at_end.clone(),
        agent.clone(),
    );
    let slow = agent.subscribe_async(move |e| {
        let (t, f, o, s, a) = (t.clone(), f.clone(), o.clone(), s.clone(), a.clone());
        async move {
            if f.fetch_add(1, Ordering::SeqCst) > 0 {
                o.fetch_add(1, Ordering::SeqCst);
            }
            let name = event_name(&e);
            t.lock().unwrap().push(format!("slow start {name}"));
            tokio::time::sleep(Duration::from_millis(5)).await;
            if matches!(*e, AgentEvent::AgentEnd { .. }) {
                s.store(a.is_streaming(), Ordering::SeqCst);
            }
            t.lock().unwrap().push(format!("slow end {name}"));
            f.fetch_sub(1, Ordering::SeqCst);
        }
    });
    let t = trace.clone();
    let fast = agent.subscribe(move |e| t.lock().unwrap().push(format!("sync {}", event_name(e))));

    agent.prompt("go").await.unwrap();
    drop((slow, fast));

    let trace = trace.lock().unwrap().clone();
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "listener calls overlapped: {trace:#?}"
    );
    // For every event: the slow listener starts and finishes, then the next listener sees it,
    // then the next event comes.
    assert_eq!(trace.len() % 3, 0);
    for chunk in trace.chunks(3) {
        let name = chunk[0]
            .strip_prefix("slow start ")
            .expect("slow start first");
        assert_eq!(chunk[1], format!("slow end {name}"), "{trace:#?}");
        assert_eq!(chunk[2], format!("sync {name}"), "{trace:#?}");
    }
    assert_eq!(trace.last().map(String::as_str), Some("sync agent_end"));
    // The run (and prompt()) ended only after the agent_end listeners, as in pi.
    assert!(
        streaming_at_end.load(Ordering::SeqCst),
        "agent idle before agent_end listeners settled"
    );
    assert_idle_and_paired(&agent);
}

/// Parallel tools emit `tool_execution_end` from concurrently polled futures (`join_all`), so a
/// slow async listener still busy with one call's end is invoked for the next call's end.
#[tokio::test(start_paused = true)]
async fn async_listeners_never_overlap_with_parallel_tools() {
    let faux = faux();
    let reply = call("c1", "count", json!({}));
    faux.push(and_call(reply, "c2", "count", json!({})));
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(options(&faux).with_tool(handle(CountTool::default())));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let overlaps: Arc<Mutex<Vec<String>>> = Arc::default();
    let (f, o) = (in_flight.clone(), overlaps.clone());
    let sub = agent.subscribe_async(move |e| {
        let (f, o) = (f.clone(), o.clone());
        async move {
            if f.fetch_add(1, Ordering::SeqCst) > 0 {
                o.lock().unwrap().push(event_name(&e));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            f.fetch_sub(1, Ordering::SeqCst);
        }
    });
    agent.prompt("go").await.unwrap();
    drop(sub);
    assert_idle_and_paired(&agent);
    assert!(
        overlaps.lock().unwrap().is_empty(),
        "overlapping deliveries: {:?}",
        overlaps.lock().unwrap()
    );
}

#[tokio::test]
async fn panicking_listeners_do_not_stop_the_run() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(options(&faux).with_tool(handle(ReadTool::default())));
    let bad_sync = agent.subscribe(|e| {
        if matches!(e, AgentEvent::ToolExecutionStart { .. }) {
            panic!("sync listener exploded");
        }
    });
    let bad_async = agent.subscribe_async(|e| async move {
        if matches!(*e, AgentEvent::MessageEnd { .. }) {
            panic!("async listener exploded");
        }
    });
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    drop((bad_sync, bad_async));
    assert_eq!(agent.error_message(), None);
    assert_eq!(last_assistant(&agent.messages()).text(), "done");
    // Later listeners still saw every event.
    assert_eq!(log.names().last().map(String::as_str), Some("agent_end"));
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_prompt_future_does_not_break_the_run() {
    let faux = faux();
    faux.push(call("c1", "sleep", json!({"ms": 200})));
    faux.push(FauxReply::text("finished anyway"));
    let tracker = Arc::new(Tracker::default());
    let agent = Agent::new(options(&faux).with_tool(handle(SleepTool::new("sleep", &tracker))));
    let (log, _sub) = EventLog::attach(&agent);
    // Give up on the prompt while its tool runs.
    let outcome = tokio::time::timeout(Duration::from_millis(50), agent.prompt("go")).await;
    assert!(outcome.is_err(), "the prompt should still be running");
    assert!(agent.is_streaming());
    agent.wait_for_idle().await;
    assert_eq!(last_assistant(&agent.messages()).text(), "finished anyway");
    assert_eq!(log.agent_ends().len(), 1);
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn wait_for_idle_returns_at_once_when_idle() {
    let faux = faux();
    let agent = Agent::new(options(&faux));
    agent.wait_for_idle().await;
    assert!(!agent.is_streaming());
}

/// The run has not settled while agent_end listeners run (as in pi), so a nested prompt is Busy.
#[tokio::test]
async fn prompt_from_an_agent_end_listener_is_busy() {
    let faux = faux();
    faux.push(FauxReply::text("one"));
    let agent = Agent::new(options(&faux));
    let answer: Arc<Mutex<Option<Result<(), AgentError>>>> = Arc::default();
    let (a, slot) = (agent.clone(), answer.clone());
    let sub = agent.subscribe_async(move |e| {
        let (a, slot) = (a.clone(), slot.clone());
        async move {
            if matches!(*e, AgentEvent::AgentEnd { .. }) {
                *slot.lock().unwrap() = Some(a.prompt("nested").await.map(drop));
            }
        }
    });
    agent.prompt("first").await.unwrap();
    drop(sub);
    assert_eq!(*answer.lock().unwrap(), Some(Err(AgentError::Busy)));
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn stream_fn_can_be_swapped_for_a_custom_one() {
    let faux = faux();
    faux.push(FauxReply::text("via custom stream fn"));
    let mut registry = oxpi_ai::ProviderRegistry::new();
    registry.register(faux.clone());
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let mut opts = AgentOptions::new(faux.model());
    opts.stream_fn = Some(Arc::new(move |model, context, options| {
        counted.fetch_add(1, Ordering::SeqCst);
        registry.stream(model, context, options)
    }));
    let agent = Agent::new(opts);
    agent.prompt("hi").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        last_assistant(&agent.messages()).stop_reason,
        StopReason::Stop
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn unknown_api_is_a_run_error() {
    let faux = faux();
    // A registry without the faux provider.
    let agent =
        Agent::new(AgentOptions::new(faux.model()).with_registry(oxpi_ai::ProviderRegistry::new()));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("hi").await.ran();
    let error = agent.error_message().unwrap();
    assert!(error.contains("No provider registered"), "{error}");
    assert_eq!(
        last_assistant(&agent.messages()).stop_reason,
        StopReason::Error
    );
    // Without a provider `start` event the loop still opens the message before closing it.
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}
