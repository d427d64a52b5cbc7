//! Stand-ins for providers oxpi cannot serve: one left out of this build (a cargo feature is
//! off). Every request fails at once with a text saying which.

use futures::future::BoxFuture;
use futures::FutureExt;

use crate::failure::Failure;
use crate::options::StreamOptions;
use crate::provider_kit::ApiProvider;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::model::Model;

/// What the API needs that this build or oxpi does not have.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "bedrock", allow(dead_code))]
pub enum Missing {
    /// A cargo feature of oxpi-ai that provides it ("bedrock"): "… needs oxpi-ai's feature …".
    Feature(&'static str),
}

/// Answers every request for `api` with why it cannot be served.
#[derive(Debug, Clone)]
pub struct Unavailable {
    /// The wire API.
    pub api: &'static str,
    /// What it needs.
    pub missing: Missing,
}

impl Unavailable {
    /// The failure every request gets.
    fn failure(&self) -> Failure {
        match self.missing {
            Missing::Feature(feature) => Failure::config(format!(
                "{} needs oxpi-ai's feature \"{feature}\", which this build does not have",
                self.api
            )),
        }
    }
}

impl ApiProvider for Unavailable {
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
        let failure = self.failure();
        async move {
            ReplyBuilder::new(&model, sink).fail(failure).await;
        }
        .boxed()
    }
}
