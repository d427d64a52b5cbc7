//! A deterministic provider for tests, modelled on pi-ai's faux provider: queue scripted replies
//! (text, thinking, tool calls, a chosen stop reason, or a closure over the request's context);
//! each streams as real events in small chunks. An empty queue ends in an error event
//! `No more faux responses queued`.
//!
//! ```
//! use oxpi_ai::faux::{FauxProvider, FauxReply};
//! use oxpi_ai::{Context, ProviderRegistry, StopReason, StreamOptions};
//!
//! # tokio_test_block_on(async {
//! let faux = FauxProvider::new();
//! faux.push(FauxReply::text("hello"));
//! let mut registry = ProviderRegistry::new();
//! registry.register(faux.clone());
//! let reply = registry.stream(&faux.model(), &Context::default(), StreamOptions::default()).result().await;
//! assert_eq!(reply.text(), "hello");
//! assert_eq!(reply.stop_reason, StopReason::Stop);
//! assert_eq!(faux.call_count(), 1);
//! # });
//! # fn tokio_test_block_on(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
//! # }
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;

use crate::failure::{Failure, FailureKind};
use crate::options::StreamOptions;
use crate::provider_kit::ApiProvider;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_FAUX};
use crate::types::usage::Usage;
use crate::types::wire_api::WireApi;

/// One block of a scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum FauxBlock {
    /// Text.
    Text(String),
    /// Thinking.
    Thinking(String),
    /// A tool call; `arguments` is streamed as its JSON text (`raw` as given when set).
    ToolCall {
        /// Id; generated when `None`.
        id: Option<String>,
        /// Tool name.
        name: String,
        /// Raw argument text to stream, e.g. `{"path":"a.txt"}` or something malformed.
        raw_arguments: String,
    },
}

/// A scripted reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FauxReply {
    /// Blocks in order.
    pub blocks: Vec<FauxBlock>,
    /// Stop reason; `toolUse` when there are tool calls, else `stop`, when `None`.
    pub stop_reason: Option<StopReason>,
    /// When set, the reply ends with an `error` event carrying this message after its blocks.
    pub error: Option<String>,
    /// Usage reported.
    pub usage: Usage,
}

impl FauxReply {
    /// An empty reply.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reply with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    /// A reply with one tool call.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::new().with_tool_call(name, arguments)
    }

    /// A reply that fails with `message` after its blocks.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            error: Some(message.into()),
            ..Self::default()
        }
    }

    /// Adds a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(FauxBlock::Text(text.into()));
        self
    }

    /// Adds a thinking block.
    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.blocks.push(FauxBlock::Thinking(thinking.into()));
        self
    }

    /// Adds a tool call with generated id.
    pub fn with_tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.with_raw_tool_call(None, name, arguments.to_string())
    }

    /// Adds a tool call with a given id and raw (possibly invalid) argument text.
    pub fn with_raw_tool_call(
        mut self,
        id: Option<String>,
        name: impl Into<String>,
        raw_arguments: impl Into<String>,
    ) -> Self {
        self.blocks.push(FauxBlock::ToolCall {
            id,
            name: name.into(),
            raw_arguments: raw_arguments.into(),
        });
        self
    }

    /// Sets the stop reason.
    pub fn with_stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }
}

type ReplyFn = Box<dyn FnOnce(&Context) -> FauxReply + Send>;

enum Queued {
    Reply(FauxReply),
    Dynamic(ReplyFn),
}

struct FauxState {
    queue: VecDeque<Queued>,
    requests: Vec<Seen>,
    next_id: u64,
}

/// A request as recorded: roles one byte each (an index into [`ROLES`]). A long conversation is
/// recorded at every turn, so this is what keeps a turn's cost from growing with the history
/// (it was 16 bytes per message per turn: 64 MB after 2,000 turns).
struct Seen {
    system_prompt: Option<String>,
    roles: Vec<u8>,
    tools: Vec<String>,
}

const ROLES: [&str; 4] = ["user", "assistant", "toolResult", "system"];

impl Seen {
    fn of(context: &Context) -> Self {
        Self {
            system_prompt: context.system_prompt.clone(),
            roles: context
                .messages
                .iter()
                .filter_map(|m| match m {
                    crate::Message::System(_) => Some(3),
                    crate::Message::User(_) => Some(0),
                    crate::Message::Assistant(_) => Some(1),
                    crate::Message::ToolResult(_) => Some(2),
                    // Never sent (`Context::for_request` drops them), so never seen.
                    crate::Message::Custom(_) => None,
                })
                .collect(),
            tools: context.tools.iter().map(|t| t.name.clone()).collect(),
        }
    }

    fn summary(&self) -> FauxRequest {
        FauxRequest {
            system_prompt: self.system_prompt.clone(),
            roles: self.roles.iter().map(|&r| ROLES[usize::from(r)]).collect(),
            tools: self.tools.clone(),
        }
    }
}

/// What the faux provider saw of one request. (It keeps a summary, not the context, so that it
/// never pins the caller's shared history.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FauxRequest {
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// The role of each message, in order (`user`, `assistant`, `toolResult`).
    pub roles: Vec<&'static str>,
    /// Names of the tools offered.
    pub tools: Vec<String>,
}

/// The faux provider. Clones share one queue, so keep a clone to script it after registering.
#[derive(Clone)]
pub struct FauxProvider {
    state: Arc<Mutex<FauxState>>,
    chunk_chars: usize,
    chunk_delay: Option<Duration>,
}

impl std::fmt::Debug for FauxProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FauxProvider")
            .field("pending", &self.pending())
            .field("call_count", &self.call_count())
            .finish()
    }
}

impl Default for FauxProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl FauxProvider {
    /// A provider with an empty queue streaming 4 characters per delta.
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(FauxState {
                queue: VecDeque::new(),
                requests: Vec::new(),
                next_id: 0,
            })),
            chunk_chars: 4,
            chunk_delay: None,
        }
    }

    /// Characters per delta event (at least 1).
    pub fn with_chunk_chars(mut self, chars: usize) -> Self {
        self.chunk_chars = chars.max(1);
        self
    }

    /// A pause before each delta, to give tests time to act mid-stream.
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = Some(delay);
        self
    }

    /// A model served by this provider (api `faux`).
    pub fn model(&self) -> Model {
        let mut model = Model::openai_compatible("http://faux.invalid", "faux-model");
        model.api = WireApi::Faux;
        model.provider = "faux".to_string();
        model.name = "Faux".to_string();
        model
    }

    fn lock(&self) -> MutexGuard<'_, FauxState> {
        // A panic while holding the lock leaves plain data; keep going with it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues a scripted reply.
    pub fn push(&self, reply: FauxReply) -> &Self {
        self.lock().queue.push_back(Queued::Reply(reply));
        self
    }

    /// Queues a reply computed from the request's context when it arrives.
    pub fn push_fn(&self, reply: impl FnOnce(&Context) -> FauxReply + Send + 'static) -> &Self {
        self.lock()
            .queue
            .push_back(Queued::Dynamic(Box::new(reply)));
        self
    }

    /// Replies still queued.
    pub fn pending(&self) -> usize {
        self.lock().queue.len()
    }

    /// Requests received so far.
    pub fn call_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// A summary of every request received, in order. Use [`push_fn`](Self::push_fn) to see a
    /// request's full context.
    pub fn requests(&self) -> Vec<FauxRequest> {
        self.lock().requests.iter().map(Seen::summary).collect()
    }

    async fn run(self, model: Model, context: Context, options: StreamOptions, sink: EventSink) {
        let queued = {
            let mut state = self.lock();
            state.requests.push(Seen::of(&context));
            state.queue.pop_front()
        };
        let mut out = ReplyBuilder::new(&model, sink);
        let reply = match queued {
            Some(Queued::Reply(r)) => r,
            Some(Queued::Dynamic(f)) => f(&context),
            None => {
                out.fail_sending(Failure::config("No more faux responses queued"))
                    .await;
                return;
            }
        };
        drop(context);
        out.start().await;
        let has_tool_calls = reply
            .blocks
            .iter()
            .any(|b| matches!(b, FauxBlock::ToolCall { .. }));
        for block in &reply.blocks {
            let (kind, text) = match block {
                FauxBlock::Text(t) => (0, t),
                FauxBlock::Thinking(t) => (1, t),
                FauxBlock::ToolCall {
                    id,
                    name,
                    raw_arguments,
                } => {
                    let id = id.clone().unwrap_or_else(|| {
                        let mut state = self.lock();
                        state.next_id += 1;
                        format!("faux_call_{}", state.next_id)
                    });
                    out.close_open().await;
                    out.tool_call_start(id, name.clone()).await;
                    (2, raw_arguments)
                }
            };
            if kind != 2 {
                out.close_open().await;
            }
            let chars: Vec<char> = text.chars().collect();
            for chunk in chars.chunks(self.chunk_chars) {
                if let Some(delay) = self.chunk_delay {
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = options.cancel.cancelled() => {}
                    }
                } else {
                    tokio::task::yield_now().await;
                }
                if options.cancel.is_cancelled() {
                    out.fail_sending(Failure::aborted()).await;
                    return;
                }
                let chunk: String = chunk.iter().collect();
                match kind {
                    0 => out.text(&chunk).await,
                    1 => out.thinking(&chunk).await,
                    _ => out.tool_call_delta(&chunk).await,
                }
            }
        }
        if options.cancel.is_cancelled() {
            out.fail_sending(Failure::aborted()).await;
            return;
        }
        let mut usage = reply.usage;
        model.calculate_cost(&mut usage);
        // pi's faux provider prices nothing, so its cost has no `totalFromProvider`.
        usage.cost.total_from_provider = reply.usage.cost.total_from_provider;
        out.set_usage(usage);
        if let Some(error) = reply.error {
            out.fail_sending(Failure::provider(error)).await;
            return;
        }
        let reason = reply.stop_reason.unwrap_or(if has_tool_calls {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        });
        match reason {
            StopReason::Error | StopReason::Aborted => {
                let kind = if reason == StopReason::Aborted {
                    FailureKind::Aborted
                } else {
                    FailureKind::Provider { retryable: false }
                };
                out.fail_sending(Failure::new(kind, "faux reply scripted to fail"))
                    .await;
            }
            _ => {
                out.finish_sending(reason).await;
            }
        }
    }
}

impl ApiProvider for FauxProvider {
    fn api(&self) -> &str {
        API_FAUX
    }

    fn stream(
        &self,
        model: Model,
        context: Context,
        options: StreamOptions,
        sink: EventSink,
    ) -> BoxFuture<'static, ()> {
        self.clone().run(model, context, options, sink).boxed()
    }
}
