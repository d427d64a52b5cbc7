//! A reply's tool calls: each announced, checked (a complete reply, a known tool, valid
//! arguments, `before_tool_call`), run (in parallel unless one is sequential), reviewed
//! (`after_tool_call`) and answered with exactly one result, in call order, whatever happens;
//! and the repair of a history a run left with unanswered calls.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use oxpi_ai::registry::panic_text;
use oxpi_ai::{AssistantMessage, Message, StopReason, ToolCall, ToolResultMessage};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::event::AgentEvent;
use crate::hooks::{guarded, AfterToolCall, BeforeToolCall, ToolCallDecision, ToolOutcome};
use crate::inner::{append, Inner};
use crate::tool::{AgentToolHandle, AgentToolResult, ToolCallFailure, ToolExecution, ToolUpdateFn};

const NOT_EXECUTED_ABORTED: &str = "Tool call was not executed: the request was aborted";

enum Prepared {
    /// Run the tool with these (validated, normalized) arguments.
    Run(AgentToolHandle, Map<String, Value>),
    Refused(String),
}

/// Produces exactly one result per call, in call order, and appends each to the history.
///
/// Parallel: every call is announced and prepared in order, then all run at once; results are
/// appended in call order when all are done. Sequential: each call is announced, prepared, run
/// and appended before the next starts.
pub(crate) async fn execute_tool_calls(
    inner: &Inner,
    assistant: &AssistantMessage,
    calls: &[ToolCall],
    cancel: &CancellationToken,
    added: &mut Vec<Message>,
) -> (Vec<ToolResultMessage>, bool) {
    if calls.is_empty() {
        return (Vec::new(), false);
    }
    let tools = inner.state().tools.clone();
    // As pi: one sequential tool in the batch makes the whole batch sequential.
    let sequential = inner.tool_execution == ToolExecution::Sequential
        || calls.iter().any(|call| {
            tools.iter().any(|t| {
                t.name() == call.name && t.execution_mode() == Some(ToolExecution::Sequential)
            })
        });
    let mut results = Vec::with_capacity(calls.len());
    let mut terminate = true;
    if sequential {
        for call in calls {
            announce(inner, call).await;
            let prepared = prepare(inner, assistant, call, &tools, cancel).await;
            let outcomes = run_batch(inner, vec![(call, prepared)], cancel).await;
            terminate &= outcomes.iter().all(|o| o.result.terminate);
            for result in to_results(std::slice::from_ref(call), outcomes) {
                append(inner, added, Message::ToolResult(result.clone())).await;
                results.push(result);
            }
        }
    } else {
        let mut jobs = Vec::with_capacity(calls.len());
        for call in calls {
            announce(inner, call).await;
            jobs.push((call, prepare(inner, assistant, call, &tools, cancel).await));
        }
        let outcomes = run_batch(inner, jobs, cancel).await;
        terminate &= outcomes.iter().all(|o| o.result.terminate);
        for result in to_results(calls, outcomes) {
            append(inner, added, Message::ToolResult(result.clone())).await;
            results.push(result);
        }
    }
    (results, terminate)
}

async fn announce(inner: &Inner, call: &ToolCall) {
    inner
        .emit(AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
        })
        .await;
}

fn to_results(calls: &[ToolCall], outcomes: Vec<ToolOutcome>) -> Vec<ToolResultMessage> {
    calls
        .iter()
        .zip(outcomes)
        .map(|(call, outcome)| ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: outcome.result.content,
            details: outcome.result.details,
            usage: None,
            nested_calls: None,
            is_error: outcome.is_error,
            timestamp: oxpi_ai::now_millis(),
            duration_ms: None,
        })
        .collect()
}

/// Runs the jobs concurrently; their updates and ends reach listeners in order, from this task.
async fn run_batch(
    inner: &Inner,
    jobs: Vec<(&ToolCall, Prepared)>,
    cancel: &CancellationToken,
) -> Vec<ToolOutcome> {
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<AgentEvent>();
    let work = futures::future::join_all(
        jobs.into_iter()
            .map(|(call, prepared)| run_one(inner, call, prepared, cancel, events_tx.clone())),
    );
    drop(events_tx);
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            biased;
            Some(event) = events_rx.recv() => inner.emit(event).await,
            outcomes = &mut work => {
                while let Ok(event) = events_rx.try_recv() {
                    inner.emit(event).await;
                }
                break outcomes;
            }
        }
    }
}

/// Runs (or refuses) one call; sends its updates, then its `tool_execution_end`.
async fn run_one(
    inner: &Inner,
    call: &ToolCall,
    prepared: Prepared,
    cancel: &CancellationToken,
    events: mpsc::UnboundedSender<AgentEvent>,
) -> ToolOutcome {
    let outcome = match prepared {
        Prepared::Refused(text) => error_outcome(text),
        Prepared::Run(_, _) if cancel.is_cancelled() => {
            error_outcome(NOT_EXECUTED_ABORTED.to_string())
        }
        Prepared::Run(handle, arguments) => {
            execute_one(inner, &handle, call, arguments, cancel, events.clone()).await
        }
    };
    let _ = events.send(AgentEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: outcome.result.clone(),
        is_error: outcome.is_error,
    });
    outcome
}

/// Decides whether a call may run: the reply must be complete, the tool known, the arguments
/// valid, and `before_tool_call` must allow it.
async fn prepare(
    inner: &Inner,
    assistant: &AssistantMessage,
    call: &ToolCall,
    tools: &[AgentToolHandle],
    cancel: &CancellationToken,
) -> Prepared {
    match assistant.stop_reason {
        StopReason::Aborted => return Prepared::Refused(NOT_EXECUTED_ABORTED.into()),
        StopReason::Error => {
            return Prepared::Refused(
                "Tool call was not executed: the reply failed before it was complete".into(),
            )
        }
        StopReason::Length => return Prepared::Refused(length_cut_text(&call.name)),
        StopReason::Stop | StopReason::ToolUse | StopReason::Pending | StopReason::Deferred => {}
    }
    if cancel.is_cancelled() {
        return Prepared::Refused(NOT_EXECUTED_ABORTED.into());
    }
    if let Some(error) = &call.arguments_error {
        return Prepared::Refused(error.clone());
    }
    let Some(handle) = tools.iter().find(|t| t.name() == call.name) else {
        return Prepared::Refused(format!("Tool \"{}\" not found", call.name));
    };
    let arguments = match handle.validate(&call.arguments) {
        Ok(arguments) => arguments,
        Err(e) => return Prepared::Refused(e.to_string()),
    };
    if let Some(before) = &inner.before_tool_call {
        let seen = BeforeToolCall {
            assistant_message: assistant.clone(),
            tool_call: call.clone(),
            args: arguments.clone(),
            cancel: cancel.clone(),
        };
        let decided = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Prepared::Refused(NOT_EXECUTED_ABORTED.into()),
            decided = guarded("before_tool_call", before(seen)) => decided,
        };
        match decided {
            Ok(ToolCallDecision::Allow) => {}
            Ok(ToolCallDecision::Block { reason }) => return Prepared::Refused(reason),
            Err(panic) => return Prepared::Refused(panic),
        }
    }
    Prepared::Run(handle.clone(), arguments)
}

async fn execute_one(
    inner: &Inner,
    handle: &AgentToolHandle,
    call: &ToolCall,
    arguments: Map<String, Value>,
    cancel: &CancellationToken,
    events: mpsc::UnboundedSender<AgentEvent>,
) -> ToolOutcome {
    inner.state().pending_tool_calls.insert(call.id.clone());
    let on_update: ToolUpdateFn = {
        let (id, name, args) = (call.id.clone(), call.name.clone(), call.arguments.clone());
        Arc::new(move |partial_result: AgentToolResult| {
            let _ = events.send(AgentEvent::ToolExecutionUpdate {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                args: args.clone(),
                partial_result,
            });
        })
    };
    let execution = AssertUnwindSafe(handle.execute_validated(
        &call.id,
        arguments,
        cancel.child_token(),
        on_update,
    ))
    .catch_unwind();
    // Cancellation wins over a result that is ready at the same moment, so an aborted run
    // always reports the abort.
    let outcome = tokio::select! {
        biased;
        _ = cancel.cancelled() => error_outcome("Tool execution was aborted".to_string()),
        result = execution => match result {
            Ok(Ok(result)) => ToolOutcome { result, is_error: false },
            Ok(Err(ToolCallFailure::Tool(e))) => ToolOutcome {
                result: AgentToolResult { details: e.details, ..AgentToolResult::text(e.message) },
                is_error: true,
            },
            Ok(Err(ToolCallFailure::Validation(e))) => error_outcome(e.to_string()),
            Err(panic) => error_outcome(format!("Tool \"{}\" panicked: {}", call.name, panic_text(&*panic))),
        },
    };
    inner.state().pending_tool_calls.remove(&call.id);
    let Some(after) = &inner.after_tool_call else {
        return outcome;
    };
    let seen = AfterToolCall {
        tool_call: call.clone(),
        result: outcome.result.clone(),
        is_error: outcome.is_error,
        cancel: cancel.clone(),
    };
    // The hook may be there to redact the result: on abort the unreviewed result is not kept.
    let reviewed = tokio::select! {
        biased;
        _ = cancel.cancelled() => return error_outcome("Tool execution was aborted".to_string()),
        reviewed = guarded("after_tool_call", after(seen)) => reviewed,
    };
    match reviewed {
        Ok(Some(replaced)) => replaced,
        Ok(None) => outcome,
        Err(panic) => error_outcome(panic),
    }
}

/// The result of a call in a reply cut by the output limit (pi 1.6's words).
pub(crate) fn length_cut_text(tool_name: &str) -> String {
    format!(
        "Tool call \"{tool_name}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments."
    )
}

fn error_outcome(text: String) -> ToolOutcome {
    ToolOutcome {
        result: AgentToolResult::text(text),
        is_error: true,
    }
}

/// Gives every tool call of the last assistant message that has no result an error result, so
/// the history stays valid after a run that died unexpectedly.
pub(crate) fn repair_pairing(inner: &Inner) {
    let mut state = inner.state();
    let messages = Arc::make_mut(&mut state.messages);
    let Some(last_assistant) = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))
    else {
        return;
    };
    let answered: std::collections::HashSet<String> = messages[last_assistant..]
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    let missing: Vec<ToolResultMessage> = match &messages[last_assistant] {
        Message::Assistant(a) => a
            .tool_calls()
            .filter(|c| !answered.contains(&c.id))
            .map(|c| {
                ToolResultMessage::text(c, "Tool call was not executed: the agent run failed", true)
            })
            .collect(),
        _ => Vec::new(),
    };
    messages.extend(missing.into_iter().map(Message::ToolResult));
}
