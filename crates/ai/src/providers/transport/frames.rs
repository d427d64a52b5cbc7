//! The transport loop for a binary event stream (Bedrock's): the same lifecycle as
//! [`super::drive_sse`], with the body cut into frames by the decoder.

use std::future::Future;

use super::{attempt, begin, or_fail, Decoder, Flow, PrepareError, Prepared};
use crate::failure::Failure;
use crate::options::StreamOptions;
use crate::providers::transport::open::open_byte_stream;
use crate::providers::transport::read::{next_bytes, ByteStep};
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::model::Model;

/// Turns the frames of a binary event stream into reply events.
pub(crate) trait FrameDecoder: Decoder {
    /// A frame of the body.
    type Frame: Send;

    /// Adds bytes of the body.
    fn push(&mut self, bytes: &[u8]);

    /// The next complete frame, `Ok(None)` when more bytes are needed, `Err` (the error text)
    /// when the frame at the front is invalid.
    fn next_frame(&mut self) -> Result<Option<Self::Frame>, String>;

    /// Whether an unfinished frame is buffered (a body that ends now was cut).
    fn has_partial_frame(&self) -> bool;

    /// Applies one frame; `Err` ends the reply with that failure.
    fn frame(&mut self, frame: Self::Frame) -> impl Future<Output = Result<Flow, Failure>> + Send;
}

/// Like [`drive_sse`] for a binary event stream of `content_type` (Bedrock's), cut into frames
/// by the decoder.
pub(crate) async fn drive_frames<S, D: FrameDecoder>(
    model: &Model,
    options: &StreamOptions,
    sink: EventSink,
    client: Result<reqwest::Client, String>,
    prepared: Result<(Prepared, S), PrepareError>,
    content_type: &'static str,
    decoder: impl FnOnce(ReplyBuilder, S) -> D,
) {
    let Some((decoder, client, prepared)) =
        begin(model, options, sink, client, prepared, decoder).await
    else {
        return;
    };
    let opened = open_byte_stream(
        attempt(&client, &prepared),
        model,
        options,
        prepared.secret.as_ref(),
        content_type,
    )
    .await;
    let Some((mut decoder, mut source)) = or_fail(decoder, opened).await else {
        return;
    };
    drop(prepared);
    loop {
        match next_bytes(&mut source, options).await {
            ByteStep::Bytes(bytes) => decoder.push(&bytes),
            ByteStep::Ended => break,
            ByteStep::Failed(failure) => {
                decoder.fail(failure).await;
                return;
            }
        }
        loop {
            let frame = match decoder.next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(text) => {
                    source.close();
                    decoder.fail(Failure::parse(text)).await;
                    return;
                }
            };
            match decoder.frame(frame).await {
                Ok(Flow::Continue) => {}
                Ok(Flow::Complete) => {
                    source.close();
                    decoder.finish().await;
                    return;
                }
                Err(failure) => {
                    source.close();
                    decoder.fail(failure).await;
                    return;
                }
            }
        }
    }
    if decoder.has_partial_frame() {
        decoder
            .fail(Failure::incomplete(
                "The stream was interrupted: it ended in the middle of an event-stream frame",
            ))
            .await;
        return;
    }
    decoder.finish().await;
}
