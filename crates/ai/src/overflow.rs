//! Context overflow: did a reply fail (or silently degrade) because the prompt no longer fits
//! the model's context window? [`is_context_overflow`] answers it the way pi's
//! `isContextOverflow` does, so an agent can compact its history and retry.
//!
//! Patterns are pi-ai 0.73.1's list joined with the ones pi 1.6 added, each matched against the
//! reply's `errorMessage` as oxpi writes it (`400 prompt is too long: …`: the status, then the
//! server's own message). The tests (`crates/ai/tests/context_overflow.rs`) send each provider's
//! real error body through a local server and check the resulting message.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use crate::failure::FailureKind;
use crate::types::message::{AssistantMessage, StopReason};

/// Error texts that mean the prompt did not fit, with the provider each was seen from.
pub const OVERFLOW_PATTERNS: &[(&str, &str)] = &[
    (r"(?i)prompt (?:is )?too long", "Anthropic, Ollama"),
    (r"(?i)prompt exceeds max length", "z.ai CN"),
    (r"(?i)request_too_large", "Anthropic, 413 by size"),
    (
        r"(?i)input is too long for requested model",
        "Amazon Bedrock",
    ),
    (r"(?i)exceeds the context window", "OpenAI"),
    (
        r"(?i)exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
        "OpenAI-compatible proxies (LiteLLM)",
    ),
    (r"(?i)context window exceeded", "LiteLLM"),
    (
        r"(?i)input token count.*exceeds the maximum",
        "Google Gemini",
    ),
    (r"(?i)maximum prompt length is \d+", "xAI"),
    (
        r"(?i)reduce the length of the messages",
        "Groq, OpenAI Chat Completions",
    ),
    (r"(?i)maximum context length is \d+ tokens", "OpenRouter"),
    (
        r"(?i)exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
        "OpenRouter/Poolside",
    ),
    (
        r"(?i)input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
        "Together AI",
    ),
    (r"(?i)exceeds the limit of \d+", "GitHub Copilot"),
    (r"(?i)exceeds the available context size", "llama.cpp"),
    (r"(?i)greater than the context length", "LM Studio"),
    (r"(?i)context window exceeds limit", "MiniMax"),
    (r"(?i)exceeded model token limit", "Kimi For Coding"),
    (
        r"(?i)too large for model with \d+ maximum context length",
        "Mistral",
    ),
    (
        r"(?i)prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
        "DS4",
    ),
    (r"(?i)model_context_window_exceeded", "z.ai"),
    (
        r"(?i)prompt too long; exceeded (?:max )?context length",
        "Ollama",
    ),
    (r"(?i)range of input length should be", "DashScope / Qwen"),
    (r"(?i)context[_ ]length[_ ]exceeded", "generic"),
    (r"(?i)too many tokens", "generic"),
    (r"(?i)token limit exceeded", "generic"),
    (
        r"(?i)^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",
        "any 413",
    ),
];

/// Error texts that are never an overflow even when they match a pattern above (Bedrock's
/// `ThrottlingException: Too many tokens…` is rate limiting).
pub const NON_OVERFLOW_PATTERNS: &[&str] = &[
    r"(?i)^(Throttling error|Service unavailable):",
    r"(?i)rate limit",
    r"(?i)too many requests",
];

/// Cerebras answers an oversized prompt with a bare 400 or 413; only its replies are read so.
pub const CEREBRAS_BODYLESS_PATTERN: &str = r"(?i)^4(?:00|13)\b[^\n]*\(no body\)";

struct Patterns {
    overflow: RegexSet,
    non_overflow: RegexSet,
    cerebras: Option<Regex>,
}

static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| Patterns {
    overflow: RegexSet::new(OVERFLOW_PATTERNS.iter().map(|(p, _)| *p))
        .unwrap_or_else(|_| RegexSet::empty()),
    non_overflow: RegexSet::new(NON_OVERFLOW_PATTERNS).unwrap_or_else(|_| RegexSet::empty()),
    cerebras: Regex::new(CEREBRAS_BODYLESS_PATTERN).ok(),
});

/// True when `message` says the prompt did not fit the context window:
///
/// 1. an `error` reply whose [`failure_kind`](AssistantMessage::failure_kind) is HTTP 413 (but
///    never one that is HTTP 429, a rate limit), or
///    whose text matches [`OVERFLOW_PATTERNS`] (and none of [`NON_OVERFLOW_PATTERNS`]), or a
///    Cerebras reply that is a bare 400/413; the text is not read when the kind says the
///    failure was about the connection, the caller or the configuration (a timeout, a stall,
///    an abort, a missing key), whatever it says;
/// 2. with `context_window`: a `stop` reply whose input plus cache reads exceed it (servers that
///    accept an oversized prompt silently, such as z.ai);
/// 3. with `context_window`: a `length` reply with no output whose input plus cache reads fill
///    99% of it (servers that cut the prompt to fit, such as Xiaomi MiMo).
///
/// ```
/// use oxpi_ai::overflow::is_context_overflow;
/// use oxpi_ai::{AssistantMessage, StopReason};
///
/// let mut reply = AssistantMessage::empty("anthropic-messages", "anthropic", "claude-sonnet-4-5");
/// reply.stop_reason = StopReason::Error;
/// reply.error_message = Some("400 prompt is too long: 213462 tokens > 200000 maximum".into());
/// assert!(is_context_overflow(&reply, None));
///
/// reply.error_message = Some("429 rate limit reached: too many tokens per minute".into());
/// assert!(!is_context_overflow(&reply, None));
/// ```
pub fn is_context_overflow(message: &AssistantMessage, context_window: Option<u64>) -> bool {
    let patterns = &*PATTERNS;
    let read_text = match message.failure_kind {
        // The kind answers first: a body too large for the server, or a failure that is about
        // the connection, the caller or the configuration, never about the prompt's size.
        Some(FailureKind::Http { status: 413, .. }) => return true,
        // A rate limit, whatever its text ("429 Too many tokens per minute").
        Some(FailureKind::Http { status: 429, .. }) => return false,
        Some(
            FailureKind::Timeout
            | FailureKind::Stall
            | FailureKind::Deadline
            | FailureKind::Aborted
            | FailureKind::Connection
            | FailureKind::Incomplete
            | FailureKind::Auth
            | FailureKind::Config,
        ) => false,
        // Other statuses, in-stream provider errors, parse errors and messages read from pi's
        // JSON (no kind): the text says.
        Some(
            FailureKind::Http { .. }
            | FailureKind::Parse
            | FailureKind::Provider { .. }
            | FailureKind::Other,
        )
        | None => true,
    };
    if read_text && message.stop_reason == StopReason::Error {
        if let Some(text) = message.error_message.as_deref() {
            if !patterns.non_overflow.is_match(text) {
                if patterns.overflow.is_match(text) {
                    return true;
                }
                let bodyless = patterns.cerebras.as_ref().is_some_and(|r| r.is_match(text));
                if message.provider == "cerebras" && bodyless {
                    return true;
                }
            }
        }
    }
    let Some(window) = context_window.filter(|w| *w > 0) else {
        return false;
    };
    let input = message.usage.input.saturating_add(message.usage.cache_read);
    match message.stop_reason {
        StopReason::Stop => input > window,
        StopReason::Length => message.usage.output == 0 && input as f64 >= window as f64 * 0.99,
        StopReason::ToolUse
        | StopReason::Error
        | StopReason::Aborted
        | StopReason::Pending
        | StopReason::Deferred => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for (pattern, provider) in OVERFLOW_PATTERNS {
            assert!(Regex::new(pattern).is_ok(), "{provider}: {pattern}");
        }
        for pattern in NON_OVERFLOW_PATTERNS {
            assert!(Regex::new(pattern).is_ok(), "{pattern}");
        }
        assert!(Regex::new(CEREBRAS_BODYLESS_PATTERN).is_ok());
        assert_eq!(PATTERNS.overflow.len(), OVERFLOW_PATTERNS.len());
    }

    #[test]
    fn the_failure_kind_is_read_before_the_text() {
        let failed = |kind: Option<FailureKind>, text: &str| {
            let mut reply = AssistantMessage::empty("openai-completions", "openai", "gpt");
            reply.stop_reason = StopReason::Error;
            reply.error_message = Some(text.to_string());
            reply.failure_kind = kind;
            is_context_overflow(&reply, None)
        };
        let http = |status| {
            Some(FailureKind::Http {
                status,
                retryable: false,
            })
        };
        let cases = [
            (http(413), "Payload Too Large (no body)", true),
            (http(400), "400 context_length_exceeded", true),
            (http(400), "400 invalid tool schema", false),
            (http(429), "429 Too many tokens per minute", false),
            (None, "429 Too many tokens per minute", true),
            (
                Some(FailureKind::Provider { retryable: false }),
                "prompt is too long",
                true,
            ),
            (None, "prompt is too long", true),
            (
                Some(FailureKind::Connection),
                "context_length_exceeded",
                false,
            ),
            (Some(FailureKind::Stall), "too many tokens", false),
            (Some(FailureKind::Aborted), "prompt is too long", false),
        ];
        let seen: Vec<bool> = cases.iter().map(|(k, t, _)| failed(*k, t)).collect();
        let expected: Vec<bool> = cases.iter().map(|(_, _, e)| *e).collect();
        assert_eq!(seen, expected);
    }
}
