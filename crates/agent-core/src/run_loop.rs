//! The run loop: stream a reply, execute its tool calls, append the results, ask again until the
//! model stops. Every tool call in the history gets exactly one result, right after its
//! assistant message, in call order — whatever happens (errors, panics, abort, max turns).

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
use crate::hooks::{AfterToolCall, ToolCallDecision, ToolExecution, ToolOutcome};
use crate::tool::{AgentToolHandle, AgentToolResult, ToolCallFailure, ToolUpdateFn};

/// Runs until the model stops, the run is aborted, or the turn limit is reached.
pub(crate) async fn run(inner: &Inner, prompt: Vec<Message>, cancel: CancellationToken) {
    inner.emit(AgentEvent::AgentStart).await;
    let mut added: Vec<Message> = Vec::new();
    let mut pending = prompt;
    let mut turns = 0usize;
    let mut error: Option<String> = None;

    loop {
        inner.emit(AgentEvent::TurnStart).await;
        for message in pending.drain(..) {
            append(inner, &mut added, message).await;
        }
        if cancel.is_cancelled() {
            error = Some("Request was aborted".to_string());
            break;
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
        let results = execute_tool_calls(inner, &assistant, &calls, &cancel).await;
        for result in &results {
            append(inner, &mut added, Message::ToolResult(result.clone())).await;
        }
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
            error = assistant.error_message.clone().or_else(|| {
                Some(format!(
                    "The reply ended with stopReason {:?}",
                    assistant.stop_reason
                ))
            });
            break;
        }
        if cancel.is_cancelled() {
            error = Some("Request was aborted".to_string());
            break;
        }
        let wants_more = !calls.is_empty();
        let steering: Vec<Message> = lock(&inner.steering).drain(..).collect();
        let next = if !steering.is_empty() {
            steering
        } else if wants_more {
            Vec::new()
        } else {
            lock(&inner.follow_ups).drain(..).collect()
        };
        if next.is_empty() && !wants_more {
            break;
        }
        if turns >= inner.max_turns {
            // Messages we drained go back, so nothing queued is lost.
            let mut steering = lock(&inner.steering);
            for m in next.into_iter().rev() {
                steering.push_front(m);
            }
            error = Some(format!(
                "Stopped after reaching the maximum of {} turns; the model still wanted to continue",
                inner.max_turns
            ));
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

/// Builds the request from the current state and streams the reply, forwarding its events.
/// Always returns a final message (an `error` one if the stream broke its contract).
async fn stream_reply(inner: &Inner, cancel: &CancellationToken) -> AssistantMessage {
    let (model, context, reasoning) = {
        let state = inner.state();
        let context = Context {
            system_prompt: state.system_prompt.clone(),
            messages: state.messages.clone(),
            tools: state.tool_definitions.clone(),
        };
        (state.model.clone(), context, state.thinking_level)
    };
    let mut context = context;
    if let Some(transform) = &inner.transform_context {
        context.messages = transform(context.messages, cancel.clone()).await;
    }
    if let Some(convert) = &inner.convert_to_llm {
        context.messages = Arc::new(convert(&context.messages));
    }
    let mut options = inner.stream_options.clone();
    options.cancel = cancel.clone();
    if reasoning.is_some() {
        options.reasoning = reasoning;
    }
    let mut stream = (inner.stream_fn)(&model, &context, options);
    drop(context);

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
                        message: Message::Assistant(partial),
                    })
                    .await;
            }
            AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } => {
                last = Some(message);
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
        let mut m = AssistantMessage::empty(&model.api, &model.provider, &model.id);
        m.stop_reason = StopReason::Error;
        m.error_message = Some("The stream ended without a done or error event".to_string());
        m
    });
    if !started {
        inner
            .emit(AgentEvent::MessageStart {
                message: Message::Assistant(message.clone()),
            })
            .await;
    }
    message
}

enum Prepared {
    /// Run the tool with these (validated, normalized) arguments.
    Run(AgentToolHandle, Map<String, Value>),
    Refused(String),
}

/// Produces exactly one result per call, in call order.
async fn execute_tool_calls(
    inner: &Inner,
    assistant: &AssistantMessage,
    calls: &[ToolCall],
    cancel: &CancellationToken,
) -> Vec<ToolResultMessage> {
    if calls.is_empty() {
        return Vec::new();
    }
    let tools = inner.state().tools.clone();
    let mut prepared = Vec::with_capacity(calls.len());
    for call in calls {
        inner
            .emit(AgentEvent::ToolExecutionStart {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                args: call.arguments.clone(),
            })
            .await;
        let decision = prepare(inner, assistant, call, &tools, cancel).await;
        prepared.push(decision);
    }

    let (update_tx, mut update_rx) = mpsc::unbounded_channel::<AgentEvent>();
    let jobs: Vec<_> = calls
        .iter()
        .zip(prepared)
        .map(|(call, prep)| run_one(inner, call, prep, cancel, update_tx.clone()))
        .collect();
    drop(update_tx);
    let work = match inner.tool_execution {
        ToolExecution::Parallel => futures::future::join_all(jobs).left_future(),
        ToolExecution::Sequential => async move {
            let mut out = Vec::with_capacity(jobs.len());
            for job in jobs {
                out.push(job.await);
            }
            out
        }
        .right_future(),
    };
    let mut work = std::pin::pin!(work);
    let outcomes: Vec<ToolOutcome> = loop {
        tokio::select! {
            biased;
            Some(update) = update_rx.recv() => inner.emit(update).await,
            outcomes = &mut work => {
                while let Ok(update) = update_rx.try_recv() {
                    inner.emit(update).await;
                }
                break outcomes;
            }
        }
    };

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

/// Runs (or refuses) one call and emits its `tool_execution_end`.
async fn run_one(
    inner: &Inner,
    call: &ToolCall,
    prep: Prepared,
    cancel: &CancellationToken,
    updates: mpsc::UnboundedSender<AgentEvent>,
) -> ToolOutcome {
    let outcome = match prep {
        Prepared::Refused(text) => error_outcome(text),
        Prepared::Run(handle, arguments) => {
            execute_one(inner, &handle, call, arguments, cancel, updates).await
        }
    };
    inner
        .emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: outcome.result.clone(),
            is_error: outcome.is_error,
        })
        .await;
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
        StopReason::Aborted => return Prepared::Refused("Tool call was not executed: the request was aborted".into()),
        StopReason::Error => {
            return Prepared::Refused("Tool call was not executed: the reply failed before it was complete".into())
        }
        StopReason::Length => {
            return Prepared::Refused(
                "Tool call was not executed: the reply hit the output token limit, so its arguments may be incomplete"
                    .into(),
            )
        }
        StopReason::Stop | StopReason::ToolUse => {}
    }
    if cancel.is_cancelled() {
        return Prepared::Refused("Tool call was not executed: the request was aborted".into());
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
        if let ToolCallDecision::Block { reason } = before(call.clone()).await {
            return Prepared::Refused(reason);
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
    updates: mpsc::UnboundedSender<AgentEvent>,
) -> ToolOutcome {
    inner.state().pending_tool_calls.insert(call.id.clone());
    let on_update: ToolUpdateFn = {
        let (id, name, args) = (call.id.clone(), call.name.clone(), call.arguments.clone());
        Arc::new(move |partial_result: AgentToolResult| {
            let _ = updates.send(AgentEvent::ToolExecutionUpdate {
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
    let outcome = tokio::select! {
        result = execution => match result {
            Ok(Ok(result)) => ToolOutcome { result, is_error: false },
            Ok(Err(ToolCallFailure::Tool(e))) => error_outcome(e.message),
            Ok(Err(ToolCallFailure::Validation(e))) => error_outcome(e.to_string()),
            Err(panic) => error_outcome(format!("Tool \"{}\" panicked: {}", call.name, panic_text(&*panic))),
        },
        _ = cancel.cancelled() => error_outcome("Tool execution was aborted".to_string()),
    };
    inner.state().pending_tool_calls.remove(&call.id);
    match &inner.after_tool_call {
        Some(after) => {
            let seen = AfterToolCall {
                tool_call: call.clone(),
                result: outcome.result.clone(),
                is_error: outcome.is_error,
            };
            after(seen).await.unwrap_or(outcome)
        }
        None => outcome,
    }
}

fn error_outcome(text: String) -> ToolOutcome {
    ToolOutcome {
        result: AgentToolResult::text(text),
        is_error: true,
    }
}
