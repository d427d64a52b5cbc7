//! Server-sent events → [`EventProcessor`]: each payload parsed by [`parse_event`] (its type
//! from `type`, else the SSE event name; types this provider does not read are skipped);
//! `[DONE]` ends the stream.

use std::collections::HashMap;

use serde_json::Value;

use super::stream::{EventProcessor, HANDLED_EVENTS};
use super::wire::StreamEvent;
use crate::diagnostics::quote_chunk;
use crate::failure::Failure;
use crate::providers::transport::{Decoder, EventDecoder, Flow};
use crate::reply::ReplyBuilder;
use crate::sse::SseEvent;
use crate::types::message::AssistantMessage;
use crate::types::model::Model;

/// What the decoder of a prepared request needs to know.
pub(crate) struct ResponsesSeed {
    /// The parameters of tools sent as strict schemas (their arguments lose the nulls that
    /// strict mode made the model send), by tool name.
    pub(crate) strict_schemas: HashMap<String, Value>,
    /// The service tier asked for (it prices the usage).
    pub(crate) service_tier: Option<crate::options::ServiceTier>,
}

/// The Responses decoder.
pub(crate) struct ResponsesDecoder {
    processor: EventProcessor,
}

impl ResponsesDecoder {
    /// A decoder writing to `out`.
    pub(crate) fn new(out: ReplyBuilder, model: &Model, seed: ResponsesSeed) -> Self {
        Self {
            processor: EventProcessor::new(out, model, seed.strict_schemas)
                .with_service_tier(seed.service_tier),
        }
    }
}

impl EventDecoder for ResponsesDecoder {
    async fn event(&mut self, event: &SseEvent) -> Result<Flow, Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Complete);
        }
        match parse_event(data, &event.event).map_err(Failure::parse)? {
            Some(parsed) => self.processor.process(parsed).await,
            None => Ok(Flow::Continue),
        }
    }
}

impl Decoder for ResponsesDecoder {
    async fn finish(self) -> AssistantMessage {
        self.processor.finish().await
    }

    async fn fail(self, failure: Failure) -> AssistantMessage {
        self.processor.fail(failure).await
    }
}

/// Parses one `data:` payload. The type comes from the payload's `type`, else from the SSE
/// `event:` name. `Ok(None)` for event types this provider does not read; an error (quoting the
/// payload) when it is not JSON or a known event has an impossible shape.
pub fn parse_event(data: &str, sse_name: &str) -> Result<Option<StreamEvent>, String> {
    let value: Value = serde_json::from_str(data).map_err(|e| {
        format!(
            "Could not parse a stream event ({e}): {}",
            quote_chunk(data)
        )
    })?;
    let type_ = match value.get("type").and_then(Value::as_str) {
        Some(t) => t.to_string(),
        None if value.is_object() => sse_name.to_string(),
        None => {
            return Err(format!(
                "A stream event is not a JSON object: {}",
                quote_chunk(data)
            ))
        }
    };
    if !HANDLED_EVENTS.contains(&type_.as_str()) {
        return Ok(None);
    }
    let mut event: StreamEvent = serde_json::from_value(value).map_err(|e| {
        format!(
            "Unexpected shape of a {type_} event ({e}): {}",
            quote_chunk(data)
        )
    })?;
    event.type_ = type_;
    Ok(Some(event))
}
