//! The run loop: stream a reply, execute its tool calls, append the results, ask again until the
//! model stops. Every tool call in the history gets exactly one result, right after its
//! assistant message, in call order — whatever happens (errors, panics in tools or hooks, abort,
//! max turns).
//!
//! Events are emitted from this task only, one at a time, so listeners never overlap; tools
//! running in parallel send theirs through a channel that the loop drains in order
//! ([`crate::tool_calls`] runs a reply's calls).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::StreamExt;
use oxpi_ai::registry::panic_text;
use oxpi_ai::{
    is_context_overflow, AssistantMessage, AssistantMessageEvent, Context, FailureKind, Message,
    SharedPartial, StopReason, ToolCall,
};
use tokio_util::sync::CancellationToken;

use crate::event::AgentEvent;
use crate::hooks::{guarded, QueueMode};
use crate::inner::{append, append_silently, lock, Inner, Run};
use crate::retry::is_retryable_assistant_error;
use crate::tool_calls::execute_tool_calls;
use crate::turn_hooks::{RequestContext, TurnAction, TurnContext, TurnUpdate};

const ABORTED: &str = "Request was aborted";

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
    let mut run = Run::default();
    let mut pending = prompt;
    let steering_mode = inner.state().steering_mode;
    pending.extend(take_queued(&inner.steering, steering_mode));
    let error = run_turns(inner, &mut run, pending, &cancel).await;
    if let Some(e) = &error {
        inner.state().error_message = Some(e.clone());
    }
    inner
        .emit(AgentEvent::AgentEnd {
            messages: run.added,
            error_message: error,
        })
        .await;
}

/// The turns of a run, in pi 1.6's order; returns why the run stopped early, if it did.
async fn run_turns(
    inner: &Inner,
    run: &mut Run,
    mut pending: Vec<Message>,
    cancel: &CancellationToken,
) -> Option<String> {
    let mut turns = 0usize;
    loop {
        inner.emit(AgentEvent::TurnStart).await;
        for message in pending.drain(..) {
            append(inner, run, message).await;
        }
        turns += 1;
        let assistant = reply_with_retries(inner, run, cancel).await;

        let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
        let (results, terminate) = execute_tool_calls(inner, &assistant, &calls, cancel, run).await;
        let turn = (inner.finish_turn.is_some() || inner.prepare_next_turn_with_context.is_some())
            .then(|| TurnContext {
                message: assistant.clone(),
                tool_results: results.clone(),
                context: run.context(inner),
                new_messages: run.added.clone(),
            });
        let decision = match (&inner.finish_turn, &turn) {
            // Cut short by an abort: the run goes on to a turn that ends at once as `aborted`,
            // so its last message says it was aborted.
            (Some(finish), Some(turn)) => {
                raced("finish_turn", finish(turn.clone(), cancel.clone()), cancel)
                    .await
                    .unwrap_or(Ok(Some(TurnAction::Continue)))
            }
            _ => Ok(None),
        };
        inner
            .emit(AgentEvent::TurnEnd {
                message: Message::Assistant(assistant.clone()),
                tool_results: results,
            })
            .await;

        // A failed turn ends the run, whatever finish_turn said.
        if matches!(
            assistant.stop_reason,
            StopReason::Error | StopReason::Aborted
        ) {
            return Some(assistant.error_message.clone().unwrap_or_else(|| {
                format!(
                    "The reply ended with stopReason {:?}",
                    assistant.stop_reason
                )
            }));
        }
        let decision = match decision {
            Ok(decision) => decision,
            Err(panic) => return Some(panic),
        };
        if decision == Some(TurnAction::End) {
            return None;
        }
        if assistant.stop_reason == StopReason::Length && !calls.is_empty() {
            // The calls got error results (see `prepare`); asking again would repeat the cut.
            return Some(format!(
                "The reply hit the output token limit while calling tools; its {} tool call(s) were not executed",
                calls.len()
            ));
        }
        // A batch whose every result asked to terminate ends the run (unless a message is
        // queued to steer it on, or finish_turn asked for another request).
        let wants_more = !calls.is_empty() && !terminate;
        let steering_mode = inner.state().steering_mode;
        let steering = take_queued(&inner.steering, steering_mode);
        let (mut next, taken_from) = if !steering.is_empty() {
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
        if next.is_empty() && !wants_more && decision != Some(TurnAction::Continue) {
            return None;
        }
        // After an abort the next turn still starts and ends at once as `aborted`, without a
        // request (pi 1.6): the run's last message says it was aborted.
        let stop = if !cancel.is_cancelled() && turns >= inner.max_turns {
            Some(max_turns_text(inner.max_turns, wants_more, next.len()))
        } else {
            None
        };
        if let Some(text) = stop {
            // Messages taken go back to the front of the queue they came from, so nothing
            // queued is lost or moved (a follow-up stays a follow-up, and clearing its queue
            // clears it).
            if let Some(queue) = taken_from {
                let mut queue = lock(queue);
                for m in next.into_iter().rev() {
                    queue.push_front(m);
                }
            }
            return Some(text);
        }
        let prepared = match prepare_next_turn(inner, turn, cancel).await {
            Ok(prepared) => prepared,
            Err(panic) => return Some(panic),
        };
        if let Some(update) = prepared {
            run.replace(update.context, update.model, update.thinking_level);
            pending = update.messages;
        }
        // Preparing may take long (compaction): take steering queued meanwhile, unless this
        // turn already has its messages (one at a time would deliver two).
        if next.is_empty() {
            let steering_mode = inner.state().steering_mode;
            next = take_queued(&inner.steering, steering_mode);
        }
        pending.extend(next);
    }
}

/// The turn's reply, appended to the history with its `message_end`. Under a retry policy a
/// retryable failure is emitted (`message_end`) but not kept, and the request is made again
/// after the policy's wait; the tools of a failed reply never ran, so nothing is repeated.
async fn reply_with_retries(
    inner: &Inner,
    run: &mut Run,
    cancel: &CancellationToken,
) -> AssistantMessage {
    let mut attempt = 0u32;
    loop {
        let reply = stream_reply(inner, run, cancel).await;
        let context_window = run.model(inner).context_window;
        let current = *inner.retry.lock().unwrap_or_else(|e| e.into_inner());
        let policy = current.filter(|policy| {
            attempt < policy.max_retries
                && is_retryable_assistant_error(&reply)
                && !is_context_overflow(&reply, Some(context_window))
        });
        let Some(policy) = policy else {
            keep_reply(inner, run, &reply).await;
            if attempt > 0 {
                let failed = reply.stop_reason == StopReason::Error;
                inner
                    .emit(AgentEvent::AutoRetryEnd {
                        success: !matches!(
                            reply.stop_reason,
                            StopReason::Error | StopReason::Aborted
                        ),
                        attempt,
                        final_error: failed.then(|| reply.error_message.clone()).flatten(),
                    })
                    .await;
            }
            return reply;
        };
        inner
            .emit(AgentEvent::MessageEnd {
                message: Message::Assistant(reply.clone()),
            })
            .await;
        attempt += 1;
        let delay = policy.delay(attempt);
        // Set before `auto_retry_start`, so an `abort_retry` made on that event is seen.
        let retry_wait = CancellationToken::new();
        *inner.retry_wait.lock().unwrap_or_else(|e| e.into_inner()) = Some(retry_wait.clone());
        inner
            .emit(AgentEvent::AutoRetryStart {
                attempt,
                max_attempts: policy.max_retries,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error_message: reply.error_message.clone().unwrap_or_default(),
            })
            .await;
        let waited = tokio::select! {
            biased;
            _ = cancel.cancelled() => Wait::Aborted,
            _ = retry_wait.cancelled() => Wait::RetryCancelled,
            _ = tokio::time::sleep(delay) => Wait::Elapsed,
        };
        inner
            .retry_wait
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if waited == Wait::RetryCancelled {
            // `abort_retry`: the failed reply is the turn's, as pi's `abortRetry` leaves it.
            append_silently(inner, run, Message::Assistant(reply.clone()));
            inner
                .emit(AgentEvent::AutoRetryEnd {
                    success: false,
                    attempt,
                    final_error: Some("Retry cancelled".to_string()),
                })
                .await;
            return reply;
        }
        if waited == Wait::Aborted {
            // Aborted while waiting: the failed reply stays, as aborted (pi's retryAssistantCall).
            let mut aborted = reply;
            aborted.stop_reason = StopReason::Aborted;
            aborted.error_message = Some(ABORTED.to_string());
            aborted.failure_kind = Some(FailureKind::Aborted);
            append_silently(inner, run, Message::Assistant(aborted.clone()));
            inner
                .emit(AgentEvent::AutoRetryEnd {
                    success: false,
                    attempt,
                    final_error: Some("Retry cancelled".to_string()),
                })
                .await;
            return aborted;
        }
        inner.emit(AgentEvent::RetryAttemptStart { attempt }).await;
    }
}

/// How a retry wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// The delay passed: the request is made again.
    Elapsed,
    /// The run was aborted.
    Aborted,
    /// [`crate::Agent::abort_retry`] was called.
    RetryCancelled,
}

/// Appends the turn's reply and emits its `message_end`.
async fn keep_reply(inner: &Inner, run: &mut Run, reply: &AssistantMessage) {
    append_silently(inner, run, Message::Assistant(reply.clone()));
    inner
        .emit(AgentEvent::MessageEnd {
            message: Message::Assistant(reply.clone()),
        })
        .await;
}

/// Runs a turn hook raced against the run's abort (unlike pi 1.6, which awaits it): `None`
/// when the run was aborted first, the hook's future then dropped unfinished; else the hook's
/// value, or the text of its panic.
async fn raced<T>(
    hook: &str,
    work: impl std::future::Future<Output = T>,
    cancel: &CancellationToken,
) -> Option<Result<T, String>> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        done = guarded(hook, work) => Some(done),
    }
}

/// Calls the next-turn hook, the one with context first; cut short by an abort, it changes
/// nothing (the next turn ends at once as `aborted`).
async fn prepare_next_turn(
    inner: &Inner,
    turn: Option<TurnContext>,
    cancel: &CancellationToken,
) -> Result<Option<TurnUpdate>, String> {
    let prepared =
        if let (Some(prepare), Some(turn)) = (&inner.prepare_next_turn_with_context, turn) {
            raced(
                "prepare_next_turn_with_context",
                prepare(turn, cancel.clone()),
                cancel,
            )
            .await
        } else if let Some(prepare) = &inner.prepare_next_turn {
            raced("prepare_next_turn", prepare(cancel.clone()), cancel).await
        } else {
            return Ok(None);
        };
    prepared.unwrap_or(Ok(None))
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

/// The messages a model reads: app-defined ones ([`Message::Custom`]) left out, the history
/// shared as it is when it holds none.
fn llm_only(messages: Arc<Vec<Message>>) -> Arc<Vec<Message>> {
    if messages.iter().all(Message::is_llm) {
        return messages;
    }
    Arc::new(messages.iter().filter(|m| m.is_llm()).cloned().collect())
}

fn stream_fn_panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    format!("The stream_fn panicked: {}", panic_text(panic))
}

/// An assistant message that ends the turn without a request: aborted (failure kind `Aborted`),
/// or a hook failed (`Config`: the request could not be made as configured).
fn ended_without_request(
    inner: &Inner,
    run: &Run,
    reason: StopReason,
    text: String,
) -> AssistantMessage {
    let kind = match reason {
        StopReason::Aborted => FailureKind::Aborted,
        _ => FailureKind::Config,
    };
    ended_with_kind(inner, run, reason, kind, text)
}

/// The `aborted` reply of a turn aborted before its request.
fn aborted_without_request(inner: &Inner, run: &Run) -> AssistantMessage {
    ended_without_request(inner, run, StopReason::Aborted, ABORTED.to_string())
}

/// [`ended_without_request`] with the failure kind given.
fn ended_with_kind(
    inner: &Inner,
    run: &Run,
    reason: StopReason,
    kind: FailureKind,
    text: String,
) -> AssistantMessage {
    let model = run.model(inner);
    let mut message = AssistantMessage::empty(&model.api, &model.provider, &model.id);
    message.stop_reason = reason;
    message.error_message = Some(text);
    message.failure_kind = Some(kind);
    message
}

/// Builds the request from the current state and streams the reply, forwarding its events.
/// Always returns a final message (an `error` one if the stream broke its contract or a hook
/// panicked, an `aborted` one without a request if the run was already aborted).
async fn stream_reply(
    inner: &Inner,
    run: &mut Run,
    cancel: &CancellationToken,
) -> AssistantMessage {
    let message = match request_reply(inner, run, cancel).await {
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
    run: &mut Run,
    cancel: &CancellationToken,
) -> Result<AssistantMessage, AssistantMessage> {
    if let Some(prepare) = &inner.prepare_request {
        let request = RequestContext {
            context: run.context(inner),
            model: run.model(inner),
            thinking_level: run.thinking_level(inner),
        };
        let update = raced("prepare_request", prepare(request, cancel.clone()), cancel)
            .await
            .ok_or_else(|| aborted_without_request(inner, run))?
            .map_err(|e| ended_without_request(inner, run, StopReason::Error, e))?;
        if let Some(update) = update {
            run.replace(update.context, update.model, update.thinking_level);
        }
    }
    let (model, reasoning) = (run.model(inner), run.thinking_level(inner));
    let (mut context, session_id) = {
        let state = inner.state();
        let context = Context {
            system_prompt: state.system_prompt.clone(),
            messages: state.messages.clone(),
            tools: state.tool_definitions.clone(),
        };
        (context, state.session_id.clone())
    };
    if let Some(messages) = &run.messages {
        context.messages = messages.clone();
    }
    if let Some(tools) = &run.tools {
        context.tools = tools.iter().map(|t| t.definition().clone()).collect();
    }
    if let Some(transform) = &inner.transform_context {
        context.messages = raced(
            "transform_context",
            transform(context.messages, cancel.clone()),
            cancel,
        )
        .await
        .ok_or_else(|| aborted_without_request(inner, run))?
        .map_err(|e| ended_without_request(inner, run, StopReason::Error, e))?;
    }
    if let Some(convert) = &inner.convert_to_llm {
        let converted = std::panic::catch_unwind(AssertUnwindSafe(|| convert(&context.messages)))
            .map_err(|panic| format!("The convert_to_llm hook panicked: {}", panic_text(&*panic)))
            .map_err(|e| ended_without_request(inner, run, StopReason::Error, e))?;
        context.messages = Arc::new(converted);
    }
    // pi's default convertToLlm keeps the four kinds a model reads; after a custom one, what it
    // left app-defined is dropped too (pi's type allows none), so a stream_fn never sees one.
    context.messages = llm_only(context.messages);
    if cancel.is_cancelled() {
        return Err(aborted_without_request(inner, run));
    }
    let mut options = inner.stream_options.clone();
    options.cancel = cancel.clone();
    if options.tool_choice.is_none()
        && !context.tools.is_empty()
        && matches!(context.messages.last(), Some(Message::User(_)))
    {
        options.tool_choice = inner.tool_choice_after_user.clone();
    }
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
                return Err(ended_without_request(inner, run, StopReason::Aborted, ABORTED.to_string()));
            }
            asked = guarded("get_api_key", get_api_key(&model.provider)) => asked,
        };
        match asked {
            Ok(Ok(Some(key))) => options.api_key = Some(key),
            Ok(Ok(None)) => {}
            Ok(Err(text)) => {
                let text = format!("get_api_key failed for provider {}: {text}", model.provider);
                return Err(ended_with_kind(
                    inner,
                    run,
                    StopReason::Error,
                    FailureKind::Auth,
                    text,
                ));
            }
            Err(panic) => return Err(ended_without_request(inner, run, StopReason::Error, panic)),
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
        let text = stream_fn_panic_text(&*panic);
        ended_with_kind(inner, run, StopReason::Error, FailureKind::Other, text)
    })?;

    // The stream folds its events into the partial message once; the agent's
    // `streaming_message` reads that same fold.
    inner.state().streaming_message = stream.shared_partial();
    let mut started = false;
    let mut last: Option<AssistantMessage> = None;
    while let Some(event) = stream.next().await {
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
    inner.state().streaming_message = SharedPartial::default();
    let message = last.unwrap_or_else(|| {
        ended_with_kind(
            inner,
            run,
            StopReason::Error,
            FailureKind::Other,
            "The stream ended without a done or error event".to_string(),
        )
    });
    if started {
        Ok(message)
    } else {
        Err(message)
    }
}
