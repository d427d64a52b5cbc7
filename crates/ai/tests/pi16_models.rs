//! pi 1.6's model fields and the functions over them: thinking levels (`getSupportedThinkingLevels`,
//! `clampThinkingLevel`), price tiers and one-hour cache writes (`calculateCost`), the fields a
//! model's JSON gained since 0.73.1, and a request asking for a level the model does not take.
//!
//! The expected values are what pi 1.6 computed (`fixtures/pi16/messages.json`, written by
//! `bench/node/pi16/messages.mjs`); `*_live` runs pi again when Node is installed.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::time::Duration;

use oxpi_ai::{
    clamp_thinking_level, supported_thinking_levels, CostTier, ImageLimits, ImageResize,
    InputLimits, Model, PromptCache, ReasoningLevel, StreamOptions, ThinkingLevel, Usage,
};
use oxpi_testkit::{Reply, TestServer};
use serde_json::{json, Value};

fn numbers_as_f64(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.iter().map(numbers_as_f64).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/pi16/messages.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn check_thinking(pi: &Value) {
    let shapes = pi["thinking"].as_object().unwrap();
    assert_eq!(shapes.len(), 6);
    for (name, shape) in shapes {
        let model: Model = serde_json::from_value(shape["model"].clone()).unwrap();
        let supported: Vec<ThinkingLevel> =
            serde_json::from_value(shape["supported"].clone()).unwrap();
        assert_eq!(supported_thinking_levels(&model), supported, "{name}");
        for level in ThinkingLevel::ALL {
            let expected = shape["clamped"][level.as_str()].as_str().unwrap();
            assert_eq!(
                clamp_thinking_level(&model, level).as_str(),
                expected,
                "{name}: clamp({level})"
            );
        }
    }
}

fn check_cost(pi: &Value) {
    let model: Model = serde_json::from_value(pi["cost"]["model"].clone()).unwrap();
    assert_eq!(model.cost.tiers.len(), 2);
    let cases = pi["cost"]["cases"].as_object().unwrap();
    for (name, case) in cases {
        let mut usage: Usage = serde_json::from_value(case["usage"].clone()).unwrap();
        let cost = model.calculate_cost(&mut usage);
        assert_eq!(
            numbers_as_f64(&serde_json::to_value(cost).unwrap()),
            numbers_as_f64(&case["cost"]),
            "{name}"
        );
        assert_eq!(usage.cost, cost, "{name}: written into the usage too");
    }
}

#[test]
fn thinking_levels_are_pis() {
    check_thinking(&fixture());
}

#[test]
fn cost_tiers_and_one_hour_cache_writes_are_priced_as_pi() {
    check_cost(&fixture());
}

#[test]
fn thinking_levels_and_cost_are_pis_live() {
    match oxpi_testkit::pi::run_pi16_script("bench/node/pi16/messages.mjs") {
        Ok(Some(text)) => {
            let pi: Value = serde_json::from_str(&text).unwrap();
            check_thinking(&pi);
            check_cost(&pi);
        }
        Ok(None) => eprintln!(
            "thinking_levels_and_cost_are_pis_live: skipped: node or npm not found \
             (the committed recording is checked by the other tests)"
        ),
        Err(e) => panic!("running pi 1.6 failed: {e}"),
    }
}

/// A catalogue entry of pi 1.6 with every field added since 0.73.1.
fn pi_model() -> Value {
    json!({
        "type": "chat",
        "id": "claude-opus-4-7",
        "name": "Claude Opus 4.7",
        "api": "anthropic-messages",
        "provider": "anthropic",
        "baseUrl": "https://api.anthropic.com",
        "reasoning": true,
        "thinkingLevelMap": {"xhigh": "xhigh", "max": "max"},
        "input": ["text", "image"],
        "inputLimits": {
            "maxRequestBytes": 33554432,
            "images": {"resize": {"maxWidth": 8000, "maxHeight": 8000, "maxBytes": 5242880, "jpegQuality": 85}, "maxPerMessage": 20, "maxPerRequest": 100}
        },
        "promptCache": {"short": 300, "long": 3600},
        "cost": {"input": 5, "output": 25, "cacheRead": 0.5, "cacheWrite": 6.25,
                 "tiers": [{"inputTokensAbove": 200000, "input": 10, "output": 37.5, "cacheRead": 1, "cacheWrite": 12.5}]},
        "contextWindow": 1000000,
        "maxTokens": 128000,
        "samplingParams": {"temperature": 1},
        "samplingParamsByThinkingLevel": {"off": {"temperature": 0.7}, "high": {"top_p": 0.95}}
    })
}

#[test]
fn a_pi16_model_with_every_new_field_round_trips_to_a_whole_value() {
    let model: Model = serde_json::from_value(pi_model()).unwrap();
    assert_eq!(
        numbers_as_f64(&serde_json::to_value(&model).unwrap()),
        numbers_as_f64(&pi_model())
    );
    assert_eq!(model.model_type.as_deref(), Some("chat"));
    let mut limits = InputLimits::default();
    limits.max_request_bytes = Some(33_554_432);
    let mut images = ImageLimits::default();
    let mut resize = ImageResize::default();
    (
        resize.max_width,
        resize.max_height,
        resize.max_bytes,
        resize.jpeg_quality,
    ) = (Some(8000), Some(8000), Some(5_242_880), Some(85));
    images.resize = Some(resize);
    images.max_per_message = Some(20);
    images.max_per_request = Some(100);
    limits.images = Some(images);
    assert_eq!(model.input_limits, Some(limits));
    let mut cache = PromptCache::default();
    (cache.short, cache.long) = (Some(300.0), Some(3600.0));
    assert_eq!(model.prompt_cache, Some(cache));
    assert_eq!(
        model.cost.tiers,
        [CostTier::new(200_000, 10.0, 37.5, 1.0, 12.5)]
    );
    assert_eq!(
        serde_json::to_value(model.sampling_params_by_thinking_level.as_ref().unwrap()).unwrap(),
        json!({"off": {"temperature": 0.7}, "high": {"top_p": 0.95}})
    );
    assert!(model.supports_thinking_level(ThinkingLevel::Max));
    let plain = Model::openai_compatible("http://x", "m");
    assert!(plain.supports_thinking_level(ThinkingLevel::Off));
    assert!(
        !plain.supports_thinking_level(ThinkingLevel::Low),
        "no reasoning, only off"
    );
}

async fn effort_sent(map: Value, level: ReasoningLevel) -> Value {
    let chunks = [
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    ];
    let server = TestServer::start(vec![Reply::sse(chunks)]).await.unwrap();
    let mut model = Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
    model.reasoning = true;
    model.compat = Some(json!({"thinkingFormat": "openai"}));
    model.thinking_level_map = serde_json::from_value(map).unwrap();
    let options = StreamOptions::default()
        .with_api_key("k")
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(10))
        .with_reasoning(level);
    let context = oxpi_ai::Context::new("s").with_message(oxpi_ai::Message::user("hi"));
    let reply = oxpi_ai::complete(&model, &context, options).await;
    assert!(reply.error_message.is_none(), "{:?}", reply.error_message);
    server.requests()[0].json()["reasoning_effort"].clone()
}

#[tokio::test]
async fn a_level_the_model_does_not_take_is_clamped_as_pi_16_does() {
    // `minimal` is marked unsupported: pi 1.6 asks for the next level up.
    assert_eq!(
        effort_sent(json!({"minimal": null}), ReasoningLevel::Minimal).await,
        json!("low")
    );
    // `max` is not listed: the nearest level below that the model takes.
    assert_eq!(
        effort_sent(json!({"xhigh": "xhigh"}), ReasoningLevel::Max).await,
        json!("xhigh")
    );
    assert_eq!(
        effort_sent(json!({}), ReasoningLevel::Max).await,
        json!("high")
    );
    // A listed level goes out under the model's name for it.
    assert_eq!(
        effort_sent(json!({"max": "maximum"}), ReasoningLevel::Max).await,
        json!("maximum")
    );
}
