//! HTTP plumbing shared by providers: API keys from the environment, opening an SSE stream with
//! bounded, abortable retries before the first event, and readable HTTP error messages.

use std::time::Duration;

use tokio::time::Instant;

use bytes::{Buf, Bytes};
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::{RequestBuilder, StatusCode};

use crate::sse::{SseDecoder, SseEvent};
use tokio_util::sync::CancellationToken;

use crate::options::{ApiKey, ProviderResponse, StreamOptions};
use crate::types::model::Model;

/// The environment variables that hold a provider's API key, in the order they are tried: pi's
/// `getEnvApiKey` (0.73.1, with the providers pi 1.6 added). Anthropic's OAuth tokens and
/// Bedrock's AWS credentials are not keys oxpi can send; see the README's provider table.
pub fn api_key_env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "openai" => &["OPENAI_API_KEY"],
        "anthropic" => &["ANTHROPIC_API_KEY"],
        "azure-openai-responses" | "azure" => &["AZURE_OPENAI_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "google" => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "zai-coding-cn" => &["ZAI_CODING_CN_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "github-copilot" => &["COPILOT_GITHUB_TOKEN"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        "nvidia" => &["NVIDIA_API_KEY"],
        "baseten" => &["BASETEN_API_KEY"],
        "meta" => &["META_API_KEY"],
        "ant-ling" => &["ANT_LING_API_KEY"],
        "typesafe" => &["TYPESAFE_API_KEY"],
        "radius" => &["RADIUS_API_KEY"],
        "qwen-token-plan" => &["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"],
        "qwen-token-plan-cn" => &[
            "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "qwen-token-plan-individual" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
            "QWEN_TOKEN_PLAN_API_KEY",
        ],
        "qwen-token-plan-individual-cn" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        _ => &[],
    }
}

/// The key from `options`, else from the provider's environment variables.
pub fn resolve_api_key(provider: &str, options: &StreamOptions) -> Option<ApiKey> {
    if let Some(key) = &options.api_key {
        return Some(key.clone());
    }
    api_key_env_vars(provider)
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()))
        .map(ApiKey::new)
}

/// A new HTTP client as every built-in provider uses it ([`super::client::client_builder`]: a
/// 30 s connect timeout, redirects followed only within the request's origin); the error text is
/// sent as the stream's error if building one fails.
pub fn new_client() -> Result<reqwest::Client, String> {
    super::client::client_builder()
        .build()
        .map_err(|e| format!("could not create the HTTP client: {}", error_chain(&e)))
}

/// The API key for a request: from `options` or the provider's variables. A provider that has
/// key variables needs one (the error names them); others (local servers) may go without.
pub fn required_api_key(provider: &str, options: &StreamOptions) -> Result<Option<ApiKey>, String> {
    let key = resolve_api_key(provider, options);
    let env_vars = api_key_env_vars(provider);
    if key.is_none() && !env_vars.is_empty() {
        return Err(format!(
            "No API key for provider {provider}: set {} or pass StreamOptions::api_key",
            env_vars.join(" or ")
        ));
    }
    Ok(key)
}

/// A model's base URL, ready to append a path to: trimmed, without a final `/`, `default` when
/// empty, and each `{NAME}` placeholder (pi's catalogue has them, e.g. Cloudflare's
/// `{CLOUDFLARE_ACCOUNT_ID}`) replaced by that environment variable. An unset variable is an
/// error naming it.
pub fn base_url(model: &Model, default: &str) -> Result<String, String> {
    fill_placeholders(model.base_url.trim(), |name| std::env::var(name).ok())
        .map(|url| match url.trim_end_matches('/') {
            "" => default.trim_end_matches('/').to_string(),
            url => url.to_string(),
        })
        .map_err(|name| {
            format!(
                "the base URL of model {} needs {name}: set that environment variable (or the model's base_url)",
                model.id
            )
        })
}

/// Replaces each `{NAME}` (letters, digits, `_`) in `url` by `lookup(NAME)`; `Err(NAME)` for the
/// first one `lookup` does not know.
///
/// ```
/// use oxpi_ai::providers::http::fill_placeholders;
/// let lookup = |name: &str| (name == "ACCOUNT").then(|| "acme".to_string());
/// assert_eq!(fill_placeholders("https://x/{ACCOUNT}/v1", lookup), Ok("https://x/acme/v1".into()));
/// assert_eq!(fill_placeholders("https://x/{GATEWAY}", lookup), Err("GATEWAY".into()));
/// assert_eq!(fill_placeholders("https://x/{not a name}", lookup), Ok("https://x/{not a name}".into()));
/// ```
pub fn fill_placeholders(
    url: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with('}') {
            let name = &after[..name_len];
            out.push_str(&lookup(name).ok_or_else(|| name.to_string())?);
            rest = &after[name_len + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Why a stream could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// The caller cancelled.
    Aborted,
    /// It failed; the text says why (status and the server's own message where there is one).
    Failed(String),
}

/// Opens an SSE stream, retrying 429, 5xx, timeouts and connection errors with exponential
/// backoff (honouring `Retry-After`) up to `options.max_retries` times. Never retries once the
/// response has been accepted: the generation is never requested twice.
///
/// With [`StreamOptions::deadline`], opening (retries included) and then every read of the
/// stream ([`next_sse`]) stop when the deadline passes.
/// Each HTTP response (every attempt) is shown to [`StreamOptions::on_response`] first.
pub async fn open_event_source(
    build: impl Fn() -> RequestBuilder,
    model: &Model,
    options: &StreamOptions,
    secret: Option<&ApiKey>,
) -> Result<SseSource, OpenError> {
    let (response, deadline) = open_stream(build, model, options, secret, SSE_CONTENT_TYPE).await?;
    Ok(SseSource {
        response: Some(response),
        decoder: SseDecoder::new(),
        unread: Bytes::new(),
        deadline,
    })
}

/// The content type of an SSE body.
pub const SSE_CONTENT_TYPE: &str = "text/event-stream";

/// Like [`open_event_source`] for a body of another streaming content type (Bedrock's binary
/// `application/vnd.amazon.eventstream`): the same retries, status checks, hooks and deadline;
/// the body is read with [`next_bytes`].
pub async fn open_byte_stream(
    build: impl Fn() -> RequestBuilder,
    model: &Model,
    options: &StreamOptions,
    secret: Option<&ApiKey>,
    content_type: &'static str,
) -> Result<ByteSource, OpenError> {
    let (response, deadline) = open_stream(build, model, options, secret, content_type).await?;
    Ok(ByteSource {
        response: Some(response),
        deadline,
    })
}

async fn open_stream(
    build: impl Fn() -> RequestBuilder,
    model: &Model,
    options: &StreamOptions,
    secret: Option<&ApiKey>,
    content_type: &'static str,
) -> Result<(reqwest::Response, Option<Instant>), OpenError> {
    let Some(limit) = options.deadline else {
        return open_with_retries(build, model, options, secret, content_type)
            .await
            .map(|response| (response, None));
    };
    let deadline = Instant::now() + limit;
    let opening = open_with_retries(build, model, options, secret, content_type);
    match tokio::time::timeout_at(deadline, opening).await {
        Ok(Ok(response)) => Ok((response, Some(deadline))),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(OpenError::Failed(deadline_text(limit))),
    }
}

/// The error text when [`StreamOptions::deadline`] passed.
fn deadline_text(limit: Duration) -> String {
    format!(
        "The request did not complete within {:.1}s (deadline)",
        limit.as_secs_f64()
    )
}

async fn open_with_retries(
    build: impl Fn() -> RequestBuilder,
    model: &Model,
    options: &StreamOptions,
    secret: Option<&ApiKey>,
    content_type: &'static str,
) -> Result<reqwest::Response, OpenError> {
    let mut attempt: u32 = 0;
    loop {
        let failure = match try_open(build(), model, options, secret, content_type).await {
            Ok(response) => return Ok(response),
            Err(Attempt::Aborted) => return Err(OpenError::Aborted),
            Err(Attempt::Fatal(text)) => return Err(OpenError::Failed(redact(text, secret))),
            Err(Attempt::Retryable { text, retry_after }) => (text, retry_after),
        };
        let (text, retry_after) = failure;
        if attempt >= options.max_retries {
            let text = if attempt > 0 {
                format!("{text} (after {} retries)", attempt)
            } else {
                text
            };
            return Err(OpenError::Failed(redact(text, secret)));
        }
        let backoff = options
            .retry_base_delay
            .saturating_mul(2u32.saturating_pow(attempt));
        let delay = match retry_after {
            Some(wait) if wait > options.max_retry_delay => {
                return Err(OpenError::Failed(redact(
                    format!(
                        "{text} (the server asked to retry after {:.1}s, more than the {:.1}s allowed by max_retry_delay)",
                        wait.as_secs_f64(),
                        options.max_retry_delay.as_secs_f64()
                    ),
                    secret,
                )))
            }
            Some(wait) => wait,
            None => backoff.min(options.max_retry_delay),
        };
        tracing::debug!(
            attempt,
            ?delay,
            "retrying request: {}",
            redact(text, secret)
        );
        if !sleep_unless_cancelled(delay, &options.cancel).await {
            return Err(OpenError::Aborted);
        }
        attempt += 1;
    }
}

enum Attempt {
    Aborted,
    Fatal(String),
    Retryable {
        text: String,
        retry_after: Option<Duration>,
    },
}

/// Whether this build can speak TLS (feature `rustls` or `native-tls`).
pub const TLS_ENABLED: bool = cfg!(any(feature = "rustls", feature = "native-tls"));

/// The error text for an `https` URL in a build without TLS; `None` when the URL can be reached.
fn missing_tls(url: &reqwest::Url) -> Option<String> {
    (!TLS_ENABLED && url.scheme() == "https").then(|| {
        format!(
            "cannot reach {}: oxpi-ai was built without TLS (enable its feature \"rustls\" or \"native-tls\")",
            url.origin().ascii_serialization()
        )
    })
}

async fn try_open(
    request: RequestBuilder,
    model: &Model,
    options: &StreamOptions,
    secret: Option<&ApiKey>,
    expected_type: &'static str,
) -> Result<reqwest::Response, Attempt> {
    let (client, request) = request.build_split();
    let request =
        request.map_err(|e| Attempt::Fatal(format!("could not build the request: {e}")))?;
    if let Some(text) = missing_tls(request.url()) {
        return Err(Attempt::Fatal(text));
    }
    let requested = request.url().clone();
    let response = tokio::select! {
        biased;
        _ = options.cancel.cancelled() => return Err(Attempt::Aborted),
        response = tokio::time::timeout(options.timeout, client.execute(request)) => response,
    };
    let response = match response {
        Err(_) => {
            return Err(Attempt::Retryable {
                text: format!(
                    "no response within {:.1}s (timeout)",
                    options.timeout.as_secs_f64()
                ),
                retry_after: None,
            })
        }
        Ok(Err(e)) if e.is_builder() => {
            return Err(Attempt::Fatal(format!("could not build the request: {e}")))
        }
        Ok(Err(e)) => {
            return Err(Attempt::Retryable {
                text: format!("connection error: {}", error_chain(&e)),
                retry_after: None,
            })
        }
        Ok(Ok(response)) => response,
    };
    if response.url().origin() != requested.origin() {
        return Err(Attempt::Fatal(super::client::cross_origin_text(
            &requested,
            response.url(),
        )));
    }
    let status = response.status();
    if let Some(hook) = &options.on_response {
        let seen = ProviderResponse {
            status: status.as_u16(),
            headers: header_record(response.headers()),
        };
        let call = (hook.0)(seen, model);
        tokio::select! {
            biased;
            _ = options.cancel.cancelled() => return Err(Attempt::Aborted),
            () = call => {}
        }
    }
    if status.is_redirection() {
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok());
        return Err(Attempt::Fatal(super::client::redirect_text(
            status,
            response.url(),
            location,
        )));
    }
    if !status.is_success() {
        let retry_after = retry_after(response.headers());
        // Redacted before the message is taken out of it and shortened.
        let body = redact(read_body(response).await, secret);
        let text = http_error_text(status, &body);
        return if is_retryable(status) {
            Err(Attempt::Retryable { text, retry_after })
        } else {
            Err(Attempt::Fatal(text))
        };
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !content_type.is_empty() && !content_type.to_ascii_lowercase().starts_with(expected_type) {
        let body = redact(read_body(response).await, secret);
        return Err(Attempt::Fatal(format!(
            "expected an event stream ({expected_type}) but got {status} with content-type {content_type}: {}",
            error_message_from_body(&body)
        )));
    }
    Ok(response)
}

/// Response headers as `name → value` (lowercase names; repeated headers joined with `, `;
/// values that are not text are left out).
pub fn header_record(headers: &HeaderMap) -> std::collections::BTreeMap<String, String> {
    let mut record = std::collections::BTreeMap::<String, String>::new();
    for (name, value) in headers {
        let Ok(value) = value.to_str() else { continue };
        record
            .entry(name.as_str().to_string())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(value);
            })
            .or_insert_with(|| value.to_string());
    }
    record
}

/// Serializes a request body, passing it through [`StreamOptions::on_payload`] when one is set
/// (the hook sees JSON, may replace it, or fail the request with its own text).
pub async fn encode_body(
    request: &impl serde::Serialize,
    model: &Model,
    options: &StreamOptions,
) -> Result<Vec<u8>, OpenError> {
    let encode_error =
        |e: serde_json::Error| OpenError::Failed(format!("could not encode the request: {e}"));
    let Some(hook) = &options.on_payload else {
        return serde_json::to_vec(request).map_err(encode_error);
    };
    let payload = serde_json::to_value(request).map_err(encode_error)?;
    let call = (hook.0)(payload.clone(), model);
    let replaced = tokio::select! {
        biased;
        _ = options.cancel.cancelled() => return Err(OpenError::Aborted),
        outcome = call => outcome
            .map_err(|e| OpenError::Failed(format!("on_payload refused the request: {e}")))?,
    };
    serde_json::to_vec(&replaced.unwrap_or(payload)).map_err(encode_error)
}

/// The error text of a request the caller cancelled.
pub const ABORTED_TEXT: &str = "Request was aborted";

/// `stop_reason` and text of a request that could not be opened.
pub fn open_error_parts(error: OpenError) -> (crate::types::message::StopReason, String) {
    match error {
        OpenError::Aborted => (
            crate::types::message::StopReason::Aborted,
            ABORTED_TEXT.to_string(),
        ),
        OpenError::Failed(text) => (crate::types::message::StopReason::Error, text),
    }
}

/// An open event stream: the response body, decoded as it arrives by [`SseDecoder`], one
/// event at a time.
#[derive(Debug)]
pub struct SseSource {
    response: Option<reqwest::Response>,
    decoder: SseDecoder,
    /// What is left of the last network read.
    unread: Bytes,
    /// When the whole request must be over ([`StreamOptions::deadline`]).
    deadline: Option<Instant>,
}

impl SseSource {
    /// Hands back an event the caller is done with (see [`SseDecoder::recycle`]).
    pub fn recycle(&mut self, event: SseEvent) {
        self.decoder.recycle(event);
    }

    /// Stops reading and drops the connection.
    pub fn close(&mut self) {
        self.response = None;
        self.unread = Bytes::new();
    }
}

/// True for 408, 409, 429 and 5xx (including Anthropic's 529).
pub fn is_retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
}

/// The longest wait a server can ask for that is taken as given; a longer one (up to any
/// absurd value: `1e30`, a date centuries away) counts as this, which is more than any
/// `max_retry_delay` a caller would set, so the request fails at once saying so.
pub const MAX_SERVER_DELAY: Duration = Duration::from_secs(86_400);

/// The wait a server asked for: `retry-after-ms` (milliseconds, OpenAI's), else `Retry-After`
/// in seconds or as an HTTP-date. Values that are negative, not numbers, or not finite are
/// ignored; every wait is clamped to [`MAX_SERVER_DELAY`]; a date in the past is no wait.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, std::time::SystemTime::now())
}

fn retry_after_at(headers: &HeaderMap, now: std::time::SystemTime) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let seconds = |value: f64| {
        (value.is_finite() && value >= 0.0)
            .then(|| Duration::from_secs_f64(value.min(MAX_SERVER_DELAY.as_secs_f64())))
    };
    if let Some(wait) = get("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|ms| seconds(ms / 1000.0))
    {
        return Some(wait);
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return seconds(secs);
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(MAX_SERVER_DELAY),
    )
}

const MAX_ERROR_BODY: usize = 64 * 1024;

async fn read_body(response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            body.truncate(MAX_ERROR_BODY);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// `401 Incorrect API key provided…`: the status code and the server's own message.
pub fn http_error_text(status: StatusCode, body: &str) -> String {
    let message = error_message_from_body(body);
    if message.is_empty() {
        format!(
            "{} {} (no body)",
            status.as_u16(),
            status.canonical_reason().unwrap_or("error")
        )
    } else {
        format!("{} {}", status.as_u16(), message)
    }
}

/// The `error.message` (or `message`, or `error`) of a JSON error body, else the body itself,
/// shortened to 1,000 characters.
pub fn error_message_from_body(body: &str) -> String {
    let body = body.trim();
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let v = match &v {
                serde_json::Value::Array(items) => items.first().cloned().unwrap_or_default(),
                _ => v,
            };
            let error = v.get("error").cloned().unwrap_or_default();
            error
                .get("message")
                .and_then(|m| m.as_str())
                .or_else(|| error.as_str())
                .or_else(|| v.get("message").and_then(|m| m.as_str()))
                .or_else(|| v.get("detail").and_then(|m| m.as_str()))
                .map(str::to_string)
        });
    let text = from_json.unwrap_or_else(|| body.to_string());
    if text.chars().count() > 1000 {
        let cut: String = text.chars().take(1000).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// An error and its causes, joined with `: `.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// What a redacted key is replaced with.
const REDACTED: &str = "<redacted>";

/// Shortest start of a key that is redacted where a text was cut right inside the key.
const MIN_REDACTED_PREFIX: usize = 8;

/// Removes the API key from a text (servers sometimes echo it back). Every provider's error text
/// passes through here ([`ReplyBuilder::fail`](crate::reply::ReplyBuilder::fail)). Besides the
/// whole key, the start of the key (8 characters or more) is removed where the text ends or was
/// cut (`…`), so a long error body shortened inside the key shows none of it.
///
/// ```
/// use oxpi_ai::options::ApiKey;
/// use oxpi_ai::providers::http::redact;
///
/// let key = ApiKey::new("sk-0123456789abcdef");
/// assert_eq!(redact("bad key sk-0123456789abcdef".into(), Some(&key)), "bad key <redacted>");
/// assert_eq!(redact("… key sk-0123456…".into(), Some(&key)), "… key <redacted>…");
/// ```
pub fn redact(text: String, secret: Option<&ApiKey>) -> String {
    let Some(key) = secret.map(ApiKey::expose) else {
        return text;
    };
    if key.len() < 4 {
        return text;
    }
    let mut text = if text.contains(key) {
        text.replace(key, REDACTED)
    } else {
        text
    };
    if key.len() <= MIN_REDACTED_PREFIX {
        return text;
    }
    // Where the text was cut: before each `…`, and its end. From the last, so earlier indices
    // stay valid as ranges are replaced.
    let mut cuts: Vec<usize> = text.match_indices('…').map(|(at, _)| at).collect();
    cuts.push(text.len());
    for &cut in cuts.iter().rev() {
        let before = &text[..cut];
        let prefix = (MIN_REDACTED_PREFIX..key.len())
            .rev()
            .filter(|&n| key.is_char_boundary(n))
            .find(|&n| before.ends_with(&key[..n]));
        if let Some(n) = prefix {
            text.replace_range(cut - n..cut, REDACTED);
        }
    }
    text
}

/// Sleeps; `false` when cancelled first.
pub async fn sleep_unless_cancelled(delay: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => false,
        _ = tokio::time::sleep(delay) => true,
    }
}

/// The request headers: JSON content type, the model's headers, the options' headers, then the
/// authentication header (marked sensitive so it never shows in debug output).
pub fn request_headers(
    model: &crate::types::model::Model,
    options: &StreamOptions,
    auth: Option<(HeaderName, String)>,
) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in model.headers.iter().chain(options.headers.iter()) {
        match (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            (Ok(name), Ok(value)) => {
                headers.insert(name, value);
            }
            _ => return Err(format!("invalid HTTP header {name:?}")),
        }
    }
    if let Some((name, value)) = auth {
        let mut value = HeaderValue::try_from(value)
            .map_err(|_| "the API key contains characters not allowed in a header".to_string())?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Adds the session id under each of `names` that the headers do not set already (the model's
/// and the options' own headers win), as pi's cache-routing headers.
pub fn add_session_headers(
    headers: &mut HeaderMap,
    names: &[&'static str],
    session: &str,
) -> Result<(), String> {
    let value = HeaderValue::from_str(session)
        .map_err(|_| "the session id contains characters not allowed in a header".to_string())?;
    for name in names {
        headers
            .entry(HeaderName::from_static(name))
            .or_insert(value.clone());
    }
    Ok(())
}

/// `{base}{path}` when the base URL ends in `/v1`, else `{base}/v1{path}`: pi's catalogue gives
/// Anthropic- and Mistral-format endpoints as hosts, whose SDKs add `/v1`.
///
/// ```
/// use oxpi_ai::providers::http::versioned_url;
/// assert_eq!(versioned_url("https://api.anthropic.com", "/messages"), "https://api.anthropic.com/v1/messages");
/// assert_eq!(versioned_url("http://127.0.0.1:9/v1/", "/messages"), "http://127.0.0.1:9/v1/messages");
/// ```
pub fn versioned_url(base: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}{path}")
    } else {
        format!("{base}/v1{path}")
    }
}

/// An environment variable's value, trimmed; `None` when it is unset or blank.
pub fn env_value(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The provider whose gateway takes the key in its own header.
pub const CLOUDFLARE_AI_GATEWAY: &str = "cloudflare-ai-gateway";

/// The authentication header of a request: Cloudflare's AI Gateway takes the key as
/// `cf-aig-authorization: Bearer …` (as pi sends it) in place of the API's own header; every
/// other provider gets `default`.
pub fn auth_header(
    provider: &str,
    key: &ApiKey,
    default: impl FnOnce(&ApiKey) -> (HeaderName, String),
) -> (HeaderName, String) {
    if provider == CLOUDFLARE_AI_GATEWAY {
        (
            HeaderName::from_static("cf-aig-authorization"),
            format!("Bearer {}", key.expose()),
        )
    } else {
        default(key)
    }
}

/// One step of reading an open event stream.
#[derive(Debug)]
pub enum SseStep {
    /// An event.
    Message(SseEvent),
    /// The body ended.
    Ended,
    /// The caller cancelled; the source is closed.
    Aborted,
    /// The stream failed or stalled; the source is closed. The text says why.
    Failed(String),
}

/// Waits for the next event, honouring cancellation, the idle timeout (the longest time without
/// a single byte, so a large event arriving slowly is not a stall) and the request's deadline.
pub async fn next_sse(source: &mut SseSource, options: &StreamOptions) -> SseStep {
    loop {
        if !source.unread.is_empty() {
            let mut input: &[u8] = &source.unread;
            let decoded = source.decoder.next_event(&mut input);
            let consumed = source.unread.len() - input.len();
            source.unread.advance(consumed);
            match decoded {
                Ok(Some(event)) => return SseStep::Message(event),
                Ok(None) => {}
                Err(e) => {
                    source.close();
                    return SseStep::Failed(format!("The stream was interrupted: {e}"));
                }
            }
        }
        let deadline = source.deadline;
        let Some(response) = source.response.as_mut() else {
            return SseStep::Ended;
        };
        match read_chunk(response, deadline, options).await {
            Chunk::Bytes(bytes) => source.unread = bytes,
            Chunk::Ended => source.response = None,
            Chunk::Aborted => {
                source.close();
                return SseStep::Aborted;
            }
            Chunk::Failed(text) => {
                source.close();
                return SseStep::Failed(text);
            }
        }
    }
}

/// An open streaming body read as bytes (see [`open_byte_stream`]).
#[derive(Debug)]
pub struct ByteSource {
    response: Option<reqwest::Response>,
    deadline: Option<Instant>,
}

impl ByteSource {
    /// Stops reading and drops the connection.
    pub fn close(&mut self) {
        self.response = None;
    }
}

/// One step of reading a [`ByteSource`].
#[derive(Debug)]
pub enum ByteStep {
    /// The next bytes of the body.
    Bytes(Bytes),
    /// The body ended.
    Ended,
    /// The caller cancelled; the source is closed.
    Aborted,
    /// The stream failed or stalled; the source is closed. The text says why.
    Failed(String),
}

/// Waits for the next bytes, honouring cancellation, the idle timeout and the deadline, as
/// [`next_sse`] does.
pub async fn next_bytes(source: &mut ByteSource, options: &StreamOptions) -> ByteStep {
    let deadline = source.deadline;
    let Some(response) = source.response.as_mut() else {
        return ByteStep::Ended;
    };
    let step = match read_chunk(response, deadline, options).await {
        Chunk::Bytes(bytes) => return ByteStep::Bytes(bytes),
        Chunk::Ended => ByteStep::Ended,
        Chunk::Aborted => ByteStep::Aborted,
        Chunk::Failed(text) => ByteStep::Failed(text),
    };
    source.close();
    step
}

enum Chunk {
    Bytes(Bytes),
    Ended,
    Aborted,
    Failed(String),
}

async fn read_chunk(
    response: &mut reqwest::Response,
    deadline: Option<Instant>,
    options: &StreamOptions,
) -> Chunk {
    let past_deadline = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    let chunk = tokio::select! {
        biased;
        _ = options.cancel.cancelled() => return Chunk::Aborted,
        () = past_deadline => {
            return Chunk::Failed(deadline_text(options.deadline.unwrap_or_default()));
        }
        chunk = tokio::time::timeout(options.idle_timeout, response.chunk()) => chunk,
    };
    match chunk {
        Err(_) => Chunk::Failed(format!(
            "The stream stalled: no data for {:.1}s (idle_timeout)",
            options.idle_timeout.as_secs_f64()
        )),
        Ok(Err(e)) => Chunk::Failed(format!("The stream was interrupted: {}", error_chain(&e))),
        Ok(Ok(None)) => Chunk::Ended,
        Ok(Ok(Some(bytes))) => Chunk::Bytes(bytes),
    }
}

/// A stream chunk quoted for an error message (cut to 500 characters).
pub fn quote_chunk(data: &str) -> String {
    const MAX: usize = 500;
    if data.chars().count() <= MAX {
        data.to_string()
    } else {
        let cut: String = data.chars().take(MAX).collect();
        format!("{cut}… ({} bytes)", data.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    /// Absurd server-given delays (these panicked in `Duration::from_secs_f64`) are clamped;
    /// HTTP-dates count from now; nonsense is ignored.
    #[test]
    fn server_delays_are_clamped_and_dates_understood() {
        let now = httpdate::parse_http_date("Tue, 01 Dec 2026 10:00:00 GMT").unwrap();
        let day = MAX_SERVER_DELAY;
        type Headers<'a> = &'a [(&'static str, &'a str)];
        let cases: [(Headers<'_>, Option<Duration>); 12] = [
            (&[("retry-after-ms", "1e30")], Some(day)),
            (
                &[("retry-after-ms", "1500")],
                Some(Duration::from_millis(1500)),
            ),
            (&[("retry-after", "1e300")], Some(day)),
            (&[("retry-after", "18446744073709551616")], Some(day)),
            (&[("retry-after", "3")], Some(Duration::from_secs(3))),
            (&[("retry-after", "-1")], None),
            (&[("retry-after", "NaN")], None),
            (&[("retry-after", "inf")], None),
            (
                &[("retry-after", "Tue, 01 Dec 2026 10:00:30 GMT")],
                Some(Duration::from_secs(30)),
            ),
            (
                &[("retry-after", "Tue, 01 Dec 2026 09:00:00 GMT")],
                Some(Duration::ZERO),
            ),
            (
                &[("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT")],
                Some(day),
            ),
            // A bad millisecond value falls back to Retry-After.
            (
                &[("retry-after-ms", "soon"), ("retry-after", "2")],
                Some(Duration::from_secs(2)),
            ),
        ];
        for (pairs, expected) in cases {
            assert_eq!(retry_after_at(&headers(pairs), now), expected, "{pairs:?}");
        }
    }

    #[test]
    fn redact_removes_the_key_and_its_cut_off_start() {
        let key = ApiKey::new("sk-abcdefghijklmnop");
        let cases = [
            ("no key here", "no key here"),
            (
                "a sk-abcdefghijklmnop b sk-abcdefghijklmnop",
                "a <redacted> b <redacted>",
            ),
            // Cut inside the key, at the end or before `…` (twice in one text).
            ("ends in sk-abcdefgh", "ends in <redacted>"),
            ("x sk-abcdefghij… (99 bytes)", "x <redacted>… (99 bytes)"),
            (
                "a sk-abcdefghi… b sk-abcdefghijkl…",
                "a <redacted>… b <redacted>…",
            ),
            // Fewer than 8 characters of the key, or not at a cut: left alone.
            ("ends in sk-abcd", "ends in sk-abcd"),
            (
                "sk-abcdefgh is mentioned mid-text",
                "sk-abcdefgh is mentioned mid-text",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(redact(text.to_string(), Some(&key)), expected, "{text}");
        }
        assert_eq!(redact("sk-abcdefgh".to_string(), None), "sk-abcdefgh");
        // A key too short to redact safely is left to the exact match only.
        let short = ApiKey::new("abc");
        assert_eq!(redact("abc…".to_string(), Some(&short)), "abc…");
    }
}
