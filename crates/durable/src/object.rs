//! [`DurableAgent`]: an agent run as a Restate virtual object keyed by the run (conversation)
//! id. Its state is the transcript; each `prompt` runs oxpi-agent-core's own loop, with every
//! model turn and tool call a journaled step (see [`crate::bridge`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use oxpi_agent_core::oxpi_ai::{AssistantMessage, Message, UserContent, UserMessage};
use oxpi_agent_core::{Agent, AgentError, AgentOptions, Replay, StreamFn};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::bridge::{
    durable_options, inner_stream_fn, ModelRequest, NeedsApprovalFn, Step, ToolStep, DENIED_TEXT,
    OUTCOME_UNKNOWN,
};
use crate::inbox::{ApprovalAnswer, Decision, PendingApproval, RunInbox, RunInboxClient, Taken};
use crate::payload::{
    self, read_stored, resolve, stored_result, ResultRef, Stored, TranscriptStep,
};

/// The state key of the transcript: a JSON array of pi messages, in which a large tool result
/// is a reference `{"resultRef": "result/<index>"}` to the state key that holds it (see
/// [`INLINE_RESULT_BYTES`](crate::INLINE_RESULT_BYTES)).
pub const MESSAGES_KEY: &str = "messages";

type MakeOptions = Arc<dyn Fn(&str) -> AgentOptions + Send + Sync>;
type Observer = Arc<dyn Fn(&StepEvent) + Send + Sync>;

/// A journaled step as the service saw it, for logs and tests ([`DurableAgent::with_observer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepEvent {
    /// A model turn's final message is in the journal (`replayed`: it came from the journal,
    /// no request was made).
    ModelTurn {
        /// The run (object key).
        run: String,
        /// The turn's index within this prompt.
        turn: u32,
        /// True when the journal answered.
        replayed: bool,
    },
    /// A tool call's result is in the journal.
    ToolCall {
        /// The run (object key).
        run: String,
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool_name: String,
        /// True when the journal answered.
        replayed: bool,
        /// True when the call had been started by a process that died, and was not run again
        /// (its result says the outcome is unknown).
        outcome_unknown: bool,
    },
}

/// What `prompt` and `follow_up` take: a text, or messages (pi JSON).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptRequest {
    /// A user message of one text block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Messages appended as they are (after `text`, if both are given).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Message>,
}

impl PromptRequest {
    /// A request of one text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            messages: Vec::new(),
        }
    }

    pub(crate) fn into_messages(self) -> Vec<Message> {
        let mut out = Vec::with_capacity(self.messages.len() + 1);
        if let Some(text) = self.text {
            out.push(Message::User(UserMessage {
                content: oxpi_agent_core::oxpi_ai::UserMessageContent::Blocks(vec![
                    UserContent::text(text),
                ]),
                timestamp: oxpi_agent_core::oxpi_ai::now_millis(),
            }));
        }
        out.extend(self.messages);
        out
    }
}

/// What a run returns: its last assistant message, and why it stopped early if it did.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RunReply {
    /// The final reply's text.
    pub text: String,
    /// The last assistant message of the run, if there is one.
    pub message: Option<AssistantMessage>,
    /// Why the run stopped early (provider error, abort, turn limit), as `Agent::prompt`'s error.
    pub error_message: Option<String>,
}

/// An oxpi agent served as a Restate virtual object named `OxpiAgent`, one object per run
/// (conversation) id. Handlers: `prompt`, `follow_up` (queued behind a running prompt, then run
/// as one), and the shared `steer`, `abort` (accepted while a prompt runs) and `get_messages`
/// (reads the transcript). Build it with the same [`AgentOptions`] as an in-process [`Agent`],
/// made per run by `make`; serve it with [`DurableAgent::serve`], or bind
/// [`DurableAgent::definitions`] to a `restate_sdk` endpoint of your own.
#[derive(Clone)]
pub struct DurableAgent {
    make: MakeOptions,
    observer: Option<Observer>,
    needs_approval: Option<NeedsApprovalFn>,
}

impl std::fmt::Debug for DurableAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableAgent").finish_non_exhaustive()
    }
}

impl DurableAgent {
    /// A durable agent whose runs start from `make(run_id)`: the model, tools, hooks and
    /// system prompt of an in-process agent (its `messages` are replaced by the transcript).
    pub fn new(make: impl Fn(&str) -> AgentOptions + Send + Sync + 'static) -> Self {
        Self {
            make: Arc::new(make),
            observer: None,
            needs_approval: None,
        }
    }

    /// Makes the calls for which `needs_approval` is true wait for a person, after
    /// `before_tool_call` allowed them: the run waits on a Restate awakeable (no process holds
    /// it; Restate may suspend the invocation for hours) until `approve` or `deny` answers with
    /// the call id. A denied call gets an error result with the reason. `pending_approvals`
    /// lists the calls waiting.
    pub fn with_approval(
        mut self,
        needs_approval: impl Fn(&oxpi_agent_core::oxpi_ai::ToolCall) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.needs_approval = Some(Arc::new(needs_approval));
        self
    }

    /// Calls `observer` for every step once its result is in the journal.
    pub fn with_observer(mut self, observer: impl Fn(&StepEvent) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The two services a durable agent is made of, to bind to an endpoint (with more of the
    /// application's own): the run object `OxpiAgent` and its inbox `OxpiAgentInbox` (steering
    /// messages and abort requests). Both retry an invocation every 100 ms to 2 s without a
    /// limit, fit for a service that may restart.
    pub fn definitions(self) -> [ServiceDefinition; 2] {
        let options = || {
            ServiceOptions::new()
                .retry_policy_initial_interval(Duration::from_millis(100))
                .retry_policy_exponentiation_factor(2.0)
                .retry_policy_max_interval(Duration::from_secs(2))
                .retry_policy_max_attempts(u32::MAX.into())
        };
        [
            self.into_service_definition().options(options()),
            RunInbox.into_service_definition().options(options()),
        ]
    }

    /// Serves the agent over HTTP/2 at `addr` until the process ends (register the address with
    /// the Restate server as a deployment).
    pub async fn serve(self, addr: std::net::SocketAddr) {
        let [agent, inbox] = self.definitions();
        HttpServer::new(Endpoint::builder().bind(agent).bind(inbox).build())
            .listen_and_serve(addr)
            .await;
    }

    fn observe(&self, event: StepEvent) {
        if let Some(observer) = &self.observer {
            observer(&event);
        }
    }

    /// Runs `input` through the agent loop with every step journaled, and stores the transcript.
    async fn run(
        &self,
        ctx: &ObjectContext<'_>,
        input: PromptRequest,
    ) -> Result<RunReply, HandlerError> {
        let run_id = ctx.key().to_string();
        let stored = read_stored(ctx.get::<Json<Vec<Stored>>>(MESSAGES_KEY).await?);
        let history = resolve(ctx, &stored).await?;
        // The input's timestamps are journaled, so a replay appends the same messages.
        let input: Vec<Message> = ctx
            .run(|| async move { Ok(Json(input.into_messages())) })
            .name("input")
            .await?
            .into_inner();
        let options = (self.make)(&run_id);
        let inner = inner_stream_fn(&options);
        let (steps_tx, mut steps) = mpsc::unbounded_channel();
        let history_len = history.len();
        let options = durable_options(
            options.with_messages(history),
            steps_tx,
            self.needs_approval.clone(),
        );
        let agent = Agent::new(options);
        let _abort = AbortOnDrop(agent.clone());
        // Steering queued while the run was idle goes in with the prompt; an abort asked while
        // idle does nothing (as `Agent::abort`).
        for message in take_inbox(ctx).await?.steering {
            agent.steer(message);
        }
        let mut turn = 0u32;
        let outcome = {
            let run = agent.prompt(input);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    biased;
                    Some(step) = steps.recv() => {
                        self.serve_step(ctx, &agent, step, &inner, &mut turn).await?;
                    }
                    outcome = &mut run => break outcome,
                }
            }
        };
        // The loop stamps tool results (and replies made without a request) with the clock:
        // the run's new messages are journaled once, so every replay stores the same
        // transcript (Restate checks that a replayed state write carries the same value).
        // A large tool result is in its own journaled step already: the transcript step
        // journals it without content and details (see `payload`), and it is stored once.
        let all = agent.messages();
        let live = all.get(history_len..).unwrap_or_default().to_vec();
        let step = payload::strip(&live);
        let step: TranscriptStep = ctx
            .run(|| async move { Ok(Json(step)) })
            .name("transcript")
            .await?
            .into_inner();
        // Which results are stored apart is the journal's decision (the same on a replay).
        let stripped = step.stripped.clone();
        let added = payload::restore(step, &live);
        let mut stored = stored;
        for (i, message) in added.iter().enumerate() {
            if stripped.contains(&i) {
                let key = payload::result_key(history_len + i);
                ctx.set(&key, Json(message.clone()));
                stored.push(Stored::Ref(ResultRef { result_ref: key }));
            } else {
                stored.push(Stored::Message(Box::new(message.clone())));
            }
        }
        ctx.set(MESSAGES_KEY, Json(stored));
        let mut messages = all.get(..history_len).unwrap_or_default().to_vec();
        messages.extend(added);
        let last = messages.iter().rev().find_map(|m| match m {
            Message::Assistant(a) => Some(a.clone()),
            _ => None,
        });
        let error_message = match outcome {
            Ok(_) => None,
            Err(AgentError::Run { error_message, .. }) => Some(error_message),
            Err(other) => Some(other.to_string()),
        };
        Ok(RunReply {
            text: last
                .as_ref()
                .map(AssistantMessage::text)
                .unwrap_or_default(),
            message: last,
            error_message,
        })
    }

    /// Hands the inbox's steering messages and abort to the agent.
    async fn take_into(&self, ctx: &ObjectContext<'_>, agent: &Agent) -> Result<(), TerminalError> {
        let taken = take_inbox(ctx).await?;
        for message in taken.steering {
            agent.steer(message);
        }
        if taken.abort {
            agent.abort();
        }
        Ok(())
    }

    /// Makes one step journaled and sends its result back to the loop.
    async fn serve_step(
        &self,
        ctx: &ObjectContext<'_>,
        agent: &Agent,
        step: Step,
        inner: &StreamFn,
        turn: &mut u32,
    ) -> Result<(), TerminalError> {
        let run_id = ctx.key();
        match step {
            Step::Model(request) => {
                let ModelRequest {
                    model,
                    context,
                    options,
                    reply,
                } = *request;
                let n = *turn;
                *turn += 1;
                // Steering and aborts arrive at journaled points: before each turn and after
                // each tool call.
                self.take_into(ctx, agent).await?;
                let inner = inner.clone();
                let requested = Arc::new(AtomicBool::new(false));
                let flag = requested.clone();
                let message = ctx
                    .run(move || async move {
                        flag.store(true, Ordering::SeqCst);
                        if options.cancel.is_cancelled() {
                            return Ok(Json(aborted_reply(&model)));
                        }
                        let stream = inner(&model, &context, options);
                        Ok(Json(stream.result().await))
                    })
                    .name(format!("model turn {n}"))
                    .await?
                    .into_inner();
                self.observe(StepEvent::ModelTurn {
                    run: run_id.to_string(),
                    turn: n,
                    replayed: !requested.load(Ordering::SeqCst),
                });
                let _ = reply.send(message);
            }
            Step::Approval { call, reply } => {
                let (awakeable_id, answer) = ctx.awakeable::<Json<Decision>>();
                ctx.object_client::<RunInboxClient>(run_id)
                    .wait_approval(Json(PendingApproval {
                        call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        arguments: serde_json::Value::Object(call.arguments.clone()),
                        awakeable_id,
                    }))
                    .send();
                let decision = answer.await?.into_inner();
                let _ = reply.send(if decision.approved {
                    oxpi_agent_core::ToolCallDecision::Allow
                } else if decision.reason.is_empty() {
                    oxpi_agent_core::ToolCallDecision::block(DENIED_TEXT)
                } else {
                    oxpi_agent_core::ToolCallDecision::block(decision.reason)
                });
            }
            Step::Tool { invocation, reply } => {
                let call_id = invocation.tool_call_id.clone();
                let tool_name = invocation.tool.name().to_string();
                let safe = invocation.tool.replay() == Some(Replay::Safe);
                // The start marker is journaled before the tool runs: a replay that finds the
                // marker but no result knows the call was started by a process that died.
                let started_now = Arc::new(AtomicBool::new(false));
                let flag = started_now.clone();
                ctx.run(move || async move {
                    flag.store(true, Ordering::SeqCst);
                    Ok(())
                })
                .name(format!("start {call_id}"))
                .await?;
                let fresh = started_now.load(Ordering::SeqCst);
                let ran = Arc::new(AtomicBool::new(false));
                let unknown = Arc::new(AtomicBool::new(false));
                let (ran_flag, unknown_flag) = (ran.clone(), unknown.clone());
                let step = ctx
                    .run(move || async move {
                        ran_flag.store(true, Ordering::SeqCst);
                        if !fresh && !safe {
                            unknown_flag.store(true, Ordering::SeqCst);
                            return Ok(Json(ToolStep::Failed {
                                message: OUTCOME_UNKNOWN.to_string(),
                                details: None,
                            }));
                        }
                        let step = ToolStep::from_result(invocation.run().await);
                        Ok(Json(payload::bound(step)))
                    })
                    .name(format!("tool {call_id}"))
                    .await?
                    .into_inner();
                self.observe(StepEvent::ToolCall {
                    run: run_id.to_string(),
                    call_id,
                    tool_name,
                    replayed: !ran.load(Ordering::SeqCst),
                    outcome_unknown: unknown.load(Ordering::SeqCst)
                        || matches!(&step, ToolStep::Failed { message, .. } if message == OUTCOME_UNKNOWN),
                });
                // The loop reads its steering queue after the batch: what arrived during the
                // turn is handed over before the call's result is.
                self.take_into(ctx, agent).await?;
                let _ = reply.send(step);
            }
        }
        Ok(())
    }
}

/// Takes the run's inbox (a journaled call).
async fn take_inbox(ctx: &ObjectContext<'_>) -> Result<Taken, TerminalError> {
    Ok(ctx
        .object_client::<RunInboxClient>(ctx.key())
        .take()
        .call()
        .await?
        .into_inner())
}

/// The reply of a turn aborted before its request (pi's text).
fn aborted_reply(model: &oxpi_agent_core::oxpi_ai::Model) -> AssistantMessage {
    let mut message = AssistantMessage::empty(&model.api, &model.provider, &model.id);
    message.stop_reason = oxpi_agent_core::oxpi_ai::StopReason::Aborted;
    message.error_message = Some("Request was aborted".to_string());
    message.failure_kind = Some(oxpi_agent_core::oxpi_ai::FailureKind::Aborted);
    message
}

/// Aborts the agent's run when the handler stops (its future dropped on a lost connection).
struct AbortOnDrop(Agent);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[restate_sdk::object(name = "OxpiAgent")]
impl DurableAgent {
    /// Appends the input to the transcript and runs until the model stops.
    #[handler]
    async fn prompt(
        &self,
        ctx: ObjectContext<'_>,
        input: Json<PromptRequest>,
    ) -> Result<Json<RunReply>, HandlerError> {
        Ok(Json(self.run(&ctx, input.into_inner()).await?))
    }

    /// A message for when the agent would otherwise stop: Restate queues it behind the running
    /// prompt of this run, then it runs as a prompt.
    #[handler(name = "follow_up")]
    async fn follow_up(
        &self,
        ctx: ObjectContext<'_>,
        input: Json<PromptRequest>,
    ) -> Result<Json<RunReply>, HandlerError> {
        Ok(Json(self.run(&ctx, input.into_inner()).await?))
    }

    /// Queues steering messages, delivered to the running prompt after the tool calls of the
    /// turn in progress (before the model is asked again), or with the next prompt when idle.
    /// Shared: accepted while a prompt runs.
    #[handler(name = "steer")]
    async fn steer(
        &self,
        ctx: SharedObjectContext<'_>,
        input: Json<PromptRequest>,
    ) -> Result<(), HandlerError> {
        ctx.object_client::<RunInboxClient>(ctx.key())
            .steer(input)
            .send();
        Ok(())
    }

    /// Stops the running prompt at its next step (after the model stream or tool call in
    /// progress): the calls left get "not executed" results and the run ends as `aborted`, as
    /// with `Agent::abort`. Does nothing when no prompt runs.
    #[handler(name = "abort")]
    async fn abort(&self, ctx: SharedObjectContext<'_>) -> Result<(), HandlerError> {
        ctx.object_client::<RunInboxClient>(ctx.key())
            .abort()
            .send();
        Ok(())
    }

    /// Approves a call waiting for approval (`{"callId": …}`); a 404 when none of that id waits.
    #[handler(name = "approve")]
    async fn approve(
        &self,
        ctx: SharedObjectContext<'_>,
        answer: Json<ApprovalAnswer>,
    ) -> Result<(), HandlerError> {
        ctx.object_client::<RunInboxClient>(ctx.key())
            .answer(Json((true, answer.into_inner())))
            .call()
            .await?;
        Ok(())
    }

    /// Denies a call waiting for approval (`{"callId": …, "reason": …}`): it gets an error
    /// result with the reason. A 404 when none of that id waits.
    #[handler(name = "deny")]
    async fn deny(
        &self,
        ctx: SharedObjectContext<'_>,
        answer: Json<ApprovalAnswer>,
    ) -> Result<(), HandlerError> {
        ctx.object_client::<RunInboxClient>(ctx.key())
            .answer(Json((false, answer.into_inner())))
            .call()
            .await?;
        Ok(())
    }

    /// The calls waiting for approval.
    #[handler(name = "pending_approvals")]
    async fn pending_approvals(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Vec<PendingApproval>>, HandlerError> {
        Ok(ctx
            .object_client::<RunInboxClient>(ctx.key())
            .pending()
            .call()
            .await?)
    }

    /// The transcript (pi JSON messages); concurrent with a running prompt, it shows the
    /// transcript as the last finished prompt left it.
    #[handler(name = "get_messages")]
    async fn get_messages(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Vec<Message>>, HandlerError> {
        let stored = read_stored(ctx.get::<Json<Vec<Stored>>>(MESSAGES_KEY).await?);
        let mut messages = Vec::with_capacity(stored.len());
        for entry in stored {
            match entry {
                Stored::Message(message) => messages.push(*message),
                Stored::Ref(reference) => {
                    let c: &SharedObjectContext<'_> = &ctx;
                    messages.push(stored_result(
                        c.get(&reference.result_ref).await?,
                        &reference,
                    )?);
                }
            }
        }
        Ok(Json(messages))
    }
}
