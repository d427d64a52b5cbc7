//! Wire APIs. Each provider lives in its own folder: wire types, conversion, stream processing.
//! [`http`] holds what they share: API keys, opening a stream with bounded retries, reading it
//! through the linear-time decoder in [`crate::sse`]. [`envelope`] lets a provider read a chunk
//! that repeats the previous one's envelope by its one new string; [`text`] is a JSON string
//! borrowed from the chunk when it can be.

pub mod anthropic_messages;
#[cfg(feature = "bedrock")]
pub mod bedrock_converse_stream;
pub mod envelope;
pub mod google_generative_ai;
pub mod http;
pub mod mistral_conversations;
pub mod openai_completions;
pub mod openai_responses;
pub mod text;
pub mod unavailable;
