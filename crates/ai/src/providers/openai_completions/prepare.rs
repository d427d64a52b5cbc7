//! Context and options → the Chat Completions request: URL, headers (authentication, pi's
//! session-affinity headers), JSON body. Pure: no I/O, testable without a socket.

use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION};

use super::compat::{OpenAiCompat, SessionAffinityFormat};
use super::convert;
use crate::failure::Failure;
use crate::options::{CacheRetention, StreamOptions};
use crate::providers::auth::{auth_header, required_api_key};
use crate::providers::headers::{
    add_copilot_headers, add_provider_headers, add_session_headers, request_headers,
};
use crate::providers::transport::{PrepareError, Prepared};
use crate::providers::url::base_url;
use crate::types::context::Context;
use crate::types::model::Model;

/// What the decoder of a prepared request needs to know.
pub(crate) struct ChatSeed {
    /// The tools offered (for tool calls written as text).
    pub(crate) tool_names: Vec<String>,
    /// How the chunks are read.
    pub(crate) compat: OpenAiCompat,
}

/// The request for `model` (compat from the model and its base URL).
pub(crate) fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<(Prepared, ChatSeed), PrepareError> {
    let error = Failure::config;
    let compat = OpenAiCompat::for_model(model).map_err(error)?;
    let key = required_api_key(&model.provider, options).map_err(Failure::auth)?;
    let request = convert::build_request(model, context, options, &compat);
    let body = serde_json::to_vec(&request)
        .map_err(|e| error(format!("could not encode the request: {e}")))?;
    drop(request);
    let url = format!("{}/chat/completions", base_url(model, "").map_err(error)?);
    let auth = key.as_ref().map(|key| {
        auth_header(&model.provider, key, |key| {
            (AUTHORIZATION, format!("Bearer {}", key.expose()))
        })
    });
    let mut headers = request_headers(model, options, auth).map_err(error)?;
    // The OpenAI SDK's, which pi sends every request with.
    headers
        .entry(ACCEPT)
        .or_insert(HeaderValue::from_static("application/json"));
    if compat.copilot_headers {
        add_copilot_headers(&mut headers, context);
    }
    add_provider_headers(&mut headers, model, context, options).map_err(error)?;
    let session = options.session_id.as_deref().filter(|_| {
        compat.send_session_affinity_headers
            && options.resolved_cache_retention() != CacheRetention::None
    });
    if let Some(session) = session {
        let names: &[&str] = match compat.session_affinity_format {
            SessionAffinityFormat::Openrouter => &["x-session-id"],
            SessionAffinityFormat::Openai => {
                &["session_id", "x-client-request-id", "x-session-affinity"]
            }
            SessionAffinityFormat::OpenaiNosession => {
                &["x-client-request-id", "x-session-affinity"]
            }
        };
        add_session_headers(&mut headers, names, session).map_err(error)?;
    }
    let seed = ChatSeed {
        tool_names: context.tools.iter().map(|t| t.name.clone()).collect(),
        compat,
    };
    Ok((Prepared::new(url, headers, body, key), seed))
}
