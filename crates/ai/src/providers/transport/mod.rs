//! The one request lifecycle every HTTP provider shares. A provider contributes two pieces:
//!
//! - `prepare`: a pure function from the model, the context and the options to a `Prepared`
//!   request (URL, headers, JSON body, the secret to redact, and for Bedrock a per-attempt
//!   signer), testable without a socket;
//! - a decoder (`EventDecoder` for server-sent events, `FrameDecoder` for binary frames) that
//!   turns each wire event into [`ReplyBuilder`] calls and says
//!   with a [`Flow`] whether to read on.
//!
//! `drive_sse` and `drive_frames` (feature `bedrock`) do the rest in one place: the client, the
//! `on_payload` hook, bounded retries before the first byte, `on_response`, the idle timer, the
//! deadline, cancellation, recycling of event buffers, and exactly one terminal event with the
//! secret redacted.

#[cfg(feature = "bedrock")]
mod frames;
pub(crate) mod open;
pub(crate) mod read;
pub(crate) mod retry_rules;

use std::future::Future;
use std::sync::Arc;

use reqwest::header::HeaderMap;

#[cfg(feature = "bedrock")]
pub(crate) use self::frames::{drive_frames, FrameDecoder};
use crate::failure::Failure;
use crate::options::{ApiKey, StreamOptions};
use crate::providers::transport::open::open_event_source;
use crate::providers::transport::read::{next_sse, SseStep};
use crate::reply::{EventSink, ReplyBuilder};
use crate::sse::SseEvent;
use crate::types::model::Model;

/// Adds per-attempt headers (Bedrock's SigV4: a signature is valid for minutes, so each retry
/// is signed afresh) from the final URL and body.
pub(crate) type Signer =
    Arc<dyn Fn(&mut HeaderMap, &str, &[u8]) -> Result<(), String> + Send + Sync>;

/// A request ready to send: what `prepare` returns.
pub(crate) struct Prepared {
    /// Where it goes.
    pub(crate) url: String,
    /// Its headers, authentication included.
    pub(crate) headers: HeaderMap,
    /// Its JSON body, before [`StreamOptions::on_payload`].
    pub(crate) body: Vec<u8>,
    /// The credential to remove from every error text.
    pub(crate) secret: Option<ApiKey>,
    /// Headers computed per attempt, if the API signs requests.
    pub(crate) signer: Option<Signer>,
}

impl Prepared {
    /// A request with no per-attempt signing.
    pub(crate) fn new(
        url: String,
        headers: HeaderMap,
        body: Vec<u8>,
        secret: Option<ApiKey>,
    ) -> Self {
        Self {
            url,
            headers,
            body,
            secret,
            signer: None,
        }
    }
}

/// A request that could not be prepared: why (an aborted failure when the caller cancelled
/// while credentials were fetched).
pub(crate) type PrepareError = Failure;

/// Whether the stream goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Read the next event.
    Continue,
    /// The reply is complete (its terminal wire event arrived): stop reading and finish.
    Complete,
}

/// What every decoder does at the end: finish the reply, or fail it.
pub(crate) trait Decoder: Send {
    /// Ends the reply once the stream is over (`done`, or `error` when it is incomplete).
    fn finish(self) -> impl Future<Output = ()> + Send;

    /// Ends the reply with an error or an abort (partial content kept).
    fn fail(self, failure: Failure) -> impl Future<Output = ()> + Send;
}

/// Turns server-sent events into reply events. The driver skips events whose data is blank.
pub(crate) trait EventDecoder: Decoder {
    /// Applies one event; `Err` ends the reply with that failure (partial content kept).
    fn event(&mut self, event: &SseEvent) -> impl Future<Output = Result<Flow, Failure>> + Send;

    /// Applies the event named `event` with (trimmed) `data` when that needs no waiting (the
    /// common delta of an open block, with room in the sink's batch), without making and
    /// polling [`event`](Self::event)'s future: `true` when it did (the stream goes on);
    /// `false` when it applied nothing, and then `event` takes it. The per-event path of a
    /// long stream; its data is usually read in place, never copied out of the network read.
    fn event_now(&mut self, _event: &str, _data: &str) -> bool {
        false
    }

    /// Applies the events `text` begins with (the stream's text, read by a decoder between
    /// events) while each repeats a learned envelope in the common shape and
    /// [`event_now`](Self::event_now) would apply it: how many bytes they take, and whether the
    /// text ended inside such an event. The same as reading each event and calling
    /// `event_now`, without finding its lines, checking its name or validating its text again.
    fn events_in_place(&mut self, _text: &str) -> InPlace {
        InPlace::default()
    }

    /// Whether [`events_in_place`](Self::events_in_place) can read anything: the driver
    /// checks the stream's text for it, and calls it, only when this is true.
    fn reads_in_place(&self) -> bool {
        false
    }
}

/// What [`EventDecoder::events_in_place`] read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct InPlace {
    /// How many bytes the events it applied take.
    pub used: usize,
    /// Whether it stopped at an event of a learned envelope that the text cut short (a longer
    /// text would have let it read on).
    pub cut_short: bool,
}

/// Starts a reply: the builder, or the terminal `error` when the client could not be built or
/// the request could not be prepared.
async fn start_reply<S>(
    model: &Model,
    options: &StreamOptions,
    sink: EventSink,
    client: Result<reqwest::Client, String>,
    prepared: Result<(Prepared, S), PrepareError>,
) -> Option<(ReplyBuilder, reqwest::Client, Prepared, S)> {
    let mut out = ReplyBuilder::new(model, sink);
    let client = match client {
        Ok(client) => client,
        Err(text) => {
            out.fail_sending(Failure::config(text)).await;
            return None;
        }
    };
    match prepared {
        Ok((prepared, seed)) => {
            out.set_secret(prepared.secret.clone());
            Some((out, client, prepared, seed))
        }
        Err(failure) => {
            // No prepared secret to redact: at least the caller's key never shows.
            out.set_secret(options.api_key.clone());
            out.fail_sending(failure).await;
            None
        }
    }
}

/// The body after [`StreamOptions::on_payload`] (the hook sees the JSON, may replace it or
/// refuse the request), then signed once if the API signs, so a signing error fails the
/// request before anything is sent.
async fn final_body(
    prepared: &mut Prepared,
    model: &Model,
    options: &StreamOptions,
) -> Result<(), Failure> {
    if let Some(hook) = &options.on_payload {
        let encode_error =
            |e: serde_json::Error| Failure::config(format!("could not encode the request: {e}"));
        let payload: serde_json::Value =
            serde_json::from_slice(&prepared.body).map_err(encode_error)?;
        let call = (hook.0)(payload.clone(), model);
        let replaced = tokio::select! {
            biased;
            _ = options.cancel.cancelled() => return Err(Failure::aborted()),
            outcome = call => outcome
                .map_err(|e| Failure::config(format!("on_payload refused the request: {e}")))?,
        };
        if let Some(replaced) = replaced {
            prepared.body = serde_json::to_vec(&replaced).map_err(encode_error)?;
        }
    }
    if let Some(sign) = &prepared.signer {
        sign(&mut prepared.headers.clone(), &prepared.url, &prepared.body)
            .map_err(Failure::auth)?;
    }
    Ok(())
}

/// Builds one attempt of the request (signed afresh when the API signs).
pub(super) fn attempt<'a>(
    client: &'a reqwest::Client,
    prepared: &'a Prepared,
) -> impl Fn() -> reqwest::RequestBuilder + 'a {
    move || {
        let mut headers = prepared.headers.clone();
        if let Some(sign) = &prepared.signer {
            // The same signing succeeded in `final_body`; it cannot fail differently now.
            let _ = sign(&mut headers, &prepared.url, &prepared.body);
        }
        client
            .post(&prepared.url)
            .headers(headers)
            .body(prepared.body.clone())
    }
}

/// Starts a reply and readies its request: the decoder made from the reply's builder and the
/// seed, the client, and the request with its final body. `None` when the reply already ended
/// (no client, `prepare` failed, `on_payload` refused or the caller cancelled, signing failed):
/// its terminal event is sent.
pub(super) async fn begin<S, D: Decoder>(
    model: &Model,
    options: &StreamOptions,
    sink: EventSink,
    client: Result<reqwest::Client, String>,
    prepared: Result<(Prepared, S), PrepareError>,
    decoder: impl FnOnce(ReplyBuilder, S) -> D,
) -> Option<(D, reqwest::Client, Prepared)> {
    let (out, client, mut prepared, seed) =
        start_reply(model, options, sink, client, prepared).await?;
    let decoder = decoder(out, seed);
    match final_body(&mut prepared, model, options).await {
        Ok(()) => Some((decoder, client, prepared)),
        Err(failure) => {
            decoder.fail(failure).await;
            None
        }
    }
}

/// The opened stream, or `None` once the reply has ended with the reason it could not be
/// opened.
pub(super) async fn or_fail<T, D: Decoder>(
    decoder: D,
    opened: Result<T, Failure>,
) -> Option<(D, T)> {
    match opened {
        Ok(source) => Some((decoder, source)),
        Err(failure) => {
            decoder.fail(failure).await;
            None
        }
    }
}

/// Sends a prepared request and reads its event stream through the decoder that `decoder`
/// makes from the reply's builder and what `prepare` left for it (`seed`): the whole lifecycle
/// of an SSE provider.
pub(crate) async fn drive_sse<S, D: EventDecoder>(
    model: &Model,
    options: &StreamOptions,
    sink: EventSink,
    client: Result<reqwest::Client, String>,
    prepared: Result<(Prepared, S), PrepareError>,
    decoder: impl FnOnce(ReplyBuilder, S) -> D,
) {
    let Some((decoder, client, prepared)) =
        begin(model, options, sink, client, prepared, decoder).await
    else {
        return;
    };
    let opened = open_event_source(
        attempt(&client, &prepared),
        model,
        options,
        prepared.secret.as_ref(),
    )
    .await;
    let Some((mut decoder, mut source)) = or_fail(decoder, opened).await else {
        return;
    };
    drop(prepared);
    loop {
        // The common deltas, matched whole against the last ones' envelope in the text of the
        // network read (checked for UTF-8 once, not per event) and applied at once.
        if decoder.reads_in_place() {
            if let Some(text) = source.text_at_event_start() {
                let checked = text.len();
                let read = decoder.events_in_place(text);
                source.consume_in_place(read, checked);
            }
        }
        // The common event, read in place from the network read and applied at once.
        let mut tried = false;
        if let Some(simple) = source.peek_simple() {
            let len = simple.len;
            if decoder.event_now(simple.event, simple.data) {
                source.consume(len);
                continue;
            }
            tried = true;
        }
        let step = match source.next_buffered() {
            Some(step) => step,
            None => next_sse(&mut source, options).await,
        };
        let event = match step {
            SseStep::Message(event) => event,
            SseStep::Ended => break,
            SseStep::Failed(failure) => {
                decoder.fail(failure).await;
                return;
            }
        };
        let data = event.trimmed_data();
        if data.is_empty() || (!tried && decoder.event_now(&event.event, data)) {
            source.recycle(event);
            continue;
        }
        match decoder.event(&event).await {
            Ok(Flow::Continue) => source.recycle(event),
            Ok(Flow::Complete) => {
                source.close();
                break;
            }
            Err(failure) => {
                source.close();
                decoder.fail(failure).await;
                return;
            }
        }
    }
    decoder.finish().await;
}
