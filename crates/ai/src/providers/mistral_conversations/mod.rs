//! Mistral (`mistral-conversations`): Mistral's chat API as pi drives it.
//! `POST {baseUrl}/v1/chat/completions` (pi's catalogue gives `https://api.mistral.ai`; a base URL
//! ending in `/v1` is used as it is), `Authorization: Bearer` from `MISTRAL_API_KEY`, the session
//! id as `x-affinity` (Mistral's prefix-cache routing) and `prompt_cache_key` unless cache
//! retention is `none`.
//!
//! - `wire`: the request.
//! - `convert`: context → request (thinking chunks, `[tool error]` results, 9-character ids).
//! - `stream`: list `content` in chunks → the Chat Completions reader's strings; the rest of
//!   the stream is read by [`crate::providers::openai_completions`].

pub(crate) mod convert;
pub(crate) mod stream;
pub(crate) mod wire;

use reqwest::header::AUTHORIZATION;

use super::openai_completions::compat::OpenAiCompat;
use super::openai_completions::decode::ChatDecoder;
use super::openai_completions::prepare::ChatSeed;
use super::transport::{PrepareError, Prepared};
use crate::failure::Failure;
use crate::options::StreamOptions;
use crate::providers::auth::required_api_key;
use crate::providers::headers::{add_session_headers, request_headers};
use crate::providers::url::base_url;
use crate::types::context::Context;
use crate::types::model::{Model, API_MISTRAL_CONVERSATIONS};

/// Mistral's endpoint, used when a model has no base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.mistral.ai";

http_provider!(
    /// The provider. Cloning shares the HTTP connection pool.
    MistralConversationsProvider,
    API_MISTRAL_CONVERSATIONS,
    prepare,
    |out, seed, model| ChatDecoder::new(out, model, seed, Some(stream::normalize_chunk))
);

/// The chat URL of a base URL.
pub(crate) fn chat_url(base: &str) -> String {
    crate::providers::url::versioned_url(base, "/chat/completions")
}

/// The request (pure): Mistral's body, `Authorization: Bearer`, the session id as `x-affinity`;
/// the stream is read as Chat Completions with Mistral's tool-call ids.
fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<(Prepared, ChatSeed), PrepareError> {
    let error = Failure::config;
    let mut compat = OpenAiCompat::for_model(model).map_err(error)?;
    compat.requires_mistral_tool_ids = true;
    let key = required_api_key(&model.provider, options).map_err(Failure::auth)?;
    let request = convert::build_request(model, context, options);
    let body = serde_json::to_vec(&request)
        .map_err(|e| error(format!("could not encode the request: {e}")))?;
    let url = chat_url(&base_url(model, DEFAULT_BASE_URL).map_err(error)?);
    let auth = key
        .as_ref()
        .map(|key| (AUTHORIZATION, format!("Bearer {}", key.expose())));
    let mut headers = request_headers(model, options, auth).map_err(error)?;
    if let Some(session) = convert::prompt_caching(options) {
        add_session_headers(&mut headers, &["x-affinity"], session).map_err(error)?;
    }
    let seed = ChatSeed {
        tool_names: context.tools.iter().map(|t| t.name.clone()).collect(),
        compat,
    };
    Ok((Prepared::new(url, headers, body, key), seed))
}

#[cfg(test)]
mod doc_examples {
    #[test]
    fn chat_url_example() {
        use crate::providers::mistral_conversations::chat_url;
        assert_eq!(
            chat_url("https://api.mistral.ai"),
            "https://api.mistral.ai/v1/chat/completions"
        );
        assert_eq!(
            chat_url("http://127.0.0.1:9/v1/"),
            "http://127.0.0.1:9/v1/chat/completions"
        );
    }
}
