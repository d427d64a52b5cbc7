//! Server-sent events → reply events: each `data:` chunk read by [`ChunkReader`] (skipping
//! the envelope a chunk repeats) and applied by [`ChunkProcessor`]; `[DONE]` ends the stream.

use super::prepare::ChatSeed;
use super::reader::ChunkReader;
use super::stream::ChunkProcessor;
use crate::failure::Failure;
use crate::providers::transport::{Decoder, EventDecoder, Flow, InPlace};
use crate::reply::ReplyBuilder;
use crate::sse::SseEvent;
use crate::types::model::Model;

/// Rewrites a chunk that the Chat Completions reader cannot take as it is (`None`: unchanged);
/// Mistral's list content is one.
pub(crate) type ChunkRewrite = fn(&str) -> Option<String>;

/// The Chat Completions decoder (Mistral's too, with its rewrite).
pub(crate) struct ChatDecoder {
    processor: ChunkProcessor,
    reader: ChunkReader,
    rewrite: Option<ChunkRewrite>,
}

impl ChatDecoder {
    /// A decoder writing to `out`.
    pub(crate) fn new(
        out: ReplyBuilder,
        model: &Model,
        seed: ChatSeed,
        rewrite: Option<ChunkRewrite>,
    ) -> Self {
        let processor = ChunkProcessor::new(out, model, &seed.compat, seed.tool_names);
        Self {
            // Mistral's stream (the one with a rewrite): its thinking stays unsigned, as pi's.
            processor: match rewrite {
                Some(_) => processor.without_reasoning_signatures(),
                None => processor,
            },
            reader: ChunkReader::new(),
            rewrite,
        }
    }
}

impl EventDecoder for ChatDecoder {
    async fn event(&mut self, event: &SseEvent) -> Result<Flow, Failure> {
        let data = event.trimmed_data();
        if data == "[DONE]" {
            return Ok(Flow::Complete);
        }
        let rewritten = self.rewrite.and_then(|rewrite| rewrite(data));
        let data = rewritten.as_deref().unwrap_or(data);
        self.processor.process_data(&mut self.reader, data).await?;
        Ok(Flow::Continue)
    }

    fn event_now(&mut self, _event: &str, data: &str) -> bool {
        // (A rewritten chunk is not the event's data; `[DONE]` has no envelope.)
        self.rewrite.is_none() && self.processor.process_data_now(&mut self.reader, data)
    }

    fn events_in_place(&mut self, text: &str) -> InPlace {
        // (Called only when `reads_in_place`: no chunk to rewrite.)
        let used = self
            .processor
            .process_events_in_place(&mut self.reader, text);
        InPlace {
            used,
            cut_short: self.reader.cut_short(&text[used..]),
        }
    }

    fn reads_in_place(&self) -> bool {
        // As for `event_now`: a chunk to rewrite is not read in place.
        self.rewrite.is_none()
    }
}

impl Decoder for ChatDecoder {
    async fn finish(self) {
        self.processor.finish().await
    }

    async fn fail(self, failure: Failure) {
        self.processor.fail(failure).await
    }
}
