//! Wire APIs. Each provider lives in its own folder: wire types, conversion, stream processing.
//! [`http`] holds what they share: API keys, opening a stream with bounded retries, reading it
//! (with [`sse`], a linear-time event-stream decoder).

pub mod anthropic_messages;
pub mod google_generative_ai;
pub mod http;
pub mod openai_completions;
pub mod openai_responses;
pub mod sse;
