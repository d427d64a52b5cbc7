//! OpenAI Chat Completions (`openai-completions`) and every compatible server: OpenAI,
//! OpenRouter, Groq, DeepSeek, xAI, Mistral, Cerebras, Together, llama.cpp, Ollama, vLLM,
//! LM Studio.
//!
//! - `compat`: per-server differences, detected by host rules (`data/chat-completions-hosts.json`),
//!   overridable per model.
//! - `wire`: request and chunk types.
//! - `convert`: context → request; `messages`: the conversation; `reasoning`: the reasoning
//!   parameters per `thinkingFormat`.
//! - `prepare`: the request's URL, headers and body (pure).
//! - `decode`: server-sent events → reply events (the shared transport drives it).
//! - `reader`: chunk text → chunks, skipping the envelope a chunk repeats.
//! - `stream`: chunks → events.
//! - `text_tool_calls`: tool calls written as text by small local models.

pub(crate) mod compat;
pub(crate) mod convert;
pub(crate) mod decode;
pub(crate) mod messages;
pub(crate) mod prepare;
pub(crate) mod reader;
pub(crate) mod reasoning;
pub(crate) mod schema_order;
pub(crate) mod stream;
pub(crate) mod text_tool_calls;
pub(crate) mod wire;

use self::decode::ChatDecoder;
use crate::types::model::API_OPENAI_COMPLETIONS;

http_provider!(
    /// The Chat Completions provider. Cloning shares the HTTP connection pool.
    OpenAiCompletionsProvider,
    API_OPENAI_COMPLETIONS,
    prepare::prepare,
    |out, seed, model| ChatDecoder::new(out, model, seed, None)
);
