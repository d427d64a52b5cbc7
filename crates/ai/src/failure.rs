//! Why a reply failed, typed: [`Failure`] is what every stage of a request (prepare, open,
//! read, decode) ends a reply with, and [`FailureKind`] is kept on the final message
//! ([`AssistantMessage::failure_kind`](crate::AssistantMessage::failure_kind)) beside pi's
//! `errorMessage`, so overflow detection and retry decisions read a kind instead of parsing
//! text back.
//!
//! ```
//! use oxpi_ai::{Failure, FailureKind, StopReason};
//!
//! let failure = Failure::http(429, "429 rate limited");
//! assert_eq!(failure.kind, FailureKind::Http { status: 429, retryable: true });
//! assert!(failure.kind.is_retryable());
//! assert_eq!(failure.stop_reason(), StopReason::Error);
//! assert_eq!(Failure::aborted().stop_reason(), StopReason::Aborted);
//! ```

use serde::{Deserialize, Serialize};

use crate::types::message::StopReason;

/// The text of a reply the caller cancelled (pi's).
pub const ABORTED_TEXT: &str = "Request was aborted";

/// What kind of failure ended a reply. Serialized (camelCase, tagged by `kind`) on the final
/// message as `failureKind`, an oxpi-only field pi ignores; kinds a later oxpi adds read back
/// as [`Other`](Self::Other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[non_exhaustive]
pub enum FailureKind {
    /// The server answered with an HTTP error status.
    Http {
        /// The status code.
        status: u16,
        /// Whether the status is one a request is retried on (408, 409, 429, 5xx).
        #[serde(default)]
        retryable: bool,
    },
    /// No response headers arrived within [`StreamOptions::timeout`](crate::StreamOptions).
    Timeout,
    /// The stream went quiet for longer than the idle timeout.
    Stall,
    /// The request did not complete within [`StreamOptions::deadline`](crate::StreamOptions).
    Deadline,
    /// The caller cancelled.
    Aborted,
    /// The connection failed or broke (refused, reset, interrupted mid-stream).
    Connection,
    /// The stream ended before the reply's terminal wire event.
    Incomplete,
    /// The server sent something that is not the wire format (bad JSON, impossible order).
    Parse,
    /// No usable credential (no key, a key source that failed).
    Auth,
    /// The request could not be made as configured (a bad URL, no TLS in this build, a hook
    /// that refused it, a redirect that is not followed).
    Config,
    /// The provider reported an error inside the stream: transient (Anthropic's
    /// `overloaded_error`, Bedrock's throttling, a Gemini error object with status 429 or 5xx,
    /// a Responses `server_error`) or final (a refusal, a blocked prompt, a content filter).
    Provider {
        /// Whether the provider said the error is transient.
        #[serde(default)]
        retryable: bool,
    },
    /// Anything else: a provider that ended without a terminal event or panicked, or a kind
    /// this version does not know (read from a newer oxpi's file, or a `failureKind` that does
    /// not parse: the message is still read).
    #[serde(other)]
    Other,
}

impl FailureKind {
    /// Whether asking again may succeed: a retryable HTTP status, a transient provider error,
    /// a timeout, a stall, a broken connection or a cut stream.
    pub fn is_retryable(self) -> bool {
        match self {
            Self::Http { retryable, .. } | Self::Provider { retryable } => retryable,
            Self::Timeout | Self::Stall | Self::Connection | Self::Incomplete => true,
            Self::Deadline
            | Self::Aborted
            | Self::Parse
            | Self::Auth
            | Self::Config
            | Self::Other => false,
        }
    }

    /// The HTTP status, for [`Http`](Self::Http).
    pub fn status(self) -> Option<u16> {
        match self {
            Self::Http { status, .. } => Some(status),
            _ => None,
        }
    }
}

/// A failure: its kind and the text that becomes the message's `errorMessage`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct Failure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// What happened, for people (pi's `errorMessage`).
    pub text: String,
}

impl Failure {
    /// A failure of `kind` saying `text`.
    pub fn new(kind: FailureKind, text: impl Into<String>) -> Self {
        Self {
            kind,
            text: text.into(),
        }
    }

    /// An HTTP error status; retryable as [`is_retryable_status`] says.
    pub fn http(status: u16, text: impl Into<String>) -> Self {
        let retryable = is_retryable_status(status);
        Self::new(FailureKind::Http { status, retryable }, text)
    }

    /// The caller cancelled: pi's text.
    pub fn aborted() -> Self {
        Self::new(FailureKind::Aborted, ABORTED_TEXT)
    }

    /// The server sent something that is not the wire format.
    pub fn parse(text: impl Into<String>) -> Self {
        Self::new(FailureKind::Parse, text)
    }

    /// The provider reported a final error in the stream (a refusal, a blocked prompt).
    pub fn provider(text: impl Into<String>) -> Self {
        Self::new(FailureKind::Provider { retryable: false }, text)
    }

    /// The provider reported a transient error in the stream (overloaded, throttled).
    pub fn transient(text: impl Into<String>) -> Self {
        Self::new(FailureKind::Provider { retryable: true }, text)
    }

    /// An error the provider reported in the stream, transient when `transient`.
    pub fn in_stream(text: impl Into<String>, transient: bool) -> Self {
        Self::new(
            FailureKind::Provider {
                retryable: transient,
            },
            text,
        )
    }

    /// The request could not be made as configured.
    pub fn config(text: impl Into<String>) -> Self {
        Self::new(FailureKind::Config, text)
    }

    /// No usable credential.
    pub fn auth(text: impl Into<String>) -> Self {
        Self::new(FailureKind::Auth, text)
    }

    /// The stream ended before its terminal event.
    pub fn incomplete(text: impl Into<String>) -> Self {
        Self::new(FailureKind::Incomplete, text)
    }

    /// How the reply ends: `aborted` for [`FailureKind::Aborted`], `error` otherwise.
    pub fn stop_reason(&self) -> StopReason {
        match self.kind {
            FailureKind::Aborted => StopReason::Aborted,
            _ => StopReason::Error,
        }
    }

    /// The same failure with its text changed by `f` (context added, a secret removed).
    pub(crate) fn map_text(self, f: impl FnOnce(String) -> String) -> Self {
        Self {
            kind: self.kind,
            text: f(self.text),
        }
    }
}

/// Reads a message's `failureKind` leniently: one that does not parse (a hand-edited file, a
/// shape from another version) is [`FailureKind::Other`], never an error for the whole message.
pub(crate) fn lenient_kind<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<FailureKind>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(value.map(|v| match serde_json::from_value(v) {
        // Retryability follows from the status (a file may leave it out).
        Ok(FailureKind::Http { status, .. }) => FailureKind::Http {
            status,
            retryable: is_retryable_status(status),
        },
        Ok(kind) => kind,
        Err(_) => FailureKind::Other,
    }))
}

/// True for 408, 409, 429 and 5xx (including Anthropic's 529): the statuses a request is
/// retried on.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500..=599)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_serialize_tagged_and_unknown_kinds_read_as_other() {
        let http = FailureKind::Http {
            status: 503,
            retryable: true,
        };
        assert_eq!(
            serde_json::to_value(http).unwrap(),
            serde_json::json!({"kind": "http", "status": 503, "retryable": true})
        );
        assert_eq!(
            serde_json::to_value(FailureKind::Stall).unwrap(),
            serde_json::json!({"kind": "stall"})
        );
        let later: FailureKind =
            serde_json::from_value(serde_json::json!({"kind": "quotaExhausted"})).unwrap();
        assert_eq!(later, FailureKind::Other);
    }

    #[test]
    fn a_failure_kind_that_does_not_parse_leaves_the_message_readable() {
        let base = serde_json::json!({
            "role": "assistant", "content": [], "api": "openai-completions",
            "provider": "openai", "model": "gpt", "stopReason": "error",
            "errorMessage": "boom", "timestamp": 1
        });
        let read = |kind: serde_json::Value| {
            let mut json = base.clone();
            json["failureKind"] = kind;
            serde_json::from_value::<crate::Message>(json)
                .ok()
                .and_then(|m| match m {
                    crate::Message::Assistant(a) => a.failure_kind,
                    _ => None,
                })
        };
        let kinds = [
            serde_json::json!({"kind": "http", "status": 503}),
            serde_json::json!("timeout"),
            serde_json::json!({"kind": "http", "status": 70_000, "retryable": true}),
            serde_json::json!({"kind": "provider"}),
        ];
        let seen: Vec<Option<FailureKind>> = kinds.into_iter().map(read).collect();
        assert_eq!(
            seen,
            vec![
                Some(FailureKind::Http {
                    status: 503,
                    retryable: true
                }),
                Some(FailureKind::Other),
                Some(FailureKind::Other),
                Some(FailureKind::Provider { retryable: false }),
            ]
        );
    }

    #[test]
    fn a_message_keeps_its_failure_kind_on_a_round_trip() {
        let mut message = crate::AssistantMessage::empty("faux", "faux", "m");
        message.stop_reason = StopReason::Error;
        message.error_message = Some("overloaded".into());
        message.failure_kind = Some(FailureKind::Provider { retryable: true });
        let json = serde_json::to_value(&message).unwrap();
        assert_eq!(
            json["failureKind"],
            serde_json::json!({"kind": "provider", "retryable": true})
        );
        let back: crate::AssistantMessage = serde_json::from_value(json).unwrap();
        assert_eq!(back, message);
        message.failure_kind = None;
        let json = serde_json::to_value(&message).unwrap();
        assert!(
            json.get("failureKind").is_none(),
            "absent when unset, as in pi's JSON"
        );
    }

    #[test]
    fn retryable_statuses() {
        let retryable: Vec<u16> = [400, 401, 404, 408, 409, 413, 429, 500, 529, 599, 600]
            .into_iter()
            .filter(|s| is_retryable_status(*s))
            .collect();
        assert_eq!(retryable, vec![408, 409, 429, 500, 529, 599]);
    }
}
