//! Amazon Bedrock (`bedrock-converse-stream`): the ConverseStream API,
//! `POST {endpoint}/model/{modelId}/converse-stream`, answered with AWS's binary event stream
//! (`application/vnd.amazon.eventstream`). Behind oxpi-ai's feature `bedrock` (off by
//! default): signing with `aws-sigv4`, credentials from `aws-config`'s default chain, frames
//! decoded with `aws-smithy-eventstream`.
//!
//! - [`auth`]: region, endpoint, API key or SigV4 credentials (pi's resolution rules).
//! - [`convert`]: context → request body.
//! - [`frame`]: the body cut into frames, each prelude checked as it arrives.
//! - [`wire`]: event payloads.
//! - [`stream`]: event-stream messages → reply events.

pub mod auth;
pub mod convert;
pub mod frame;
pub mod stream;
pub mod wire;

use std::sync::Arc;
use std::time::SystemTime;

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use futures::future::BoxFuture;
use futures::FutureExt;
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};

use self::stream::{EventProcessor, Flow};
use super::http::{
    encode_body, env_value, new_client, next_bytes, open_byte_stream, open_error_parts,
    request_headers, ByteStep, OpenError, ABORTED_TEXT,
};
use crate::options::{ApiKey, StreamOptions};
use crate::registry::ApiProvider;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_BEDROCK_CONVERSE_STREAM};

/// The content type of ConverseStream's body.
pub const EVENT_STREAM_CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

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

    /// A provider using the given client.
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
    let mut out = ReplyBuilder::new(&model, sink);
    let client = match provider.client.clone() {
        Ok(client) => client,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let request = match convert::build_request(&model, &context, &options) {
        Ok(request) => request,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    drop(context);
    let body = match encode_body(&request, &model, &options).await {
        Ok(body) => body,
        Err(e) => {
            let (reason, text) = open_error_parts(e);
            out.fail(reason, text).await;
            return;
        }
    };
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
    let model_id = match crate::providers::url_path::segment(&model.id, "model id") {
        Ok(id) => id,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
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
            let fetched = tokio::select! {
                biased;
                _ = options.cancel.cancelled() => {
                    out.fail(StopReason::Aborted, ABORTED_TEXT).await;
                    return;
                }
                fetched = auth::credentials(&chain) => fetched,
            };
            match fetched {
                Ok(credentials) => Auth::SigV4 {
                    credentials,
                    region: region.clone(),
                },
                Err(text) => {
                    out.fail(StopReason::Error, text).await;
                    return;
                }
            }
        }
    };
    let secret = match &auth {
        Auth::Bearer(key) => Some(key.clone()),
        Auth::SigV4 { credentials, .. } => Some(ApiKey::new(credentials.secret_access_key())),
        Auth::None => None,
    };
    out.set_secret(secret.clone());
    let bearer_header = match &auth {
        Auth::Bearer(key) => Some((AUTHORIZATION, format!("Bearer {}", key.expose()))),
        _ => None,
    };
    let headers = match request_headers(&model, &options, bearer_header) {
        Ok(headers) => headers,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    // SigV4 is computed per attempt (a signature is valid for minutes); the first one is made
    // here so a signing error fails the request before anything is sent.
    let sign = |headers: &mut reqwest::header::HeaderMap| -> Result<(), String> {
        let Auth::SigV4 {
            credentials,
            region,
        } = &auth
        else {
            return Ok(());
        };
        let signed = auth::sigv4_headers(
            credentials,
            region,
            &url,
            &[("content-type", "application/json")],
            &body,
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
    };
    if let Err(e) = sign(&mut headers.clone()) {
        out.fail(StopReason::Error, e).await;
        return;
    }
    let build = || {
        let mut signed = headers.clone();
        // The same signing succeeded just above; it cannot fail differently now.
        let _ = sign(&mut signed);
        client.post(&url).headers(signed).body(body.clone())
    };

    let mut processor = EventProcessor::new(out, &model);
    let mut source = match open_byte_stream(
        build,
        &model,
        &options,
        secret.as_ref(),
        EVENT_STREAM_CONTENT_TYPE,
    )
    .await
    {
        Ok(source) => source,
        Err(OpenError::Aborted) => {
            processor.fail(StopReason::Aborted, ABORTED_TEXT).await;
            return;
        }
        Err(OpenError::Failed(text)) => {
            processor.fail(StopReason::Error, text).await;
            return;
        }
    };
    drop(body);

    let mut frames = frame::FrameReader::new();
    loop {
        match next_bytes(&mut source, &options).await {
            ByteStep::Bytes(bytes) => frames.push(&bytes),
            ByteStep::Ended => break,
            ByteStep::Aborted => {
                processor.fail(StopReason::Aborted, ABORTED_TEXT).await;
                return;
            }
            ByteStep::Failed(text) => {
                processor.fail(StopReason::Error, text).await;
                return;
            }
        }
        loop {
            let message = match frames.next_message() {
                Ok(Some(message)) => message,
                Ok(None) => break,
                Err(e) => {
                    source.close();
                    let text = format!(
                        "The stream was interrupted: an event-stream frame is invalid ({e})"
                    );
                    processor.fail(StopReason::Error, text).await;
                    return;
                }
            };
            match processor.process(&message).await {
                Ok(Flow::Continue) => {}
                Ok(Flow::Complete) => {
                    source.close();
                    processor.finish().await;
                    return;
                }
                Err(text) => {
                    source.close();
                    processor.fail(StopReason::Error, text).await;
                    return;
                }
            }
        }
    }
    if frames.has_partial_frame() {
        processor
            .fail(
                StopReason::Error,
                "The stream was interrupted: it ended in the middle of an event-stream frame",
            )
            .await;
        return;
    }
    processor.finish().await;
}
