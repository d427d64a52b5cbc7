//! Retrying a failed turn: [`RetryPolicy`] (pi-ai 1.6's, applied to every turn as pi's coding
//! agent does) and [`is_retryable_assistant_error`], which reads the reply's typed
//! [`FailureKind`] first and pi's text patterns where the kind does not settle it.

use std::sync::LazyLock;
use std::time::Duration;

use oxpi_ai::{AssistantMessage, FailureKind, StopReason};
use regex::Regex;

/// pi's cap on one retry delay (`DEFAULT_MAX_AGENT_RETRY_DELAY_MS`).
pub const DEFAULT_MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

/// How a failed turn is retried (pi-ai's `RetryPolicy`): at most `max_retries` more requests
/// (the first request is not a retry), waiting `base_delay · 2^(n−1)` before the n-th, capped at
/// `max_delay`, no jitter. Only replies [`is_retryable_assistant_error`] accepts are retried,
/// never a context overflow or an aborted reply. Off (`None` on
/// [`AgentOptions::retry`](crate::AgentOptions::retry)) by default, as in pi-agent-core.
///
/// ```
/// use std::time::Duration;
/// use oxpi_agent_core::RetryPolicy;
///
/// // pi's coding agent: 3 retries, 2 s base, 60 s cap.
/// let policy = RetryPolicy::new(3, Duration::from_secs(2));
/// assert_eq!(policy.delay(1), Duration::from_secs(2));
/// assert_eq!(policy.delay(3), Duration::from_secs(8));
/// assert_eq!(policy.delay(9), Duration::from_secs(60));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Most retries of one turn.
    pub max_retries: u32,
    /// The first delay.
    pub base_delay: Duration,
    /// The longest delay (pi's `maxAgentDelayMs`, default 60 s).
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// `max_retries` retries starting at `base_delay`, capped at 60 s.
    pub fn new(max_retries: u32, base_delay: Duration) -> Self {
        Self {
            max_retries,
            base_delay,
            max_delay: DEFAULT_MAX_RETRY_DELAY,
        }
    }

    /// Sets the cap on one delay.
    pub fn with_max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }

    /// The wait before retry number `attempt` (1-based; pi's `retryDelayMs`).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32
            .checked_pow(attempt.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.base_delay
            .checked_mul(factor)
            .unwrap_or(Duration::MAX)
            .min(self.max_delay)
    }
}

/// Limits that waiting does not lift (pi's non-retryable patterns, checked first).
static EXHAUSTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)GoUsageLimitError|FreeUsageLimitError|Monthly usage limit reached|available balance",
        r"|insufficient_quota|out of budget|quota exceeded|billing",
        r"|subscription_sharing_usage_limit_exceeded",
        r"|subscription_sharing_workplace_individual_usage_limit_exceeded",
        r#"|"code"\s*:\s*"?1308(?:[^0-9]|$)"#,
    ))
    .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// pi's retryable patterns (its look-arounds written as explicit boundaries).
static RETRYABLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)overloaded|server_busy|servers are currently busy|currently experiencing high demand",
        r"|model is at capacity|rate.?limit|too many requests",
        r"|(?:^|[^a-z0-9])(?:429|500|502|503|504|520|524)(?:[^a-z0-9]|$)",
        r"|service.?(?:is.?)?(?:temporarily.?)?unavailable|server.?error|internal.?error",
        r"|provider.?returned.?(?:an.?)?error",
        r"|exceeded request buffer limit while retrying upstream|unable to forward upstream",
        r"|upstream.?request.?failed|upstream_stream_read_error|stream was interrupted",
        r"|http/?2 stream failed|network.?error|connection.?error|connection.?refused",
        r"|connection.?lost|connection.?closed|other side closed|fetch failed",
        r"|request to \S+ failed, reason:|getaddrinfo",
        r"|(?:^|[^a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?:[^a-z0-9_]|$)",
        r"|connection reset by peer|ENOTFOUND|EAI_AGAIN|upstream.?connect|reset before headers",
        r"|socket hang up|socket connection was closed|timed? out|timeout|terminated",
        r"|websocket.?closed|websocket.?error|websocket.?connection.?limit.?reached|ended without",
        r"|stream ended before message_stop|stream ended before a terminal response event",
        r"|http2 request did not get a response|stream disconnected before completion",
        r"|cut short after the reply had begun|pending stream has been canceled|retry delay",
        r"|you can retry your request|try your request again|please retry your request",
        r"|ResourceExhausted|subscription_sharing_usage_unavailable",
        r"|subscription_sharing_user_unavailable",
    ))
    .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// Whether asking again may succeed (pi-ai's `isRetryableAssistantError`, with oxpi's typed
/// failure read first): only an `error` reply with an error text; never an exhausted quota or
/// budget (by text, also on a 429); then the reply's [`FailureKind`] when it settles it
/// (retryable HTTP status, timeout, stall, broken connection, cut stream: yes; abort, auth,
/// configuration, parse, deadline, other statuses: no; an in-stream error the wire marked as
/// transient: yes); for other in-stream provider errors and replies without a kind (read from
/// pi's JSON), pi's text patterns (`overloaded`,
/// `Connection closed`, `ECONNRESET`, …). A context overflow is not judged here: the agent
/// checks it first ([`oxpi_ai::is_context_overflow`]).
///
/// ```
/// use oxpi_agent_core::is_retryable_assistant_error;
/// use oxpi_ai::{AssistantMessage, StopReason};
///
/// let mut reply = AssistantMessage::empty("openai-completions", "openai", "gpt-4o");
/// reply.stop_reason = StopReason::Error;
/// reply.error_message = Some("read ECONNRESET".into());
/// assert!(is_retryable_assistant_error(&reply));
/// reply.error_message = Some("429 You exceeded your current quota: insufficient_quota".into());
/// assert!(!is_retryable_assistant_error(&reply));
/// ```
pub fn is_retryable_assistant_error(message: &AssistantMessage) -> bool {
    if message.stop_reason != StopReason::Error {
        return false;
    }
    let Some(text) = message.error_message.as_deref().filter(|t| !t.is_empty()) else {
        return false;
    };
    if EXHAUSTED.is_match(text) {
        return false;
    }
    match message.failure_kind {
        // The wire said the in-stream error is transient.
        Some(FailureKind::Provider { retryable: true }) => true,
        Some(FailureKind::Provider { retryable: false } | FailureKind::Other) | None => {
            RETRYABLE.is_match(text)
        }
        Some(kind) => kind.is_retryable(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(text: &str, kind: Option<FailureKind>) -> AssistantMessage {
        let mut reply = AssistantMessage::empty("faux", "faux", "faux-model");
        reply.stop_reason = StopReason::Error;
        reply.error_message = Some(text.to_string());
        reply.failure_kind = kind;
        reply
    }

    /// The texts `examples/retry16.mjs` classified with pi-ai 1.6 itself (`retry16.json`).
    #[test]
    fn texts_classify_as_pi_1_6_did() {
        for (text, expected) in [
            ("Connection closed.", true),
            ("read ECONNRESET", true),
            ("429 Too Many Requests", true),
            ("terminated", true),
            ("Request timed out.", true),
            ("overloaded_error: Overloaded", true),
            ("Server requested 120s retry delay (max: 60s).", true),
            ("ECONNRESETX", false),
            ("request 14290 failed", false),
            (
                "429 You exceeded your current quota: insufficient_quota",
                false,
            ),
            ("429 rate limit: quota exceeded", false),
            (r#"{"code":"1308","message":"limit"}"#, false),
            ("Invalid API key", false),
            ("400 Bad Request: invalid tool schema", false),
            ("prompt is too long: 210000 tokens > 200000 maximum", false),
        ] {
            assert_eq!(
                is_retryable_assistant_error(&failed(text, None)),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn the_kind_answers_before_the_text() {
        let stall = failed("The stream went quiet", Some(FailureKind::Stall));
        assert!(is_retryable_assistant_error(&stall));
        let auth = failed("401 timeout of the token", Some(FailureKind::Auth));
        assert!(!is_retryable_assistant_error(&auth));
        let quota = failed(
            "insufficient_quota",
            Some(FailureKind::Http {
                status: 429,
                retryable: true,
            }),
        );
        assert!(!is_retryable_assistant_error(&quota));
        let provider = failed(
            "Overloaded",
            Some(FailureKind::Provider { retryable: false }),
        );
        assert!(is_retryable_assistant_error(&provider));
        let refused = failed(
            "content blocked",
            Some(FailureKind::Provider { retryable: false }),
        );
        assert!(!is_retryable_assistant_error(&refused));
        let mut aborted = failed("Connection closed", Some(FailureKind::Aborted));
        assert!(!is_retryable_assistant_error(&aborted));
        aborted.stop_reason = StopReason::Aborted;
        aborted.failure_kind = None;
        assert!(!is_retryable_assistant_error(&aborted), "aborts never");
    }

    #[test]
    fn delays_double_up_to_the_cap_without_overflow() {
        let policy = RetryPolicy::new(10, Duration::from_millis(2000));
        let delays: Vec<u64> = (1..=7)
            .map(|n| u64::try_from(policy.delay(n).as_millis()).unwrap_or(u64::MAX))
            .collect();
        assert_eq!(delays, [2000, 4000, 8000, 16000, 32000, 60000, 60000]);
        assert_eq!(policy.delay(u32::MAX), Duration::from_secs(60));
        assert_eq!(policy.delay(0), Duration::from_secs(2));
    }
}
