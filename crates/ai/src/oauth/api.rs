//! [`OAuthApi`]: a wire API's provider with a stored login in front of it. Each request first
//! takes the stored credential (refreshed under the lock when it expires within five minutes),
//! turns it into request auth (pi's `toAuth`: the key, Copilot's base URL), then runs the wire
//! API. (A 401 does not yet refresh and ask again: the token is refreshed by its expiry.)

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;

use super::stored::current_credential;
use super::{to_auth, OAuthConfig};
use crate::collection::CredentialStore;
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
            let credential = match current_credential(store.clone(), config.clone(), None).await {
                Ok(credential) => credential,
                Err(e) => {
                    ReplyBuilder::new(&model, sink)
                        .fail(Failure::auth(e.to_string()))
                        .await;
                    return;
                }
            };
            let auth = to_auth(config.kind, &credential);
            let mut model = model;
            if let Some(base_url) = auth.base_url {
                model.base_url = base_url;
            }
            let options = StreamOptions {
                api_key: Some(ApiKey::new(auth.api_key)),
                ..options
            };
            inner.stream(model, context, options, sink).await;
        }
        .boxed()
    }
}
