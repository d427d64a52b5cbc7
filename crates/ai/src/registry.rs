//! Provider dispatch: each wire API is an [`ApiProvider`]; a [`ProviderRegistry`] picks one by
//! `model.api`. Users add their own providers to a registry of their own.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use futures::FutureExt;

use crate::event::AssistantMessageEvent;
use crate::failure::{Failure, FailureKind};
use crate::options::StreamOptions;
use crate::reply::EventSink;
use crate::stream::AssistantMessageEventStream;
use crate::types::context::Context;
use crate::types::message::AssistantMessage;
use crate::types::model::Model;
use crate::types::wire_api::WireApi;

pub use crate::provider_kit::ApiProvider;

/// Providers by API name.
#[derive(Clone, Default)]
pub struct ProviderRegistry {
    providers: HashMap<WireApi, Arc<dyn ApiProvider>>,
}

impl std::fmt::Debug for ProviderRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut apis: Vec<&str> = self.providers.keys().map(WireApi::as_str).collect();
        apis.sort();
        f.debug_struct("ProviderRegistry")
            .field("apis", &apis)
            .finish()
    }
}

impl ProviderRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry with every built-in provider, sharing one HTTP client (one connection pool).
    pub fn with_builtins() -> Self {
        use crate::providers::anthropic_messages::AnthropicMessagesProvider;
        use crate::providers::google_generative_ai::vertex::GoogleVertexProvider;
        use crate::providers::google_generative_ai::GoogleGenerativeAiProvider;
        use crate::providers::mistral_conversations::MistralConversationsProvider;
        use crate::providers::openai_codex_responses::OpenAiCodexResponsesProvider;
        use crate::providers::openai_completions::OpenAiCompletionsProvider;
        use crate::providers::openai_responses::azure::AzureOpenAiResponsesProvider;
        use crate::providers::openai_responses::OpenAiResponsesProvider;
        let mut registry = Self::new();
        match crate::providers::client::new_client() {
            Ok(client) => {
                registry.register(OpenAiCompletionsProvider::with_client(client.clone()));
                registry.register(OpenAiResponsesProvider::with_client(client.clone()));
                registry.register(AzureOpenAiResponsesProvider::with_client(client.clone()));
                registry.register(OpenAiCodexResponsesProvider::with_client(client.clone()));
                registry.register(MistralConversationsProvider::with_client(client.clone()));
                registry.register(AnthropicMessagesProvider::with_client(client.clone()));
                registry.register(GoogleVertexProvider::with_client(client.clone()));
                #[cfg(feature = "bedrock")]
                registry.register(
                    crate::providers::bedrock_converse_stream::BedrockConverseStreamProvider::with_client(
                        client.clone(),
                    ),
                );
                registry.register(
                    crate::providers::pi_messages::PiMessagesProvider::with_client(client.clone()),
                );
                registry.register(GoogleGenerativeAiProvider::with_client(client));
            }
            // Each provider then reports the same error on every request.
            Err(_) => {
                registry.register(OpenAiCompletionsProvider::new());
                registry.register(OpenAiResponsesProvider::new());
                registry.register(AzureOpenAiResponsesProvider::new());
                registry.register(OpenAiCodexResponsesProvider::new());
                registry.register(MistralConversationsProvider::new());
                registry.register(AnthropicMessagesProvider::new());
                registry.register(GoogleGenerativeAiProvider::new());
                registry.register(GoogleVertexProvider::new());
                registry.register(crate::providers::pi_messages::PiMessagesProvider::new());
                #[cfg(feature = "bedrock")]
                registry.register(
                    crate::providers::bedrock_converse_stream::BedrockConverseStreamProvider::new(),
                );
            }
        }
        #[cfg(not(feature = "bedrock"))]
        registry.register(crate::providers::unavailable::Unavailable {
            api: crate::types::model::API_BEDROCK_CONVERSE_STREAM,
            missing: crate::providers::unavailable::Missing::Feature("bedrock"),
        });
        registry
    }

    /// The shared registry of built-in providers used by [`crate::stream()`].
    pub fn builtins() -> &'static ProviderRegistry {
        static BUILTINS: OnceLock<ProviderRegistry> = OnceLock::new();
        BUILTINS.get_or_init(Self::with_builtins)
    }

    /// Adds (or replaces) the provider for its API.
    pub fn register(&mut self, provider: impl ApiProvider) -> &mut Self {
        self.providers
            .insert(WireApi::from(provider.api()), Arc::new(provider));
        self
    }

    /// The APIs it has a provider for, sorted by name.
    pub fn apis(&self) -> Vec<String> {
        let mut apis: Vec<String> = self
            .providers
            .keys()
            .map(|api| api.as_str().to_string())
            .collect();
        apis.sort();
        apis
    }

    /// The provider for `api`.
    pub fn get(&self, api: &str) -> Option<Arc<dyn ApiProvider>> {
        self.providers.get(api).cloned()
    }

    /// A request on the provider for `model.api`, run as the returned stream is polled (in the
    /// polling task, like any Rust stream). Must be called inside a Tokio runtime; outside one,
    /// and for an unknown API, the stream holds a single `error` event.
    pub fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        let cancel = options.cancel.child_token();
        let (sink, mut stream) =
            AssistantMessageEventStream::driven_channel(Some(cancel.clone().drop_guard()));
        let options = StreamOptions { cancel, ..options };
        let fail_now = |sink: &EventSink, text: String| {
            sink.try_send(error_event(model, Failure::config(text)));
        };
        let Some(provider) = self.get(model.api.as_str()) else {
            fail_now(
                &sink,
                format!("No provider registered for api \"{}\"", model.api),
            );
            return stream;
        };
        if tokio::runtime::Handle::try_current().is_err() {
            fail_now(
                &sink,
                "oxpi-ai streams must be started inside a Tokio runtime".into(),
            );
            return stream;
        }
        let deferring = sink.deferring();
        let cancelled = options.cancel.clone();
        // The provider sees the request view: the prompt and tools replayed from the context's
        // system messages, the conversation without them (pi's rule for APIs that take no
        // system message mid-conversation).
        let context = context.for_request().into_owned();
        let work = provider.stream(model.clone(), context, options, deferring.clone());
        let model = model.clone();
        let delivering = crate::reply::delivering(work, deferring.clone());
        stream.drive(
            async move {
                let outcome = AssertUnwindSafe(delivering).catch_unwind().await;
                deferring.flush().await;
                deferring.flush_terminal().await;
                if !sink.terminal_sent() {
                    let failure = match outcome {
                        // A provider that returned early because the caller cancelled.
                        Ok(()) if cancelled.is_cancelled() => Failure::aborted(),
                        Ok(()) => Failure::new(
                            FailureKind::Other,
                            "provider ended the stream without a done or error event",
                        ),
                        Err(panic) => Failure::new(
                            FailureKind::Other,
                            format!("provider panicked: {}", panic_text(&*panic)),
                        ),
                    };
                    sink.send(error_event(&model, failure)).await;
                }
            }
            .boxed(),
        );
        stream
    }
}

/// A stream of one `error` event with `failure`, for a request refused before it starts.
pub(crate) fn failed(model: &Model, failure: Failure) -> AssistantMessageEventStream {
    let (sink, stream) = AssistantMessageEventStream::driven_channel(None);
    sink.try_send(error_event(model, failure));
    stream
}

fn error_event(model: &Model, failure: Failure) -> AssistantMessageEvent {
    let mut error = AssistantMessage::empty(&model.api, &model.provider, &model.id);
    let reason = failure.stop_reason();
    error.stop_reason = reason;
    error.error_message = Some(failure.text);
    error.failure_kind = Some(failure.kind);
    AssistantMessageEvent::Error {
        reason,
        error: Box::new(error),
    }
}

/// The text of a panic payload.
pub fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Streams a reply from the built-in provider for `model.api`. See [`ProviderRegistry::stream`].
pub fn stream(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessageEventStream {
    ProviderRegistry::builtins().stream(model, context, options)
}

/// Streams a reply and returns the final message (errors are in `stop_reason`/`error_message`).
pub async fn complete(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessage {
    stream(model, context, options).result().await
}
