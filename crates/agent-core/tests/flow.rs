//! The run loop on the faux provider: the exact event order of a tool-using run, what each
//! request carries, parallel and sequential tool batches, every way a tool call can fail,
//! provider errors and the turn limit. Every test ends with the pairing invariant. The hooks
//! and tool updates are in `hooks.rs`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use futures::FutureExt;
use oxpi_agent_core::{Agent, AgentEvent, AgentToolResult, ToolCallDecision, ToolExecution};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::StopReason;
use serde_json::json;

#[tokio::test]
async fn two_request_flow_has_the_exact_event_order() {
    let faux = faux();
    faux.push(call("call_1", "read", json!({"path": "a.txt"})));
    faux.push(FauxReply::text("The file says hello."));
    let read = ReadTool::default();
    let agent = Agent::new(options(&faux).with_tool(handle(read.clone())));
    let (log, _sub) = EventLog::attach(&agent);

    agent.prompt("Read a.txt").await.unwrap();

    assert_eq!(
        log.names(),
        names(&[
            "agent_start",
            "turn_start",
            "message_start(user)",
            "message_end(user)",
            "message_start(assistant)",
            "message_update(toolcall_start)",
            "message_update(toolcall_delta)",
            "message_update(toolcall_end)",
            "message_end(assistant)",
            "tool_execution_start(call_1)",
            "tool_execution_end(call_1)",
            "message_start(toolResult)",
            "message_end(toolResult)",
            "turn_end",
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
    assert_event_grammar(&log.events());

    // Request 1 carries the prompt; request 2 the prompt, the tool call and its result.
    let requests = faux.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].roles, vec!["user"]);
    assert_eq!(requests[1].roles, vec!["user", "assistant", "toolResult"]);
    assert_eq!(requests[0].tools, vec!["read".to_string()]);

    let messages = agent.messages();
    assert_eq!(
        roles(&messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(read.calls(), ["a.txt"]);
    let results = tool_results(&messages);
    assert_eq!(results[0].tool_call_id, "call_1");
    assert_eq!(results[0].text_content(), "contents of a.txt");
    assert!(!results[0].is_error);
    let last = last_assistant(&messages);
    assert_eq!(last.text(), "The file says hello.");
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(agent.error_message(), None);

    // Event payloads match the history.
    let events = log.events();
    let (added, error) = log.agent_ends().pop().unwrap();
    assert_eq!(
        added, *messages,
        "agent_end carries the messages the run added"
    );
    assert_eq!(error, None);
    let turn_ends: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => Some((message.clone(), tool_results.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(turn_ends.len(), 2);
    assert_eq!(turn_ends[0].0, messages[1]);
    assert_eq!(turn_ends[0].1, results);
    assert_eq!(turn_ends[1].0, messages[3]);
    assert!(turn_ends[1].1.is_empty());
    let end = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_name,
                result,
                is_error,
                ..
            } => Some((tool_name.clone(), result.clone(), *is_error)),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        end,
        (
            "read".into(),
            AgentToolResult::text("contents of a.txt"),
            false
        )
    );
    let start_args = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionStart { args, .. } => Some(args.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        serde_json::Value::Object(start_args),
        json!({"path": "a.txt"})
    );

    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn a_text_only_reply_is_one_turn() {
    let faux = faux();
    faux.push(FauxReply::new().with_thinking("hmm").with_text("Hi!"));
    let agent = Agent::new(options(&faux).with_system_prompt("Be brief."));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("Hello").await.unwrap();
    assert_eq!(
        log.names(),
        names(&[
            "agent_start",
            "turn_start",
            "message_start(user)",
            "message_end(user)",
            "message_start(assistant)",
            "message_update(thinking_start)",
            "message_update(thinking_delta)",
            "message_update(thinking_end)",
            "message_update(text_start)",
            "message_update(text_delta)",
            "message_update(text_end)",
            "message_end(assistant)",
            "turn_end",
            "agent_end",
        ])
    );
    assert_eq!(
        faux.requests()[0].system_prompt.as_deref(),
        Some("Be brief.")
    );
    assert_eq!(last_assistant(&agent.messages()).text(), "Hi!");
    assert_idle_and_paired(&agent);
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_finish_out_of_order_but_are_recorded_in_call_order() {
    let faux = faux();
    let reply = call("slow", "sleep", json!({"ms": 300}));
    let reply = and_call(reply, "mid", "sleep", json!({"ms": 200}));
    let reply = and_call(reply, "fast", "sleep", json!({"ms": 100}));
    faux.push(reply);
    faux.push(FauxReply::text("all done"));
    let tracker = Arc::new(Tracker::default());
    let agent = Agent::new(options(&faux).with_tool(handle(SleepTool::new("sleep", &tracker))));
    let (log, _sub) = EventLog::attach(&agent);

    let started = tokio::time::Instant::now();
    let watcher = {
        let agent = agent.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            agent.pending_tool_calls()
        })
    };
    agent.prompt("go").await.unwrap();
    let elapsed = started.elapsed();

    // All three ran at once (about 300 ms of virtual time, not 600).
    assert_eq!(tracker.max_running(), 3);
    assert!(
        elapsed < std::time::Duration::from_millis(550),
        "{elapsed:?}"
    );
    assert_eq!(tracker.finished(), ["fast", "mid", "slow"]);
    let mut pending = watcher.await.unwrap();
    pending.sort();
    assert_eq!(pending, ["fast", "mid", "slow"]);

    // tool_execution_end in completion order, results in call order.
    let names = log.names();
    let tool_events: Vec<&str> = names
        .iter()
        .filter(|n| n.starts_with("tool_execution") || n.starts_with("message_start(toolResult"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        tool_events,
        [
            "tool_execution_start(slow)",
            "tool_execution_start(mid)",
            "tool_execution_start(fast)",
            "tool_execution_end(fast)",
            "tool_execution_end(mid)",
            "tool_execution_end(slow)",
            "message_start(toolResult)",
            "message_start(toolResult)",
            "message_start(toolResult)",
        ]
    );
    let messages = agent.messages();
    let ids: Vec<String> = tool_results(&messages)
        .into_iter()
        .map(|r| r.tool_call_id)
        .collect();
    assert_eq!(ids, ["slow", "mid", "fast"]);
    assert_eq!(
        faux.requests()[1].roles,
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "toolResult"
        ]
    );
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

#[tokio::test(start_paused = true)]
async fn sequential_mode_runs_one_tool_at_a_time_in_call_order() {
    let faux = faux();
    let reply = call("slow", "sleep", json!({"ms": 300}));
    let reply = and_call(reply, "mid", "sleep", json!({"ms": 200}));
    let reply = and_call(reply, "fast", "sleep", json!({"ms": 100}));
    faux.push(reply);
    faux.push(FauxReply::text("all done"));
    let tracker = Arc::new(Tracker::default());
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(SleepTool::new("sleep", &tracker)))
            .with_tool_execution(ToolExecution::Sequential),
    );
    let (log, _sub) = EventLog::attach(&agent);
    let started = tokio::time::Instant::now();
    agent.prompt("go").await.unwrap();

    assert_eq!(tracker.max_running(), 1, "sequential tools overlapped");
    assert_eq!(tracker.started(), ["slow", "mid", "fast"]);
    assert_eq!(tracker.finished(), ["slow", "mid", "fast"]);
    assert!(started.elapsed() >= std::time::Duration::from_millis(600));
    let ids: Vec<String> = tool_results(&agent.messages())
        .into_iter()
        .map(|r| r.tool_call_id)
        .collect();
    assert_eq!(ids, ["slow", "mid", "fast"]);
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

/// pi-agent-core's sequential mode prepares, executes and finalizes each call before the next
/// one starts: `tool_execution_start(a)`, `tool_execution_end(a)`, the result message of `a`,
/// then `b`. oxpi emits every `tool_execution_start` (and runs every `before_tool_call`) up front.
#[tokio::test(start_paused = true)]
async fn sequential_mode_event_order_matches_pi() {
    let faux = faux();
    let reply = call("a", "sleep", json!({"ms": 100}));
    faux.push(and_call(reply, "b", "sleep", json!({"ms": 50})));
    faux.push(FauxReply::text("done"));
    let tracker = Arc::new(Tracker::default());
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(SleepTool::new("sleep", &tracker)))
            .with_tool_execution(ToolExecution::Sequential),
    );
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    let names = log.names();
    let tool_events: Vec<&str> = names
        .iter()
        .filter(|n| n.starts_with("tool_execution") || n.contains("(toolResult)"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        tool_events,
        [
            "tool_execution_start(a)",
            "tool_execution_end(a)",
            "message_start(toolResult)",
            "message_end(toolResult)",
            "tool_execution_start(b)",
            "tool_execution_end(b)",
            "message_start(toolResult)",
            "message_end(toolResult)",
        ]
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn unknown_tool_gets_a_not_found_error_result() {
    let faux = faux();
    faux.push(call("c1", "x", json!({})));
    faux.push(FauxReply::text("sorry"));
    let agent = Agent::new(options(&faux).with_tool(handle(ReadTool::default())));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    let results = tool_results(&agent.messages());
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert_eq!(results[0].tool_name, "x");
    assert_eq!(results[0].text_content(), "Tool x not found");
    assert!(log.names().contains(&"tool_execution_end(c1)".to_string()));
    assert_eq!(
        faux.call_count(),
        2,
        "the loop goes on after the error result"
    );
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn invalid_arguments_get_a_validation_error_and_the_tool_does_not_run() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": [3]})));
    faux.push(call("c2", "read", json!({})));
    faux.push(FauxReply::text("ok"));
    let read = ReadTool::default();
    let before_calls = Arc::new(AtomicUsize::new(0));
    let mut opts = options(&faux).with_tool(handle(read.clone()));
    let seen = before_calls.clone();
    opts.before_tool_call = Some(Arc::new(move |_call| {
        seen.fetch_add(1, Ordering::SeqCst);
        async { ToolCallDecision::Allow }.boxed()
    }));
    let agent = Agent::new(opts);
    agent.prompt("go").await.unwrap();

    let results = tool_results(&agent.messages());
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(r.is_error);
        assert!(
            r.text_content()
                .starts_with("Validation failed for tool \"read\""),
            "{}",
            r.text_content()
        );
    }
    assert!(results[0].text_content().contains("path"));
    assert!(read.calls().is_empty(), "the tool ran on invalid arguments");
    assert_eq!(
        before_calls.load(Ordering::SeqCst),
        0,
        "before_tool_call saw an invalid call"
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn a_tool_error_becomes_an_error_result_with_its_message() {
    let faux = faux();
    faux.push(call("c1", "fail", json!({})));
    faux.push(FauxReply::text("it failed"));
    let agent = Agent::new(options(&faux).with_tool(handle(FailTool)));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    let results = tool_results(&agent.messages());
    assert!(results[0].is_error);
    assert_eq!(results[0].text_content(), "disk on fire");
    // The error's details are kept, as pi keeps an `isError` result's details.
    assert_eq!(results[0].details, Some(json!({"temperature": 451})));
    let end = log
        .events()
        .into_iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                result, is_error, ..
            } => Some((result, is_error)),
            _ => None,
        })
        .unwrap();
    assert_eq!(result_text(&end.0), "disk on fire");
    assert_eq!(end.0.details, Some(json!({"temperature": 451})));
    assert!(end.1);
    assert_eq!(
        agent.error_message(),
        None,
        "a tool error is not a run error"
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result_and_the_loop_goes_on() {
    let faux = faux();
    let reply = call("c1", "boom", json!({}));
    faux.push(and_call(reply, "c2", "read", json!({"path": "b"})));
    faux.push(FauxReply::text("recovered"));
    let read = ReadTool::default();
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(PanicTool))
            .with_tool(handle(read.clone())),
    );
    agent.prompt("go").await.unwrap();
    let results = tool_results(&agent.messages());
    assert!(results[0].is_error);
    assert!(
        results[0].text_content().contains("tool exploded"),
        "{}",
        results[0].text_content()
    );
    assert!(
        !results[1].is_error,
        "the other call of the batch still succeeds"
    );
    assert_eq!(read.calls(), ["b"]);
    assert_eq!(faux.call_count(), 2);
    assert_eq!(last_assistant(&agent.messages()).text(), "recovered");
    assert_eq!(agent.error_message(), None);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn malformed_arguments_get_an_error_result_and_the_tool_never_runs() {
    let faux = faux();
    faux.push(
        FauxReply::new()
            .with_raw_tool_call(Some("c1".into()), "read", "{\"path\": \"a.txt\"")
            .with_raw_tool_call(Some("c2".into()), "read", "[1, 2]"),
    );
    faux.push(FauxReply::text("ok"));
    let read = ReadTool::default();
    let agent = Agent::new(options(&faux).with_tool(handle(read.clone())));
    agent.prompt("go").await.unwrap();
    let results = tool_results(&agent.messages());
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r.is_error));
    assert!(
        results[0].text_content().contains("not valid JSON"),
        "{}",
        results[0].text_content()
    );
    assert!(
        results[1].text_content().contains("must be a JSON object"),
        "{}",
        results[1].text_content()
    );
    assert!(read.calls().is_empty(), "a malformed call was executed");
    assert_eq!(faux.call_count(), 2);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn length_stop_with_tool_calls_fails_them_without_running_them() {
    let faux = faux();
    let cut = and_call(
        call("c1", "read", json!({"path": "a.txt"})),
        "c2",
        "read",
        json!({"path": "b"}),
    );
    faux.push(cut.with_stop_reason(StopReason::Length));
    faux.push(FauxReply::text("I will retry later"));
    let read = ReadTool::default();
    let agent = Agent::new(options(&faux).with_tool(handle(read.clone())));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.ran();
    let messages = agent.messages();
    assert_eq!(assistants(&messages)[0].stop_reason, StopReason::Length);
    let results = tool_results(&messages);
    let texts: Vec<(bool, String)> = results
        .iter()
        .map(|r| (r.is_error, r.text_content()))
        .collect();
    let expected = "Tool call \"read\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.";
    assert_eq!(
        texts,
        vec![(true, expected.to_string()), (true, expected.to_string())]
    );
    assert!(read.calls().is_empty());
    // The run ends there (asking again would hit the same limit); the application decides.
    assert_eq!(faux.call_count(), 1);
    let error = "The reply hit the output token limit while calling tools; its 2 tool call(s) were not executed";
    assert_eq!(agent.error_message().as_deref(), Some(error));
    assert_eq!(log.agent_ends().pop().unwrap().1.as_deref(), Some(error));
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn provider_error_sets_error_message_and_ends_the_history() {
    let faux = faux();
    faux.push(FauxReply::error("upstream exploded"));
    let agent = Agent::new(options(&faux));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.ran();
    assert_eq!(agent.error_message().as_deref(), Some("upstream exploded"));
    let messages = agent.messages();
    assert_eq!(roles(&messages), ["user", "assistant"]);
    let last = last_assistant(&messages);
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(last.error_message.as_deref(), Some("upstream exploded"));
    let (_, error) = log.agent_ends().pop().unwrap();
    assert_eq!(error.as_deref(), Some("upstream exploded"));
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);

    // The next prompt clears the error.
    faux.push(FauxReply::text("fine now"));
    agent.prompt("again").await.unwrap();
    assert_eq!(agent.error_message(), None);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn provider_error_after_a_tool_call_block_still_pairs_the_call() {
    let faux = faux();
    let mut reply = call("c1", "read", json!({"path": "a"}));
    reply.error = Some("connection reset".into());
    faux.push(reply);
    let read = ReadTool::default();
    let agent = Agent::new(options(&faux).with_tool(handle(read.clone())));
    agent.prompt("go").await.ran();
    assert_eq!(agent.error_message().as_deref(), Some("connection reset"));
    assert!(
        read.calls().is_empty(),
        "a call of a failed reply was executed"
    );
    let results = tool_results(&agent.messages());
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert_eq!(faux.call_count(), 1);
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn empty_queue_is_a_provider_error() {
    let faux = faux();
    let agent = Agent::new(options(&faux));
    agent.prompt("go").await.ran();
    assert_eq!(
        agent.error_message().as_deref(),
        Some("No more faux responses queued")
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn max_turns_stops_a_model_that_always_calls_tools() {
    let faux = faux();
    for i in 0..5 {
        faux.push(call(
            &format!("c{i}"),
            "read",
            json!({"path": format!("f{i}")}),
        ));
    }
    let read = ReadTool::default();
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(read.clone()))
            .with_max_turns(2),
    );
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("loop forever").await.ran();

    assert_eq!(faux.call_count(), 2);
    assert_eq!(faux.pending(), 3);
    let error = agent.error_message().expect("an error message");
    assert!(error.contains("maximum"), "{error}");
    assert!(error.contains('2'), "{error}");
    let (added, end_error) = log.agent_ends().pop().unwrap();
    assert_eq!(end_error.as_deref(), Some(error.as_str()));
    let messages = agent.messages();
    assert_eq!(added, *messages);
    assert_eq!(
        roles(&messages),
        ["user", "assistant", "toolResult", "assistant", "toolResult"]
    );
    assert_eq!(read.calls(), ["f0", "f1"]);
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn max_turns_is_not_an_error_when_the_model_stops_in_time() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(ReadTool::default()))
            .with_max_turns(2),
    );
    agent.prompt("go").await.unwrap();
    assert_eq!(agent.error_message(), None);
    assert_idle_and_paired(&agent);
}
