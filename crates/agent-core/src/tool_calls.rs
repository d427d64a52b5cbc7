//! A reply's tool calls: each announced, checked (a complete reply, a known tool, valid
//! arguments, `before_tool_call`), run (in parallel unless one is sequential), reviewed
//! (`after_tool_call`) and answered with exactly one result, in call order, whatever happens;
//! and the repair of a history a run left with unanswered calls.

use std::sync::Arc;

use oxpi_ai::{AssistantMessage, Message, StopReason, ToolCall, ToolResultMessage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::event::AgentEvent;
use crate::hooks::ToolOutcome;
use crate::inner::{append, Inner, Run};
use crate::tool::{AgentToolHandle, AgentToolResult, ToolExecution, ToolUpdateFn};
use crate::tool_run::{error_outcome, execute, prepare, CallSite, Prepared, NOT_EXECUTED_ABORTED};
use crate::turn_hooks::AgentContext;

/// Produces exactly one result per call, in call order, and appends each to the history.
///
/// Parallel (as pi 1.6): each call is announced and checked in order, and a refused one ends
/// (`tool_execution_end`) right there; then the allowed ones run at once and end in the order
/// they finish; the results are appended in call order. Sequential: each call is announced,
/// checked, run and appended before the next starts.
pub(crate) async fn execute_tool_calls(
    inner: &Inner,
    assistant: &AssistantMessage,
    calls: &[ToolCall],
    cancel: &CancellationToken,
    run: &mut Run,
) -> (Vec<ToolResultMessage>, bool) {
    if calls.is_empty() {
        return (Vec::new(), false);
    }
    // The context the hooks and tools see shares the history. In parallel mode (the default)
    // it lives only while the calls are checked and run and is dropped before their results are
    // appended: appending to a shared history copies all of it (`Arc::make_mut`). In sequential
    // mode every call's hooks see the batch's starting context, as pi's, so the first result
    // appended copies the history once per batch.
    let sequential = {
        let context = run.context(inner);
        // As pi: one sequential tool in the batch makes the whole batch sequential.
        inner.tool_execution == ToolExecution::Sequential
            || calls.iter().any(|call| {
                context.tools.iter().any(|t| {
                    t.name() == call.name && t.execution_mode() == Some(ToolExecution::Sequential)
                })
            })
    };
    let mut results = Vec::with_capacity(calls.len());
    let mut terminate = true;
    if sequential {
        let context = run.context(inner);
        let tools = context.tools.clone();
        let site = call_site(inner, assistant, &tools, &context, cancel);
        for call in calls {
            announce(inner, call).await;
            let outcome = match check(&site, call).await {
                Prepared::Refused(outcome) => {
                    end(inner, call, &outcome).await;
                    outcome
                }
                prepared @ Prepared::Run(..) => run_batch(inner, &site, vec![(call, prepared)])
                    .await
                    .pop()
                    .unwrap_or_else(|| error_outcome(NOT_EXECUTED_ABORTED)),
            };
            terminate &= outcome.result.terminate;
            let result = to_result(call, outcome);
            append(inner, run, Message::ToolResult(result.clone())).await;
            results.push(result);
        }
    } else {
        let (outcomes, ran) = {
            let context = run.context(inner);
            let tools = context.tools.clone();
            let site = call_site(inner, assistant, &tools, &context, cancel);
            let mut outcomes: Vec<Option<ToolOutcome>> = Vec::with_capacity(calls.len());
            let mut jobs = Vec::new();
            for call in calls {
                announce(inner, call).await;
                match check(&site, call).await {
                    Prepared::Refused(outcome) => {
                        end(inner, call, &outcome).await;
                        outcomes.push(Some(outcome));
                    }
                    prepared => {
                        outcomes.push(None);
                        jobs.push((call, prepared));
                    }
                }
            }
            (outcomes, run_batch(inner, &site, jobs).await)
        };
        let mut ran = ran.into_iter();
        for (call, outcome) in calls.iter().zip(outcomes) {
            let outcome = outcome
                .or_else(|| ran.next())
                .unwrap_or_else(|| error_outcome(NOT_EXECUTED_ABORTED));
            terminate &= outcome.result.terminate;
            let result = to_result(call, outcome);
            append(inner, run, Message::ToolResult(result.clone())).await;
            results.push(result);
        }
    }
    (results, terminate)
}

/// The hooks, tools and context a batch of calls is checked and run with.
fn call_site<'a>(
    inner: &'a Inner,
    assistant: &'a AssistantMessage,
    tools: &'a [AgentToolHandle],
    context: &'a AgentContext,
    cancel: &'a CancellationToken,
) -> CallSite<'a> {
    CallSite {
        tools,
        assistant,
        context,
        before: inner.before_tool_call.as_ref(),
        after: inner.after_tool_call.as_ref(),
        execute_tool: inner.execute_tool.as_ref(),
        cancel,
    }
}

/// Checks a model-issued call: the reply must be complete, then as any call (see
/// [`prepare`]).
async fn check(site: &CallSite<'_>, call: &ToolCall) -> Prepared {
    match site.assistant.stop_reason {
        StopReason::Aborted => Prepared::Refused(error_outcome(NOT_EXECUTED_ABORTED)),
        StopReason::Error => Prepared::Refused(error_outcome(
            "Tool call was not executed: the reply failed before it was complete",
        )),
        StopReason::Length => Prepared::Refused(error_outcome(length_cut_text(&call.name))),
        StopReason::Stop | StopReason::ToolUse | StopReason::Pending | StopReason::Deferred => {
            prepare(site, call).await
        }
    }
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

fn end_event(call: &ToolCall, outcome: &ToolOutcome) -> AgentEvent {
    AgentEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: outcome.result.clone(),
        is_error: outcome.is_error,
        duration_ms: outcome.duration_ms,
    }
}

async fn end(inner: &Inner, call: &ToolCall, outcome: &ToolOutcome) {
    inner.emit(end_event(call, outcome)).await;
}

/// The tool-result message of an outcome (structured content stays out, as in pi).
fn to_result(call: &ToolCall, outcome: ToolOutcome) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: outcome.result.content,
        details: outcome.result.details,
        usage: outcome.result.usage,
        nested_calls: None,
        is_error: outcome.is_error,
        timestamp: oxpi_ai::now_millis(),
        duration_ms: outcome.duration_ms,
    }
}

/// Runs the allowed calls concurrently; their updates and ends reach listeners in order, from
/// this task. Outcomes come back in the jobs' order.
async fn run_batch(
    inner: &Inner,
    site: &CallSite<'_>,
    jobs: Vec<(&ToolCall, Prepared)>,
) -> Vec<ToolOutcome> {
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<AgentEvent>();
    let work = futures::future::join_all(
        jobs.into_iter()
            .map(|(call, prepared)| run_one(inner, site, call, prepared, events_tx.clone())),
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

/// Runs one allowed call; sends its updates, then its `tool_execution_end`.
async fn run_one(
    inner: &Inner,
    site: &CallSite<'_>,
    call: &ToolCall,
    prepared: Prepared,
    events: mpsc::UnboundedSender<AgentEvent>,
) -> ToolOutcome {
    let outcome = match prepared {
        Prepared::Refused(outcome) => outcome,
        Prepared::Run(_, _) if site.cancel.is_cancelled() => error_outcome(NOT_EXECUTED_ABORTED),
        Prepared::Run(handle, arguments) => {
            inner.state().pending_tool_calls.insert(call.id.clone());
            let on_update: ToolUpdateFn = {
                let (id, name, args) = (call.id.clone(), call.name.clone(), call.arguments.clone());
                let events = events.clone();
                Arc::new(move |partial_result: AgentToolResult| {
                    let _ = events.send(AgentEvent::ToolExecutionUpdate {
                        tool_call_id: id.clone(),
                        tool_name: name.clone(),
                        args: args.clone(),
                        partial_result,
                    });
                })
            };
            let outcome = execute(site, &handle, call, arguments, on_update).await;
            inner.state().pending_tool_calls.remove(&call.id);
            outcome
        }
    };
    let _ = events.send(end_event(call, &outcome));
    outcome
}

/// The result of a call in a reply cut by the output limit (pi 1.6's words).
pub(crate) fn length_cut_text(tool_name: &str) -> String {
    format!(
        "Tool call \"{tool_name}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments."
    )
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
