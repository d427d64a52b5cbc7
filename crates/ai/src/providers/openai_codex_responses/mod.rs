//! The ChatGPT (Codex) backend's Responses API (`openai-codex-responses`), pi 1.6's API for
//! ChatGPT Plus/Pro subscribers: `POST {baseUrl}/codex/responses` (base
//! `https://chatgpt.com/backend-api`), streamed as server-sent events, with the access token of
//! a ChatGPT login as the key.
//!
//! It is the Responses API with the backend's own rules, so it shares the input items, tools and
//! event processor of [`super::openai_responses`]:
//!
//! - `convert`: context and options → request body (`store: false`, `text.verbosity`,
//!   `include` always asking for the encrypted reasoning, `parallel_tool_calls`, `tool_choice`
//!   `auto` unless asked, tools with `strict: null`, reasoning `none` when no level is asked).
//! - `prepare`: URL, headers (`chatgpt-account-id` read from the token, `originator: pi`,
//!   `OpenAI-Beta: responses=experimental`, `session-id`/`x-client-request-id`), body. Pure.
//! - `decode`: the backend's terminal events (`response.done`, a `status` of `incomplete`)
//!   mapped onto the Responses processor.
//!
//! pi's WebSocket transport (and its cached continuation) and its zstd-compressed request body
//! are not built: oxpi always sends uncompressed JSON over SSE, which pi itself falls back to
//! (docs/differences-from-pi.md).

pub(crate) mod convert;
pub(crate) mod decode;
pub(crate) mod jwt;
pub(crate) mod prepare;

use self::decode::CodexDecoder;
use crate::types::model::API_OPENAI_CODEX_RESPONSES;

http_provider!(
    /// The ChatGPT (Codex) Responses provider. Cloning shares the HTTP connection pool.
    OpenAiCodexResponsesProvider,
    API_OPENAI_CODEX_RESPONSES,
    prepare::prepare,
    |out, seed, model| CodexDecoder::new(out, model, seed)
);

pub use self::jwt::account_id;
