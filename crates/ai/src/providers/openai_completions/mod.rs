//! OpenAI Chat Completions (`openai-completions`) and every compatible server: OpenAI,
//! OpenRouter, Groq, DeepSeek, xAI, Mistral, Cerebras, Together, llama.cpp, Ollama, vLLM,
//! LM Studio.
//!
//! - [`compat`]: per-server differences, detected from the base URL, overridable per model.
//! - [`wire`]: request and chunk types.
//! - [`convert`]: context → request.
//! - [`reader`]: chunk text → chunks, skipping the envelope a chunk repeats.
//! - [`stream`]: chunks → events.
//! - [`text_tool_calls`]: tool calls written as text by small local models.

pub mod compat;
pub mod convert;
pub mod reader;
pub mod stream;
pub mod text_tool_calls;
pub mod wire;

use reqwest::header::AUTHORIZATION;

use self::compat::OpenAiCompat;
use self::reader::ChunkReader;
use self::stream::ChunkProcessor;
use super::http::{
    add_session_headers, auth_header, base_url, encode_body, next_sse, open_error_parts,
    open_event_source, quote_chunk, request_headers, required_api_key, OpenError, SseStep,
    ABORTED_TEXT,
};
use crate::options::StreamOptions;
use crate::reply::{EventSink, ReplyBuilder};
use crate::types::context::Context;
use crate::types::message::StopReason;
use crate::types::model::{Model, API_OPENAI_COMPLETIONS};

http_provider!(
    /// The Chat Completions provider. Cloning shares the HTTP connection pool.
    OpenAiCompletionsProvider,
    API_OPENAI_COMPLETIONS,
    run
);

async fn run(
    client: Result<reqwest::Client, String>,
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
    let compat = match OpenAiCompat::for_model(&model) {
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
    let request = convert::build_request(&model, &context, &options, &compat);
    let tool_names: Vec<String> = context.tools.iter().map(|t| t.name.clone()).collect();
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
    let url = match base_url(&model, "") {
        Ok(base) => format!("{base}/chat/completions"),
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let auth = key.as_ref().map(|key| {
        auth_header(&model.provider, key, |key| {
            (AUTHORIZATION, format!("Bearer {}", key.expose()))
        })
    });
    let mut headers = match request_headers(&model, &options, auth) {
        Ok(headers) => headers,
        Err(e) => {
            out.fail(StopReason::Error, e).await;
            return;
        }
    };
    let session = options.session_id.as_deref().filter(|_| {
        compat.send_session_affinity_headers
            && options.resolved_cache_retention() != crate::options::CacheRetention::None
    });
    if let Some(session) = session {
        let names = ["session_id", "x-client-request-id", "x-session-affinity"];
        if let Err(e) = add_session_headers(&mut headers, &names, session) {
            out.fail(StopReason::Error, e).await;
            return;
        }
    }
    let prepared = PreparedChat {
        url,
        headers,
        body,
        key,
        tool_names,
        compat,
    };
    stream_chat(client, prepared, &model, &options, out, None).await;
}

/// A Chat Completions-style request ready to send (Mistral's provider builds one too).
pub(crate) struct PreparedChat {
    /// Where it goes.
    pub(crate) url: String,
    /// Its headers (authentication included).
    pub(crate) headers: reqwest::header::HeaderMap,
    /// Its JSON body.
    pub(crate) body: Vec<u8>,
    /// The key, for redaction.
    pub(crate) key: Option<crate::options::ApiKey>,
    /// The tools offered (for tool calls written as text).
    pub(crate) tool_names: Vec<String>,
    /// How the chunks are read.
    pub(crate) compat: OpenAiCompat,
}

/// Rewrites a chunk that the Chat Completions reader cannot take as it is (`None`: unchanged).
pub(crate) type ChunkRewrite = fn(&str) -> Option<String>;

/// Sends a prepared request and turns its chunks into reply events.
pub(crate) async fn stream_chat(
    client: reqwest::Client,
    prepared: PreparedChat,
    model: &Model,
    options: &StreamOptions,
    out: ReplyBuilder,
    rewrite: Option<ChunkRewrite>,
) {
    let PreparedChat {
        url,
        headers,
        body,
        key,
        tool_names,
        compat,
    } = prepared;
    let build = || {
        client
            .post(&url)
            .headers(headers.clone())
            .body(body.clone())
    };

    let mut processor = ChunkProcessor::new(out, model, &compat, tool_names);
    let mut reader = ChunkReader::new();
    let mut source = match open_event_source(build, model, options, key.as_ref()).await {
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
        let event = match next_sse(&mut source, options).await {
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
        let data = event.data.trim();
        if data == "[DONE]" {
            source.close();
            break;
        }
        if data.is_empty() {
            source.recycle(event);
            continue;
        }
        let rewritten = rewrite.and_then(|rewrite| rewrite(data));
        let data = rewritten.as_deref().unwrap_or(data);
        let mut chunk = match reader.read(data) {
            Ok(chunk) => chunk,
            Err(e) => {
                source.close();
                let text = format!(
                    "Could not parse a stream chunk ({e}): {}",
                    quote_chunk(data)
                );
                processor.fail(StopReason::Error, text).await;
                return;
            }
        };
        if let Err(text) = processor.process(&mut chunk).await {
            source.close();
            processor.fail(StopReason::Error, text).await;
            return;
        }
        drop(chunk);
        drop(rewritten);
        source.recycle(event);
    }
    processor.finish().await;
}
