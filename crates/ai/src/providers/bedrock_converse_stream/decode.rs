//! The binary event stream → [`EventProcessor`]: bytes cut into frames by [`FrameReader`]
//! (each prelude checked as it arrives), each frame one ConverseStream message.

use aws_smithy_types::event_stream::Message;

use super::frame::FrameReader;
use super::stream::EventProcessor;
use crate::failure::Failure;
use crate::providers::transport::{Decoder, Flow, FrameDecoder};
use crate::reply::ReplyBuilder;
use crate::types::model::Model;

/// The ConverseStream decoder.
pub(crate) struct BedrockDecoder {
    processor: EventProcessor,
    frames: FrameReader,
}

impl BedrockDecoder {
    /// A decoder writing to `out`.
    pub(crate) fn new(out: ReplyBuilder, model: &Model) -> Self {
        Self {
            processor: EventProcessor::new(out, model),
            frames: FrameReader::new(),
        }
    }
}

impl FrameDecoder for BedrockDecoder {
    type Frame = Message;

    fn push(&mut self, bytes: &[u8]) {
        self.frames.push(bytes);
    }

    fn next_frame(&mut self) -> Result<Option<Message>, String> {
        self.frames.next_message().map_err(|e| {
            format!("The stream was interrupted: an event-stream frame is invalid ({e})")
        })
    }

    fn has_partial_frame(&self) -> bool {
        self.frames.has_partial_frame()
    }

    async fn frame(&mut self, frame: Message) -> Result<Flow, Failure> {
        self.processor.process(&frame).await
    }
}

impl Decoder for BedrockDecoder {
    async fn finish(self) {
        self.processor.finish().await
    }

    async fn fail(self, failure: Failure) {
        self.processor.fail(failure).await
    }
}
