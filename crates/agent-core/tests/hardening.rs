//! What an adversarial run found in the loop: queued follow-ups moved to the steering queue
//! when a run stops, hooks that keep an aborted run alive, a `stream_fn` that panics, and two
//! tool calls with one id. Every test ends with the pairing invariant.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use futures::FutureExt;
use oxpi_agent_core::{Agent, ToolCallDecision};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::{Message, StopReason};
use serde_json::json;
use tokio::sync::Notify;

/// Far longer than any run here takes; a run that needs it is hung.
const HUNG: Duration = Duration::from_secs(20);

/// Prompts `agent`, aborts it once `entered` is notified (a hook was reached), and waits for
/// the run to end; a run still going after [`HUNG`] fails the test.
async fn prompt_and_abort_when(agent: Agent, entered: &Notify) -> Arc<Agent> {
    let agent = Arc::new(agent);
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    tokio::time::timeout(HUNG, entered.notified())
        .await
        .unwrap();
    agent.abort();
    tokio::time::timeout(HUNG, running)
        .await
        .expect("the aborted run ended")
        .unwrap()
        .ran();
    agent
}

/// A follow-up that a run had taken when it stopped at `max_turns` goes back to the follow-up
/// queue (it went to the steering queue: `clear_follow_up_queue` left it there and the next
/// prompt delivered it), and the error does not claim the model wanted to go on.
#[tokio::test]
async fn a_follow_up_taken_at_max_turns_stays_a_follow_up() {
    let faux = faux();
    faux.push(FauxReply::text("first answer"));
    faux.push(FauxReply::text("second answer"));
    let agent = Agent::new(options(&faux).with_max_turns(1));
    agent.follow_up(Message::user("and then?"));
    agent.prompt("go").await.ran();

    assert_eq!(faux.call_count(), 1);
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Stopped after reaching the maximum of 1 turns; 1 queued message(s) were not sent and stay queued")
    );
    assert!(agent.has_queued_messages());
    agent.clear_follow_up_queue();
    assert!(
        !agent.has_queued_messages(),
        "clearing the follow-up queue clears the follow-up"
    );
    agent.prompt("next").await.unwrap();
    let users: Vec<String> = agent
        .messages()
        .iter()
        .filter(|m| matches!(m, Message::User(_)))
        .map(user_text)
        .collect();
    assert_eq!(
        users,
        ["go", "next"],
        "the cleared follow-up was not delivered"
    );
    assert_idle_and_paired(&agent);
}

/// A `before_tool_call` hook that waits for ever (a person who never answers) no longer holds
/// an aborted run: the hook is raced against the abort, sees it on its own token, and the call
/// gets its one result.
#[tokio::test]
async fn abort_ends_a_run_waiting_in_before_tool_call() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    let entered = Arc::new(Notify::new());
    let hook_saw_cancel = Arc::new(Mutex::new(None));
    let mut opts = options(&faux).with_tool(handle(ReadTool::default()));
    let (entered2, saw2) = (entered.clone(), hook_saw_cancel.clone());
    opts.before_tool_call = Some(Arc::new(move |seen| {
        assert_eq!(
            seen.args.get("path"),
            Some(&json!("a")),
            "validated arguments"
        );
        assert_eq!(seen.assistant_message.stop_reason, StopReason::ToolUse);
        *saw2.lock().unwrap() = Some(seen.cancel.clone());
        entered2.notify_one();
        futures::future::pending::<ToolCallDecision>().boxed()
    }));
    let agent = prompt_and_abort_when(Agent::new(opts), &entered).await;
    let token = hook_saw_cancel.lock().unwrap().clone().unwrap();
    assert!(
        token.is_cancelled(),
        "the hook's token tells it of the abort"
    );
    let results = tool_results(&agent.messages());
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0].text_content(),
        "Tool call was not executed: the request was aborted"
    );
    assert_idle_and_paired(&agent);
}

/// The same for `after_tool_call`: the unreviewed result is not kept (the hook may be there to
/// redact it); the call ends as aborted.
#[tokio::test]
async fn abort_ends_a_run_waiting_in_after_tool_call() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    let entered = Arc::new(Notify::new());
    let read = ReadTool::default();
    let mut opts = options(&faux).with_tool(handle(read.clone()));
    let entered2 = entered.clone();
    opts.after_tool_call = Some(Arc::new(move |_| {
        entered2.notify_one();
        futures::future::pending().boxed()
    }));
    let agent = prompt_and_abort_when(Agent::new(opts), &entered).await;
    assert_eq!(read.calls(), ["a"]);
    let results = tool_results(&agent.messages());
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert_eq!(results[0].text_content(), "Tool execution was aborted");
    assert_idle_and_paired(&agent);
}

/// A `stream_fn` that panics ends the turn as a failed request would: `turn_end` before
/// `agent_end`, the prompt and an error reply in `agent_end`'s messages and in the history
/// (it was `agent_end` with no `turn_end` and no messages).
#[tokio::test]
async fn a_panicking_stream_fn_ends_the_run_in_balance() {
    let faux = faux();
    let mut opts = options(&faux);
    opts.stream_fn = Some(Arc::new(|_, _, _| panic!("no provider today")));
    let agent = Agent::new(opts);
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.ran();

    assert_event_grammar(&log.events());
    let names = log.names();
    assert_eq!(
        names.iter().filter(|n| *n == "turn_end").count(),
        1,
        "{names:?}"
    );
    let text = "The stream_fn panicked: no provider today";
    assert_eq!(agent.error_message().as_deref(), Some(text));
    let (added, error) = log.agent_ends().pop().unwrap();
    assert_eq!(error.as_deref(), Some(text));
    assert_eq!(added, *agent.messages());
    assert_eq!(roles(&added), ["user", "assistant"]);
    let reply = last_assistant(&added);
    assert_eq!(
        (reply.stop_reason, reply.error_message.as_deref()),
        (StopReason::Error, Some(text))
    );
    assert_idle_and_paired(&agent);
}

/// Two calls with one id in a reply: both run, both results reach the next request (the
/// second result was dropped: two calls, one result). The second call's id gets `_2`.
#[tokio::test]
async fn two_calls_with_one_id_both_get_their_result() {
    let faux = faux();
    faux.push(and_call(
        call("c1", "read", json!({"path": "a"})),
        "c1",
        "read",
        json!({"path": "b"}),
    ));
    let sent = Arc::new(Mutex::new(Vec::new()));
    let sent2 = sent.clone();
    faux.push_fn(move |context| {
        *sent2.lock().unwrap() = context
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult(r) => Some((r.tool_call_id.clone(), r.text_content())),
                _ => None,
            })
            .collect();
        FauxReply::text("done")
    });
    let read = ReadTool::default();
    let agent = Agent::new(options(&faux).with_tool(handle(read.clone())));
    agent.prompt("go").await.unwrap();
    assert_eq!(read.calls(), ["a", "b"]);
    let sent = sent.lock().unwrap().clone();
    let ids: Vec<&str> = sent.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c1", "c1_2"]);
    assert_idle_and_paired(&agent);
}
