//! Opening a streaming response: bounded, abortable retries of 408, 409, 429, 5xx, timeouts
//! and connection errors before the first byte (as `retry_rules` decides: `x-should-retry`
//! first, never an exhausted quota; honouring `Retry-After`, clamped), the
//! `on_response` hook on every attempt, the deadline, and readable error texts. Never retries
//! once a response was accepted: a generation is never requested twice.

use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use reqwest::RequestBuilder;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[cfg(feature = "bedrock")]
use super::read::ByteSource;
use super::read::SseSource;
use crate::diagnostics::error_chain;
use crate::failure::{Failure, FailureKind};
use crate::options::{ApiKey, ProviderResponse, StreamOptions};
use crate::providers::error_text::{error_message_from_body, http_error_text};
use crate::providers::headers::header_record;
use crate::secret::redact;
use crate::types::model::Model;

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
) -> Result<SseSource, Failure> {
    let (response, deadline) = open_stream(build, model, options, secret, SSE_CONTENT_TYPE).await?;
    Ok(SseSource::new(response, deadline))
}

/// The content type of an SSE body.
pub const SSE_CONTENT_TYPE: &str = "text/event-stream";

#[cfg(feature = "bedrock")]
/// Like [`open_event_source`] for a body of another streaming content type (Bedrock's binary
/// `application/vnd.amazon.eventstream`): the same retries, status checks, hooks and deadline;
/// the body is read with [`next_bytes`].
pub async fn open_byte_stream(
    build: impl Fn() -> RequestBuilder,
    model: &Model,
    options: &StreamOptions,
    secret: Option<&ApiKey>,
    content_type: &'static str,
) -> Result<ByteSource, Failure> {
    let (response, deadline) = open_stream(build, model, options, secret, content_type).await?;
    Ok(ByteSource::new(response, deadline))
}

async fn open_stream(
    build: impl Fn() -> RequestBuilder,
    model: &Model,
    options: &StreamOptions,
    secret: Option<&ApiKey>,
    content_type: &'static str,
) -> Result<(reqwest::Response, Option<Instant>), Failure> {
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
        Err(_) => Err(Failure::new(FailureKind::Deadline, deadline_text(limit))),
    }
}

/// The error text when [`StreamOptions::deadline`] passed.
pub(super) fn deadline_text(limit: Duration) -> String {
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
) -> Result<reqwest::Response, Failure> {
    let mut attempt: u32 = 0;
    loop {
        let failure = match try_open(build(), model, options, secret, content_type).await {
            Ok(response) => return Ok(response),
            Err(Attempt::Fatal(failure)) => return Err(failure.map_text(|t| redact(t, secret))),
            Err(Attempt::Retryable {
                failure,
                retry_after,
            }) => (failure, retry_after),
        };
        let (failure, retry_after) = failure;
        if attempt >= options.max_retries {
            return Err(failure.map_text(|text| {
                let text = if attempt > 0 {
                    format!("{text} (after {attempt} retries)")
                } else {
                    text
                };
                redact(text, secret)
            }));
        }
        let backoff = options
            .retry_base_delay
            .saturating_mul(2u32.saturating_pow(attempt));
        let delay = match retry_after {
            Some(wait) if wait > options.max_retry_delay => {
                return Err(failure.map_text(|text| {
                    redact(
                        format!(
                            "{text} (the server asked to retry after {:.1}s, more than the {:.1}s allowed by max_retry_delay)",
                            wait.as_secs_f64(),
                            options.max_retry_delay.as_secs_f64()
                        ),
                        secret,
                    )
                }))
            }
            Some(wait) => wait,
            None => backoff.min(options.max_retry_delay),
        };
        tracing::debug!(
            attempt,
            ?delay,
            "retrying request: {}",
            redact(failure.text, secret)
        );
        if !sleep_unless_cancelled(delay, &options.cancel).await {
            return Err(Failure::aborted());
        }
        attempt += 1;
    }
}

enum Attempt {
    Fatal(Failure),
    Retryable {
        failure: Failure,
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
    let request = request.map_err(|e| {
        Attempt::Fatal(Failure::config(format!("could not build the request: {e}")))
    })?;
    if let Some(text) = missing_tls(request.url()) {
        return Err(Attempt::Fatal(Failure::config(text)));
    }
    let requested = request.url().clone();
    let response = tokio::select! {
        biased;
        _ = options.cancel.cancelled() => return Err(Attempt::Fatal(Failure::aborted())),
        response = tokio::time::timeout(options.timeout, client.execute(request)) => response,
    };
    let response = match response {
        Err(_) => {
            return Err(Attempt::Retryable {
                failure: Failure::new(
                    FailureKind::Timeout,
                    format!(
                        "no response within {:.1}s (timeout)",
                        options.timeout.as_secs_f64()
                    ),
                ),
                retry_after: None,
            })
        }
        Ok(Err(e)) if e.is_builder() => {
            return Err(Attempt::Fatal(Failure::config(format!(
                "could not build the request: {e}"
            ))))
        }
        // Too many redirects within the origin: asking again loops again. The URL (a path
        // and query the server chose) is left out.
        Ok(Err(e)) if e.is_redirect() => {
            return Err(Attempt::Fatal(Failure::config(format!(
                "the server redirected the request more than {} times",
                crate::providers::client::MAX_REDIRECTS
            ))))
        }
        Ok(Err(e)) => {
            return Err(Attempt::Retryable {
                failure: Failure::new(
                    FailureKind::Connection,
                    format!(
                        "connection error: {}{}",
                        error_chain(&e),
                        local_server_hint(model, e.is_connect())
                    ),
                ),
                retry_after: None,
            })
        }
        Ok(Ok(response)) => response,
    };
    if response.url().origin() != requested.origin() {
        return Err(Attempt::Fatal(Failure::config(
            crate::providers::client::cross_origin_text(&requested, response.url()),
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
            _ = options.cancel.cancelled() => return Err(Attempt::Fatal(Failure::aborted())),
            () = call => {}
        }
    }
    if status.is_redirection() {
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok());
        return Err(Attempt::Fatal(Failure::config(
            crate::providers::client::redirect_text(status, response.url(), location),
        )));
    }
    if !status.is_success() {
        let retry_after = retry_after(response.headers());
        let headers = response.headers().clone();
        // Redacted before the message is taken out of it and shortened.
        let body = redact(read_body(response).await, secret);
        let retryable = super::retry_rules::retry_http_error(status.as_u16(), &headers, &body);
        let failure = Failure::new(
            FailureKind::Http {
                status: status.as_u16(),
                retryable,
            },
            http_error_text(status, &body),
        );
        return if retryable {
            Err(Attempt::Retryable {
                failure,
                retry_after,
            })
        } else {
            Err(Attempt::Fatal(failure))
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
        return Err(Attempt::Fatal(Failure::parse(format!(
            "expected an event stream ({expected_type}) but got {status} with content-type {content_type}: {}",
            error_message_from_body(&body)
        ))));
    }
    Ok(response)
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

/// Sleeps; `false` when cancelled first.
pub async fn sleep_unless_cancelled(delay: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => false,
        _ = tokio::time::sleep(delay) => true,
    }
}

/// What a refused connection to the embedded model means: its server (`oxpi_local`'s
/// `LocalServer`, which names its models' provider `local`) has stopped, most often because
/// the handle was dropped while its model was still in use.
pub(crate) fn local_server_hint(model: &Model, connect_failed: bool) -> String {
    if model.provider != "local" || !connect_failed {
        return String::new();
    }
    format!(
        " (the embedded model's server at {} is not running: it stops when the LocalServer \
         returned by oxpi_local::start is dropped, so keep that value alive as long as its \
         model is used, e.g. `let server = oxpi_local::start(..).await?; let model = \
         server.model();`)",
        model.base_url
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use reqwest::header::HeaderValue;

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
}
