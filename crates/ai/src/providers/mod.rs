//! Wire APIs. Each provider lives in its own folder: `prepare` (context and options → URL,
//! headers, body; pure), `wire` (serde types), `decode` (wire events → reply events), driven by
//! the shared `transport` (retries, hooks, idle timer, deadline, cancel, redaction in one
//! place). What they share, by job: `auth` (key variables, auth headers), `url` (base URLs,
//! encoded path segments), `headers`, [`client`] (the HTTP client and its redirect policy),
//! `error_text` (HTTP error texts). `envelope` lets a provider read a chunk that repeats the
//! previous one's envelope by its one new string; `text` is a JSON string borrowed from the
//! chunk when it can be.

/// Defines an SSE provider that holds only its HTTP client: the struct (its doc given), `new`,
/// `with_client`, `Default`, and the [`ApiProvider`](crate::provider_kit::ApiProvider) impl whose
/// `stream` runs `$prepare(&model, &context, &options)` and hands the prepared request to
/// [`transport::drive_sse`] with the decoder `$decoder(out, seed, &model)`.
macro_rules! http_provider {
    ($(#[$doc:meta])* $name:ident, $api:expr, $prepare:expr, $decoder:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            client: Result<reqwest::Client, String>,
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl $name {
            /// A provider with its own HTTP client.
            pub fn new() -> Self {
                Self {
                    client: $crate::providers::client::new_client(),
                }
            }

            /// A provider using the given client (proxies, custom TLS, …). Build it from
            /// [`client_builder`](crate::providers::client::client_builder), so redirects stay on
            /// the request's origin: a client that follows one elsewhere sends the key there
            /// before oxpi can refuse the answer.
            pub fn with_client(client: reqwest::Client) -> Self {
                Self { client: Ok(client) }
            }
        }

        impl $crate::provider_kit::ApiProvider for $name {
            fn api(&self) -> &str {
                $api
            }

            fn stream(
                &self,
                model: $crate::types::model::Model,
                context: $crate::types::context::Context,
                options: $crate::options::StreamOptions,
                sink: $crate::reply::EventSink,
            ) -> futures::future::BoxFuture<'static, ()> {
                let client = self.client.clone();
                futures::FutureExt::boxed(async move {
                    let prepared = $prepare(&model, &context, &options);
                    drop(context);
                    $crate::providers::transport::drive_sse(
                        &model,
                        &options,
                        sink,
                        client,
                        prepared,
                        |out, seed| $decoder(out, seed, &model),
                    )
                    .await;
                })
            }
        }
    };
}

pub mod anthropic_messages;
pub mod auth;
#[cfg(feature = "bedrock")]
pub mod bedrock_converse_stream;
pub mod client;
pub(crate) mod envelope;
pub(crate) mod error_text;
pub mod google_generative_ai;
pub(crate) mod headers;
pub mod mistral_conversations;
pub mod openai_codex_responses;
pub mod openai_completions;
pub mod openai_responses;
pub mod pi_messages;
pub(crate) mod shared;
pub(crate) mod text;
pub(crate) mod transport;
// Only a build without Bedrock has an API it cannot serve.
#[cfg(not(feature = "bedrock"))]
pub(crate) mod unavailable;
pub(crate) mod url;
