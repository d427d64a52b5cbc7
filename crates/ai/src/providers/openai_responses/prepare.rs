//! Context and options → the Responses request, for OpenAI (and compatible servers:
//! `{base}/responses`, `Authorization: Bearer`) or an Azure resource ([`super::azure`]: its
//! URL, deployment and `api-key`). Pure: no I/O, testable without a socket.

use std::collections::HashMap;

use reqwest::header::{HeaderName, AUTHORIZATION};

use super::convert::{self, ResponsesCompat};
use super::decode::ResponsesSeed;
use super::{azure, Endpoint};
use crate::failure::Failure;
use crate::options::StreamOptions;
use crate::providers::auth::{auth_header, required_api_key};
use crate::providers::headers::{
    add_provider_headers, add_session_headers, request_headers, responses_session_headers,
};
use crate::providers::transport::{PrepareError, Prepared};
use crate::providers::url::base_url;
use crate::types::context::Context;
use crate::types::model::Model;

/// The request for `model` at `endpoint`.
pub(crate) fn prepare(
    endpoint: Endpoint,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<(Prepared, ResponsesSeed), PrepareError> {
    let error = Failure::config;
    let compat = ResponsesCompat::for_endpoint(model, endpoint).map_err(error)?;
    let key = required_api_key(&model.provider, options).map_err(Failure::auth)?;
    let azure = match endpoint {
        Endpoint::OpenAi | Endpoint::Codex => None,
        Endpoint::Azure => Some(
            azure::AzureTarget::resolve(model, |name| std::env::var(name).ok()).map_err(error)?,
        ),
    };
    let mut request = convert::build_request(endpoint, model, context, options, &compat);
    if let Some(target) = &azure {
        request.model = target.deployment.clone();
    }
    let body = serde_json::to_vec(&request)
        .map_err(|e| error(format!("could not encode the request: {e}")))?;
    drop(request);
    let url = match &azure {
        Some(target) => target.url(),
        None => format!("{}/responses", base_url(model, "").map_err(error)?),
    };
    let auth = key.as_ref().map(|key| match endpoint {
        Endpoint::OpenAi | Endpoint::Codex => auth_header(&model.provider, key, |key| {
            (AUTHORIZATION, format!("Bearer {}", key.expose()))
        }),
        Endpoint::Azure => (HeaderName::from_static("api-key"), key.expose().to_string()),
    });
    let mut headers = request_headers(model, options, auth).map_err(error)?;
    add_provider_headers(&mut headers, model, context, options).map_err(error)?;
    // pi 1.6's Responses headers: `session-id` (hyphen) and `x-client-request-id`; its Azure
    // provider sends none.
    let session = convert::cache_session_id(options).filter(|_| azure.is_none());
    if let Some(session) = session {
        let names = responses_session_headers(model, compat.send_session_id_header);
        add_session_headers(&mut headers, names, session).map_err(error)?;
    }
    let seed = ResponsesSeed {
        // No tool is sent strict (pi 1.6 sends `strict: false`), so no argument is cleaned.
        strict_schemas: HashMap::new(),
        service_tier: options.service_tier,
    };
    Ok((Prepared::new(url, headers, body, key), seed))
}
