//! Stand-ins for providers oxpi cannot serve: one left out of this build (a cargo feature is
//! off). Every request fails at once with a text saying which.

use futures::future::BoxFuture;
use futures::FutureExt;

use crate::options::StreamOptions;
use crate::provider_kit::ApiProvider;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::model::Model;

/// Answers every request for `api` with "oxpi-ai was built without its feature …".
#[derive(Debug, Clone)]
#[cfg_attr(feature = "bedrock", allow(dead_code))]
pub struct FeatureMissing {
    /// The wire API.
    pub api: &'static str,
    /// The cargo feature of oxpi-ai that provides it.
    pub feature: &'static str,
}

impl ApiProvider for FeatureMissing {
    fn api(&self) -> &str {
        self.api
    }

    fn stream(
        &self,
        model: Model,
        _context: Context,
        _options: StreamOptions,
        sink: EventSink,
    ) -> BoxFuture<'static, ()> {
        let text = format!(
            "{} needs oxpi-ai's feature \"{}\", which this build does not have",
            self.api, self.feature
        );
        async move {
            ReplyBuilder::new(&model, sink)
                .fail(crate::failure::Failure::config(text))
                .await;
        }
        .boxed()
    }
}
