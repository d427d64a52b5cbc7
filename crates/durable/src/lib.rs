//! oxpi-durable: durable oxpi agent runs on [Restate](https://restate.dev). A run is a Restate
//! virtual object keyed by the run (conversation) id, its state the transcript; each `prompt`
//! runs oxpi-agent-core's own loop, made durable through its two seams: the stream function
//! (each model turn's final message is a journaled step: a replay returns it without a new
//! request) and [`ExecuteToolFn`](oxpi_agent_core::ExecuteToolFn) (each tool call is a
//! journaled step keyed by its call id: a finished call is never executed again).
//!
//! A process that dies mid-run loses nothing: Restate retries the invocation on a live process,
//! the journal answers every finished step, and the run goes on from where it was.
//!
//! # A tool interrupted mid-call
//!
//! A tool call is journaled in two steps: a start marker, then its result. When the process
//! dies after the marker and before the result, the replay finds a started call without a
//! result: the tool may or may not have had its effect. It is run again only if the tool says
//! repeating it is safe ([`Replay::Safe`](oxpi_agent_core::Replay), e.g. a read); otherwise
//! (`Replay::Never`, or no declaration) the call ends with an error result that says its outcome
//! is unknown ([`OUTCOME_UNKNOWN`]), which the model reads like any tool error. Every call still
//! gets exactly one result. Tool calls of a durable run execute one at a time, so the journal's
//! order is the same on every replay.
//!
//! # Bounded steps
//!
//! A tool result larger than [`INLINE_RESULT_BYTES`] is journaled once, in its tool step, and
//! stored once, in a state key of its own ([`result_key`]); the `transcript` step and the
//! transcript's state value ([`MESSAGES_KEY`]) hold a reference `{"resultRef": "result/<index>"}`
//! instead, resolved by `get_messages` and the run's next prompt. A result above
//! [`MAX_RESULT_BYTES`] is truncated before it is journaled (text kept from the start, images
//! and details dropped, [`truncation_notice`] appended), far below Restate's own limit on a
//! message from a service (32 MiB in restate-server 1.7, `worker.invoker.message-size-limit`),
//! which a step would otherwise hit on every retry, holding its run forever.
//!
//! ```no_run
//! # use oxpi_agent_core::oxpi_ai;
//! use oxpi_agent_core::{AgentOptions, Replay};
//! use oxpi_durable::DurableAgent;
//!
//! async fn serve(model: oxpi_ai::Model, tools: Vec<oxpi_agent_core::AgentToolHandle>) {
//!     let agent = DurableAgent::new(move |_run_id| AgentOptions::new(model.clone()).with_tools(tools.clone()));
//!     agent.serve("127.0.0.1:9080".parse().unwrap()).await; // register it with `restate deployments register`
//! }
//! // POST {ingress}/OxpiAgent/<run id>/prompt {"text": "…"}; …/steer, …/abort, …/follow_up, …/get_messages
//! # let _ = Replay::Safe;
//! ```

mod bridge;
mod inbox;
mod object;
mod payload;
pub mod scripted;
pub mod server;

pub use bridge::{NeedsApprovalFn, DENIED_TEXT, OUTCOME_UNKNOWN};
pub use inbox::{ApprovalAnswer, PendingApproval, RunInbox};
pub use object::{DurableAgent, PromptRequest, RunReply, StepEvent, MESSAGES_KEY};
pub use payload::{
    result_key, truncation_notice, INLINE_RESULT_BYTES, MAX_RESULT_BYTES, RESULT_KEY_PREFIX,
};
/// The Restate SDK this crate is built on (to bind more services to the same endpoint).
pub use restate_sdk;
