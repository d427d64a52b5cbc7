//! OpenAI Responses (`openai-responses`): `POST {baseUrl}/responses`, streamed; also xAI's
//! Responses endpoint (`provider: "xai"`, key from `XAI_API_KEY`).
//!
//! - [`wire`]: request and event types.
//! - [`convert`]: context → request (input items, tools, reasoning), per-model settings.
//! - [`stream`]: events → reply events.
//!
//! Requests are sent with `store: false`: nothing stays on the server, so a reasoning model's
//! reasoning is replayed from its encrypted content, which is asked for
//! (`include: ["reasoning.encrypted_content"]`) whenever reasoning is. The reasoning item is
//! kept whole, as JSON, in the [`ThinkingContent::thinking_signature`] of its thinking block.
//! A reasoning item that streams no summary text gets an empty thinking block holding it, so
//! it is replayed too, and the function calls after it keep their item ids.
//!
//! [`ThinkingContent::thinking_signature`]: crate::ThinkingContent::thinking_signature

pub mod azure;
pub mod convert;
pub mod models;
pub mod stream;
pub mod wire;

use std::collections::HashMap;

use reqwest::header::AUTHORIZATION;
use serde_json::Value;

use self::convert::ResponsesCompat;
use self::stream::{EventProcessor, Step, HANDLED_EVENTS};
use self::wire::StreamEvent;
use super::http::{
    add_session_headers, auth_header, base_url, encode_body, next_sse, open_error_parts,
    open_event_source, quote_chunk, request_headers, required_api_key, OpenError, SseStep,
    ABORTED_TEXT,
};
use crate::options::StreamOptions;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_OPENAI_RESPONSES};

http_provider!(
    /// The Responses provider. Cloning shares the HTTP connection pool.
    OpenAiResponsesProvider,
    API_OPENAI_RESPONSES,
    |client, model, context, options, sink| run(client, Endpoint::OpenAi, model, context, options, sink)
);

/// Who serves the Responses API: OpenAI (and compatible servers), or an Azure resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `{base}/responses`, `Authorization: Bearer`.
    OpenAi,
    /// See [`azure`].
    Azure,
}

async fn run(
    client: Result<reqwest::Client, String>,
    endpoint: Endpoint,
    model: Model,
    context: Context,
    options: StreamOptions,
    sink: EventSink,
) {
    let mut out = ReplyBuilder::new(&model, sink);
    let client = match client {
        Ok(client) => client,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let compat = match ResponsesCompat::for_model(&model) {
        Ok(compat) => compat,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let key = match required_api_key(&model.provider, &options) {
        Ok(key) => key,
        Err(text) => {
            out.fail(StopReason::Error, text).await;
            return;
        }
    };
    out.set_secret(key.clone());
    let azure = match endpoint {
        Endpoint::OpenAi => None,
        Endpoint::Azure => {
            match azure::AzureTarget::resolve(&model, |name| std::env::var(name).ok()) {
                Ok(target) => Some(target),
                Err(e) => {
                    out.fail(StopReason::Error, e).await;
                    return;
                }
            }
        }
    };
    let mut request = match convert::build_request(&model, &context, &options, &compat) {
        Ok(request) => request,
        Err(e) => {
            out.fail(StopReason::Error, e.to_string()).await;
            return;
        }
    };
    if let Some(target) = &azure {
        request.model = target.deployment.clone();
    }
    let strict_schemas: HashMap<String, Value> = if compat.strict_tools {
        context
            .tools
            .iter()
            .map(|t| (t.name.clone(), t.parameters.clone()))
            .collect()
    } else {
        HashMap::new()
    };
    drop(context);
    let body = match encode_body(&request, &model, &options).await {
        Ok(body) => body,
        Err(e) => {
            let (reason, text) = open_error_parts(e);
            out.fail(reason, text).await;
            return;
        }
    };
    drop(request);
    let url = match (&azure, base_url(&model, "")) {
        (Some(target), _) => target.url(),
        (None, Ok(base)) => format!("{base}/responses"),
        (None, Err(e)) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let auth = key.as_ref().map(|key| match endpoint {
        Endpoint::OpenAi => auth_header(&model.provider, key, |key| {
            (AUTHORIZATION, format!("Bearer {}", key.expose()))
        }),
        Endpoint::Azure => (
            reqwest::header::HeaderName::from_static("api-key"),
            key.expose().to_string(),
        ),
    });
    let mut headers = match request_headers(&model, &options, auth) {
        Ok(headers) => headers,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    if let Some(session) = convert::cache_session_id(&options) {
        let names: &[&'static str] = if compat.send_session_id_header {
            &["session_id", "x-client-request-id"]
        } else {
            &["x-client-request-id"]
        };
        if let Err(e) = add_session_headers(&mut headers, names, session) {
            out.fail(StopReason::Error, e).await;
            return;
        }
    }
    let build = || {
        client
            .post(&url)
            .headers(headers.clone())
            .body(body.clone())
    };

    let mut processor =
        EventProcessor::new(out, &model, strict_schemas).with_service_tier(options.service_tier);
    let mut source = match open_event_source(build, &model, &options, key.as_ref()).await {
        Ok(source) => source,
        Err(OpenError::Aborted) => {
            processor.fail(StopReason::Aborted, ABORTED_TEXT).await;
            return;
        }
        Err(OpenError::Failed(text)) => {
            processor.fail(StopReason::Error, text).await;
            return;
        }
    };
    drop(body);

    loop {
        let message = match next_sse(&mut source, &options).await {
            SseStep::Message(message) => message,
            SseStep::Ended => break,
            SseStep::Aborted => {
                processor.fail(StopReason::Aborted, ABORTED_TEXT).await;
                return;
            }
            SseStep::Failed(text) => {
                processor.fail(StopReason::Error, text).await;
                return;
            }
        };
        let data = message.data.trim();
        if data.is_empty() {
            source.recycle(message);
            continue;
        }
        if data == "[DONE]" {
            source.close();
            break;
        }
        let event = match parse_event(data, &message.event) {
            Ok(Some(event)) => event,
            Ok(None) => continue,
            Err(text) => {
                source.close();
                processor.fail(StopReason::Error, text).await;
                return;
            }
        };
        match processor.process(event).await {
            Ok(Step::Continue) => source.recycle(message),
            Ok(Step::Finished) => {
                source.close();
                break;
            }
            Err(text) => {
                source.close();
                processor.fail(StopReason::Error, text).await;
                return;
            }
        }
    }
    processor.finish().await;
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
