//! Which HTTP error responses are asked again (pi 1.6's provider retry, which mirrors the
//! OpenAI and Anthropic SDKs, and its agent retry's quota rule):
//!
//! 1. the server's `x-should-retry: true` or `false` decides first;
//! 2. else a 408, 409, 429 or 5xx is retried ([`crate::failure::is_retryable_status`]),
//! 3. except a limit that waiting does not lift: an exhausted quota, budget or billing limit
//!    (OpenAI's `insufficient_quota`, a plan's usage limit, Z.ai's code 1308), which a server
//!    reports as a 429 like a transient rate limit.
//!
//! How long to wait is `open::retry_after` (`retry-after-ms`, `Retry-After` in seconds or as an
//! HTTP-date), else exponential backoff.

use std::sync::LazyLock;

use regex::Regex;
use reqwest::header::HeaderMap;

/// Limits that waiting does not lift (pi's non-retryable provider limit patterns).
static EXHAUSTED: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)GoUsageLimitError|FreeUsageLimitError|Monthly usage limit reached|available balance",
        r"|insufficient_quota|out of budget|quota exceeded|billing",
        r"|subscription_sharing_usage_limit_exceeded",
        r"|subscription_sharing_workplace_individual_usage_limit_exceeded",
        r#"|"code"\s*:\s*"?1308(?:[^0-9]|$)"#,
    ))
    .map_err(|e| tracing::error!("the quota pattern does not compile: {e}"))
    .ok()
});

/// Whether an error text reports an exhausted quota, budget or billing limit.
pub fn is_exhausted_limit(text: &str) -> bool {
    EXHAUSTED.as_ref().is_some_and(|re| re.is_match(text))
}

/// The server's `x-should-retry` answer: `Some(true)`/`Some(false)` for `true`/`false`, `None`
/// when it sent none (or something else).
pub fn should_retry_header(headers: &HeaderMap) -> Option<bool> {
    match headers
        .get("x-should-retry")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
    {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    }
}

/// Whether an HTTP error response is asked again (see the module docs).
pub fn retry_http_error(status: u16, headers: &HeaderMap, body: &str) -> bool {
    if let Some(answer) = should_retry_header(headers) {
        return answer;
    }
    crate::failure::is_retryable_status(status) && !is_exhausted_limit(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn the_header_decides_then_the_status_then_the_quota() {
        let none = HeaderMap::new();
        let mut yes = HeaderMap::new();
        yes.insert("x-should-retry", HeaderValue::from_static("true"));
        let mut no = HeaderMap::new();
        no.insert("x-should-retry", HeaderValue::from_static("false"));
        assert!(retry_http_error(429, &none, "slow down"));
        assert!(!retry_http_error(
            429,
            &none,
            r#"{"code":"insufficient_quota"}"#
        ));
        assert!(!retry_http_error(
            429,
            &none,
            r#"{"code":1308,"msg":"limit"}"#
        ));
        assert!(retry_http_error(429, &none, r#"{"code":13080}"#));
        assert!(!retry_http_error(400, &none, "bad"));
        assert!(retry_http_error(400, &yes, "bad"));
        assert!(!retry_http_error(503, &no, "down"));
    }
}
