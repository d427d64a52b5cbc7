//! [`OAuthApi`]: a wire API's provider with a stored login in front of it. Each request first
//! takes the stored credential (refreshed under the lock when it expires within five minutes),
//! turns it into request auth (pi's `toAuth`: the key, Copilot's base URL), then runs the wire
//! API. A 401 before any content refreshes the token (pi's refresh after an auth failure)
//! and asks once more.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;

use super::stored::current_credential;
use super::{to_auth, OAuthConfig};
use crate::collection::CredentialStore;
use crate::event::AssistantMessageEvent;
use crate::failure::Failure;
use crate::options::{ApiKey, StreamOptions};
use crate::provider_kit::ApiProvider;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::model::Model;

/// A wire API's provider used with a stored login.
pub(crate) struct OAuthApi {
    pub(crate) api: String,
    pub(crate) inner: Arc<dyn ApiProvider>,
    pub(crate) store: Arc<dyn CredentialStore>,
    pub(crate) config: OAuthConfig,
}

impl ApiProvider for OAuthApi {
    fn api(&self) -> &str {
        &self.api
    }

    fn stream(
        &self,
        model: Model,
        context: Context,
        options: StreamOptions,
        sink: EventSink,
    ) -> BoxFuture<'static, ()> {
        let inner = self.inner.clone();
        let store = self.store.clone();
        let config = self.config.clone();
        async move {
            let mut failed = None;
            for attempt in 0..2 {
                let credential =
                    match current_credential(store.clone(), config.clone(), failed.take()).await {
                        Ok(credential) => credential,
                        Err(e) => {
                            ReplyBuilder::new(&model, sink)
                                .fail(Failure::auth(e.to_string()))
                                .await;
                            return;
                        }
                    };
                let auth = to_auth(config.kind, &credential);
                let mut model = model.clone();
                if let Some(base_url) = config.api_base_url.clone().or(auth.base_url) {
                    model.base_url = base_url;
                }
                let options = StreamOptions {
                    api_key: Some(ApiKey::new(auth.api_key.clone())),
                    ..options.clone()
                };
                let first = attempt == 0;
                match forward(inner.clone(), model, context.clone(), options, &sink, first).await {
                    Outcome::Forwarded => return,
                    // The server refused the token before any content: refresh it (under the
                    // lock, unless another request already did) and ask once more.
                    Outcome::Unauthorized => failed = Some(credential.access),
                }
            }
        }
        .boxed()
    }
}

enum Outcome {
    Forwarded,
    Unauthorized,
}

/// Runs the wire API and hands its events to `sink`; when `may_retry`, the events are held
/// until content arrives, and a stream that ends with a 401 before any is not forwarded.
async fn forward(
    inner: Arc<dyn ApiProvider>,
    model: Model,
    context: Context,
    options: StreamOptions,
    sink: &EventSink,
    may_retry: bool,
) -> Outcome {
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let run = tokio::spawn(inner.stream(model, context, options, EventSink::new(tx)));
    let mut held: Vec<AssistantMessageEvent> = Vec::new();
    let mut holding = may_retry;
    while let Some(batch) = rx.recv().await {
        for event in batch {
            if holding {
                let unauthorized = matches!(&event, AssistantMessageEvent::Error { error, .. }
                    if error.error_message.as_deref().is_some_and(|m| m.starts_with("401")));
                if unauthorized {
                    run.abort();
                    return Outcome::Unauthorized;
                }
                let start = matches!(event, AssistantMessageEvent::Start { .. });
                held.push(event);
                if start {
                    continue;
                }
                holding = false;
                for event in held.drain(..) {
                    sink.send(event).await;
                }
                continue;
            }
            sink.send(event).await;
        }
    }
    for event in held {
        sink.send(event).await;
    }
    let _ = run.await;
    Outcome::Forwarded
}
