//! OpenAI Responses (`openai-responses`): POST `/v1/responses`; also xAI's Responses endpoint.

use futures::future::BoxFuture;
use futures::FutureExt;

use crate::options::StreamOptions;
use crate::registry::ApiProvider;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_OPENAI_RESPONSES};

/// The provider. Cloning shares the HTTP connection pool.
#[derive(Debug, Clone, Default)]
pub struct OpenAiResponsesProvider {}

impl OpenAiResponsesProvider {
    /// A provider with its own HTTP client.
    pub fn new() -> Self {
        Self {}
    }
}

impl ApiProvider for OpenAiResponsesProvider {
    fn api(&self) -> &str {
        API_OPENAI_RESPONSES
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
                    "the openai-responses provider is not implemented yet",
                )
                .await;
        }
        .boxed()
    }
}

pub mod models;
