//! What a provider of one's own needs, in one place: the [`ApiProvider`] trait it implements
//! (register it in a [`ProviderRegistry`](crate::ProviderRegistry)), the [`ReplyBuilder`] it
//! writes the reply through (blocks, tool calls, exactly one terminal event), the
//! [`EventSink`] it is given, and [`redact`] for texts that may hold its key. The built-in
//! providers implement the same trait.
//!
//! ```
//! use futures::future::BoxFuture;
//! use oxpi_ai::provider_kit::{ApiProvider, EventSink, ReplyBuilder};
//! use oxpi_ai::{Context, Model, StopReason, StreamOptions};
//!
//! struct Echo;
//!
//! impl ApiProvider for Echo {
//!     fn api(&self) -> &str {
//!         "echo"
//!     }
//!
//!     fn stream(&self, model: Model, _: Context, _: StreamOptions, sink: EventSink) -> BoxFuture<'static, ()> {
//!         Box::pin(async move {
//!             let mut out = ReplyBuilder::new(&model, sink);
//!             out.text("hello").await;
//!             out.finish(StopReason::Stop).await;
//!         })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let mut registry = oxpi_ai::ProviderRegistry::new();
//! registry.register(Echo);
//! let mut model = Model::openai_compatible("", "echo-1");
//! model.api = "echo".into();
//! let reply = registry.stream(&model, &Context::new("Be brief."), StreamOptions::default()).result().await;
//! assert_eq!(reply.text(), "hello");
//! # }
//! ```

use futures::future::BoxFuture;

pub use crate::failure::{is_retryable_status, Failure, FailureKind};
use crate::options::StreamOptions;
pub use crate::reply::{EventSink, ReplyBuilder};
pub use crate::secret::redact;
use crate::types::context::Context;
use crate::types::model::Model;

/// One wire API (e.g. `openai-completions`).
///
/// `stream` runs the whole request, sending events to `sink`. It should end with exactly one
/// terminal event ([`ReplyBuilder::finish`], or [`ReplyBuilder::fail`] with a [`Failure`] of
/// the right kind); if it returns (or panics) without one, the registry sends an `error` event
/// (`aborted` when the caller had cancelled). It must watch `options.cancel` and end with
/// [`Failure::aborted`] when it fires. The kit has no transport: a provider of its own makes
/// its HTTP request itself and honours `timeout`, `idle_timeout`, `deadline` and the hooks of
/// [`StreamOptions`] as far as it can.
pub trait ApiProvider: Send + Sync + 'static {
    /// The `model.api` value this provider serves.
    fn api(&self) -> &str;

    /// Runs one request.
    fn stream(
        &self,
        model: Model,
        context: Context,
        options: StreamOptions,
        sink: EventSink,
    ) -> BoxFuture<'static, ()>;
}
