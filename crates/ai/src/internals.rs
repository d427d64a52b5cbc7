//! Not part of oxpi-ai's API: the wire-level pieces that oxpi's own property tests, fuzz
//! targets and benchmarks drive directly (readers and processors of single events, the
//! per-API compat types and request builders). Hidden from the documentation and exempt from
//! semver: anything here may change or go in any release. Use [`crate::stream()`] and the
//! [`crate::provider_kit`] instead.

pub use crate::providers::anthropic_messages::convert::build_request as anthropic_build_request;
pub use crate::providers::anthropic_messages::reader::BlockDeltaReader;
pub use crate::providers::anthropic_messages::wire::BlockDeltaData;
pub use crate::providers::google_generative_ai::convert::GeminiCompat;
pub use crate::providers::google_generative_ai::stream::GENERATED_ID_PREFIX;
pub use crate::providers::openai_completions::compat::OpenAiCompat;
pub use crate::providers::openai_completions::reader::ChunkReader;
pub use crate::providers::openai_completions::stream::ChunkProcessor;
pub use crate::providers::openai_completions::wire::ChatChunk;
pub use crate::providers::openai_responses::convert::ResponsesCompat;
