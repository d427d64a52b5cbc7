//! The run loop's hooks on the faux provider: `before_tool_call` and `after_tool_call`,
//! `transform_context` and `convert_to_llm` (also when they panic), tool updates, tools
//! replaced between runs, and a tool's `prepare_arguments`. Every test ends with the pairing
//! invariant.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use futures::FutureExt;
use oxpi_agent_core::{AfterToolCallResult, Agent, AgentEvent, ToolCallDecision};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::Message;
use oxpi_ai::UserContent;
use serde_json::json;

#[tokio::test]
async fn before_tool_call_block_gives_an_error_result_and_skips_the_tool() {
    let faux = faux();
    let reply = call("c1", "read", json!({"path": "secret.txt"}));
    faux.push(and_call(reply, "c2", "read", json!({"path": "public.txt"})));
    faux.push(FauxReply::text("ok"));
    let read = ReadTool::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut opts = options(&faux).with_tool(handle(read.clone()));
    let seen2 = seen.clone();
    opts.before_tool_call = Some(Arc::new(move |seen| {
        seen2.lock().unwrap().push(seen.tool_call.id.clone());
        let blocked = seen.args.get("path") == Some(&json!("secret.txt"));
        async move {
            if blocked {
                ToolCallDecision::block("Access to secret.txt is not allowed")
            } else {
                ToolCallDecision::Allow
            }
        }
        .boxed()
    }));
    let agent = Agent::new(opts);
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();

    assert_eq!(*seen.lock().unwrap(), ["c1", "c2"]);
    assert_eq!(read.calls(), ["public.txt"], "the blocked call ran");
    let results = tool_results(&agent.messages());
    assert!(results[0].is_error);
    assert_eq!(
        results[0].text_content(),
        "Access to secret.txt is not allowed"
    );
    assert!(!results[1].is_error);
    let blocked_end = log.events().into_iter().find_map(|e| match e {
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            is_error,
            result,
            ..
        } if tool_call_id == "c1" => Some((is_error, result_text(&result))),
        _ => None,
    });
    assert_eq!(
        blocked_end,
        Some((true, "Access to secret.txt is not allowed".into()))
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn after_tool_call_can_rewrite_a_result() {
    let faux = faux();
    let reply = call("c1", "read", json!({"path": "a"}));
    faux.push(and_call(reply, "c2", "fail", json!({})));
    faux.push(FauxReply::text("ok"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut opts = options(&faux)
        .with_tool(handle(ReadTool::default()))
        .with_tool(handle(FailTool));
    let seen2 = seen.clone();
    opts.after_tool_call = Some(Arc::new(move |after| {
        seen2.lock().unwrap().push((
            after.tool_call.id.clone(),
            result_text(&after.result),
            after.is_error,
        ));
        async move {
            if after.tool_call.id == "c1" {
                Some(
                    AfterToolCallResult::new()
                        .with_content(vec![UserContent::text("[redacted]")])
                        .with_details(json!({"n": 1})),
                )
            } else {
                // Turn the failure into a success.
                Some(
                    AfterToolCallResult::new()
                        .with_content(vec![UserContent::text("recovered")])
                        .with_is_error(false),
                )
            }
        }
        .boxed()
    }));
    let agent = Agent::new(opts);
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();

    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("c1".to_string(), "contents of a".to_string(), false),
            ("c2".to_string(), "disk on fire".to_string(), true),
        ]
    );
    let results = tool_results(&agent.messages());
    assert_eq!(results[0].text_content(), "[redacted]");
    assert_eq!(results[0].details, Some(json!({"n": 1})));
    assert!(!results[0].is_error);
    assert_eq!(results[1].text_content(), "recovered");
    assert!(!results[1].is_error);
    // tool_execution_end reports the rewritten result too.
    let ends: Vec<(String, String, bool)> = log
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => Some((tool_call_id, result_text(&result), is_error)),
            _ => None,
        })
        .collect();
    assert!(ends.contains(&("c1".into(), "[redacted]".into(), false)));
    assert!(ends.contains(&("c2".into(), "recovered".into(), false)));
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn after_tool_call_returning_none_keeps_the_result() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("ok"));
    let mut opts = options(&faux).with_tool(handle(ReadTool::default()));
    opts.after_tool_call = Some(Arc::new(|_| async { None }.boxed()));
    let agent = Agent::new(opts);
    agent.prompt("go").await.unwrap();
    assert_eq!(
        tool_results(&agent.messages())[0].text_content(),
        "contents of a"
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn transform_context_sees_the_shared_history_and_shapes_the_request() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push_fn(|ctx| {
        // The transform dropped everything but the last message.
        assert_eq!(ctx.messages.len(), 1);
        FauxReply::text("done")
    });
    let agent_slot: Arc<Mutex<Option<Agent>>> = Arc::new(Mutex::new(None));
    // (roles seen by the hook, whether it got the agent's own Arc)
    type Seen = Arc<Mutex<Vec<(Vec<&'static str>, bool)>>>;
    let seen: Seen = Arc::default();
    let mut opts = options(&faux).with_tool(handle(ReadTool::default()));
    let (slot, seen2) = (agent_slot.clone(), seen.clone());
    opts.transform_context = Some(Arc::new(move |messages, _cancel| {
        let agent = slot.lock().unwrap().clone().expect("agent set");
        // No copy: the hook gets the agent's own history.
        let shared = Arc::ptr_eq(&messages, &agent.messages());
        seen2.lock().unwrap().push((roles(&messages), shared));
        let out = if messages.len() > 1 {
            Arc::new(vec![messages.last().cloned().unwrap()])
        } else {
            messages
        };
        async move { out }.boxed()
    }));
    let agent = Agent::new(opts);
    *agent_slot.lock().unwrap() = Some(agent.clone());
    agent.prompt("go").await.unwrap();
    *agent_slot.lock().unwrap() = None;

    assert_eq!(
        *seen.lock().unwrap(),
        [
            (vec!["user"], true),
            (vec!["user", "assistant", "toolResult"], true)
        ]
    );
    assert_eq!(faux.requests()[0].roles, ["user"]);
    assert_eq!(faux.requests()[1].roles, ["toolResult"]);
    // The transform shapes the request only, never the history.
    assert_eq!(
        roles(&agent.messages()),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn convert_to_llm_runs_after_transform_context() {
    let faux = faux();
    faux.push(FauxReply::text("ok"));
    let mut opts = options(&faux).with_system_prompt("sys");
    opts.transform_context = Some(Arc::new(|messages, _| {
        let mut v = (*messages).clone();
        v.insert(0, Message::user("injected context"));
        async move { Arc::new(v) }.boxed()
    }));
    opts.convert_to_llm = Some(Arc::new(|messages: &[Message]| {
        assert_eq!(messages.len(), 2, "convert sees the transformed list");
        messages.to_vec()
    }));
    let agent = Agent::new(opts);
    agent.prompt("hi").await.unwrap();
    assert_eq!(faux.requests()[0].roles, ["user", "user"]);
    assert_eq!(roles(&agent.messages()), ["user", "assistant"]);
    assert_idle_and_paired(&agent);
}

/// pi-agent-core's `prepareToolCall` wraps `beforeToolCall` in try/catch and turns a throw into
/// an error result. In oxpi a panic in the hook unwinds out of the run task: the assistant
/// message with the tool call is already in the history, so the call is left without a result,
/// and no `agent_end` is emitted.
#[tokio::test]
async fn panicking_before_tool_call_hook_still_pairs_the_call() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("ok"));
    let mut opts = options(&faux).with_tool(handle(ReadTool::default()));
    opts.before_tool_call = Some(Arc::new(|_| async { panic!("hook exploded") }.boxed()));
    let agent = Agent::new(opts);
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert_idle_and_paired(&agent);
    assert_eq!(
        log.agent_ends().len(),
        1,
        "no agent_end after a panicking hook"
    );
}

/// Same for `after_tool_call`: pi turns a throw into an error result; oxpi loses the run.
#[tokio::test]
async fn panicking_after_tool_call_hook_still_pairs_the_call() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("ok"));
    let mut opts = options(&faux).with_tool(handle(ReadTool::default()));
    opts.after_tool_call = Some(Arc::new(|_| async { panic!("hook exploded") }.boxed()));
    let agent = Agent::new(opts);
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert_idle_and_paired(&agent);
    assert_eq!(
        log.agent_ends().len(),
        1,
        "no agent_end after a panicking hook"
    );
}

/// A panic in `transform_context` (or `convert_to_llm`, or the stream function) ends the run
/// without `agent_end`; pi's Agent catches the error, appends an error assistant message and
/// still emits `agent_end`. The history stays paired here, but listeners never see the end.
#[tokio::test]
async fn panicking_transform_context_still_ends_the_run_with_agent_end() {
    let faux = faux();
    faux.push(FauxReply::text("ok"));
    let mut opts = options(&faux);
    opts.transform_context = Some(Arc::new(|_, _| {
        async { panic!("transform exploded") }.boxed()
    }));
    let agent = Agent::new(opts);
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.ran();
    assert!(agent
        .error_message()
        .unwrap()
        .contains("transform exploded"));
    let messages = agent.messages();
    let Some(Message::Assistant(last)) = messages.last() else {
        panic!("the run ends with an assistant message");
    };
    assert_eq!(
        last.failure_kind,
        Some(oxpi_ai::FailureKind::Config),
        "a hook that failed: the request could not be made"
    );
    assert_idle_and_paired(&agent);
    assert_eq!(
        log.agent_ends().len(),
        1,
        "no agent_end after a panicking hook"
    );
    assert_event_grammar(&log.events());
}

#[tokio::test]
async fn tool_updates_are_forwarded_as_tool_execution_update_events() {
    let faux = faux();
    faux.push(call("c1", "progress", json!({"ms": 10})));
    faux.push(FauxReply::text("ok"));
    let agent = Agent::new(options(&faux).with_tool(handle(ProgressTool)));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    let names = log.names();
    let tool_events: Vec<&str> = names
        .iter()
        .filter(|n| n.starts_with("tool_execution"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        tool_events,
        [
            "tool_execution_start(c1)",
            "tool_execution_update(c1)",
            "tool_execution_update(c1)",
            "tool_execution_end(c1)",
        ]
    );
    let partials: Vec<String> = log
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate {
                partial_result,
                tool_name,
                args,
                ..
            } => {
                assert_eq!(tool_name, "progress");
                assert_eq!(serde_json::Value::Object(args), json!({"ms": 10}));
                Some(result_text(&partial_result))
            }
            _ => None,
        })
        .collect();
    assert_eq!(partials, ["50%", "100%"]);
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

/// A tool that reports progress and returns without awaiting in between: its updates sit in the
/// update channel while `run_one` emits `tool_execution_end` in the same poll, so listeners see
/// the updates after the end. pi awaits each update's emit before the tool's result is used.
#[tokio::test]
async fn tool_updates_come_before_the_end_even_for_instant_tools() {
    let faux = faux();
    faux.push(call("c1", "progress", json!({"ms": 0})));
    faux.push(FauxReply::text("ok"));
    let agent = Agent::new(options(&faux).with_tool(handle(ProgressTool)));
    let (log, _sub) = EventLog::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert_event_grammar(&log.events());
    assert_idle_and_paired(&agent);
}

#[tokio::test]
async fn tools_can_be_replaced_between_runs() {
    let faux = faux();
    faux.push(call("c1", "count", json!({})));
    faux.push(FauxReply::text("ok"));
    let agent = Agent::new(options(&faux).with_tool(handle(ReadTool::default())));
    let count = CountTool::default();
    agent.set_tools(vec![handle(count.clone())]);
    agent.prompt("go").await.unwrap();
    assert_eq!(count.count(), 1);
    assert_eq!(faux.requests()[0].tools, ["count".to_string()]);
    assert_idle_and_paired(&agent);
}

/// A tool that takes `paths` but still accepts the older `path`: its `prepare_arguments` runs on
/// the model's raw arguments before validation, in the agent's run loop.
struct Paths;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct PathsArgs {
    /// Files.
    paths: Vec<String>,
}

impl oxpi_agent_core::AgentTool for Paths {
    type Args = PathsArgs;

    fn name(&self) -> &str {
        "paths"
    }

    fn description(&self) -> &str {
        "Echo the paths"
    }

    fn prepare_arguments(
        &self,
        mut args: serde_json::Map<String, serde_json::Value>,
    ) -> serde_json::Map<String, serde_json::Value> {
        if let Some(path) = args.remove("path") {
            args.insert("paths".into(), json!([path]));
        }
        args
    }

    async fn execute(
        &self,
        _id: &str,
        args: PathsArgs,
        _cancel: tokio_util::sync::CancellationToken,
        _update: oxpi_agent_core::ToolUpdateFn,
    ) -> Result<oxpi_agent_core::AgentToolResult, oxpi_agent_core::ToolError> {
        Ok(oxpi_agent_core::AgentToolResult::text(args.paths.join(",")))
    }
}

#[tokio::test]
async fn prepare_arguments_fixes_an_older_argument_shape_before_validation() {
    let faux = faux();
    let reply = call("c1", "paths", json!({"path": "a.txt"}));
    faux.push(and_call(reply, "c2", "paths", json!({"paths": ["b", "c"]})));
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(options(&faux).with_tool(handle(Paths)));
    agent.prompt("go").await.unwrap();
    let results: Vec<(bool, String)> = tool_results(&agent.messages())
        .iter()
        .map(|r| (r.is_error, r.text_content()))
        .collect();
    assert_eq!(
        results,
        [(false, "a.txt".to_string()), (false, "b,c".to_string())]
    );
    assert_idle_and_paired(&agent);
}
