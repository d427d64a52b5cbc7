//! Abort: during the stream, during a long tool, between turns, and at every single event of a
//! scripted two-turn run. After every abort the history is paired, the agent is idle, and the
//! same agent runs a new prompt normally.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use oxpi_agent_core::{Agent, AgentEvent, ToolExecution};
use oxpi_ai::faux::{FauxProvider, FauxReply};
use oxpi_ai::StopReason;
use serde_json::json;

/// Prompts again on an agent that was aborted and checks that the run is normal.
async fn assert_reusable(agent: &Agent, faux: &FauxProvider) {
    if faux.pending() == 0 {
        faux.push(FauxReply::text("done"));
    }
    agent.prompt("again").await.expect("a new prompt starts");
    let messages = agent.messages();
    let last = last_assistant(&messages);
    assert_eq!(last.stop_reason, StopReason::Stop, "{last:?}");
    assert_eq!(last.text(), "done");
    assert_eq!(agent.error_message(), None);
    assert_idle_and_paired(agent);
}

/// Calls `agent.abort()` after `delay` from another task.
fn abort_after(agent: &Agent, delay: Duration) -> tokio::task::JoinHandle<()> {
    let agent = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        agent.abort();
    })
}

#[tokio::test(start_paused = true)]
async fn abort_during_the_stream_ends_with_an_aborted_assistant() {
    let faux = FauxProvider::new()
        .with_chunk_chars(4)
        .with_chunk_delay(Duration::from_millis(10));
    let long_text = "word ".repeat(40);
    faux.push(FauxReply::text(long_text.clone()));
    let agent = Agent::new(options(&faux));
    let (log, sub) = EventLog::attach(&agent);

    let aborter = abort_after(&agent, Duration::from_millis(45));
    let started = tokio::time::Instant::now();
    agent.prompt("tell me a long story").await.ran();
    aborter.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );

    let messages = agent.messages();
    assert_eq!(roles(&messages), ["user", "assistant"]);
    let last = last_assistant(&messages);
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert!(last.error_message.is_some());
    assert!(!last.text().is_empty(), "partial content is kept");
    assert!(last.text().len() < long_text.len());
    assert!(agent.error_message().is_some());
    let (added, error) = log.agent_ends().pop().unwrap();
    assert_eq!(added, *messages);
    assert_eq!(error, agent.error_message());
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
    drop(sub);

    assert_reusable(&agent, &faux).await;
}

#[tokio::test(start_paused = true)]
async fn abort_while_a_tool_call_streams_pairs_it_without_running_it() {
    let faux = FauxProvider::new()
        .with_chunk_chars(2)
        .with_chunk_delay(Duration::from_millis(10));
    faux.push(call(
        "c1",
        "read",
        json!({"path": "a/very/long/path/to/some/file.txt"}),
    ));
    let read = ReadTool::default();
    let agent = Agent::new(options(&faux).with_tool(handle(read.clone())));
    let (log, _sub) = EventLog::attach(&agent);
    let aborter = abort_after(&agent, Duration::from_millis(55));
    agent.prompt("go").await.ran();
    aborter.await.unwrap();

    let messages = agent.messages();
    let assistant = last_assistant(&messages);
    assert_eq!(assistant.stop_reason, StopReason::Aborted);
    assert_eq!(
        assistant.tool_calls().count(),
        1,
        "the partial call is kept"
    );
    let results = tool_results(&messages);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert!(read.calls().is_empty(), "a call of an aborted reply ran");
    assert_eq!(faux.call_count(), 1);
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
    assert_reusable(&agent, &faux).await;
}

#[tokio::test(start_paused = true)]
async fn abort_during_a_long_tool_gives_an_aborted_result_promptly() {
    let faux = faux();
    let reply = call("c1", "hang", json!({}));
    faux.push(and_call(reply, "c2", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("never requested"));
    let hang = HangTool::default();
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(hang.clone()))
            .with_tool(handle(ReadTool::default())),
    );
    let (log, _sub) = EventLog::attach(&agent);
    let aborter = abort_after(&agent, Duration::from_millis(50));
    let started = tokio::time::Instant::now();
    agent.prompt("go").await.ran();
    aborter.await.unwrap();

    // Virtual time: waiting for the tool would have jumped an hour ahead.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(hang.executed.load(Ordering::SeqCst), 1);
    let messages = agent.messages();
    // As pi 1.6: the tool results ask for another turn, which ends at once as aborted.
    assert_eq!(
        roles(&messages),
        ["user", "assistant", "toolResult", "toolResult", "assistant"]
    );
    assert_eq!(last_assistant(&messages).stop_reason, StopReason::Aborted);
    let results = tool_results(&messages);
    assert!(results[0].is_error);
    assert_eq!(results[0].text_content(), "Tool execution was aborted");
    // The quick call of the same batch had already finished.
    assert_eq!(results[1].text_content(), "contents of a");
    assert_eq!(faux.call_count(), 1, "no request after the abort");
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Request was aborted")
    );
    let (_, error) = log.agent_ends().pop().unwrap();
    assert_eq!(error.as_deref(), Some("Request was aborted"));
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);

    // The queued reply is consumed by the next prompt.
    faux.push(FauxReply::text("done"));
    agent.prompt("again").await.unwrap();
    assert_eq!(last_assistant(&agent.messages()).text(), "never requested");
    assert_eq!(agent.error_message(), None);
    assert_idle_and_paired(&agent);
}

#[tokio::test(start_paused = true)]
async fn abort_between_turns_stops_before_the_next_request() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    let agent = Agent::new(options(&faux).with_tool(handle(ReadTool::default())));
    let (log, _log_sub) = EventLog::attach(&agent);
    let aborter = agent.clone();
    let sub = agent.subscribe(move |e| {
        if matches!(e, AgentEvent::TurnEnd { .. }) {
            aborter.abort();
        }
    });
    agent.prompt("go").await.ran();
    drop(sub);

    assert_eq!(faux.call_count(), 1);
    // The next turn ends as aborted without a request (pi 1.6).
    assert_eq!(
        roles(&agent.messages()),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(
        last_assistant(&agent.messages()).stop_reason,
        StopReason::Aborted
    );
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Request was aborted")
    );
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);

    // The history ends with the aborted reply: as in pi, continue_ refuses it and a new prompt
    // goes on (providers leave the empty aborted reply out of what they send).
    assert_eq!(
        agent.continue_().await,
        Err(oxpi_agent_core::AgentError::CannotContinueFromAssistant)
    );
    faux.push(FauxReply::text("resumed"));
    agent.prompt("go on").await.unwrap();
    assert_eq!(
        faux.requests()[1].roles,
        ["user", "assistant", "toolResult", "assistant", "user"]
    );
    assert_eq!(last_assistant(&agent.messages()).text(), "resumed");
    assert_eq!(agent.error_message(), None);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn abort_while_idle_does_nothing_to_the_next_run() {
    let faux = faux();
    faux.push(FauxReply::text("hi"));
    let agent = Agent::new(options(&faux));
    agent.abort();
    agent.prompt("hello").await.unwrap();
    assert_eq!(
        last_assistant(&agent.messages()).stop_reason,
        StopReason::Stop
    );
    assert_eq!(agent.error_message(), None);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn abort_at_agent_end_does_not_leak_into_the_next_run() {
    let faux = faux();
    faux.push(FauxReply::text("one"));
    faux.push(FauxReply::text("two"));
    let agent = Agent::new(options(&faux));
    let aborter = agent.clone();
    let sub = agent.subscribe(move |e| {
        if matches!(e, AgentEvent::AgentEnd { .. }) {
            aborter.abort();
        }
    });
    agent.prompt("first").await.unwrap();
    assert_eq!(agent.error_message(), None);
    drop(sub);
    agent.prompt("second").await.unwrap();
    assert_eq!(last_assistant(&agent.messages()).text(), "two");
    assert_eq!(agent.error_message(), None);
    assert_idle_and_paired(&agent);
}

// ---------------------------------------------------------------------------------------------
// Abort at every event index
// ---------------------------------------------------------------------------------------------

/// The script: turn 1 calls `sleep` and `read`, turn 2 answers in text.
fn scripted_agent(mode: ToolExecution) -> (Agent, FauxProvider, ReadTool) {
    let faux = FauxProvider::new().with_chunk_chars(8);
    let reply = FauxReply::new().with_text("Let me look.");
    let reply = and_call(reply, "c1", "sleep", json!({"ms": 20}));
    faux.push(and_call(reply, "c2", "read", json!({"path": "notes.txt"})));
    faux.push(FauxReply::text("done"));
    let tracker = Arc::new(Tracker::default());
    let read = ReadTool::default();
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(SleepTool::new("sleep", &tracker)))
            .with_tool(handle(read.clone()))
            .with_tool_execution(mode),
    );
    (agent, faux, read)
}

/// Runs the script, calling `abort()` from a listener when event number `k` is observed.
/// Returns the agent, its provider and the events of the aborted run.
async fn run_aborting_at(k: usize, mode: ToolExecution) -> (Agent, FauxProvider, Vec<AgentEvent>) {
    let (agent, faux, _) = scripted_agent(mode);
    let log = EventLog::default();
    let seen = Arc::new(AtomicUsize::new(0));
    let (aborter, sink) = (agent.clone(), log.clone());
    let sub = agent.subscribe(move |e| {
        sink.push(e.clone());
        if seen.fetch_add(1, Ordering::SeqCst) == k {
            aborter.abort();
        }
    });
    agent.prompt("do both").await.ran();
    drop(sub); // breaks the agent → listener → agent cycle
    (agent, faux, log.events())
}

async fn count_events(mode: ToolExecution) -> Vec<String> {
    let (agent, _faux, _) = scripted_agent(mode);
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("do both").await.expect("prompt");
    assert_eq!(agent.error_message(), None);
    assert_idle_and_paired(&agent);
    log.names()
}

async fn abort_at_every_event(mode: ToolExecution) {
    let clean = count_events(mode).await;
    assert!(clean.len() > 25, "{clean:#?}");
    for k in 0..clean.len() {
        let (agent, faux, events) = run_aborting_at(k, mode).await;
        let at = &clean[k];
        let messages = agent.messages();
        // The invariant, whatever the event.
        assert_pairing(&messages);
        assert!(!agent.is_streaming(), "k={k} ({at}): still streaming");
        assert!(agent.pending_tool_calls().is_empty(), "k={k} ({at})");
        assert!(agent.streaming_message().is_none(), "k={k} ({at})");
        // The run ended with agent_end carrying exactly what it added.
        let ends: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::AgentEnd { messages, .. } => Some(messages.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ends.len(), 1, "k={k} ({at}): agent_end count");
        assert_eq!(ends[0], *messages, "k={k} ({at}): agent_end messages");
        assert_eq!(
            events.first().map(event_name).as_deref(),
            Some("agent_start")
        );
        assert_eq!(events.last().map(event_name).as_deref(), Some("agent_end"));
        // Events up to the abort are those of the clean run.
        let names: Vec<String> = events.iter().map(event_name).collect();
        assert_eq!(names[..=k], clean[..=k], "k={k}: prefix differs");
        // An assistant message that saw the abort says so, and nothing ran after the abort
        // except what was already in flight.
        if let Some(a) = assistants(&messages).last() {
            if a.stop_reason == StopReason::Aborted {
                assert!(a.error_message.is_some(), "k={k} ({at})");
            }
        }
        // Same agent, new prompt.
        assert_reusable(&agent, &faux).await;
    }
}

#[tokio::test(start_paused = true)]
async fn abort_at_every_event_index_parallel() {
    abort_at_every_event(ToolExecution::Parallel).await;
}

#[tokio::test(start_paused = true)]
async fn abort_at_every_event_index_sequential() {
    abort_at_every_event(ToolExecution::Sequential).await;
}

/// After an abort observed at `turn_start` (or at `agent_start` / the prompt's message events),
/// the loop appends the pending messages and breaks right after emitting `turn_start`, so that
/// turn never gets a `turn_end`. pi never leaves a turn open: it streams (and gets an aborted
/// reply) and emits `turn_end` with it.
#[tokio::test(start_paused = true)]
async fn abort_at_every_event_index_keeps_the_event_grammar() {
    let clean = count_events(ToolExecution::Parallel).await;
    let mut broken = Vec::new();
    for (k, at) in clean.iter().enumerate() {
        let (_agent, _faux, events) = run_aborting_at(k, ToolExecution::Parallel).await;
        if let Err(e) = check_event_grammar(&events) {
            let first_line = e.lines().next().unwrap_or_default().to_string();
            broken.push(format!("k={k} ({at}): {first_line}"));
        }
    }
    assert!(
        broken.is_empty(),
        "event grammar broken when aborting at: {broken:#?}"
    );
}

/// In sequential mode, after an abort during call 1 the later calls were already "prepared"
/// (allowed) before execution began; `execute_one` then races the tool future against
/// `cancel.cancelled()` in an unbiased `select!`, so a later tool is sometimes polled, i.e.
/// started, after the abort. pi's sequential loop stops executing after an abort.
#[tokio::test(start_paused = true)]
async fn sequential_abort_never_starts_the_remaining_tools() {
    for round in 0..24 {
        let faux = faux();
        let reply = call("c1", "hang", json!({}));
        faux.push(and_call(reply, "c2", "count", json!({})));
        let count = CountTool::default();
        let agent = Agent::new(
            options(&faux)
                .with_tool(handle(HangTool::default()))
                .with_tool(handle(count.clone()))
                .with_tool_execution(ToolExecution::Sequential),
        );
        let aborter = abort_after(&agent, Duration::from_millis(20));
        agent.prompt("go").await.ran();
        aborter.await.unwrap();
        assert_idle_and_paired(&agent);
        let results = tool_results(&agent.messages());
        assert_eq!(results[0].text_content(), "Tool execution was aborted");
        assert!(results[1].is_error, "round {round}: {:?}", results[1]);
        assert_eq!(
            count.count(),
            0,
            "round {round}: a tool started after the abort"
        );
    }
}

/// A tool that notices cancellation and returns its own result races the loop's own
/// cancellation branch in an unbiased `select!`: the recorded result is sometimes the tool's
/// (`stopped cleanly`, not an error) and sometimes `Tool execution was aborted`.
#[tokio::test(start_paused = true)]
async fn abort_result_of_a_cancellation_aware_tool_is_deterministic() {
    let mut outcomes = Vec::new();
    for _ in 0..24 {
        let faux = faux();
        faux.push(call("c1", "wait_cancel", json!({})));
        let agent = Agent::new(options(&faux).with_tool(handle(CancelAwareTool)));
        let aborter = abort_after(&agent, Duration::from_millis(20));
        agent.prompt("go").await.ran();
        aborter.await.unwrap();
        assert_idle_and_paired(&agent);
        let r = tool_results(&agent.messages()).remove(0);
        outcomes.push((r.text_content(), r.is_error));
    }
    outcomes.dedup();
    assert_eq!(
        outcomes,
        [("Tool execution was aborted".to_string(), true)],
        "outcomes vary between identical runs"
    );
}

#[tokio::test(start_paused = true)]
async fn abort_during_a_cancellation_aware_tool_ends_promptly_and_pairs() {
    let faux = faux();
    faux.push(call("c1", "wait_cancel", json!({})));
    let agent = Agent::new(options(&faux).with_tool(handle(CancelAwareTool)));
    let aborter = abort_after(&agent, Duration::from_millis(20));
    let started = tokio::time::Instant::now();
    agent.prompt("go").await.ran();
    aborter.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(faux.call_count(), 1);
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Request was aborted")
    );
    assert_idle_and_paired(&agent);
    assert_reusable(&agent, &faux).await;
}

#[tokio::test(start_paused = true)]
async fn abort_with_steering_queued_keeps_the_steering_message_for_later() {
    let faux = faux();
    faux.push(call("c1", "hang", json!({})));
    let agent = Agent::new(options(&faux).with_tool(handle(HangTool::default())));
    let steered = Arc::new(Mutex::new(false));
    let (steerer, flag) = (agent.clone(), steered.clone());
    let sub = agent.subscribe(move |e| {
        if matches!(e, AgentEvent::ToolExecutionStart { .. }) {
            steerer.steer(oxpi_ai::Message::user("also check b"));
            steerer.abort();
            *flag.lock().unwrap() = true;
        }
    });
    agent.prompt("go").await.ran();
    drop(sub);
    assert!(*steered.lock().unwrap());
    assert_eq!(faux.call_count(), 1);
    assert_idle_and_paired(&agent);
    // The queued steering message is delivered by the next run (oxpi: after its first reply,
    // hence two replies).
    faux.push(FauxReply::text("ok"));
    faux.push(FauxReply::text("ok"));
    agent.prompt("next").await.unwrap();
    assert_eq!(agent.error_message(), None);
    let texts: Vec<String> = agent
        .messages()
        .iter()
        .filter(|m| m.role() == "user")
        .map(user_text)
        .collect();
    assert!(texts.contains(&"also check b".to_string()), "{texts:?}");
    assert_idle_and_paired(&agent);
}
