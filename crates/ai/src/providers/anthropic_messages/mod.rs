//! Anthropic Messages (`anthropic-messages`): `POST {baseUrl}/messages` with `stream: true`.
//!
//! - [`wire`]: request and stream event types.
//! - [`convert`]: context → request (thinking replay, tool results, cache markers).
//! - [`reader`]: `content_block_delta` data → deltas, skipping the envelope an event repeats.
//! - [`stream`]: stream events → reply events.
//! - [`models`]: the built-in Claude models.
//!
//! Authentication is the `x-api-key` header, from [`StreamOptions::api_key`] or
//! `ANTHROPIC_API_KEY` (for the `anthropic` provider; a model of another provider, such as a
//! local proxy, is sent without a key when it has none). `anthropic-version: 2023-06-01` is sent
//! unless the model's or the options' headers set another.
//!
//! Prompt caching follows [`StreamOptions::cache_retention`](crate::StreamOptions::cache_retention)
//! (default short, as pi): `cache_control` markers on the system prompt, the last tool and the
//! last block of the last user turn, so Anthropic caches the prompt up to there; `long` asks for
//! a one-hour TTL. Model compat option (`model.compat`, camelCase JSON):
//! `supportsLongCacheRetention` (bool; default true for api.anthropic.com, false elsewhere).

pub mod convert;
pub mod models;
pub mod reader;
pub mod stream;
pub mod wire;

use reqwest::header::{HeaderName, HeaderValue};

use self::reader::BlockDeltaReader;
use self::stream::{EventProcessor, Flow};
use self::wire::StreamEvent;
use super::http::{
    auth_header, base_url, encode_body, next_sse, open_error_parts, open_event_source, quote_chunk,
    request_headers, required_api_key, OpenError, SseStep, ABORTED_TEXT,
};
use crate::options::StreamOptions;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_ANTHROPIC_MESSAGES};

/// Anthropic's API endpoint, used when a model has no base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The API version sent in `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `POST` target for a base URL: `{base}/messages` when it ends in `/v1` (oxpi's convention),
/// else `{base}/v1/messages` (pi's catalogue, like Anthropic's SDK, gives the host alone).
///
/// ```
/// use oxpi_ai::providers::anthropic_messages::messages_url;
/// assert_eq!(messages_url("https://api.anthropic.com"), "https://api.anthropic.com/v1/messages");
/// assert_eq!(messages_url("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1/messages");
/// ```
pub fn messages_url(base: &str) -> String {
    super::http::versioned_url(base, "/messages")
}

http_provider!(
    /// The provider. Cloning shares the HTTP connection pool.
    AnthropicMessagesProvider,
    API_ANTHROPIC_MESSAGES,
    run
);

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
    let key = match required_api_key(&model.provider, &options) {
        Ok(key) => key,
        Err(text) => {
            out.fail(StopReason::Error, text).await;
            return;
        }
    };
    out.set_secret(key.clone());
    let request = match convert::build_request(&model, &context, &options) {
        Ok(request) => request,
        Err(e) => {
            out.fail(StopReason::Error, e.to_string()).await;
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
    let url = match base_url(&model, DEFAULT_BASE_URL) {
        Ok(base) => messages_url(&base),
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let auth = key.as_ref().map(|key| {
        auth_header(&model.provider, key, |key| {
            (
                HeaderName::from_static("x-api-key"),
                key.expose().to_string(),
            )
        })
    });
    let mut headers = match request_headers(&model, &options, auth) {
        Ok(headers) => headers,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    headers
        .entry(HeaderName::from_static("anthropic-version"))
        .or_insert(HeaderValue::from_static(ANTHROPIC_VERSION));
    let build = || {
        client
            .post(&url)
            .headers(headers.clone())
            .body(body.clone())
    };

    let mut processor = EventProcessor::new(out, &model);
    let mut deltas = BlockDeltaReader::new();
    let mut source = match open_event_source(build, &model, &options, key.as_ref()).await {
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
        let message = match next_sse(&mut source, &options).await {
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
        let data = message.data.trim();
        if data.is_empty() {
            source.recycle(message);
            continue;
        }
        // Some gateways end the stream OpenAI-style; `message_stop` decides completeness.
        if data == "[DONE]" {
            source.close();
            break;
        }
        let fast = if message.event == "content_block_delta" {
            deltas.read(data)
        } else {
            None
        };
        let flow = match fast {
            Some(delta) => processor.process_block_delta(delta).await,
            None => match serde_json::from_str::<StreamEvent>(data) {
                Ok(event) => processor.process(event).await,
                Err(e) => {
                    source.close();
                    let what = if message.event == "error" {
                        "The server sent an error".to_string()
                    } else {
                        format!("Could not parse a stream event ({e})")
                    };
                    let text = format!("{what}: {}", quote_chunk(data));
                    processor.fail(StopReason::Error, text).await;
                    return;
                }
            },
        };
        match flow {
            Ok(Flow::Continue) => source.recycle(message),
            Ok(Flow::Complete) => {
                source.close();
                break;
            }
            Err(text) => {
                source.close();
                processor.fail(StopReason::Error, text).await;
                return;
            }
        }
    }
    processor.finish().await;
}
