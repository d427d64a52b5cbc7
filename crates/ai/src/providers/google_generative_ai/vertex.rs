//! Google Vertex AI (`google-vertex`): the Gemini wire format (`super::convert`,
//! `super::stream`) on Vertex AI's endpoint, as pi's `google-vertex`. Only where the request
//! goes and how it is authenticated differ:
//!
//! - With an API key ([`StreamOptions::api_key`] or `GOOGLE_CLOUD_API_KEY`; Vertex "express
//!   mode"): `POST https://aiplatform.googleapis.com/v1/publishers/google/models/{id}:streamGenerateContent?alt=sse`,
//!   the key in `x-goog-api-key`.
//! - Otherwise application default credentials, through the `gcp_auth` crate (oxpi-ai's
//!   feature `vertex`, off by default): a service-account file named by
//!   `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's ADC file, the metadata server, or the gcloud
//!   CLI; the token goes in `Authorization: Bearer`, to
//!   `https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/publishers/google/models/{id}:streamGenerateContent?alt=sse`
//!   (`aiplatform.googleapis.com` for `global`). Project: [`GoogleVertexProvider::with_project`],
//!   else `GOOGLE_CLOUD_PROJECT` or `GCLOUD_PROJECT`; location:
//!   [`GoogleVertexProvider::with_location`], else `GOOGLE_CLOUD_LOCATION`.
//!
//! A model `base_url` without the `{location}` placeholder replaces the host (for proxies and
//! tests); `/v1` is added unless the URL already names a version.

#[cfg(feature = "vertex")]
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use reqwest::header::{HeaderName, AUTHORIZATION};

use super::convert::GeminiCompat;
use super::decode::GeminiDecoder;
use super::{request_body, API_KEY_HEADER};
use crate::failure::Failure;
use crate::options::{ApiKey, StreamOptions};
use crate::provider_kit::ApiProvider;
use crate::providers::auth::env_value;
use crate::providers::client::new_client;
use crate::providers::headers::request_headers;
use crate::providers::transport::{drive_sse, PrepareError, Prepared};
use crate::reply::EventSink;
use crate::types::context::Context;
use crate::types::model::{Model, API_GOOGLE_VERTEX};

/// The OAuth scope asked for.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Where tokens come from when no API key is given.
#[cfg(feature = "vertex")]
pub type TokenProvider = Arc<dyn gcp_auth::TokenProvider>;

/// The provider. Cloning shares the HTTP connection pool and the credentials.
#[derive(Clone)]
pub struct GoogleVertexProvider {
    client: Result<reqwest::Client, String>,
    project: Option<String>,
    location: Option<String>,
    #[cfg(feature = "vertex")]
    tokens: Arc<tokio::sync::OnceCell<TokenProvider>>,
}

impl std::fmt::Debug for GoogleVertexProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleVertexProvider")
            .field("project", &self.project)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Default for GoogleVertexProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl GoogleVertexProvider {
    /// A provider with its own HTTP client; project, location and credentials from the
    /// environment.
    pub fn new() -> Self {
        Self::with_client_result(new_client())
    }

    /// A provider using the given client. Build it from
    /// [`client_builder`](crate::providers::client::client_builder), so redirects stay on the
    /// request's origin (a client that follows one elsewhere sends the credentials there).
    pub fn with_client(client: reqwest::Client) -> Self {
        Self::with_client_result(Ok(client))
    }

    fn with_client_result(client: Result<reqwest::Client, String>) -> Self {
        Self {
            client,
            project: None,
            location: None,
            #[cfg(feature = "vertex")]
            tokens: Arc::new(tokio::sync::OnceCell::new()),
        }
    }

    /// The Google Cloud project (instead of `GOOGLE_CLOUD_PROJECT`).
    pub fn with_project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// The Vertex AI location, e.g. `us-central1` or `global` (instead of
    /// `GOOGLE_CLOUD_LOCATION`).
    pub fn with_location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }

    /// Tokens from this provider instead of `gcp_auth::provider()` (a service account read
    /// from JSON, a workload identity, …).
    #[cfg(feature = "vertex")]
    pub fn with_token_provider(self, tokens: TokenProvider) -> Self {
        let cell = tokio::sync::OnceCell::new();
        let _ = cell.set(tokens);
        Self {
            tokens: Arc::new(cell),
            ..self
        }
    }
}

impl ApiProvider for GoogleVertexProvider {
    fn api(&self) -> &str {
        API_GOOGLE_VERTEX
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

/// The API key for express mode: the options' or `GOOGLE_CLOUD_API_KEY`, unless it is one of
/// pi's stand-ins for "use credentials" (`gcp-vertex-credentials`, `<…>`).
fn express_key(options: &StreamOptions) -> Option<ApiKey> {
    let usable = |key: &str| {
        let key = key.trim();
        let placeholder = key.starts_with('<') && key.ends_with('>');
        (!key.is_empty() && key != "gcp-vertex-credentials" && !placeholder)
            .then(|| ApiKey::new(key))
    };
    options
        .api_key
        .as_ref()
        .and_then(|k| usable(k.expose()))
        .or_else(|| env_value("GOOGLE_CLOUD_API_KEY").and_then(|k| usable(&k)))
}

/// A path segment, percent-encoded ([`crate::providers::url::segment`]).
fn segment(text: &str, what: &str) -> Result<String, String> {
    crate::providers::url::segment(text, what)
}

/// The base URL: the model's, unless empty or the catalogue's `{location}` template; `/v1`
/// appended unless it names a version.
fn vertex_base(model: &Model, default_host: &str) -> String {
    let base = model.base_url.trim().trim_end_matches('/');
    let base = if base.is_empty() || base.contains("{location}") {
        default_host.to_string()
    } else {
        base.to_string()
    };
    let has_version = base.rsplit('/').next().is_some_and(|last| {
        last.len() > 1
            && last.starts_with('v')
            && last[1..].starts_with(|c: char| c.is_ascii_digit())
    });
    if has_version {
        base
    } else {
        format!("{base}/v1")
    }
}

/// The express-mode URL.
pub(crate) fn express_url(model: &Model) -> Result<String, String> {
    let base = vertex_base(model, "https://aiplatform.googleapis.com");
    Ok(format!(
        "{base}/publishers/google/models/{}:streamGenerateContent?alt=sse",
        segment(&model.id, "model id")?
    ))
}

/// The URL for a project and location.
pub(crate) fn project_url(model: &Model, project: &str, location: &str) -> Result<String, String> {
    let (project, location) = (segment(project, "project")?, segment(location, "location")?);
    let host = if location == "global" {
        "https://aiplatform.googleapis.com".to_string()
    } else {
        format!("https://{location}-aiplatform.googleapis.com")
    };
    let base = vertex_base(model, &host);
    Ok(format!(
        "{base}/projects/{project}/locations/{location}/publishers/google/models/{}:streamGenerateContent?alt=sse",
        segment(&model.id, "model id")?
    ))
}

fn env_first(names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| env_value(name))
}

async fn run(
    provider: GoogleVertexProvider,
    model: Model,
    context: Context,
    options: StreamOptions,
    sink: EventSink,
) {
    let prepared = prepare(&provider, &model, &context, &options)
        .await
        .map(|p| (p, ()));
    drop(context);
    drive_sse(
        &model,
        &options,
        sink,
        provider.client.clone(),
        prepared,
        |out, ()| GeminiDecoder::new(out, &model),
    )
    .await;
}

/// The request: express mode with a key, else a token from application default credentials
/// (the one step that is not pure).
async fn prepare(
    provider: &GoogleVertexProvider,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Prepared, PrepareError> {
    let error = Failure::config;
    let compat = GeminiCompat::for_model(model).map_err(error)?;
    let (url, auth, secret) = match express_key(options) {
        Some(key) => {
            let url = express_url(model).map_err(error)?;
            let auth = (
                HeaderName::from_static(API_KEY_HEADER),
                key.expose().to_string(),
            );
            (url, auth, key)
        }
        None => credentials(provider, model, options).await?,
    };
    let body = request_body(model, context, options, &compat)?;
    let headers = request_headers(model, options, Some(auth)).map_err(error)?;
    Ok(Prepared::new(url, headers, body, Some(secret)))
}

/// The URL, `Authorization` header and token for a request with application default
/// credentials.
async fn credentials(
    provider: &GoogleVertexProvider,
    model: &Model,
    options: &StreamOptions,
) -> Result<(String, (HeaderName, String), ApiKey), Failure> {
    let fail = Failure::config;
    let project = provider
        .project
        .clone()
        .or_else(|| env_first(&["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"]))
        .ok_or_else(|| {
            fail("Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or use GoogleVertexProvider::with_project (or set GOOGLE_CLOUD_API_KEY for express mode).".into())
        })?;
    let location = provider
        .location
        .clone()
        .or_else(|| env_first(&["GOOGLE_CLOUD_LOCATION"]))
        .ok_or_else(|| {
            fail("Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or use GoogleVertexProvider::with_location.".into())
        })?;
    let url = project_url(model, &project, &location).map_err(fail)?;
    let token = token(provider, options).await?;
    Ok((
        url,
        (AUTHORIZATION, format!("Bearer {}", token.expose())),
        token,
    ))
}

#[cfg(feature = "vertex")]
async fn token(
    provider: &GoogleVertexProvider,
    options: &StreamOptions,
) -> Result<ApiKey, Failure> {
    let fetch = async {
        let tokens = provider
            .tokens
            .get_or_try_init(gcp_auth::provider)
            .await
            .map_err(|e| {
                format!(
                    "No Google credentials for Vertex AI ({}); set GOOGLE_APPLICATION_CREDENTIALS, run `gcloud auth application-default login`, or set GOOGLE_CLOUD_API_KEY",
                    crate::diagnostics::error_chain(&e)
                )
            })?;
        let token = tokens.token(&[SCOPE]).await.map_err(|e| {
            format!(
                "Could not get a Google access token for Vertex AI: {}",
                crate::diagnostics::error_chain(&e)
            )
        })?;
        Ok::<_, String>(ApiKey::new(token.as_str()))
    };
    tokio::select! {
        biased;
        _ = options.cancel.cancelled() => Err(Failure::aborted()),
        result = fetch => result.map_err(Failure::auth),
    }
}

#[cfg(not(feature = "vertex"))]
async fn token(
    _provider: &GoogleVertexProvider,
    _options: &StreamOptions,
) -> Result<ApiKey, Failure> {
    Err(Failure::config(
        "Vertex AI without an API key needs application default credentials: build oxpi-ai with its feature \"vertex\", or set GOOGLE_CLOUD_API_KEY",
    ))
}

#[cfg(test)]
mod doc_examples {
    #[test]
    fn express_url_example() {
        use crate::providers::google_generative_ai::vertex::express_url;
        let model = crate::Model::openai_compatible("", "gemini-2.5-flash");
        assert_eq!(
            express_url(&model).unwrap(),
            "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
    }

    #[test]
    fn project_url_example() {
        use crate::providers::google_generative_ai::vertex::project_url;
        let model = crate::Model::openai_compatible(
            "https://{location}-aiplatform.googleapis.com",
            "gemini-2.5-pro",
        );
        assert_eq!(
            project_url(&model, "acme", "europe-west4").unwrap(),
            "https://europe-west4-aiplatform.googleapis.com/v1/projects/acme/locations/europe-west4/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert!(project_url(&model, "acme", "global")
            .unwrap()
            .starts_with("https://aiplatform.googleapis.com/v1/"));
        assert!(project_url(&model, "..", "global").is_err());
    }
}
