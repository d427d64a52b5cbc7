//! Google Gemini (`google-generative-ai`): POST `models/{id}:streamGenerateContent?alt=sse`.

use futures::future::BoxFuture;
use futures::FutureExt;

use crate::options::StreamOptions;
use crate::registry::ApiProvider;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_GOOGLE_GENERATIVE_AI};

/// The provider. Cloning shares the HTTP connection pool.
#[derive(Debug, Clone, Default)]
pub struct GoogleGenerativeAiProvider {}

impl GoogleGenerativeAiProvider {
    /// A provider with its own HTTP client.
    pub fn new() -> Self {
        Self {}
    }
}

impl ApiProvider for GoogleGenerativeAiProvider {
    fn api(&self) -> &str {
        API_GOOGLE_GENERATIVE_AI
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
                    "the google-generative-ai provider is not implemented yet",
                )
                .await;
        }
        .boxed()
    }
}

pub mod models;
