//! Google Gemini (`google-generative-ai`): POST
//! `{baseUrl}/models/{id}:streamGenerateContent?alt=sse`, the API key in the `x-goog-api-key`
//! header (`GEMINI_API_KEY`, else `GOOGLE_API_KEY`, for provider `google`), never in the URL.
//!
//! - [`wire`]: request and stream types.
//! - [`convert`]: context → request, and the per-model [`convert::GeminiCompat`] settings.
//! - [`stream`]: stream objects → events.
//! - [`models`]: the built-in Gemini models.
//!
//! `model.compat` (camelCase) may set `useLegacyParameters: true` to send tool schemas in the
//! legacy `parameters` field (see [`crate::schema::gemini`]) instead of `parametersJsonSchema`.
//! A schema that field cannot express fails the request before anything is sent.

pub mod convert;
pub mod models;
pub mod stream;
pub mod vertex;
pub mod wire;

use reqwest::header::HeaderName;

use self::convert::GeminiCompat;
use self::stream::ResponseProcessor;
use self::wire::GenerateContentResponse;
use super::http::{
    encode_body, next_sse, open_error_parts, open_event_source, quote_chunk, request_headers,
    required_api_key, OpenError, SseStep, ABORTED_TEXT,
};
use crate::options::StreamOptions;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_GOOGLE_GENERATIVE_AI};

/// Base URL of the Gemini API.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The header that carries the API key.
pub const API_KEY_HEADER: &str = "x-goog-api-key";

http_provider!(
    /// The provider. Cloning shares the HTTP connection pool.
    GoogleGenerativeAiProvider,
    API_GOOGLE_GENERATIVE_AI,
    run
);

/// The streaming URL for `model` (an empty base URL means [`DEFAULT_BASE_URL`]). A plain id is
/// looked up under `models/`; an id with a collection (`models/…`, `tunedModels/…`) is used as
/// it is. Every path segment of the id is percent-encoded; an id with an empty, `.` or `..`
/// segment is refused.
///
/// ```
/// use oxpi_ai::providers::google_generative_ai::stream_url;
/// let model = oxpi_ai::Model::openai_compatible("", "gemini-2.5-flash?alt=json#");
/// assert_eq!(
///     stream_url(&model).unwrap(),
///     "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash%3Falt%3Djson%23:streamGenerateContent?alt=sse"
/// );
/// ```
pub fn stream_url(model: &Model) -> Result<String, String> {
    let base = match model.base_url.trim_end_matches('/') {
        "" => DEFAULT_BASE_URL,
        base => base,
    };
    let id = model.id.trim_start_matches('/');
    let path = crate::providers::url_path::segments(id, "model id")?;
    Ok(if id.contains('/') {
        format!("{base}/{path}:streamGenerateContent?alt=sse")
    } else {
        format!("{base}/models/{path}:streamGenerateContent?alt=sse")
    })
}

async fn run(
    client: Result<reqwest::Client, String>,
    model: Model,
    context: Context,
    options: StreamOptions,
    sink: EventSink,
) {
    let mut out = ReplyBuilder::new(&model, sink);
    let client = match client {
        Ok(client) => client,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let compat = match GeminiCompat::for_model(&model) {
        Ok(compat) => compat,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let key = match required_api_key(&model.provider, &options) {
        Ok(key) => key,
        Err(text) => {
            out.fail(StopReason::Error, text).await;
            return;
        }
    };
    out.set_secret(key.clone());
    let body = match request_body(&model, &context, &options, &compat).await {
        Ok(body) => body,
        Err((reason, text)) => {
            out.fail(reason, text).await;
            return;
        }
    };
    drop(context);
    let url = match stream_url(&model) {
        Ok(url) => url,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let auth = key.as_ref().map(|key| {
        (
            HeaderName::from_static(API_KEY_HEADER),
            key.expose().to_string(),
        )
    });
    let headers = match request_headers(&model, &options, auth) {
        Ok(headers) => headers,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    stream_generate(client, url, headers, body, key, &model, &options, out).await;
}

/// The JSON body of a request (after `on_payload`); `Err` when it cannot be built or the hook
/// refused it.
pub(crate) async fn request_body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    compat: &GeminiCompat,
) -> Result<Vec<u8>, (StopReason, String)> {
    let request = convert::build_request(model, context, options, compat)
        .map_err(|e| (StopReason::Error, e.to_string()))?;
    encode_body(&request, model, options)
        .await
        .map_err(open_error_parts)
}

/// Sends a `streamGenerateContent` request and turns its stream into reply events (Gemini's
/// endpoint and Vertex AI's).
#[allow(clippy::too_many_arguments)] // the parts of one request, as the two callers have them
pub(crate) async fn stream_generate(
    client: reqwest::Client,
    url: String,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
    key: Option<crate::options::ApiKey>,
    model: &Model,
    options: &StreamOptions,
    out: ReplyBuilder,
) {
    let build = || {
        client
            .post(&url)
            .headers(headers.clone())
            .body(body.clone())
    };

    let mut processor = ResponseProcessor::new(out, model);
    let mut source = match open_event_source(build, model, options, key.as_ref()).await {
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

    loop {
        let event = match next_sse(&mut source, options).await {
            SseStep::Message(message) => message,
            SseStep::Ended => break,
            SseStep::Aborted => {
                processor.fail(StopReason::Aborted, ABORTED_TEXT).await;
                return;
            }
            SseStep::Failed(text) => {
                processor.fail(StopReason::Error, text).await;
                return;
            }
        };
        let data = event.data.trim();
        if data.is_empty() {
            source.recycle(event);
            continue;
        }
        let chunk: GenerateContentResponse = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(e) => {
                source.close();
                let text = format!(
                    "Could not parse a stream chunk ({e}): {}",
                    quote_chunk(data)
                );
                processor.fail(StopReason::Error, text).await;
                return;
            }
        };
        if let Err(text) = processor.process(chunk).await {
            source.close();
            processor.fail(StopReason::Error, text).await;
            return;
        }
        source.recycle(event);
    }
    processor.finish().await;
}
