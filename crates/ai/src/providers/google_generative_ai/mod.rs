//! Google Gemini (`google-generative-ai`): POST
//! `{baseUrl}/models/{id}:streamGenerateContent?alt=sse`, the API key in the `x-goog-api-key`
//! header (`GEMINI_API_KEY`, else `GOOGLE_API_KEY`, for provider `google`), never in the URL.
//!
//! - `wire`: request and stream types.
//! - `convert`: context → request, and the per-model `convert::GeminiCompat` settings.
//! - `stream`: stream objects → events.
//! - `decode`: server-sent events → `stream` (the shared transport drives it).
//! - [`models`]: the built-in Gemini models.
//!
//! `model.compat` (camelCase) may set `useLegacyParameters: true` to send tool schemas in the
//! legacy `parameters` field (see [`crate::schema::gemini`]) instead of `parametersJsonSchema`.
//! A schema that field cannot express fails the request before anything is sent.

pub(crate) mod convert;
pub mod models;
pub(crate) mod stream;
pub(crate) mod thinking;
pub mod vertex;
pub(crate) mod wire;

pub(crate) mod decode;

use reqwest::header::HeaderName;

use self::convert::GeminiCompat;
use self::decode::GeminiDecoder;
use super::transport::{PrepareError, Prepared};
use crate::failure::Failure;
use crate::options::StreamOptions;
use crate::providers::auth::required_api_key;
use crate::providers::headers::request_headers;
use crate::types::context::Context;
use crate::types::model::{Model, API_GOOGLE_GENERATIVE_AI};

/// Base URL of the Gemini API.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The header that carries the API key.
pub const API_KEY_HEADER: &str = "x-goog-api-key";

http_provider!(
    /// The provider. Cloning shares the HTTP connection pool.
    GoogleGenerativeAiProvider,
    API_GOOGLE_GENERATIVE_AI,
    prepare,
    |out, (), model| GeminiDecoder::new(out, model)
);

/// The streaming URL for `model` (an empty base URL means [`DEFAULT_BASE_URL`]). A plain id is
/// looked up under `models/`; an id with a collection (`models/…`, `tunedModels/…`) is used as
/// it is. Every path segment of the id is percent-encoded; an id with an empty, `.` or `..`
/// segment is refused.
pub(crate) fn stream_url(model: &Model) -> Result<String, String> {
    let base = match model.base_url.trim_end_matches('/') {
        "" => DEFAULT_BASE_URL,
        base => base,
    };
    let id = model.id.trim_start_matches('/');
    let path = crate::providers::url::segments(id, "model id")?;
    Ok(if id.contains('/') {
        format!("{base}/{path}:streamGenerateContent?alt=sse")
    } else {
        format!("{base}/models/{path}:streamGenerateContent?alt=sse")
    })
}

/// The request (pure): the body, the key in [`API_KEY_HEADER`].
fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<(Prepared, ()), PrepareError> {
    let error = Failure::config;
    let compat = GeminiCompat::for_model(model).map_err(error)?;
    let key = required_api_key(&model.provider, options).map_err(Failure::auth)?;
    let body = request_body(model, context, options, &compat)?;
    let url = stream_url(model).map_err(error)?;
    let auth = key.as_ref().map(|key| {
        (
            HeaderName::from_static(API_KEY_HEADER),
            key.expose().to_string(),
        )
    });
    let mut headers = request_headers(model, options, auth).map_err(error)?;
    crate::providers::headers::add_provider_headers(&mut headers, model, context, options)
        .map_err(error)?;
    Ok((Prepared::new(url, headers, body, key), ()))
}

/// The JSON body of a request (Gemini's endpoint and Vertex AI's); `Err` when it cannot be
/// built.
pub(crate) fn request_body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    compat: &GeminiCompat,
) -> Result<Vec<u8>, PrepareError> {
    let error = Failure::config;
    let request = convert::build_request(model, context, options, compat)
        .map_err(|e| error(e.to_string()))?;
    serde_json::to_vec(&request).map_err(|e| error(format!("could not encode the request: {e}")))
}

#[cfg(test)]
mod doc_examples {
    #[test]
    fn stream_url_example() {
        use crate::providers::google_generative_ai::stream_url;
        let model = crate::Model::openai_compatible("", "gemini-2.5-flash?alt=json#");
        assert_eq!(
            stream_url(&model).unwrap(),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash%3Falt%3Djson%23:streamGenerateContent?alt=sse"
        );
    }
}
