//! Anthropic Messages (`anthropic-messages`): POST `/v1/messages`.

use futures::future::BoxFuture;
use futures::FutureExt;

use crate::options::StreamOptions;
use crate::registry::ApiProvider;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_ANTHROPIC_MESSAGES};

/// The provider. Cloning shares the HTTP connection pool.
#[derive(Debug, Clone, Default)]
pub struct AnthropicMessagesProvider {}

impl AnthropicMessagesProvider {
    /// A provider with its own HTTP client.
    pub fn new() -> Self {
        Self {}
    }
}

impl ApiProvider for AnthropicMessagesProvider {
    fn api(&self) -> &str {
        API_ANTHROPIC_MESSAGES
    }

    fn stream(
        &self,
        model: Model,
        _context: Context,
        _options: StreamOptions,
        sink: EventSink,
    ) -> BoxFuture<'static, ()> {
        async move {
            ReplyBuilder::new(&model, sink)
                .fail(
                    StopReason::Error,
                    "the anthropic-messages provider is not implemented yet",
                )
                .await;
        }
        .boxed()
    }
}

pub mod models;
