//! `is_context_overflow`: each provider's real overflow error, served by a local server through
//! the API that provider speaks, must be recognised from the message oxpi ends the reply with;
//! rate limits must not be; and the silent kinds (an oversized `stop`, a `length` with no room
//! left) are read from the usage.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
mod common;

use std::time::Duration;

use common::{run, user_context};
use oxpi_ai::{
    is_context_overflow, AssistantMessage, Model, StopReason, StreamOptions,
    API_ANTHROPIC_MESSAGES, API_GOOGLE_GENERATIVE_AI, API_OPENAI_COMPLETIONS, API_OPENAI_RESPONSES,
};
use oxpi_testkit::{Reply, TestServer};

/// `(provider, api, status, body)`: the error bodies as each provider sends them.
const OVERFLOWS: &[(&str, &str, u16, &str)] = &[
    (
        "anthropic",
        API_ANTHROPIC_MESSAGES,
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}"#,
    ),
    (
        "anthropic",
        API_ANTHROPIC_MESSAGES,
        413,
        r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#,
    ),
    (
        "openai",
        API_OPENAI_RESPONSES,
        400,
        r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#,
    ),
    (
        "openai",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 135021 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    ),
    (
        "google",
        API_GOOGLE_GENERATIVE_AI,
        400,
        r#"{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).","status":"INVALID_ARGUMENT"}}"#,
    ),
    (
        "xai",
        API_OPENAI_RESPONSES,
        400,
        r#"{"code":"Client specified an invalid argument","error":"This model's maximum prompt length is 131072 but the request contains 537812 tokens."}"#,
    ),
    (
        "groq",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"error":{"message":"Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    ),
    (
        "openrouter",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"error":{"message":"This endpoint's maximum context length is 200000 tokens. However, you requested about 250123 tokens (250123 of text input). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400}}"#,
    ),
    (
        "llama.cpp",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5012,"n_ctx":4096}}"#,
    ),
    (
        "lm-studio",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"error":"The number of tokens to keep from the initial prompt is greater than the context length. Try to load the model with a larger context length, or provide a shorter input"}"#,
    ),
    (
        "minimax",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"error":{"message":"invalid params, context window exceeds limit (2013)","type":"invalid_request_error"}}"#,
    ),
    (
        "kimi-coding",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"error":{"message":"Your request exceeded model token limit: 262144 (requested: 301233)","type":"invalid_request_error"}}"#,
    ),
    (
        "mistral",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"object":"error","message":"Prompt contains 140012 tokens and 0 draft tokens, too large for model with 131072 maximum context length","type":"invalid_request_error","param":null,"code":null}"#,
    ),
    (
        "github-copilot",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"error":{"message":"prompt token count of 150211 exceeds the limit of 128000","code":"model_max_prompt_tokens_exceeded"}}"#,
    ),
    (
        "ollama",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"error":"prompt too long; exceeded max context length by 1204 tokens"}"#,
    ),
    (
        "zai",
        API_OPENAI_COMPLETIONS,
        400,
        r#"{"error":{"code":"1261","message":"Prompt exceeds max length"}}"#,
    ),
    // Cerebras answers with a bare status.
    ("cerebras", API_OPENAI_COMPLETIONS, 400, ""),
    ("cerebras", API_OPENAI_COMPLETIONS, 413, ""),
];

/// Errors that are not overflows, though some mention tokens.
const NOT_OVERFLOWS: &[(&str, &str, u16, &str)] = &[
    (
        "openai",
        API_OPENAI_COMPLETIONS,
        429,
        r#"{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Too many tokens requested.","type":"tokens","code":"rate_limit_exceeded"}}"#,
    ),
    (
        "anthropic",
        API_ANTHROPIC_MESSAGES,
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"}}"#,
    ),
    // A bare 400 from anyone but Cerebras says nothing about the context.
    ("openai", API_OPENAI_COMPLETIONS, 400, ""),
];

fn model(server: &TestServer, provider: &str, api: &str) -> Model {
    let base = if api == API_GOOGLE_GENERATIVE_AI {
        format!("{}/v1beta", server.base_url())
    } else {
        format!("{}/v1", server.base_url())
    };
    let mut model = Model::openai_compatible(base, "m");
    model.provider = provider.to_string();
    model.api = api.into();
    model
}

async fn failed_reply(provider: &str, api: &str, status: u16, body: &str) -> AssistantMessage {
    let server = TestServer::start(vec![Reply::json_error(status, body)])
        .await
        .unwrap();
    let options = StreamOptions::default()
        .with_api_key("test-key")
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(10));
    let (_, message) = run(&model(&server, provider, api), &user_context("hi"), options).await;
    assert_eq!(message.stop_reason, StopReason::Error, "{provider}");
    message
}

#[tokio::test]
async fn every_providers_overflow_error_is_recognised() {
    for (provider, api, status, body) in OVERFLOWS {
        let message = failed_reply(provider, api, *status, body).await;
        assert!(
            is_context_overflow(&message, None),
            "{provider} ({api}): not recognised: {:?}",
            message.error_message
        );
    }
}

#[tokio::test]
async fn rate_limits_and_other_errors_are_not_overflows() {
    for (provider, api, status, body) in NOT_OVERFLOWS {
        let message = failed_reply(provider, api, *status, body).await;
        assert!(
            !is_context_overflow(&message, None),
            "{provider}: taken for an overflow: {:?}",
            message.error_message
        );
    }
}

fn reply(stop: StopReason, input: u64, cache_read: u64, output: u64) -> AssistantMessage {
    let mut message = AssistantMessage::empty("openai-completions", "zai", "glm");
    message.stop_reason = stop;
    message.usage.input = input;
    message.usage.cache_read = cache_read;
    message.usage.output = output;
    message
}

#[test]
fn texts_from_apis_oxpi_reaches_through_others_are_recognised() {
    let error = |text: &str| {
        let mut message = reply(StopReason::Error, 0, 0, 0);
        message.error_message = Some(text.to_string());
        message
    };
    // Amazon Bedrock's validation error, and z.ai's finish reason surfaced as an error.
    for text in [
        "400 Input is too long for requested model.",
        "The model stopped: model_context_window_exceeded",
    ] {
        assert!(is_context_overflow(&error(text), None), "{text}");
    }
    // Bedrock's throttling mentions tokens but is rate limiting.
    let throttled = error("Throttling error: Too many tokens, please wait before trying again.");
    assert!(!is_context_overflow(&throttled, None));
}

/// Example texts from pi 1.6's list (providers oxpi reaches through a gateway or a compatible
/// server), and texts of the generic patterns.
const MORE_TEXTS: &[&str] = &[
    "400 Requested token count exceeds the model's maximum context length of 131072 tokens",
    "400 Input length (265330) exceeds model's maximum context length (262144).",
    "400 litellm.ContextWindowExceededError: litellm.BadRequestError: Context Window exceeded for given call.",
    "400 Input length 140000 exceeds the maximum allowed input length of 131072 tokens.",
    "400 The input (140000 tokens) is longer than the model's context length (131072 tokens).",
    "400 Prompt has 70,000 tokens, but the configured context size is 65,536 tokens",
    "400 Range of input length should be [1, 129024]",
    "413 failed to parse request",
    "400 context_length_exceeded",
    "400 Too many tokens in the request",
    "400 Token limit exceeded for this model",
];

#[test]
fn every_pattern_has_a_text_that_it_matches() {
    let error = |text: &str| {
        let mut message = reply(StopReason::Error, 0, 0, 0);
        message.error_message = Some(text.to_string());
        message
    };
    for text in MORE_TEXTS {
        assert!(is_context_overflow(&error(text), None), "{text}");
    }
    // Each pattern is exercised by a text here or by a provider's body above.
    let mut texts: Vec<String> = MORE_TEXTS.iter().map(|t| t.to_string()).collect();
    texts.extend(
        OVERFLOWS
            .iter()
            .map(|(_, _, status, body)| format!("{status} {body}")),
    );
    texts.push("400 Input is too long for requested model.".into());
    texts.push("model_context_window_exceeded".into());
    for (pattern, provider) in oxpi_ai::overflow::OVERFLOW_PATTERNS {
        let regex = regex::Regex::new(pattern).unwrap();
        assert!(
            texts.iter().any(|t| regex.is_match(t)),
            "no text for the {provider} pattern {pattern}"
        );
    }
}

#[test]
fn silent_overflows_are_read_from_the_usage() {
    // z.ai: accepted and answered, but the prompt was larger than the window.
    let over = reply(StopReason::Stop, 120_000, 10_000, 50);
    assert!(is_context_overflow(&over, Some(128_000)));
    assert!(!is_context_overflow(&over, None), "needs the window");
    assert!(!is_context_overflow(
        &reply(StopReason::Stop, 100_000, 0, 50),
        Some(128_000)
    ));
    // Xiaomi MiMo: the prompt was cut to fill the window, leaving nothing for the answer.
    assert!(is_context_overflow(
        &reply(StopReason::Length, 127_000, 0, 0),
        Some(128_000)
    ));
    assert!(!is_context_overflow(
        &reply(StopReason::Length, 127_000, 0, 12),
        Some(128_000)
    ));
    assert!(!is_context_overflow(
        &reply(StopReason::Length, 60_000, 0, 0),
        Some(128_000)
    ));
    // Tool use and aborts never count.
    assert!(!is_context_overflow(
        &reply(StopReason::ToolUse, 200_000, 0, 10),
        Some(128_000)
    ));
}
