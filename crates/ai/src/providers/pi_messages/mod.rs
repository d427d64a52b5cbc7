//! pi's own protocol (`pi-messages`), what a pi gateway (Radius) speaks: one
//! `POST {baseUrl}/messages` of `{model, context, options}` with `Authorization: Bearer`, the
//! context as pi's transcript (a leading system message holding the prompt and tools, then the
//! conversation), answered by server-sent events each carrying one serialized pi event, ending
//! in `done` or `error`.
//!
//! - `wire`: the request and the events.
//! - `decode`: events → the reply.

pub(crate) mod decode;
pub(crate) mod wire;

use std::borrow::Cow;

use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION};

use super::transport::{PrepareError, Prepared};
use crate::failure::Failure;
use crate::options::{CacheRetention, StreamOptions};
use crate::providers::auth::resolve_api_key;
use crate::providers::headers::request_headers;
use crate::types::context::Context;
use crate::types::message::Message;
use crate::types::model::{Model, API_PI_MESSAGES};
use crate::types::system::SystemMessage;

http_provider!(
    /// The provider. Cloning shares the HTTP connection pool.
    PiMessagesProvider,
    API_PI_MESSAGES,
    prepare,
    |out, seed: String, _model| decode::PiMessagesDecoder::new(out, &seed)
);

/// The request (pure but for `PI_CACHE_RETENTION`, as pi reads it): the body, the key as
/// `Authorization: Bearer` (required, as pi requires it), `Accept: text/event-stream`.
fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<(Prepared, String), PrepareError> {
    let error = Failure::config;
    let key = resolve_api_key(&model.provider, options).ok_or_else(|| {
        Failure::auth(format!(
            "No API key provided for provider \"{}\"",
            model.provider
        ))
    })?;
    let body = serde_json::to_vec(&request(model, context, options))
        .map_err(|e| error(format!("could not encode the request: {e}")))?;
    let base = crate::providers::url::base_url(model, "").map_err(error)?;
    if base.is_empty() {
        return Err(error(format!(
            "model {} of provider {} has no base URL",
            model.id, model.provider
        )));
    }
    let url = format!("{base}/messages");
    let auth = Some((AUTHORIZATION, format!("Bearer {}", key.expose())));
    let mut headers = request_headers(model, options, auth).map_err(error)?;
    headers
        .entry(ACCEPT)
        .or_insert(HeaderValue::from_static("text/event-stream"));
    Ok((
        Prepared::new(url, headers, body, Some(key)),
        model.provider.clone(),
    ))
}

/// `{model, context, options}` as pi builds it.
pub(crate) fn request<'a>(
    model: &'a Model,
    context: &'a Context,
    options: &StreamOptions,
) -> wire::Request<'a> {
    let prompt = context.system_prompt.as_deref().unwrap_or("");
    let mut messages: Vec<Cow<'a, Message>> = Vec::with_capacity(context.messages.len() + 1);
    if !prompt.is_empty() || !context.tools.is_empty() {
        let mut initial = SystemMessage::text(prompt).with_tools_added(context.tools.clone());
        initial.timestamp = 0;
        messages.push(Cow::Owned(Message::System(initial)));
    }
    messages.extend(context.messages.iter().map(Cow::Borrowed));
    let cache_retention = options.cache_retention.or_else(|| {
        (crate::providers::auth::env_value("PI_CACHE_RETENTION").as_deref() == Some("long"))
            .then_some(CacheRetention::Long)
    });
    wire::Request {
        model: &model.id,
        context: wire::TranscriptContext { messages },
        options: wire::RequestOptions {
            temperature: options.temperature,
            max_tokens: options.max_tokens,
            reasoning: options.reasoning,
            cache_retention,
            session_id: options.session_id.clone(),
            tool_choice: options.tool_choice.as_ref().map(wire::tool_choice),
        },
    }
}
