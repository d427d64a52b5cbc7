//! OpenAI Responses (`openai-responses`): `POST {baseUrl}/responses`, streamed; also xAI's
//! Responses endpoint (`provider: "xai"`, key from `XAI_API_KEY`).
//!
//! - `wire`: request and event types.
//! - `compat`: per-model settings (`model.compat` over `data/responses-hosts.json`).
//! - `convert`: context and options → request (tools, reasoning, caching).
//! - `input`: the conversation → input items (tool-call ids, replayed reasoning, tool results).
//! - `stream`: events → reply events.
//! - `prepare`: the request's URL, headers and body (pure), for OpenAI or Azure.
//! - `decode`: server-sent events → `stream` (the shared transport drives it).
//!
//! Requests are sent with `store: false`: nothing stays on the server, so a reasoning model's
//! reasoning is replayed from its encrypted content, which is asked for
//! (`include: ["reasoning.encrypted_content"]`) whenever reasoning is. The reasoning item is
//! kept whole, as JSON, in the [`ThinkingContent::thinking_signature`] of its thinking block.
//! A reasoning item that streams no summary text gets an empty thinking block holding it, so
//! it is replayed too, and the function calls after it keep their item ids.
//!
//! [`ThinkingContent::thinking_signature`]: crate::ThinkingContent::thinking_signature

pub mod azure;
pub(crate) mod compat;
pub(crate) mod convert;
pub(crate) mod input;
pub mod models;
pub(crate) mod stream;
pub(crate) mod wire;

pub(crate) mod decode;
pub(crate) mod prepare;
pub(crate) mod replay;

use self::decode::ResponsesDecoder;
use crate::types::model::API_OPENAI_RESPONSES;

http_provider!(
    /// The Responses provider. Cloning shares the HTTP connection pool.
    OpenAiResponsesProvider,
    API_OPENAI_RESPONSES,
    |model, context, options| prepare::prepare(Endpoint::OpenAi, model, context, options),
    |out, seed, model| ResponsesDecoder::new(out, model, seed)
);

/// Who serves the Responses API: OpenAI (and compatible servers), or an Azure resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `{base}/responses`, `Authorization: Bearer`.
    OpenAi,
    /// See [`azure`].
    Azure,
    /// The ChatGPT (Codex) backend: see [`crate::providers::openai_codex_responses`].
    Codex,
}
