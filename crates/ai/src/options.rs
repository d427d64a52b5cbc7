//! Options for one streaming request, and the secret API key type.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// An API key. `Debug` and `Display` never show it; use [`ApiKey::expose`] where it is sent.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for ApiKey {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for ApiKey {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

/// How much the model should reason, for models that support it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningLevel {
    /// Minimal reasoning.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high, where supported.
    Xhigh,
}

impl ReasoningLevel {
    /// The lowercase name (`low`, `medium`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
        }
    }
}

/// Options for one request. `Default` gives: no key (the provider's env var is used), 2 retries,
/// 60 s cap on a retry wait, 120 s to get response headers, 300 s idle gap allowed between events,
/// no overall deadline.
#[derive(Debug, Clone)]
pub struct StreamOptions {
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Output token limit. `None` leaves it to the server, except where the API requires one
    /// (Anthropic), which then gets the model's `max_tokens`.
    pub max_tokens: Option<u64>,
    /// API key; when `None` the provider reads its usual environment variable.
    pub api_key: Option<ApiKey>,
    /// Extra HTTP headers.
    pub headers: BTreeMap<String, String>,
    /// Cancels the request; the stream then ends with `aborted`.
    pub cancel: CancellationToken,
    /// Longest wait for the response headers of one attempt.
    pub request_timeout: Duration,
    /// Longest gap between two stream events before the stream is treated as stalled.
    pub idle_timeout: Duration,
    /// Retries after 429, 5xx or a connection error before the first event.
    pub max_retries: u32,
    /// First backoff delay; doubled on each retry.
    pub retry_base_delay: Duration,
    /// Longest single retry wait; a longer `Retry-After` fails the request instead.
    pub max_retry_delay: Duration,
    /// Reasoning effort for reasoning models.
    pub reasoning: Option<ReasoningLevel>,
    /// Longest time the whole request may take, from the first attempt (retries and their
    /// waits included) to the stream's last event; the reply then ends with an error. `None`
    /// (the default) sets no bound: a slow but live stream may go on for as long as it sends
    /// something within `idle_timeout` (keep-alive comments such as `: ping` count), as pi's.
    pub deadline: Option<Duration>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            temperature: None,
            max_tokens: None,
            api_key: None,
            headers: BTreeMap::new(),
            cancel: CancellationToken::new(),
            request_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(300),
            max_retries: 2,
            retry_base_delay: Duration::from_millis(500),
            max_retry_delay: Duration::from_secs(60),
            reasoning: None,
            deadline: None,
        }
    }
}
