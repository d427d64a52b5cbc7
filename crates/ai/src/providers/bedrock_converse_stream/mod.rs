//! Amazon Bedrock (`bedrock-converse-stream`): the ConverseStream API,
//! `POST {endpoint}/model/{modelId}/converse-stream`, answered with AWS's binary event stream
//! (`application/vnd.amazon.eventstream`). Behind oxpi-ai's feature `bedrock` (off by
//! default): signing with `aws-sigv4`, credentials from `aws-config`'s default chain, frames
//! decoded with `aws-smithy-eventstream`.
//!
//! - `auth`: region, endpoint, API key or SigV4 credentials (pi's resolution rules).
//! - `convert`: context → request body.
//! - `frame`: the body cut into frames, each prelude checked as it arrives.
//! - `decode`: frames → `stream` (the shared transport drives it).
//! - `wire`: event payloads.
//! - `stream`: event-stream messages → reply events.

pub(crate) mod auth;
pub(crate) mod convert;
pub(crate) mod decode;
pub(crate) mod frame;
pub(crate) mod stream;
pub(crate) mod wire;

use std::sync::Arc;
use std::time::SystemTime;

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use futures::future::BoxFuture;
use futures::FutureExt;
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};

use self::decode::BedrockDecoder;
use super::transport::{drive_frames, PrepareError, Prepared, Signer};
use crate::failure::Failure;
use crate::options::{ApiKey, StreamOptions};
use crate::provider_kit::ApiProvider;
use crate::providers::auth::env_value;
use crate::providers::client::new_client;
use crate::providers::headers::request_headers;
use crate::reply::EventSink;
use crate::types::context::Context;
use crate::types::model::{Model, API_BEDROCK_CONVERSE_STREAM};

/// The content type of ConverseStream's body.
pub(crate) const EVENT_STREAM_CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// The provider. Cloning shares the HTTP connection pool and the credentials.
#[derive(Clone, Debug)]
pub struct BedrockConverseStreamProvider {
    client: Result<reqwest::Client, String>,
    region: Option<String>,
    /// The credentials provider: the one given, or AWS's default chain built on first use and
    /// kept (its cache then spares a fetch per request).
    credentials: Arc<tokio::sync::OnceCell<SharedCredentialsProvider>>,
}

impl Default for BedrockConverseStreamProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl BedrockConverseStreamProvider {
    /// A provider with its own HTTP client; region and credentials from the environment.
    pub fn new() -> Self {
        Self {
            client: new_client(),
            region: None,
            credentials: Arc::new(tokio::sync::OnceCell::new()),
        }
    }

    /// A provider using the given client. Build it from
    /// [`client_builder`](crate::providers::client::client_builder), so redirects stay on the
    /// request's origin (a client that follows one elsewhere sends the credentials there).
    pub fn with_client(client: reqwest::Client) -> Self {
        Self {
            client: Ok(client),
            ..Self::new()
        }
    }

    /// The AWS region (instead of `AWS_REGION`).
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// Credentials from this provider instead of AWS's default chain (static keys, an assumed
    /// role, …).
    pub fn with_credentials_provider(
        mut self,
        provider: impl ProvideCredentials + 'static,
    ) -> Self {
        let cell = tokio::sync::OnceCell::new();
        let _ = cell.set(SharedCredentialsProvider::new(provider));
        self.credentials = Arc::new(cell);
        self
    }
}

impl ApiProvider for BedrockConverseStreamProvider {
    fn api(&self) -> &str {
        API_BEDROCK_CONVERSE_STREAM
    }

    fn stream(
        &self,
        model: Model,
        context: Context,
        options: StreamOptions,
        sink: EventSink,
    ) -> BoxFuture<'static, ()> {
        run(self.clone(), model, context, options, sink).boxed()
    }
}

/// How a request is authenticated.
enum Auth {
    Bearer(ApiKey),
    SigV4 {
        credentials: aws_credential_types::Credentials,
        region: String,
    },
    None,
}

async fn run(
    provider: BedrockConverseStreamProvider,
    model: Model,
    context: Context,
    options: StreamOptions,
    sink: EventSink,
) {
    let prepared = prepare(&provider, &model, &context, &options)
        .await
        .map(|p| (p, ()));
    drop(context);
    drive_frames(
        &model,
        &options,
        sink,
        provider.client.clone(),
        prepared,
        EVENT_STREAM_CONTENT_TYPE,
        |out, ()| BedrockDecoder::new(out, &model),
    )
    .await;
}

/// The request: the body, the endpoint and region (pi's rules), then the authentication: a
/// Bedrock API key as a bearer token, else SigV4 with credentials from the provider (fetched:
/// the one step that is not pure), signed afresh for each attempt.
async fn prepare(
    provider: &BedrockConverseStreamProvider,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Prepared, PrepareError> {
    let error = Failure::config;
    let request = convert::build_request(model, context, options).map_err(error)?;
    let body = serde_json::to_vec(&request)
        .map_err(|e| error(format!("could not encode the request: {e}")))?;
    drop(request);
    let configured = provider
        .region
        .clone()
        .or_else(|| env_value("AWS_REGION"))
        .or_else(|| env_value("AWS_DEFAULT_REGION"));
    let target = auth::resolve_target(
        &model.base_url,
        configured.as_deref(),
        env_value("AWS_PROFILE").is_some(),
    );
    let region = match target.region.clone() {
        Some(region) => region,
        None => auth::profile_region()
            .await
            .unwrap_or_else(|| "us-east-1".into()),
    };
    let model_id = crate::providers::url::segment(&model.id, "model id").map_err(error)?;
    let url = format!(
        "{}/model/{model_id}/converse-stream",
        target.base_url(&region)
    );

    let skip_auth = env_value("AWS_BEDROCK_SKIP_AUTH").as_deref() == Some("1");
    let bearer = options
        .api_key
        .clone()
        .or_else(|| env_value("AWS_BEARER_TOKEN_BEDROCK").map(ApiKey::new));
    let auth = match (skip_auth, bearer) {
        (true, _) => Auth::None,
        (false, Some(key)) => Auth::Bearer(key),
        (false, None) => {
            let chain = provider
                .credentials
                .get_or_init(|| auth::default_credentials(Some(region.clone())))
                .await
                .clone();
            let credentials = tokio::select! {
                biased;
                _ = options.cancel.cancelled() => {
                    return Err(Failure::aborted());
                }
                fetched = auth::credentials(&chain) => fetched.map_err(Failure::auth)?,
            };
            Auth::SigV4 {
                credentials,
                region: region.clone(),
            }
        }
    };
    let (secret, bearer_header, signer) = match auth {
        Auth::Bearer(key) => {
            let header = (AUTHORIZATION, format!("Bearer {}", key.expose()));
            (Some(key), Some(header), None)
        }
        Auth::SigV4 {
            credentials,
            region,
        } => {
            let secret = ApiKey::new(credentials.secret_access_key());
            (Some(secret), None, Some(sigv4_signer(credentials, region)))
        }
        Auth::None => (None, None, None),
    };
    let headers = request_headers(model, options, bearer_header).map_err(error)?;
    let mut prepared = Prepared::new(url, headers, body, secret);
    prepared.signer = signer;
    Ok(prepared)
}

/// Signs each attempt with SigV4 (a signature is valid for minutes), over the final URL and
/// body; the secret headers are marked sensitive.
fn sigv4_signer(credentials: aws_credential_types::Credentials, region: String) -> Signer {
    Arc::new(move |headers, url, body| {
        let signed = auth::sigv4_headers(
            &credentials,
            &region,
            url,
            &[("content-type", "application/json")],
            body,
            SystemTime::now(),
        )?;
        for (name, value) in signed {
            let (Ok(name), Ok(mut value)) = (
                HeaderName::try_from(name.as_str()),
                HeaderValue::try_from(value.as_str()),
            ) else {
                return Err("could not sign the Bedrock request: a header is not valid".into());
            };
            value.set_sensitive(name == AUTHORIZATION || name.as_str() == "x-amz-security-token");
            headers.insert(name, value);
        }
        Ok(())
    })
}
