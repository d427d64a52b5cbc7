//! pi's request knobs, asserted on the request each API really sends to a local HTTP server:
//! tool choice, prompt caching and session ids, `on_payload` / `on_response`, metadata, service
//! tier pricing, reasoning summary, and `streamSimple`'s default output limit.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{run, user_context};
use oxpi_ai::{
    CacheRetention, Context, Model, ModelCost, ProviderResponse, ReasoningLevel, ReasoningSummary,
    ServiceTier, StopReason, StreamOptions, ThinkingBudgets, Tool, ToolChoice,
    API_ANTHROPIC_MESSAGES, API_GOOGLE_GENERATIVE_AI, API_OPENAI_COMPLETIONS, API_OPENAI_RESPONSES,
};
use oxpi_testkit::{Recorded, Reply, TestServer};
use serde_json::{json, Value};

/// A reply that ends at once, in the wire format of the API the path belongs to.
fn minimal_reply(request: &Recorded) -> Reply {
    let path = request.path.split('?').next().unwrap_or_default();
    if path.ends_with("/messages") {
        Reply::sse([
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ])
    } else if path.ends_with("/responses") {
        Reply::sse([
            "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":1000000,\"output_tokens\":1000000,\"total_tokens\":2000000}}}\n\n",
        ])
    } else if path.ends_with("/chat/completions") {
        Reply::sse([
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        ])
    } else {
        Reply::sse([
            "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"ok\"}]},\"finishReason\":\"STOP\"}]}\n\n",
        ])
    }
}

async fn server() -> TestServer {
    TestServer::start_fn(minimal_reply).await.unwrap()
}

/// A model of `api` served by `server`, with a 128,000-token output limit.
fn model(server: &TestServer, api: &str, provider: &str, id: &str) -> Model {
    let base = if api == API_GOOGLE_GENERATIVE_AI {
        format!("{}/v1beta", server.base_url())
    } else {
        format!("{}/v1", server.base_url())
    };
    let mut model = Model::openai_compatible(base, id);
    model.api = api.into();
    model.provider = provider.to_string();
    model.max_tokens = 128_000;
    model
}

fn all_apis(server: &TestServer) -> Vec<Model> {
    vec![
        model(server, API_ANTHROPIC_MESSAGES, "anthropic", "claude-test"),
        model(server, API_OPENAI_RESPONSES, "openai", "gpt-test"),
        model(server, API_OPENAI_COMPLETIONS, "openai", "gpt-test"),
        model(server, API_GOOGLE_GENERATIVE_AI, "google", "gemini-test"),
    ]
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key("test-key")
        .with_retry_base_delay(Duration::from_millis(5))
        .with_timeout(Duration::from_secs(10))
}

fn with_tool(context: Context) -> Context {
    context.with_tool(Tool {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        constrained_sampling: None,
    })
}

/// Sends one request (it must succeed) and returns what the server received for it.
async fn sent(
    server: &TestServer,
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> Recorded {
    let before = server.requests().len();
    let (_, message) = run(model, context, options).await;
    assert_ne!(
        message.stop_reason,
        StopReason::Error,
        "{}: {:?}",
        model.api,
        message.error_message
    );
    let requests = server.requests();
    assert_eq!(requests.len(), before + 1, "{}: one request", model.api);
    requests[before].clone()
}

/// The part of a body that carries the tool choice, per API.
fn tool_choice_field(api: &str, body: &Value) -> Value {
    match api {
        API_GOOGLE_GENERATIVE_AI => body["toolConfig"].clone(),
        _ => body["tool_choice"].clone(),
    }
}

#[tokio::test]
async fn tool_choice_takes_each_apis_wire_form() {
    let server = server().await;
    let context = with_tool(user_context("read a.txt"));
    let choices = [
        ToolChoice::Auto,
        ToolChoice::None,
        ToolChoice::Required,
        ToolChoice::tool("read"),
    ];
    let expected: [(&str, [Value; 4]); 4] = [
        (
            API_ANTHROPIC_MESSAGES,
            [
                json!({"type": "auto"}),
                json!({"type": "none"}),
                json!({"type": "any"}),
                json!({"type": "tool", "name": "read"}),
            ],
        ),
        (
            API_OPENAI_RESPONSES,
            [
                json!("auto"),
                json!("none"),
                json!("required"),
                json!({"type": "function", "name": "read"}),
            ],
        ),
        (
            API_OPENAI_COMPLETIONS,
            [
                json!("auto"),
                json!("none"),
                json!("required"),
                json!({"type": "function", "function": {"name": "read"}}),
            ],
        ),
        (
            API_GOOGLE_GENERATIVE_AI,
            [
                json!({"functionCallingConfig": {"mode": "AUTO"}}),
                json!({"functionCallingConfig": {"mode": "NONE"}}),
                json!({"functionCallingConfig": {"mode": "ANY"}}),
                json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["read"]}}),
            ],
        ),
    ];
    for model in all_apis(&server) {
        let (_, wanted) = expected.iter().find(|(api, _)| *api == model.api).unwrap();
        for (choice, wanted) in choices.iter().zip(wanted) {
            let options = options().with_tool_choice(choice.clone());
            let body = sent(&server, &model, &context, options).await.json();
            assert_eq!(
                &tool_choice_field(model.api.as_str(), &body),
                wanted,
                "{} {choice:?}",
                model.api
            );
        }
        // Unset: the field is left out.
        let body = sent(&server, &model, &context, options()).await.json();
        assert_eq!(
            tool_choice_field(model.api.as_str(), &body),
            Value::Null,
            "{}",
            model.api
        );
    }
}

#[tokio::test]
async fn default_output_limit_is_the_models_fitted_into_the_window() {
    let server = server().await;
    let context = user_context("hi");
    let field = |api: &str, body: &Value| match api {
        API_ANTHROPIC_MESSAGES => body["max_tokens"].clone(),
        API_OPENAI_RESPONSES => body["max_output_tokens"].clone(),
        // OpenAI's field (the provider is `openai`); other servers get `max_tokens`.
        API_OPENAI_COMPLETIONS => body["max_completion_tokens"].clone(),
        _ => body["generationConfig"]["maxOutputTokens"].clone(),
    };
    for mut model in all_apis(&server) {
        let body = sent(&server, &model, &context, options()).await.json();
        // pi 1.6 fits the model's limit into the window less the input on every API
        // (`crate::output_limit`; 128,000 - 4,096 - 1 for "hi" - 3 for the system prompt
        // "Be brief.", counted as pi's leading system message), with no 32,000 cap.
        let expected = json!(123_900);
        assert_eq!(field(model.api.as_str(), &body), expected, "{}", model.api);
        let explicit = options().with_max_tokens(500);
        let body = sent(&server, &model, &context, explicit).await.json();
        assert_eq!(
            field(model.api.as_str(), &body),
            json!(500),
            "{}",
            model.api
        );
        model.max_tokens = 8_000;
        let body = sent(&server, &model, &context, options()).await.json();
        assert_eq!(
            field(model.api.as_str(), &body),
            json!(8_000),
            "{}",
            model.api
        );
    }
}

#[tokio::test]
async fn thinking_budgets_are_added_to_the_limit_and_can_be_overridden() {
    let server = server().await;
    let mut model = model(&server, API_ANTHROPIC_MESSAGES, "anthropic", "claude-test");
    model.reasoning = true;
    model.max_tokens = 64_000;
    let context = user_context("think");
    let thinking = |level, budgets| {
        options()
            .with_reasoning(level)
            .with_thinking_budgets(budgets)
    };
    let body = sent(
        &server,
        &model,
        &context,
        thinking(ReasoningLevel::Medium, ThinkingBudgets::default()),
    )
    .await
    .json();
    assert_eq!(
        (body["max_tokens"].clone(), body["thinking"].clone()),
        (
            // The model's limit (pi 1.6: no 32,000 cap); the budget fits inside it.
            json!(64_000),
            json!({"type": "enabled", "budget_tokens": 8_192, "display": "summarized"})
        )
    );
    let custom = ThinkingBudgets::new().with_medium(4_000);
    let body = sent(
        &server,
        &model,
        &context,
        thinking(ReasoningLevel::Medium, custom),
    )
    .await
    .json();
    assert_eq!(
        (body["max_tokens"].clone(), body["thinking"].clone()),
        (
            json!(64_000),
            json!({"type": "enabled", "budget_tokens": 4_000, "display": "summarized"})
        )
    );
    // Gemini 2.5 takes the custom budget as its thinkingBudget.
    let mut gemini = self::model(
        &server,
        API_GOOGLE_GENERATIVE_AI,
        "google",
        "gemini-2.5-flash",
    );
    gemini.reasoning = true;
    let body = sent(
        &server,
        &gemini,
        &context,
        thinking(ReasoningLevel::Medium, custom),
    )
    .await
    .json();
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingBudget": 4_000})
    );
}

#[tokio::test]
async fn session_id_and_cache_retention_reach_openai_as_pi_sends_them() {
    let server = server().await;
    let context = user_context("hi");
    let responses = model(&server, API_OPENAI_RESPONSES, "openai", "gpt-test");
    let cached = |retention| {
        options()
            .with_session_id("session-7")
            .with_cache_retention(retention)
    };

    let short = sent(&server, &responses, &context, cached(CacheRetention::Short)).await;
    assert_eq!(short.json()["prompt_cache_key"], "session-7");
    assert_eq!(short.json().get("prompt_cache_retention"), None);
    // pi 1.6's Responses header is `session-id` (Chat Completions keeps `session_id`).
    assert_eq!(short.header("session-id"), Some("session-7"));
    assert_eq!(short.header("session_id"), None);
    assert_eq!(short.header("x-client-request-id"), Some("session-7"));
    let long = sent(&server, &responses, &context, cached(CacheRetention::Long)).await;
    assert_eq!(long.json()["prompt_cache_retention"], "24h");
    let none = sent(&server, &responses, &context, cached(CacheRetention::None)).await;
    assert_eq!(none.json().get("prompt_cache_key"), None);
    assert_eq!(none.header("session-id"), None);

    // Chat Completions on a server that is not api.openai.com: a key only for long retention
    // where the model says the server supports it, and session headers only when asked for.
    let mut completions = model(&server, API_OPENAI_COMPLETIONS, "local", "qwen");
    let short = sent(
        &server,
        &completions,
        &context,
        cached(CacheRetention::Short),
    )
    .await;
    assert_eq!(short.json().get("prompt_cache_key"), None);
    assert_eq!(short.header("x-session-affinity"), None);
    completions.compat = Some(json!({
        "supportsLongCacheRetention": true,
        "sendSessionAffinityHeaders": true,
    }));
    let long = sent(
        &server,
        &completions,
        &context,
        cached(CacheRetention::Long),
    )
    .await;
    assert_eq!(
        (
            long.json()["prompt_cache_key"].clone(),
            long.json()["prompt_cache_retention"].clone()
        ),
        (json!("session-7"), json!("24h"))
    );
    for header in ["session_id", "x-client-request-id", "x-session-affinity"] {
        assert_eq!(long.header(header), Some("session-7"), "{header}");
    }
}

#[tokio::test]
async fn openrouter_claude_gets_anthropic_cache_markers_through_chat_completions() {
    let server = server().await;
    let mut model = model(
        &server,
        API_OPENAI_COMPLETIONS,
        "openrouter",
        "anthropic/claude-sonnet-4.5",
    );
    model.base_url = format!("{}/v1", server.base_url());
    let context = with_tool(user_context("hi"));
    let body = sent(&server, &model, &context, options()).await.json();
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": [{"type": "text", "text": "Be brief.", "cache_control": ephemeral}]},
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": ephemeral}]},
        ])
    );
    assert_eq!(body["tools"][0]["cache_control"], ephemeral);
    let none = options().with_cache_retention(CacheRetention::None);
    let body = sent(&server, &model, &context, none).await.json();
    assert!(!body.to_string().contains("cache_control"), "{body}");
}

#[tokio::test]
async fn on_payload_sees_and_replaces_every_apis_body() {
    let server = server().await;
    let seen = Arc::new(Mutex::new(Vec::<(String, Value)>::new()));
    for model in all_apis(&server) {
        let log = seen.clone();
        let options = options().with_on_payload(move |mut body, model| {
            log.lock()
                .unwrap()
                .push((model.api.to_string(), body.clone()));
            async move {
                body["x_added_by_hook"] = json!(true);
                Ok(Some(body))
            }
        });
        let request = sent(&server, &model, &user_context("hi"), options).await;
        let body = request.json();
        assert_eq!(body["x_added_by_hook"], true, "{}", model.api);
        let (api, original) = seen.lock().unwrap().last().cloned().unwrap();
        assert_eq!(api, model.api);
        // The hook saw exactly what would have been sent.
        let mut without = body.clone();
        without.as_object_mut().unwrap().remove("x_added_by_hook");
        assert_eq!(without, original, "{}", model.api);
    }
    // Keeping the body: `Ok(None)`.
    let model = &all_apis(&server)[2];
    let keep = options().with_on_payload(|_, _| async { Ok(None) });
    let body = sent(&server, model, &user_context("hi"), keep).await.json();
    assert_eq!(body["messages"][1]["content"], "hi");
}

#[tokio::test]
async fn on_payload_can_refuse_a_request_before_anything_is_sent() {
    let server = server().await;
    for model in all_apis(&server) {
        let refuse =
            options().with_on_payload(|_, _| async { Err("policy: no external calls".into()) });
        let (_, message) = run(&model, &user_context("hi"), refuse).await;
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(
            message.error_message.as_deref(),
            Some("on_payload refused the request: policy: no external calls"),
            "{}",
            model.api
        );
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn on_response_sees_the_status_and_headers_of_every_attempt() {
    let limited = Reply::json_error(429, r#"{"error":{"message":"slow down"}}"#)
        .with_header("x-ratelimit-remaining-requests", "0")
        .with_header("retry-after-ms", "5");
    let ok = Reply::sse([
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    ])
    .with_header("x-ratelimit-remaining-requests", "41");
    let server = TestServer::start(vec![limited, ok]).await.unwrap();
    let model = model(&server, API_OPENAI_COMPLETIONS, "local", "qwen");
    let seen = Arc::new(Mutex::new(Vec::<ProviderResponse>::new()));
    let log = seen.clone();
    let options = options().with_on_response(move |response, _| {
        log.lock().unwrap().push(response);
        async {}
    });
    let (_, message) = run(&model, &user_context("hi"), options).await;
    assert_eq!(message.text(), "hi");
    let seen = seen.lock().unwrap().clone();
    let summary: Vec<(u16, Option<&str>)> = seen
        .iter()
        .map(|r| {
            (
                r.status,
                r.headers
                    .get("x-ratelimit-remaining-requests")
                    .map(String::as_str),
            )
        })
        .collect();
    assert_eq!(summary, vec![(429, Some("0")), (200, Some("41"))]);
    assert_eq!(
        seen[1].headers.get("content-type").map(String::as_str),
        Some("text/event-stream")
    );
}

#[tokio::test]
async fn metadata_user_id_reaches_anthropic_only() {
    let server = server().await;
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert("user_id".to_string(), json!("user-1234"));
    metadata.insert("team".to_string(), json!("ignored"));
    for model in all_apis(&server) {
        let options = options().with_metadata(metadata.clone());
        let body = sent(&server, &model, &user_context("hi"), options)
            .await
            .json();
        if model.api == API_ANTHROPIC_MESSAGES {
            assert_eq!(body["metadata"], json!({"user_id": "user-1234"}));
        } else {
            assert_eq!(body.get("metadata"), None, "{}", model.api);
        }
    }
}

#[tokio::test]
async fn service_tier_is_sent_and_scales_the_cost() {
    let server = server().await;
    let mut model = model(&server, API_OPENAI_RESPONSES, "openai", "gpt-test");
    // $1 per million input tokens, $10 per million output: the reply (1M in, 1M out) costs $11.
    model.cost = ModelCost::new(1.0, 10.0);
    let tiered = |tier| {
        let mut options = options();
        options.service_tier = tier;
        options
    };
    let (_, standard) = run(&model, &user_context("hi"), tiered(None)).await;
    assert!(
        (standard.usage.cost.total - 11.0).abs() < 1e-9,
        "{:?}",
        standard.usage.cost
    );
    let (_, flex) = run(&model, &user_context("hi"), tiered(Some(ServiceTier::Flex))).await;
    assert_eq!(
        server.requests().last().unwrap().json()["service_tier"],
        "flex"
    );
    assert!(
        (flex.usage.cost.total - 5.5).abs() < 1e-9,
        "{:?}",
        flex.usage.cost
    );
    assert!((flex.usage.cost.output - 5.0).abs() < 1e-9);
    let (_, priority) = run(
        &model,
        &user_context("hi"),
        tiered(Some(ServiceTier::Priority)),
    )
    .await;
    assert!(
        (priority.usage.cost.total - 22.0).abs() < 1e-9,
        "{:?}",
        priority.usage.cost
    );
}

#[tokio::test]
async fn the_tier_the_server_names_decides_the_price() {
    let reply = Reply::sse([
        "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"service_tier\":\"default\",\"usage\":{\"input_tokens\":1000000,\"output_tokens\":0,\"total_tokens\":1000000}}}\n\n",
    ]);
    let server = TestServer::start(vec![reply]).await.unwrap();
    let mut model = model(&server, API_OPENAI_RESPONSES, "openai", "gpt-test");
    model.cost.input = 2.0;
    // Asked for flex, served (and billed) at the default tier.
    let options = options().with_service_tier(ServiceTier::Flex);
    let (_, message) = run(&model, &user_context("hi"), options).await;
    assert!(
        (message.usage.cost.total - 2.0).abs() < 1e-9,
        "{:?}",
        message.usage.cost
    );
}

#[tokio::test]
async fn reasoning_summary_turns_reasoning_on_for_responses() {
    let server = server().await;
    let mut model = model(&server, API_OPENAI_RESPONSES, "openai", "gpt-test");
    model.reasoning = true;
    let summary_only = options().with_reasoning_summary(ReasoningSummary::Detailed);
    let body = sent(&server, &model, &user_context("hi"), summary_only)
        .await
        .json();
    assert_eq!(
        body["reasoning"],
        json!({"effort": "medium", "summary": "detailed"})
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    let effort = options().with_reasoning(ReasoningLevel::Low);
    let body = sent(&server, &model, &user_context("hi"), effort)
        .await
        .json();
    assert_eq!(
        body["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
    // No level asked: the model's off effort (pi 1.6), without `include`.
    let body = sent(&server, &model, &user_context("hi"), options())
        .await
        .json();
    assert_eq!(body["reasoning"], json!({"effort": "none"}));
    assert_eq!(body.get("include"), None);
}

#[tokio::test]
async fn anthropic_cache_tokens_land_in_usage_and_cost() {
    // A real exchange (rig's recording): 9,699 tokens written to the cache.
    let response = oxpi_testkit::recorded_fixture(
        "anthropic/prompt_caching/matrix_automatic_prefix_1h_tools_streaming/00.response.sse",
    );
    let server = TestServer::start(vec![Reply::sse_parts(vec![oxpi_testkit::Part::Bytes(
        response,
    )])])
    .await
    .unwrap();
    let mut model = model(
        &server,
        API_ANTHROPIC_MESSAGES,
        "anthropic",
        "claude-sonnet-4-6",
    );
    model.cost = ModelCost::new(3.0, 15.0).with_cache(0.3, 3.75);
    let (_, message) = run(&model, &user_context("hi"), options()).await;
    assert_eq!(
        (
            message.usage.input,
            message.usage.cache_read,
            message.usage.cache_write
        ),
        (3, 0, 9_699)
    );
    let expected_write = 9_699.0 * 3.75 / 1e6;
    assert!((message.usage.cost.cache_write - expected_write).abs() < 1e-12);
    assert!(
        (message.usage.cost.total
            - (message.usage.cost.input + message.usage.cost.output + expected_write))
            .abs()
            < 1e-12
    );
}

#[tokio::test]
async fn xhigh_is_clamped_to_high_unless_the_model_takes_it() {
    let server = server().await;
    let xhigh = || options().with_reasoning(ReasoningLevel::Xhigh);
    let mut completions = model(&server, API_OPENAI_COMPLETIONS, "openai", "o-test");
    completions.reasoning = true;
    let mut responses = model(&server, API_OPENAI_RESPONSES, "openai", "gpt-test");
    responses.reasoning = true;
    let effort = |body: &Value| {
        body.get("reasoning_effort")
            .cloned()
            .unwrap_or_else(|| body["reasoning"]["effort"].clone())
    };
    for model in [&mut completions, &mut responses] {
        let body = sent(&server, model, &user_context("hi"), xhigh())
            .await
            .json();
        assert_eq!(effort(&body), "high", "{}", model.api);
        model.compat = Some(json!({"supportsXhigh": true}));
        let body = sent(&server, model, &user_context("hi"), xhigh())
            .await
            .json();
        assert_eq!(effort(&body), "xhigh", "{}", model.api);
    }
}

#[tokio::test]
async fn azure_sends_the_responses_body_to_its_own_endpoint_with_an_api_key_header() {
    let server = server().await;
    let mut azure = model(
        &server,
        oxpi_ai::API_AZURE_OPENAI_RESPONSES,
        "azure-openai-responses",
        "gpt-5-mini",
    );
    azure.base_url = format!("{}/openai/v1", server.base_url());
    let request = sent(&server, &azure, &with_tool(user_context("hi")), options()).await;
    assert_eq!(request.path, "/openai/v1/responses?api-version=v1");
    assert_eq!(request.header("api-key"), Some("test-key"));
    assert_eq!(request.header("authorization"), None);
    let body = request.json();
    // The deployment (no AZURE_OPENAI_DEPLOYMENT_NAME_MAP here: the model id), then the same
    // body as OpenAI's.
    assert_eq!(body["model"], "gpt-5-mini");
    assert_eq!(body["tools"][0]["name"], "read");
    assert_eq!(body["input"][1]["content"][0]["text"], "hi");
}

#[tokio::test]
async fn pis_thinking_formats_and_level_maps_reach_chat_completions() {
    let server = server().await;
    let think = |level| {
        let mut options = options();
        options.reasoning = level;
        options
    };
    let with_format = |format: &str| {
        let mut m = model(&server, API_OPENAI_COMPLETIONS, "local", "m");
        m.reasoning = true;
        m.compat = Some(json!({"thinkingFormat": format}));
        m
    };
    let fields = |body: &Value| {
        json!({
            "enable_thinking": body.get("enable_thinking"),
            "chat_template_kwargs": body.get("chat_template_kwargs"),
            "thinking": body.get("thinking"),
            "reasoning_effort": body.get("reasoning_effort"),
        })
    };
    let cases = [
        (
            "zai",
            Some(ReasoningLevel::High),
            json!({"enable_thinking": null, "chat_template_kwargs": null, "thinking": {"type": "enabled", "clear_thinking": false}, "reasoning_effort": "high"}),
        ),
        (
            "zai",
            None,
            json!({"enable_thinking": null, "chat_template_kwargs": null, "thinking": {"type": "disabled"}, "reasoning_effort": null}),
        ),
        (
            "qwen",
            Some(ReasoningLevel::Low),
            json!({"enable_thinking": true, "chat_template_kwargs": null, "thinking": null, "reasoning_effort": "low"}),
        ),
        (
            "qwen-chat-template",
            None,
            json!({"enable_thinking": null, "chat_template_kwargs": {"enable_thinking": false, "preserve_thinking": true}, "thinking": null, "reasoning_effort": null}),
        ),
        (
            "deepseek",
            Some(ReasoningLevel::Medium),
            json!({"enable_thinking": null, "chat_template_kwargs": null, "thinking": {"type": "enabled"}, "reasoning_effort": "medium"}),
        ),
        (
            "deepseek",
            None,
            json!({"enable_thinking": null, "chat_template_kwargs": null, "thinking": {"type": "disabled"}, "reasoning_effort": null}),
        ),
    ];
    for (format, level, expected) in cases {
        let body = sent(
            &server,
            &with_format(format),
            &user_context("hi"),
            think(level),
        )
        .await
        .json();
        assert_eq!(fields(&body), expected, "{format} {level:?}");
    }
    // A thinking-level map renames levels (DeepSeek's `xhigh` is `max`).
    let mut deepseek = with_format("deepseek");
    deepseek.thinking_level_map = Some(
        [("xhigh".to_string(), Some("max".to_string()))]
            .into_iter()
            .collect(),
    );
    let body = sent(
        &server,
        &deepseek,
        &user_context("hi"),
        think(Some(ReasoningLevel::Xhigh)),
    )
    .await
    .json();
    assert_eq!(body["reasoning_effort"], "max");
}

#[tokio::test]
async fn cloudflares_gateway_gets_the_key_in_its_own_header() {
    let server = server().await;
    for api in [
        API_OPENAI_COMPLETIONS,
        API_OPENAI_RESPONSES,
        API_ANTHROPIC_MESSAGES,
    ] {
        let model = model(&server, api, "cloudflare-ai-gateway", "m");
        let request = sent(&server, &model, &user_context("hi"), options()).await;
        assert_eq!(
            request.header("cf-aig-authorization"),
            Some("Bearer test-key"),
            "{api}"
        );
        assert_eq!(request.header("authorization"), None, "{api}");
        assert_eq!(request.header("x-api-key"), None, "{api}");
    }
}
