//! Mistral (`mistral-conversations`): Mistral's chat API as pi drives it.
//! `POST {baseUrl}/v1/chat/completions` (pi's catalogue gives `https://api.mistral.ai`; a base URL
//! ending in `/v1` is used as it is), `Authorization: Bearer` from `MISTRAL_API_KEY`, the session
//! id as `x-affinity` (Mistral's prefix-cache routing).
//!
//! - [`wire`]: the request.
//! - [`convert`]: context → request (thinking chunks, `[tool error]` results, 9-character ids).
//! - [`stream`]: list `content` in chunks → the Chat Completions reader's strings; the rest of
//!   the stream is read by [`crate::providers::openai_completions`].

pub mod convert;
pub mod stream;
pub mod wire;

use reqwest::header::AUTHORIZATION;

use super::http::{
    add_session_headers, base_url, encode_body, open_error_parts, request_headers, required_api_key,
};
use super::openai_completions::compat::OpenAiCompat;
use super::openai_completions::{stream_chat, PreparedChat};
use crate::options::StreamOptions;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_MISTRAL_CONVERSATIONS};

/// Mistral's endpoint, used when a model has no base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.mistral.ai";

http_provider!(
    /// The provider. Cloning shares the HTTP connection pool.
    MistralConversationsProvider,
    API_MISTRAL_CONVERSATIONS,
    run
);

/// The chat URL of a base URL.
///
/// ```
/// use oxpi_ai::providers::mistral_conversations::chat_url;
/// assert_eq!(chat_url("https://api.mistral.ai"), "https://api.mistral.ai/v1/chat/completions");
/// assert_eq!(chat_url("http://127.0.0.1:9/v1/"), "http://127.0.0.1:9/v1/chat/completions");
/// ```
pub fn chat_url(base: &str) -> String {
    super::http::versioned_url(base, "/chat/completions")
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
    let mut compat = match OpenAiCompat::for_model(&model) {
        Ok(compat) => compat,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    compat.requires_mistral_tool_ids = true;
    let key = match required_api_key(&model.provider, &options) {
        Ok(key) => key,
        Err(text) => {
            out.fail(StopReason::Error, text).await;
            return;
        }
    };
    out.set_secret(key.clone());
    let request = convert::build_request(&model, &context, &options);
    let tool_names: Vec<String> = context.tools.iter().map(|t| t.name.clone()).collect();
    drop(context);
    let body = match encode_body(&request, &model, &options).await {
        Ok(body) => body,
        Err(e) => {
            let (reason, text) = open_error_parts(e);
            out.fail(reason, text).await;
            return;
        }
    };
    let url = match base_url(&model, DEFAULT_BASE_URL) {
        Ok(base) => chat_url(&base),
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let auth = key
        .as_ref()
        .map(|key| (AUTHORIZATION, format!("Bearer {}", key.expose())));
    let mut headers = match request_headers(&model, &options, auth) {
        Ok(headers) => headers,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    if let Some(session) = options.session_id.as_deref() {
        if let Err(e) = add_session_headers(&mut headers, &["x-affinity"], session) {
            out.fail(StopReason::Error, e).await;
            return;
        }
    }
    let prepared = PreparedChat {
        url,
        headers,
        body,
        key,
        tool_names,
        compat,
    };
    stream_chat(
        client,
        prepared,
        &model,
        &options,
        out,
        Some(stream::normalize_chunk),
    )
    .await;
}
