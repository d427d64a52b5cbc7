//! Wire APIs. Each provider lives in its own folder: wire types, conversion, stream processing.

pub mod http;
pub mod openai_completions;
