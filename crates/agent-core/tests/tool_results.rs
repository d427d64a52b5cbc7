//! pi-agent-core 1.6's tool side: hook contexts (the agent context, validated arguments,
//! `terminate` on a block), `after_tool_call` merged field by field, results with `is_error`,
//! `structured_content` and `usage`, tools' `output_schema` and `replay`, `duration_ms`,
//! `run_tool_call` (also from inside a tool), the parallel preflight order, and the agent's
//! `peek_queued_messages` and `reset`.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use oxpi_agent_core::{
    run_tool_call, AfterToolCallResult, Agent, AgentError, AgentEvent, AgentTool, AgentToolResult,
    QueueMode, Replay, RunToolCallOptions, ToolCallDecision, ToolError, ToolUpdateFn,
};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::{AssistantMessage, Message, ToolCall, Usage, UserContent};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

/// `echo`: the text back, with details, structured content and usage; declares an output
/// schema and `replay: safe`.
struct Echo;

impl AgentTool for Echo {
    type Args = EchoArgs;
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Say the text back"
    }
    fn output_schema(&self) -> Option<Value> {
        Some(json!({"type": "object", "properties": {"echoed": {"type": "string"}}}))
    }
    fn replay(&self) -> Option<Replay> {
        Some(Replay::Safe)
    }
    async fn execute(
        &self,
        _id: &str,
        args: EchoArgs,
        _cancel: CancellationToken,
        _update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        let usage = Usage {
            input: 7,
            output: 3,
            ..Usage::default()
        };
        Ok(AgentToolResult::text(args.text.clone())
            .with_details(json!({"length": args.text.len()}))
            .with_structured_content(json!({"echoed": args.text}))
            .with_usage(usage))
    }
}

/// `soft_fail`: fails without an error, keeping its details (pi's `isError: true`).
struct SoftFail;

impl AgentTool for SoftFail {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "soft_fail"
    }
    fn description(&self) -> &str {
        "Fail softly"
    }
    async fn execute(
        &self,
        _id: &str,
        _args: NoArgs,
        _cancel: CancellationToken,
        _update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        Ok(AgentToolResult::text("exit code 2")
            .with_details(json!({"exitCode": 2}))
            .as_error())
    }
}

fn ends(events: &[AgentEvent]) -> Vec<(String, bool, Option<u64>, AgentToolResult)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                is_error,
                duration_ms,
                result,
                ..
            } => Some((
                tool_call_id.clone(),
                *is_error,
                *duration_ms,
                result.clone(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn before_tool_call_sees_the_context_and_a_terminating_block_ends_the_run() {
    let faux = faux();
    faux.push(call("c1", "echo", json!({"text": "hi"})));
    faux.push(FauxReply::text("never asked"));
    type Seen = Arc<Mutex<Vec<(Vec<&'static str>, Vec<String>, Value)>>>;
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(Echo))
            .with_before_tool_call(move |call| {
                log.lock().unwrap().push((
                    roles(&call.context.messages),
                    call.context
                        .tools
                        .iter()
                        .map(|t| t.name().to_string())
                        .collect(),
                    Value::Object(call.args.clone()),
                ));
                async { ToolCallDecision::block_and_terminate("") }
            }),
    );
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [(
            vec!["user", "assistant"],
            vec!["echo".to_string()],
            json!({"text": "hi"})
        )]
    );
    assert_eq!(faux.call_count(), 1, "every result asked to terminate");
    let results = tool_results(&agent.messages());
    assert_eq!(results[0].text_content(), "Tool execution was blocked");
    assert!(results[0].is_error);
    let ends = ends(&log.events());
    assert_eq!(ends[0].2, None, "a refused call has no duration");
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn after_tool_call_merges_field_by_field() {
    let faux = faux();
    let reply = call("c1", "echo", json!({"text": "one"}));
    faux.push(and_call(reply, "c2", "echo", json!({"text": "two"})));
    faux.push(FauxReply::text("ok"));
    let seen: Arc<Mutex<Vec<(String, String, Value)>>> = Arc::default();
    let log = seen.clone();
    let agent = Agent::new(options(&faux).with_tool(handle(Echo)).with_after_tool_call(
        move |after| {
            log.lock().unwrap().push((
                after.tool_call.id.clone(),
                after.assistant_message.text(),
                Value::Object(after.args.clone()),
            ));
            let change = if after.tool_call.id == "c1" {
                // New content only: details stay, structured content goes.
                AfterToolCallResult::new().with_content(vec![UserContent::text("[redacted]")])
            } else {
                // Details only: content and structured content stay.
                AfterToolCallResult::new().with_details(json!({"reviewed": true}))
            };
            async move { Some(change) }
        },
    ));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        seen[0],
        ("c1".into(), String::new(), json!({"text": "one"}))
    );
    let ends = ends(&log.events());
    let c1 = &ends.iter().find(|e| e.0 == "c1").unwrap().3;
    let c2 = &ends.iter().find(|e| e.0 == "c2").unwrap().3;
    assert_eq!(result_text(c1), "[redacted]");
    assert_eq!(c1.details, Some(json!({"length": 3})));
    assert_eq!(c1.structured_content, None);
    assert_eq!(result_text(c2), "two");
    assert_eq!(c2.details, Some(json!({"reviewed": true})));
    assert_eq!(c2.structured_content, Some(json!({"echoed": "two"})));
    assert_eq!(c2.usage.as_ref().map(|u| (u.input, u.output)), Some((7, 3)));
    // The tool-result message carries content and details, not the structured content.
    let message = serde_json::to_value(&agent.messages()[2]).unwrap();
    assert_eq!(message["content"][0]["text"], "[redacted]");
    assert!(message.get("structuredContent").is_none());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn a_result_marked_is_error_is_an_error_result_with_its_details() {
    let faux = faux();
    faux.push(call("c1", "soft_fail", json!({})));
    faux.push(FauxReply::text("ok"));
    let agent = Agent::new(options(&faux).with_tool(handle(SoftFail)));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    let results = tool_results(&agent.messages());
    assert!(results[0].is_error);
    assert_eq!(results[0].text_content(), "exit code 2");
    assert_eq!(results[0].details, Some(json!({"exitCode": 2})));
    let end = &ends(&log.events())[0];
    assert!(end.1 && end.3.is_error);
    // Serialized as pi's `isError` on the result.
    let json = serde_json::to_value(&end.3).unwrap();
    assert_eq!(json["isError"], json!(true));
}

#[tokio::test(start_paused = true)]
async fn duration_ms_is_the_tools_own_time() {
    let faux = faux();
    let tracker = Arc::new(Tracker::default());
    faux.push(call("c1", "sleep", json!({"ms": 2500})));
    faux.push(FauxReply::text("ok"));
    let agent = Agent::new(options(&faux).with_tool(handle(SleepTool::new("sleep", &tracker))));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    // Paused time: the clock moves only by the tool's own sleep.
    assert_eq!(ends(&log.events())[0].2, Some(2500));
}

#[test]
fn output_schema_and_replay_are_kept_on_the_handle_not_sent_to_the_model() {
    let echo = handle(Echo);
    assert_eq!(echo.replay(), Some(Replay::Safe));
    assert_eq!(echo.output_schema().unwrap()["type"], "object");
    let definition = serde_json::to_value(echo.definition()).unwrap();
    assert!(definition.get("outputSchema").is_none());
    let read = handle(ReadTool::default()).with_replay(Replay::Never);
    assert_eq!(
        (read.replay(), read.output_schema()),
        (Some(Replay::Never), None)
    );
}

#[tokio::test]
async fn parallel_refusals_end_during_the_preflight_as_pi() {
    let faux = faux();
    let tracker = Arc::new(Tracker::default());
    let reply = call("c1", "sleep", json!({"ms": 1}));
    let reply = and_call(reply, "c2", "nope", json!({}));
    faux.push(and_call(reply, "c3", "sleep", json!({"ms": 1})));
    faux.push(FauxReply::text("ok"));
    let agent = Agent::new(options(&faux).with_tool(handle(SleepTool::new("sleep", &tracker))));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    let tools: Vec<String> = log
        .names()
        .into_iter()
        .filter(|n| n.starts_with("tool_execution"))
        .collect();
    assert_eq!(
        tools[..4],
        names(&[
            "tool_execution_start(c1)",
            "tool_execution_start(c2)",
            "tool_execution_end(c2)",
            "tool_execution_start(c3)",
        ])
    );
    assert_eq!(
        tool_results(&agent.messages())[1].text_content(),
        "Tool nope not found"
    );
    assert_idle_and_paired(&agent);
}

fn reply_with_call() -> AssistantMessage {
    AssistantMessage::empty("faux", "faux", "faux-model")
}

#[tokio::test]
async fn run_tool_call_validates_runs_the_hooks_and_refuses_a_cancelled_call() {
    let calls: Arc<Mutex<Vec<String>>> = Arc::default();
    let (before_log, after_log) = (calls.clone(), calls.clone());
    let agent = Agent::new(
        options(&faux())
            .with_tool(handle(Echo))
            .with_before_tool_call(move |call| {
                before_log
                    .lock()
                    .unwrap()
                    .push(format!("before {}", call.tool_call.id));
                let blocked = call.args["text"] == "secret";
                async move {
                    if blocked {
                        ToolCallDecision::block("no secrets")
                    } else {
                        ToolCallDecision::Allow
                    }
                }
            })
            .with_after_tool_call(move |after| {
                after_log
                    .lock()
                    .unwrap()
                    .push(format!("after {}", after.tool_call.id));
                async { Some(AfterToolCallResult::new().with_details(json!({"hooked": true}))) }
            }),
    );
    let args = |v: Value| v.as_object().cloned().unwrap();
    let run = |call: ToolCall| {
        let options = agent.tool_call_options(reply_with_call());
        async move { run_tool_call(&call, options).await }
    };
    let ok = run(ToolCall::new("a", "echo", args(json!({"text": "hi"})))).await;
    assert!(!ok.is_error);
    assert_eq!(result_text(&ok.result), "hi");
    assert_eq!(ok.result.details, Some(json!({"hooked": true})));
    assert!(ok.duration_ms.is_some());
    let invalid = run(ToolCall::new("b", "echo", args(json!({"words": "hi"})))).await;
    assert!(invalid.is_error && invalid.duration_ms.is_none());
    let blocked = run(ToolCall::new("c", "echo", args(json!({"text": "secret"})))).await;
    assert_eq!(
        (result_text(&blocked.result), blocked.is_error),
        ("no secrets".into(), true)
    );
    let unknown = run(ToolCall::new("d", "nope", args(json!({})))).await;
    assert_eq!(result_text(&unknown.result), "Tool nope not found");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let options = agent
        .tool_call_options(reply_with_call())
        .with_cancel(cancel);
    let aborted = run_tool_call(
        &ToolCall::new("e", "echo", args(json!({"text": "x"}))),
        options,
    )
    .await;
    assert!(aborted.is_error && aborted.duration_ms.is_none());
    assert_eq!(
        *calls.lock().unwrap(),
        ["before a", "after a", "before c"],
        "no hook for invalid, unknown or cancelled calls; no after for a blocked one"
    );
}

/// `twice`: runs `echo` twice through the agent's own validation and hooks.
struct Twice {
    agent: Arc<Mutex<Option<Agent>>>,
}

impl AgentTool for Twice {
    type Args = EchoArgs;
    fn name(&self) -> &str {
        "twice"
    }
    fn description(&self) -> &str {
        "Echo twice"
    }
    async fn execute(
        &self,
        id: &str,
        args: EchoArgs,
        cancel: CancellationToken,
        _update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        let agent = self.agent.lock().unwrap().clone().ok_or("no agent")?;
        let mut texts = Vec::new();
        for n in 0..2 {
            let call = ToolCall::new(
                format!("{id}-{n}"),
                "echo",
                json!({"text": args.text}).as_object().cloned().unwrap(),
            );
            let last = agent.messages().last().cloned();
            let Some(Message::Assistant(origin)) = last else {
                return Err("no assistant message".into());
            };
            let options: RunToolCallOptions =
                agent.tool_call_options(origin).with_cancel(cancel.clone());
            texts.push(result_text(&run_tool_call(&call, options).await.result));
        }
        Ok(AgentToolResult::text(texts.join(" ")))
    }
}

#[tokio::test]
async fn a_tool_runs_other_tools_through_the_agents_hooks() {
    let faux = faux();
    faux.push(call("c1", "twice", json!({"text": "hey"})));
    faux.push(FauxReply::text("ok"));
    let slot: Arc<Mutex<Option<Agent>>> = Arc::default();
    let hooked: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = hooked.clone();
    let agent = Agent::new(
        options(&faux)
            .with_tool(handle(Echo))
            .with_tool(handle(Twice {
                agent: slot.clone(),
            }))
            .with_before_tool_call(move |call| {
                log.lock().unwrap().push(call.tool_call.id.clone());
                async { ToolCallDecision::Allow }
            }),
    );
    *slot.lock().unwrap() = Some(agent.clone());
    agent.prompt("go").await.unwrap();
    *slot.lock().unwrap() = None;
    assert_eq!(tool_results(&agent.messages())[0].text_content(), "hey hey");
    assert_eq!(*hooked.lock().unwrap(), ["c1", "c1-0", "c1-1"]);
}

#[tokio::test]
async fn peek_queued_messages_shows_what_the_next_drain_takes() {
    let agent = Agent::new(options(&faux()));
    assert!(agent.peek_queued_messages().is_empty());
    agent.follow_up(Message::user("f1"));
    agent.follow_up(Message::user("f2"));
    let texts = |m: Vec<Message>| m.iter().map(user_text).collect::<Vec<_>>();
    assert_eq!(texts(agent.peek_queued_messages()), ["f1"]);
    agent.steer(Message::user("s1"));
    agent.steer(Message::user("s2"));
    assert_eq!(texts(agent.peek_queued_messages()), ["s1"]);
    agent.set_steering_mode(QueueMode::All);
    assert_eq!(texts(agent.peek_queued_messages()), ["s1", "s2"]);
    assert!(agent.has_queued_messages(), "peeking takes nothing");
}

#[tokio::test(start_paused = true)]
async fn reset_is_refused_while_running_and_clears_everything_after() {
    let faux = faux();
    faux.push(call("c1", "hang", json!({})));
    let hang = HangTool::default();
    let agent = Agent::new(options(&faux).with_tool(handle(hang.clone())));
    let running = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.prompt("go").await })
    };
    until("the tool runs", || {
        hang.executed.load(std::sync::atomic::Ordering::SeqCst) == 1
    })
    .await;
    let refused = agent.reset().unwrap_err();
    assert_eq!(refused, AgentError::BusyResetting);
    assert_eq!(
        refused.to_string(),
        "Agent is already processing. Wait for completion before resetting."
    );
    agent.abort();
    running.await.unwrap().ran();
    agent.follow_up(Message::user("later"));
    assert!(agent.error_message().is_some() && !agent.messages().is_empty());
    agent.reset().unwrap();
    assert!(agent.messages().is_empty());
    assert_eq!(agent.error_message(), None);
    assert!(!agent.has_queued_messages());
}
