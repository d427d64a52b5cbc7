//! Context and options → the Codex request (URL, headers, body), as pi 1.6 sends it over SSE.
//! Pure: no I/O.

use std::collections::HashMap;

use reqwest::header::{HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};

use super::convert::{build_request, codex_session_id};
use super::jwt::account_id;
use crate::failure::Failure;
use crate::options::StreamOptions;
use crate::providers::auth::resolve_api_key;
use crate::providers::headers::request_headers;
use crate::providers::openai_responses::compat::ResponsesCompat;
use crate::providers::openai_responses::decode::ResponsesSeed;
use crate::providers::openai_responses::Endpoint;
use crate::providers::transport::{PrepareError, Prepared};
use crate::types::context::Context;
use crate::types::model::Model;

/// pi's base URL when the model has none.
pub const DEFAULT_CODEX_BASE_URL: &str = "https://chatgpt.com/backend-api";

/// The endpoint for a base URL (pi's `resolveCodexUrl`): `{base}/codex/responses`, unless the
/// base already ends in `/codex` or `/codex/responses`.
pub fn codex_url(base_url: &str) -> String {
    let raw = if base_url.trim().is_empty() {
        DEFAULT_CODEX_BASE_URL
    } else {
        base_url
    };
    let normalized = raw.trim_end_matches('/');
    if normalized.ends_with("/codex/responses") {
        normalized.to_string()
    } else if normalized.ends_with("/codex") {
        format!("{normalized}/responses")
    } else {
        format!("{normalized}/codex/responses")
    }
}

/// The request for `model`.
pub(crate) fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<(Prepared, ResponsesSeed), PrepareError> {
    let error = Failure::config;
    let compat = ResponsesCompat::for_endpoint(model, Endpoint::Codex).map_err(error)?;
    let key = resolve_api_key(&model.provider, options)
        .ok_or_else(|| Failure::auth(format!("No API key for provider: {}", model.provider)))?;
    let account = account_id(key.expose()).map_err(Failure::auth)?;
    let request = build_request(model, context, options, &compat);
    let body = serde_json::to_vec(&request)
        .map_err(|e| error(format!("could not encode the request: {e}")))?;
    drop(request);
    let base = crate::providers::url::base_url(model, DEFAULT_CODEX_BASE_URL).map_err(error)?;
    let auth = (AUTHORIZATION, format!("Bearer {}", key.expose()));
    let mut headers = request_headers(model, options, Some(auth)).map_err(error)?;
    // Codex wants an originator on every request; the identity, the model and the options may
    // set their own.
    headers
        .entry(HeaderName::from_static("originator"))
        .or_insert(HeaderValue::from_static("pi"));
    let mut set = |name: HeaderName, value: &str| -> Result<(), Failure> {
        let value = HeaderValue::try_from(value)
            .map_err(|_| error(format!("the {name} header cannot hold its value")))?;
        headers.insert(name, value);
        Ok(())
    };
    set(HeaderName::from_static("chatgpt-account-id"), &account)?;
    set(
        HeaderName::from_static("openai-beta"),
        "responses=experimental",
    )?;
    set(ACCEPT, "text/event-stream")?;
    set(CONTENT_TYPE, "application/json")?;
    if let Some(session) = codex_session_id(options) {
        set(HeaderName::from_static("session-id"), &session)?;
        set(HeaderName::from_static("x-client-request-id"), &session)?;
    }
    let seed = ResponsesSeed {
        strict_schemas: HashMap::new(),
        service_tier: options.service_tier,
    };
    Ok((
        Prepared::new(codex_url(&base), headers, body, Some(key)),
        seed,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_is_built_as_pi_builds_it() {
        let cases = [
            ("", "https://chatgpt.com/backend-api/codex/responses"),
            ("https://h/api/", "https://h/api/codex/responses"),
            ("https://h/codex", "https://h/codex/responses"),
            ("https://h/codex/responses//", "https://h/codex/responses"),
        ];
        for (base, url) in cases {
            assert_eq!(codex_url(base), url, "{base}");
        }
    }
}
