//! Server-sent events → [`EventProcessor`]: `content_block_delta` data read on the fast path
//! ([`BlockDeltaReader`], no envelope parsed), every other event parsed whole; `[DONE]` (some
//! gateways end the stream OpenAI-style) ends it, and `message_stop` decides completeness.

use super::reader::BlockDeltaReader;
use super::stream::EventProcessor;
use super::wire::StreamEvent;
use crate::diagnostics::quote_chunk;
use crate::failure::Failure;
use crate::providers::transport::{Decoder, EventDecoder, Flow, InPlace};
use crate::reply::ReplyBuilder;
use crate::sse::SseEvent;
use crate::types::model::Model;

/// The Messages decoder.
pub(crate) struct AnthropicDecoder {
    processor: EventProcessor,
    deltas: BlockDeltaReader,
}

impl AnthropicDecoder {
    /// A decoder writing to `out`; the seed's level is the reply's `provider_thinking_level`
    /// (the managed effort the request asked for), its tool names those Claude Code's names of
    /// an OAuth reply map back to.
    pub(crate) fn new(mut out: ReplyBuilder, model: &Model, seed: super::Seed) -> Self {
        out.set_provider_thinking_level(seed.level);
        Self {
            processor: EventProcessor::new(out, model).with_tool_names(seed.tool_names),
            deltas: BlockDeltaReader::new(),
        }
    }
}

impl EventDecoder for AnthropicDecoder {
    async fn event(&mut self, event: &SseEvent) -> Result<Flow, Failure> {
        let data = event.trimmed_data();
        if data == "[DONE]" {
            return Ok(Flow::Complete);
        }
        if event.event == "content_block_delta" {
            if let Some((index, delta)) = self.deltas.read_text(data) {
                return self.processor.process_block_delta(index, delta).await;
            }
        }
        match serde_json::from_str::<StreamEvent>(data) {
            Ok(parsed) => self.processor.process(parsed).await,
            Err(e) => {
                let chunk = quote_chunk(data);
                Err(if event.event == "error" {
                    Failure::provider(format!("The server sent an error: {chunk}"))
                } else {
                    Failure::parse(format!("Could not parse a stream event ({e}): {chunk}"))
                })
            }
        }
    }

    fn event_now(&mut self, event: &str, data: &str) -> bool {
        // A `content_block_delta` read through its envelope (no parsing, nothing learned).
        if event != "content_block_delta" {
            return false;
        }
        match self.deltas.fragment_text(data) {
            Some((index, delta)) => self.processor.process_block_delta_now(index, delta),
            None => false,
        }
    }

    fn events_in_place(&mut self, text: &str) -> InPlace {
        let Some(batch) = self.processor.held_batch() else {
            return InPlace::default();
        };
        let mut held = batch.lock();
        let mut used = 0;
        while let Some((index, delta, len)) = self.deltas.event_text(&text[used..]) {
            if !self
                .processor
                .process_block_delta_into(&mut held, index, delta)
            {
                break;
            }
            used += len;
        }
        InPlace {
            used,
            cut_short: self.deltas.cut_short(&text[used..]),
        }
    }

    fn reads_in_place(&self) -> bool {
        true
    }
}

impl Decoder for AnthropicDecoder {
    async fn finish(self) {
        self.processor.finish().await
    }

    async fn fail(self, failure: Failure) {
        self.processor.fail(failure).await
    }
}
