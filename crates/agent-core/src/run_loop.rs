//! The run loop: stream a reply, execute its tool calls, append the results, ask again until the
//! model stops. Every tool call in the history gets exactly one result, right after its
//! assistant message, in call order — whatever happens (errors, panics in tools or hooks, abort,
//! max turns).
//!
//! Events are emitted from this task only, one at a time, so listeners never overlap; tools
//! running in parallel send theirs through a channel that the loop drains in order.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use oxpi_ai::registry::panic_text;
use oxpi_ai::{
    AssistantMessage, AssistantMessageEvent, Context, Message, PartialMessage, StopReason,
    ToolCall, ToolResultMessage,
};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{lock, Inner};
use crate::event::AgentEvent;
use crate::hooks::{
    AfterToolCall, BeforeToolCall, QueueMode, ToolCallDecision, ToolExecution, ToolOutcome,
    TurnSummary,
};
use crate::tool::{AgentToolHandle, AgentToolResult, ToolCallFailure, ToolUpdateFn};

const ABORTED: &str = "Request was aborted";
const NOT_EXECUTED_ABORTED: &str = "Tool call was not executed: the request was aborted";

/// Takes queued messages as `mode` says: the oldest one, or all.
fn take_queued(queue: &std::sync::Mutex<VecDeque<Message>>, mode: QueueMode) -> Vec<Message> {
    let mut queue = lock(queue);
    match mode {
        QueueMode::All => queue.drain(..).collect(),
        QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
    }
}

/// Runs until the model stops, the run is aborted, or the turn limit is reached.
pub(crate) async fn run(inner: &Inner, prompt: Vec<Message>, cancel: CancellationToken) {
    inner.emit(AgentEvent::AgentStart).await;
    let mut added: Vec<Message> = Vec::new();
    let mut pending = prompt;
    let steering_mode = inner.state().steering_mode;
    pending.extend(take_queued(&inner.steering, steering_mode));
    let mut turns = 0usize;
    let mut error: Option<String> = None;

    loop {
        inner.emit(AgentEvent::TurnStart).await;
        for message in pending.drain(..) {
            append(inner, &mut added, message).await;
        }
        turns += 1;
        let assistant = stream_reply(inner, &cancel).await;
        append_silently(inner, &mut added, Message::Assistant(assistant.clone()));
        inner
            .emit(AgentEvent::MessageEnd {
                message: Message::Assistant(assistant.clone()),
            })
            .await;

        let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
        let (results, terminate) =
            execute_tool_calls(inner, &assistant, &calls, &cancel, &mut added).await;
        // Kept only for a should_stop_after_turn hook (results can be large).
        let kept_results = inner
            .should_stop_after_turn
            .as_ref()
            .map(|_| results.clone());
        inner
            .emit(AgentEvent::TurnEnd {
                message: Message::Assistant(assistant.clone()),
                tool_results: results,
            })
            .await;

        if matches!(
            assistant.stop_reason,
            StopReason::Error | StopReason::Aborted
        ) {
            error = Some(assistant.error_message.clone().unwrap_or_else(|| {
                format!(
                    "The reply ended with stopReason {:?}",
                    assistant.stop_reason
                )
            }));
            break;
        }
        if assistant.stop_reason == StopReason::Length && !calls.is_empty() {
            // The calls got error results (see `prepare`); asking again would repeat the cut.
            error = Some(format!(
                "The reply hit the output token limit while calling tools; its {} tool call(s) were not executed",
                calls.len()
            ));
            break;
        }
        if let (Some(should_stop), Some(tool_results)) =
            (&inner.should_stop_after_turn, kept_results)
        {
            let summary = TurnSummary {
                message: assistant.clone(),
                tool_results,
                messages: inner.state().messages.clone(),
                new_messages: added.clone(),
            };
            let decided = tokio::select! {
                biased;
                _ = cancel.cancelled() => Ok(true),
                decided = guarded("should_stop_after_turn", should_stop(summary)) => decided,
            };
            match decided {
                Ok(false) => {}
                Ok(true) if cancel.is_cancelled() => {
                    error = Some(ABORTED.to_string());
                    break;
                }
                Ok(true) => break,
                Err(panic) => {
                    error = Some(panic);
                    break;
                }
            }
        }
        // A batch whose every result asked to terminate ends the run (unless a message is
        // queued to steer it on).
        let wants_more = !calls.is_empty() && !terminate;
        let steering_mode = inner.state().steering_mode;
        let steering = take_queued(&inner.steering, steering_mode);
        let (next, taken_from) = if !steering.is_empty() {
            (steering, Some(&inner.steering))
        } else if wants_more {
            (Vec::new(), None)
        } else {
            let follow_up_mode = inner.state().follow_up_mode;
            (
                take_queued(&inner.follow_ups, follow_up_mode),
                Some(&inner.follow_ups),
            )
        };
        if next.is_empty() && !wants_more {
            break;
        }
        let stop = if cancel.is_cancelled() {
            Some(ABORTED.to_string())
        } else if turns >= inner.max_turns {
            Some(max_turns_text(inner.max_turns, wants_more, next.len()))
        } else {
            None
        };
        if let Some(stop) = stop {
            // Messages taken go back to the front of the queue they came from, so nothing
            // queued is lost or moved (a follow-up stays a follow-up, and clearing its queue
            // clears it).
            if let Some(queue) = taken_from {
                let mut queue = lock(queue);
                for m in next.into_iter().rev() {
                    queue.push_front(m);
                }
            }
            error = Some(stop);
            break;
        }
        pending = next;
    }

    if let Some(e) = &error {
        inner.state().error_message = Some(e.clone());
    }
    inner
        .emit(AgentEvent::AgentEnd {
            messages: added,
            error_message: error,
        })
        .await;
}

/// Why a run stopped at `max_turns`: the model still wanted to go on (it called tools), or
/// only queued messages would have started another turn (they stay queued).
fn max_turns_text(max_turns: usize, wants_more: bool, queued: usize) -> String {
    if wants_more {
        format!("Stopped after reaching the maximum of {max_turns} turns; the model still wanted to continue")
    } else {
        format!("Stopped after reaching the maximum of {max_turns} turns; {queued} queued message(s) were not sent and stay queued")
    }
}

/// Appends to the history and emits `message_start` / `message_end`.
async fn append(inner: &Inner, added: &mut Vec<Message>, message: Message) {
    inner
        .emit(AgentEvent::MessageStart {
            message: message.clone(),
        })
        .await;
    append_silently(inner, added, message.clone());
    inner.emit(AgentEvent::MessageEnd { message }).await;
}

fn append_silently(inner: &Inner, added: &mut Vec<Message>, message: Message) {
    added.push(message.clone());
    Arc::make_mut(&mut inner.state().messages).push(message);
}

/// Awaits a hook, turning a panic into an error text that names the hook.
async fn guarded<T>(hook: &str, work: impl Future<Output = T>) -> Result<T, String> {
    AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .map_err(|panic| format!("The {hook} hook panicked: {}", panic_text(&*panic)))
}

fn stream_fn_panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    format!("The stream_fn panicked: {}", panic_text(panic))
}

/// An assistant message that ends the turn without a request (aborted, or a hook failed).
fn ended_without_request(inner: &Inner, reason: StopReason, text: String) -> AssistantMessage {
    let model = inner.state().model.clone();
    let mut message = AssistantMessage::empty(&model.api, &model.provider, &model.id);
    message.stop_reason = reason;
    message.error_message = Some(text);
    message
}

/// Builds the request from the current state and streams the reply, forwarding its events.
/// Always returns a final message (an `error` one if the stream broke its contract or a hook
/// panicked, an `aborted` one without a request if the run was already aborted).
async fn stream_reply(inner: &Inner, cancel: &CancellationToken) -> AssistantMessage {
    let message = match request_reply(inner, cancel).await {
        Ok(message) => return message,
        Err(message) => message,
    };
    inner
        .emit(AgentEvent::MessageStart {
            message: Message::Assistant(message.clone()),
        })
        .await;
    message
}

/// `Ok` when the reply's `message_start` was emitted, `Err` with a final message otherwise.
async fn request_reply(
    inner: &Inner,
    cancel: &CancellationToken,
) -> Result<AssistantMessage, AssistantMessage> {
    let (model, context, reasoning, session_id) = {
        let state = inner.state();
        let context = Context {
            system_prompt: state.system_prompt.clone(),
            messages: state.messages.clone(),
            tools: state.tool_definitions.clone(),
        };
        (
            state.model.clone(),
            context,
            state.thinking_level,
            state.session_id.clone(),
        )
    };
    let mut context = context;
    if let Some(transform) = &inner.transform_context {
        context.messages = guarded(
            "transform_context",
            transform(context.messages, cancel.clone()),
        )
        .await
        .map_err(|e| ended_without_request(inner, StopReason::Error, e))?;
    }
    if let Some(convert) = &inner.convert_to_llm {
        let converted = std::panic::catch_unwind(AssertUnwindSafe(|| convert(&context.messages)))
            .map_err(|panic| format!("The convert_to_llm hook panicked: {}", panic_text(&*panic)))
            .map_err(|e| ended_without_request(inner, StopReason::Error, e))?;
        context.messages = Arc::new(converted);
    }
    if cancel.is_cancelled() {
        return Err(ended_without_request(
            inner,
            StopReason::Aborted,
            ABORTED.to_string(),
        ));
    }
    let mut options = inner.stream_options.clone();
    options.cancel = cancel.clone();
    if reasoning.is_some() {
        options.reasoning = reasoning;
    }
    if session_id.is_some() {
        options.session_id = session_id;
    }
    if let Some(get_api_key) = &inner.get_api_key {
        let asked = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                return Err(ended_without_request(inner, StopReason::Aborted, ABORTED.to_string()));
            }
            asked = guarded("get_api_key", get_api_key(&model.provider)) => asked,
        };
        match asked {
            Ok(Ok(Some(key))) => options.api_key = Some(key),
            Ok(Ok(None)) => {}
            Ok(Err(text)) => {
                let text = format!("get_api_key failed for provider {}: {text}", model.provider);
                return Err(ended_without_request(inner, StopReason::Error, text));
            }
            Err(panic) => return Err(ended_without_request(inner, StopReason::Error, panic)),
        }
    }
    // A stream_fn that panics ends the turn with an error reply, like any failed request:
    // turn_end and agent_end still come, in balance. (A panic while the stream is read is the
    // provider's: the registry turns it into an error event.)
    let started_stream = std::panic::catch_unwind(AssertUnwindSafe(|| {
        (inner.stream_fn)(&model, &context, options)
    }));
    drop(context);
    let mut stream = started_stream.map_err(|panic| {
        ended_without_request(inner, StopReason::Error, stream_fn_panic_text(&*panic))
    })?;

    inner.state().streaming_message = PartialMessage::new();
    let mut started = false;
    let mut last: Option<AssistantMessage> = None;
    while let Some(event) = stream.next().await {
        inner.state().streaming_message.apply(&event);
        match event {
            AssistantMessageEvent::Start { partial } => {
                started = true;
                inner
                    .emit(AgentEvent::MessageStart {
                        message: Message::Assistant(*partial),
                    })
                    .await;
            }
            AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } => {
                last = Some(*message);
                break;
            }
            other => {
                inner
                    .emit(AgentEvent::MessageUpdate {
                        assistant_message_event: other,
                    })
                    .await;
            }
        }
    }
    drop(stream);
    inner.state().streaming_message = PartialMessage::new();
    let message = last.unwrap_or_else(|| {
        ended_without_request(
            inner,
            StopReason::Error,
            "The stream ended without a done or error event".to_string(),
        )
    });
    if started {
        Ok(message)
    } else {
        Err(message)
    }
}

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
async fn execute_tool_calls(
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
            is_error: outcome.is_error,
            timestamp: oxpi_ai::now_millis(),
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
        StopReason::Stop | StopReason::ToolUse => {}
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
            Ok(Err(ToolCallFailure::Tool(e))) => error_outcome(e.message),
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
