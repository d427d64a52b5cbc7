//! Server-sent events → [`ResponseProcessor`]: each `data:` payload is one
//! `GenerateContentResponse`; the stream ends when the body does (a `finishReason` decides
//! completeness).

use super::stream::ResponseProcessor;
use super::wire::GenerateContentResponse;
use crate::diagnostics::quote_chunk;
use crate::failure::Failure;
use crate::providers::transport::{Decoder, EventDecoder, Flow};
use crate::reply::ReplyBuilder;
use crate::sse::SseEvent;
use crate::types::model::Model;

/// The Gemini decoder (Gemini's endpoint and Vertex AI's).
pub(crate) struct GeminiDecoder {
    processor: ResponseProcessor,
}

impl GeminiDecoder {
    /// A decoder writing to `out`.
    pub(crate) fn new(out: ReplyBuilder, model: &Model) -> Self {
        Self {
            processor: ResponseProcessor::new(out, model),
        }
    }
}

impl EventDecoder for GeminiDecoder {
    async fn event(&mut self, event: &SseEvent) -> Result<Flow, Failure> {
        let data = event.trimmed_data();
        let chunk: GenerateContentResponse = serde_json::from_str(data).map_err(|e| {
            Failure::parse(format!(
                "Could not parse a stream chunk ({e}): {}",
                quote_chunk(data)
            ))
        })?;
        self.processor.process(chunk).await?;
        Ok(Flow::Continue)
    }
}

impl Decoder for GeminiDecoder {
    async fn finish(self) {
        self.processor.finish().await
    }

    async fn fail(self, failure: Failure) {
        self.processor.fail(failure).await
    }
}
