//! OpenAI Chat Completions (`openai-completions`) and compatible servers.

use futures::future::BoxFuture;
use futures::FutureExt;

use crate::options::StreamOptions;
use crate::registry::ApiProvider;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_OPENAI_COMPLETIONS};

/// The Chat Completions provider.
#[derive(Debug, Clone, Default)]
pub struct OpenAiCompletionsProvider {}

impl OpenAiCompletionsProvider {
    /// A provider with its own HTTP client.
    pub fn new() -> Self {
        Self {}
    }
}

impl ApiProvider for OpenAiCompletionsProvider {
    fn api(&self) -> &str {
        API_OPENAI_COMPLETIONS
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
                .fail(StopReason::Error, "not yet implemented")
                .await;
        }
        .boxed()
    }
}
