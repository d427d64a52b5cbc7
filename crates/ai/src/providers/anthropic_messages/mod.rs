//! Anthropic Messages (`anthropic-messages`): `POST {baseUrl}/messages?beta=true` (the endpoint
//! pi's SDK client calls) with `stream: true`.
//!
//! - `wire`: request and stream event types.
//! - `convert`: context → request (thinking replay, tool results, cache markers).
//! - `reader`: `content_block_delta` data → deltas, skipping the envelope an event repeats.
//! - `stream`: stream events → reply events.
//! - `decode`: server-sent events → `stream` (the shared transport drives it).
//! - [`models`]: the built-in Claude models.
//!
//! Authentication is the `x-api-key` header, from [`StreamOptions::api_key`] or
//! `ANTHROPIC_API_KEY` (for the `anthropic` provider; a model of another provider, such as a
//! local proxy, is sent without a key when it has none); a provider whose facts name a header
//! of its own (`authHeader` in `data/providers.json`: GitHub Copilot's `authorization`,
//! Cloudflare's gateway) gets the key there as `Bearer …`. Thinking, `anthropic-beta` and
//! eager tool streaming follow the model's data (`thinking.rs`). `anthropic-version: 2023-06-01` is sent
//! unless the model's or the options' headers set another.
//!
//! Prompt caching follows [`StreamOptions::cache_retention`](crate::StreamOptions::cache_retention)
//! (default short, as pi): `cache_control` markers on the system prompt, the last tool and the
//! last block of the last user turn, so Anthropic caches the prompt up to there; `long` asks for
//! a one-hour TTL. Model compat options (`model.compat`, camelCase JSON):
//! `supportsLongCacheRetention` and `supportsCacheControlOnTools` (bools; default true, as pi
//! 1.6).

pub(crate) mod claude_code;
pub(crate) mod convert;
pub mod models;
pub(crate) mod reader;
pub(crate) mod stream;
pub(crate) mod thinking;
pub(crate) mod wire;

pub(crate) mod decode;

use reqwest::header::{HeaderName, HeaderValue};

use self::decode::AnthropicDecoder;
use super::transport::{PrepareError, Prepared};
use crate::failure::Failure;
use crate::options::{CacheRetention, StreamOptions};
use crate::providers::auth::{auth_header, required_api_key};
use crate::providers::headers::request_headers;
use crate::providers::url::base_url;
use crate::types::context::Context;
use crate::types::model::{Model, API_ANTHROPIC_MESSAGES};

/// Anthropic's API endpoint, used when a model has no base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The API version sent in `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `POST` target for a base URL: `{base}/messages` when it ends in `/v1` (oxpi's convention),
/// else `{base}/v1/messages` (pi's catalogue, like Anthropic's SDK, gives the host alone).
pub(crate) fn messages_url(base: &str) -> String {
    crate::providers::url::versioned_url(base, "/messages")
}

http_provider!(
    /// The provider. Cloning shares the HTTP connection pool.
    AnthropicMessagesProvider,
    API_ANTHROPIC_MESSAGES,
    prepare,
    |out, seed, model| AnthropicDecoder::new(out, model, seed)
);

/// The query of every request: pi's Anthropic SDK calls its beta endpoint
/// (`POST /v1/messages?beta=true`), which every host pi targets accepts.
pub const BETA_QUERY: &str = "beta=true";

/// What the decoder of a reply needs from its request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seed {
    /// The managed effort of the reply (its `provider_thinking_level`).
    pub(crate) level: Option<String>,
    /// With an OAuth token: the context's tool names, which the reply's Claude Code names map
    /// back to.
    pub(crate) tool_names: Option<Vec<String>>,
}

/// The request (pure): the body, `x-api-key` (or the provider's own auth header),
/// `anthropic-version` and `anthropic-dangerous-direct-browser-access: true` (as pi's SDK
/// client) unless the model's or the options' headers set them, `anthropic-beta`
/// ([`thinking::beta_features`]); the URL with [`BETA_QUERY`]. An OAuth token takes pi's
/// Claude Code identity ([`claude_code`]).
fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<(Prepared, Seed), PrepareError> {
    let error = Failure::config;
    let key = required_api_key(&model.provider, options).map_err(Failure::auth)?;
    let oauth = claude_code::is_oauth(model, key.as_ref());
    let mut request =
        convert::build_request(model, context, options).map_err(|e| error(e.to_string()))?;
    if oauth {
        let cache = convert::cache_control(model, options.resolved_cache_retention());
        claude_code::apply_to_request(&mut request, cache);
    }
    let body = serde_json::to_vec(&request)
        .map_err(|e| error(format!("could not encode the request: {e}")))?;
    let level = request
        .messages
        .last()
        .and_then(|m| m.output_config.as_ref())
        .map(|c| c.effort.clone());
    drop(request);
    let url = messages_url(&base_url(model, DEFAULT_BASE_URL).map_err(error)?);
    let url = format!(
        "{url}{}{BETA_QUERY}",
        if url.contains('?') { '&' } else { '?' }
    );
    let auth = key.as_ref().map(|key| {
        auth_header(&model.provider, key, |key| {
            (
                HeaderName::from_static("x-api-key"),
                key.expose().to_string(),
            )
        })
    });
    let mut headers = request_headers(model, options, auth).map_err(error)?;
    crate::providers::headers::add_provider_headers(&mut headers, model, context, options)
        .map_err(error)?;
    headers
        .entry(HeaderName::from_static("anthropic-version"))
        .or_insert(HeaderValue::from_static(ANTHROPIC_VERSION));
    headers
        .entry(HeaderName::from_static(
            "anthropic-dangerous-direct-browser-access",
        ))
        .or_insert(HeaderValue::from_static("true"));
    let compat = thinking::AnthropicCompat::for_model(model);
    let session = options
        .session_id
        .as_deref()
        .filter(|_| options.resolved_cache_retention() != CacheRetention::None);
    if let (Some(name), Some(session)) = (compat.session_affinity_header, session) {
        crate::providers::headers::add_session_headers(&mut headers, &[name], session)
            .map_err(error)?;
    }
    let mut betas = thinking::beta_features(model, options, &compat, !context.tools.is_empty());
    let configured_betas = model
        .headers
        .keys()
        .chain(options.headers.keys())
        .any(|name| name.eq_ignore_ascii_case("anthropic-beta"));
    if let (true, Some(key)) = (oauth, key.as_ref()) {
        claude_code::apply_headers(&mut headers, model, options, key).map_err(error)?;
        if !configured_betas {
            betas.splice(0..0, claude_code::OAUTH_BETAS);
        }
    }
    if !betas.is_empty() {
        let value = HeaderValue::try_from(betas.join(","))
            .map_err(|_| error("invalid anthropic-beta header".to_string()))?;
        headers.insert(HeaderName::from_static("anthropic-beta"), value);
    }
    let seed = Seed {
        level,
        tool_names: oauth.then(|| context.tools.iter().map(|t| t.name.clone()).collect()),
    };
    Ok((Prepared::new(url, headers, body, key), seed))
}

#[cfg(test)]
mod doc_examples {
    #[test]
    fn messages_url_example() {
        use crate::providers::anthropic_messages::messages_url;
        assert_eq!(
            messages_url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            messages_url("http://127.0.0.1:9/v1"),
            "http://127.0.0.1:9/v1/messages"
        );
    }
}
