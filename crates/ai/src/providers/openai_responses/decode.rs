//! Server-sent events → [`EventProcessor`]: each payload parsed by [`parse_event_with`] (its type
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
use crate::types::model::Model;

/// What the decoder of a prepared request needs to know.
pub(crate) struct ResponsesSeed {
    /// The parameters of tools sent as strict schemas (their arguments lose the nulls that
    /// strict mode made the model send), by tool name.
    pub(crate) strict_schemas: HashMap<String, Value>,
    /// The service tier asked for (it prices the usage).
    pub(crate) service_tier: Option<crate::options::ServiceTier>,
}

/// Gives an event another type before it is read (the Codex backend's terminal events), from
/// its type and payload; `None` keeps it.
pub(crate) type TypeMap = fn(&str, &Value) -> Option<&'static str>;

/// The Responses decoder.
pub(crate) struct ResponsesDecoder {
    processor: EventProcessor,
    type_map: Option<TypeMap>,
}

impl ResponsesDecoder {
    /// A decoder writing to `out`.
    pub(crate) fn new(out: ReplyBuilder, model: &Model, seed: ResponsesSeed) -> Self {
        Self {
            processor: EventProcessor::new(out, model, seed.strict_schemas)
                .with_service_tier(seed.service_tier),
            type_map: None,
        }
    }

    /// The decoder with events retyped by `map` first.
    pub(crate) fn with_type_map(mut self, map: TypeMap) -> Self {
        self.type_map = Some(map);
        self
    }
}

impl EventDecoder for ResponsesDecoder {
    async fn event(&mut self, event: &SseEvent) -> Result<Flow, Failure> {
        let data = event.trimmed_data();
        if data == "[DONE]" {
            return Ok(Flow::Complete);
        }
        match parse_event_with(data, &event.event, self.type_map).map_err(Failure::parse)? {
            Some(parsed) => self.processor.process(parsed).await,
            None => Ok(Flow::Continue),
        }
    }
}

impl Decoder for ResponsesDecoder {
    async fn finish(self) {
        self.processor.finish().await
    }

    async fn fail(self, failure: Failure) {
        self.processor.fail(failure).await
    }
}

/// Parses one `data:` payload. The type comes from the payload's `type`, else from the SSE
/// `event:` name. `Ok(None)` for event types this provider does not read; an error (quoting the
/// payload) when it is not JSON or a known event has an impossible shape.
/// `type_map` may give it another type first.
pub(crate) fn parse_event_with(
    data: &str,
    sse_name: &str,
    type_map: Option<TypeMap>,
) -> Result<Option<StreamEvent>, String> {
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
    let type_ = match type_map.and_then(|map| map(&type_, &value)) {
        Some(mapped) => mapped.to_string(),
        None => type_,
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
