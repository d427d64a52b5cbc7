//! Turn hooks that ignore their cancellation token (`prepare_request`, `transform_context`,
//! `finish_turn`, `prepare_next_turn`) do not hold an aborted run: the hook's future is raced
//! against the abort and dropped, the run ends with an `aborted` reply, events stay balanced,
//! and the agent takes the next prompt. Time is paused: a hook that held the run would make the
//! prompt's one-hour timeout fire.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use oxpi_agent_core::{Agent, AgentOptions};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::{Message, StopReason};
use serde_json::json;

/// Set when a stuck hook's future is dropped.
#[derive(Clone, Default)]
struct Dropped(Arc<AtomicBool>);

impl Dropped {
    /// A future that never completes (it ignores every token) and marks this when dropped.
    fn stuck<T>(&self) -> impl std::future::Future<Output = T> + Send + 'static {
        let guard = DropGuard(self.0.clone());
        async move {
            let _guard = guard;
            std::future::pending::<T>().await
        }
    }

    fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

struct DropGuard(Arc<AtomicBool>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Runs `prompt` on an agent built from `options`, aborting it after 50 ms; fails if the run
/// does not end within an hour (of paused time). Returns the agent and its event log.
async fn prompt_and_abort(options: AgentOptions) -> (Agent, EventLog) {
    let agent = Agent::new(options);
    let (log, sub) = EventLog::attach(&agent);
    let aborter = {
        let agent = agent.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            agent.abort();
        })
    };
    tokio::time::timeout(Duration::from_secs(3600), agent.prompt("go"))
        .await
        .expect("the aborted run ended")
        .ran();
    aborter.await.unwrap();
    drop(sub);
    (agent, log)
}

/// The checks every test shares: the run ended aborted (last message, agent_end), balanced
/// events, an idle paired agent that answers the next prompt.
async fn assert_ended_aborted(agent: &Agent, log: &EventLog) {
    let messages = agent.messages();
    let last = last_assistant(&messages);
    assert_eq!(last.stop_reason, StopReason::Aborted, "{last:?}");
    assert_eq!(last.error_message.as_deref(), Some("Request was aborted"));
    let (added, error) = log.agent_ends().pop().unwrap();
    assert_eq!(added, *messages);
    assert_eq!(error.as_deref(), Some("Request was aborted"));
    assert_event_grammar(&log.events());
    assert_idle_and_paired(agent);
}

fn roles_of(agent: &Agent) -> Vec<&'static str> {
    roles(&agent.messages())
}

#[tokio::test(start_paused = true)]
async fn a_stuck_prepare_request_is_dropped_on_abort_without_a_request() {
    let faux = faux();
    let dropped = Dropped::default();
    let stuck = dropped.clone();
    let options = options(&faux).with_prepare_request(move |_request, _cancel| stuck.stuck());
    let (agent, log) = prompt_and_abort(options).await;
    assert!(dropped.get(), "the hook's future was not dropped");
    assert_eq!(faux.call_count(), 0);
    assert_eq!(roles_of(&agent), ["user", "assistant"]);
    assert_ended_aborted(&agent, &log).await;
}

#[tokio::test(start_paused = true)]
async fn a_stuck_transform_context_is_dropped_on_abort_without_a_request() {
    let faux = faux();
    let dropped = Dropped::default();
    let stuck = dropped.clone();
    let options = options(&faux).with_transform_context(move |_messages, _cancel| stuck.stuck());
    let (agent, log) = prompt_and_abort(options).await;
    assert!(dropped.get(), "the hook's future was not dropped");
    assert_eq!(faux.call_count(), 0);
    assert_eq!(roles_of(&agent), ["user", "assistant"]);
    assert_ended_aborted(&agent, &log).await;
}

#[tokio::test(start_paused = true)]
async fn a_stuck_finish_turn_is_dropped_on_abort_and_an_aborted_turn_ends_the_run() {
    let faux = faux();
    faux.push(FauxReply::text("answer"));
    let dropped = Dropped::default();
    let stuck = dropped.clone();
    let options = options(&faux).with_finish_turn(move |_turn, _cancel| stuck.stuck());
    let (agent, log) = prompt_and_abort(options).await;
    assert!(dropped.get(), "the hook's future was not dropped");
    assert_eq!(faux.call_count(), 1);
    // The answer stays; the turn after it ends at once as aborted, without a request.
    assert_eq!(roles_of(&agent), ["user", "assistant", "assistant"]);
    assert_eq!(assistants(&agent.messages())[0].text(), "answer");
    assert_ended_aborted(&agent, &log).await;
}

#[tokio::test(start_paused = true)]
async fn a_stuck_prepare_next_turn_is_dropped_on_abort_without_a_second_request() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("never requested"));
    let dropped = Dropped::default();
    let stuck = dropped.clone();
    let options = options(&faux)
        .with_tool(handle(ReadTool::default()))
        .with_prepare_next_turn(move |_cancel| stuck.stuck());
    let (agent, log) = prompt_and_abort(options).await;
    assert!(dropped.get(), "the hook's future was not dropped");
    assert_eq!(faux.call_count(), 1);
    assert_eq!(
        roles_of(&agent),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_ended_aborted(&agent, &log).await;
    // The same agent answers the next prompt.
    agent.prompt("again").await.unwrap();
    let messages = agent.messages();
    assert_eq!(last_assistant(&messages).text(), "never requested");
    assert!(matches!(messages.last(), Some(Message::Assistant(_))));
}
