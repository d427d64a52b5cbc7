//! What oxpi sends on the Anthropic Messages API where pi-ai 1.6 sent something else than oxpi
//! used to (issue 28, the classes `cargo xtask pi-reqdiff` found): one test per class, on the
//! request bytes a local server records. Models come from the catalogue (pi 1.6's data,
//! compat blocks included), pointed at the local server.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
mod common;

use std::time::Duration;

use common::run;
use oxpi_ai::{
    AssistantContent, AssistantMessage, CacheRetention, Context, Message, Model, ReasoningLevel,
    StopReason, StreamOptions, Tool, ToolCall, ToolResultMessage, UserContent, UserMessage,
    UserMessageContent,
};
use oxpi_testkit::{Recorded, Reply, TestServer};
use serde_json::{json, Value};

const PNG: &str = "iVBORw0KGgo=";

/// A catalogue model served by `server`.
fn catalogue_model(provider: &str, id: &str, server: &TestServer) -> Model {
    let mut model = oxpi_ai::models::get_model(provider, id)
        .unwrap_or_else(|| panic!("{provider}/{id} is in the catalogue"));
    model.base_url = server.base_url().to_string();
    model
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key("sk-ant-test")
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(20))
        .with_cache_retention(CacheRetention::None)
}

fn tool(name: &str) -> Tool {
    Tool {
        name: name.into(),
        description: format!("The {name} tool"),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        constrained_sampling: None,
    }
}

/// An assistant turn of `provider` on `api` saying `text`, with the effort it was asked at.
fn assistant(api: &str, provider: &str, text: &str, level: Option<&str>) -> Message {
    let mut message = AssistantMessage::empty(api, provider, "some-model");
    message.content = vec![AssistantContent::text(text)];
    message.stop_reason = StopReason::Stop;
    message.provider_thinking_level = level.map(str::to_string);
    message.into()
}

/// Sends one request per case and returns what the server recorded (it answers each with an
/// error: only the request matters).
async fn recorded(
    cases: Vec<(Model, Context, StreamOptions)>,
    server: &TestServer,
) -> Vec<Recorded> {
    for (model, context, options) in &cases {
        server.push(Reply::json_error(
            400,
            r#"{"error":{"message":"recorded"}}"#,
        ));
        run(model, context, options.clone()).await;
    }
    let requests = server.requests();
    assert_eq!(requests.len(), cases.len(), "one request per case");
    requests
}

async fn server() -> TestServer {
    TestServer::start(Vec::new()).await.unwrap()
}

fn image() -> UserContent {
    UserContent::image(PNG, "image/png")
}

fn image_block() -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}})
}

#[tokio::test]
async fn tool_results_carry_is_error_and_text_as_one_string() {
    let server = server().await;
    let model = catalogue_model("anthropic", "claude-sonnet-4-5", &server);
    let calls: Vec<ToolCall> = ["toolu_a", "toolu_b", "toolu_c"]
        .iter()
        .map(|id| ToolCall::new(*id, "read", serde_json::Map::new()))
        .collect();
    let mut turn = AssistantMessage::empty("anthropic-messages", "anthropic", &model.id);
    turn.content = calls
        .iter()
        .cloned()
        .map(AssistantContent::ToolCall)
        .collect();
    turn.stop_reason = StopReason::ToolUse;
    let mut two_texts = ToolResultMessage::text(&calls[0], "line 1", false);
    two_texts.content.push(UserContent::text("line 2"));
    let mut failed = ToolResultMessage::text(&calls[1], "it broke", true);
    failed.content.push(image());
    let mut only_image = ToolResultMessage::text(&calls[2], "", false);
    only_image.content = vec![image()];
    let context = Context::new("sys")
        .with_message(Message::user("go"))
        .with_message(turn)
        .with_message(two_texts)
        .with_message(failed)
        .with_message(only_image);
    let requests = recorded(vec![(model, context, options())], &server).await;
    assert_eq!(
        requests[0].json()["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "line 1\nline 2",
             "is_error": false},
            {"type": "tool_result", "tool_use_id": "toolu_b",
             "content": "it broke\n(image attached after the tool results)", "is_error": true},
            {"type": "tool_result", "tool_use_id": "toolu_c",
             "content": [{"type": "text", "text": "(see attached image)"}, image_block()],
             "is_error": false},
            {"type": "text", "text": "Images from the error result of tool call toolu_b (read):"},
            image_block(),
        ]})
    );
}

#[tokio::test]
async fn a_users_plain_text_stays_a_string_unless_it_carries_the_cache_marker() {
    let server = server().await;
    let model = catalogue_model("anthropic", "claude-sonnet-4-5", &server);
    let text = Context::new("sys").with_message(Message::user("hi"));
    let blocks = Context::new("sys").with_message(UserMessage {
        content: UserMessageContent::Blocks(vec![UserContent::text("look"), image()]),
        timestamp: 0,
    });
    let short = || options().with_cache_retention(CacheRetention::Short);
    let requests = recorded(
        vec![
            (model.clone(), text.clone(), options()),
            (model.clone(), text, short()),
            (model, blocks, options()),
        ],
        &server,
    )
    .await;
    assert_eq!(
        requests[0].json()["messages"],
        json!([{"role": "user", "content": "hi"}])
    );
    assert_eq!(
        requests[1].json()["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
    );
    assert_eq!(
        requests[2].json()["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "look"}, image_block()]}])
    );
}

#[tokio::test]
async fn managed_effort_models_get_effort_markers_block_binding_and_their_betas() {
    let server = server().await;
    let fable = catalogue_model("anthropic", "claude-fable-5-1", &server);
    // Its level map has no `off: null`: no level means thinking off, and no markers.
    let haiku = catalogue_model("anthropic", "claude-haiku-5-5", &server);
    let history = Context::new("sys")
        .with_message(Message::user("q1"))
        .with_message(assistant(
            "anthropic-messages",
            "anthropic",
            "a1",
            Some("xhigh"),
        ))
        .with_message(Message::user("q2"))
        // Another provider's effort says nothing about this one.
        .with_message(assistant("openai-responses", "openai", "a2", Some("high")))
        .with_message(Message::user("q3"));
    let requests = recorded(
        vec![
            (
                fable.clone(),
                history.clone(),
                options().with_temperature(0.3),
            ),
            (
                fable.clone(),
                Context::new("sys").with_message(Message::user("hi")),
                options().with_reasoning(ReasoningLevel::Medium),
            ),
            (
                haiku,
                Context::new("sys").with_message(Message::user("hi")),
                options(),
            ),
        ],
        &server,
    )
    .await;
    let marker = |effort: &str| json!({"role": "system", "content": [], "output_config": {"effort": effort}});
    let betas =
        Some("mid-conversation-output-config-2026-07-01,thinking-binding-controls-2026-08-01");

    let body = requests[0].json();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "q1"},
            marker("xhigh"),
            {"role": "assistant", "content": [{"type": "text", "text": "a1"}]},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": [{"type": "text", "text": "a2"}]},
            {"role": "user", "content": "q3"},
            // No level asked: pi's default effort.
            marker("high"),
        ])
    );
    assert_eq!(
        body["thinking"],
        json!({"type": "adaptive", "display": "summarized",
               "block_binding": {"prefix_mismatch_behavior": "drop_block"}})
    );
    // The top-level effort stays fixed (it is part of the cached prompt).
    assert_eq!(body["output_config"], json!({"effort": "low"}));
    assert_eq!(body.get("temperature"), None);
    assert_eq!(requests[0].header("anthropic-beta"), betas);

    let medium = requests[1].json();
    assert_eq!(medium["messages"][1], marker("medium"));
    assert_eq!(medium["output_config"], json!({"effort": "low"}));

    let off = requests[2].json();
    assert_eq!(off["thinking"], json!({"type": "disabled"}));
    assert_eq!(off["messages"], json!([{"role": "user", "content": "hi"}]));
    assert_eq!(off.get("output_config"), None);
    assert_eq!(requests[2].header("anthropic-beta"), betas);
}

#[tokio::test]
async fn a_managed_effort_reply_records_the_effort_it_was_asked_at() {
    let reply = || {
        Reply::sse([
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ])
    };
    let server = TestServer::start(vec![reply(), reply()]).await.unwrap();
    let fable = catalogue_model("anthropic", "claude-fable-5-1", &server);
    let opus = catalogue_model("anthropic", "claude-opus-4-7", &server);
    let hi = Context::new("sys").with_message(Message::user("hi"));
    let high = options().with_reasoning(ReasoningLevel::High);
    let (_, managed) = run(&fable, &hi, high.clone()).await;
    assert_eq!(managed.stop_reason, StopReason::Stop);
    assert_eq!(managed.provider_thinking_level.as_deref(), Some("high"));
    // Adaptive thinking without managed effort records none.
    let (_, plain) = run(&opus, &hi, high).await;
    assert_eq!(plain.stop_reason, StopReason::Stop);
    assert_eq!(plain.provider_thinking_level, None);
}

#[tokio::test]
async fn native_tool_change_models_declare_the_deferred_placeholder() {
    let server = server().await;
    // claude-fable-5: supportsMidConvoSystemMessages and supportsMidConvoToolChanges.
    let fable = catalogue_model("anthropic", "claude-fable-5", &server);
    let opus = catalogue_model("anthropic", "claude-opus-4-7", &server);
    let tools = Context::new("sys")
        .with_tool(tool("read"))
        .with_message(Message::user("hi"));
    let plain = Context::new("sys").with_message(Message::user("hi"));
    let requests = recorded(
        vec![
            (fable.clone(), tools.clone(), options()),
            (fable, plain, options()),
            (opus, tools, options()),
        ],
        &server,
    )
    .await;
    let placeholder = json!({
        "name": "__pi_deferred_placeholder__",
        "description": "Reserved placeholder. Never available. Never call this.",
        "input_schema": {"type": "object", "properties": {}, "required": []},
        "defer_loading": true,
    });
    let body = requests[0].json();
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "__pi_deferred_placeholder__"]);
    assert_eq!(body["tools"][1], placeholder);
    assert_eq!(
        requests[0].header("anthropic-beta"),
        Some("server-side-fallback-2026-07-01,inline-tools-2026-09-15")
    );
    // No tools: nothing to change, no placeholder.
    assert_eq!(requests[1].json().get("tools"), None);
    assert_eq!(
        requests[1].header("anthropic-beta"),
        Some("server-side-fallback-2026-07-01")
    );
    assert_eq!(requests[2].json()["tools"].as_array().unwrap().len(), 1);
    assert_eq!(requests[2].header("anthropic-beta"), None);
}

#[tokio::test]
async fn cache_markers_follow_the_hosts_compat() {
    let server = server().await;
    let anthropic = catalogue_model("anthropic", "claude-sonnet-4-5", &server);
    // Fireworks: supportsCacheControlOnTools and supportsLongCacheRetention false.
    let fireworks = catalogue_model(
        "fireworks",
        "accounts/fireworks/models/deepseek-v4p1-flash",
        &server,
    );
    let context = Context::new("sys")
        .with_tool(tool("ls"))
        .with_tool(tool("read"))
        .with_message(Message::user("hi"));
    let long = || options().with_cache_retention(CacheRetention::Long);
    let requests = recorded(
        vec![
            (anthropic, context.clone(), long()),
            (fireworks, context, long()),
        ],
        &server,
    )
    .await;
    let hour = json!({"type": "ephemeral", "ttl": "1h"});
    let body = requests[0].json();
    assert_eq!(body["system"][0]["cache_control"], hour);
    assert_eq!(body["tools"][0].get("cache_control"), None);
    assert_eq!(body["tools"][1]["cache_control"], hour);
    assert_eq!(body["messages"][0]["content"][0]["cache_control"], hour);

    let ephemeral = json!({"type": "ephemeral"});
    let body = requests[1].json();
    assert_eq!(body["system"][0]["cache_control"], ephemeral);
    assert!(
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("cache_control").is_none()),
        "{body}"
    );
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        ephemeral
    );
}

#[tokio::test]
async fn requests_go_to_the_sdks_beta_endpoint_with_its_browser_header() {
    let server = server().await;
    let model = catalogue_model("anthropic", "claude-sonnet-4-5", &server);
    let hi = Context::new("sys").with_message(Message::user("hi"));
    let requests = recorded(
        vec![
            (model.clone(), hi.clone(), options()),
            (
                model,
                hi,
                options().with_headers([("anthropic-dangerous-direct-browser-access", "false")]),
            ),
        ],
        &server,
    )
    .await;
    assert_eq!(requests[0].path, "/v1/messages?beta=true");
    assert_eq!(
        requests[0].header("anthropic-dangerous-direct-browser-access"),
        Some("true")
    );
    // The caller's headers come last, as in pi.
    assert_eq!(
        requests[1].header("anthropic-dangerous-direct-browser-access"),
        Some("false")
    );
}

#[tokio::test]
async fn the_session_id_goes_in_the_hosts_affinity_header_when_caching() {
    let server = server().await;
    // Fireworks: compat `sendSessionAffinityHeaders`; OpenRouter: pi's default by provider,
    // as OpenRouter's `x-session-id`; Anthropic itself: none.
    let fireworks = catalogue_model(
        "fireworks",
        "accounts/fireworks/models/deepseek-v4p1-flash",
        &server,
    );
    let openrouter = catalogue_model("openrouter", "anthropic/claude-fable-5", &server);
    let anthropic = catalogue_model("anthropic", "claude-sonnet-4-5", &server);
    let hi = Context::new("sys").with_message(Message::user("hi"));
    let session = |retention| {
        options()
            .with_cache_retention(retention)
            .with_session_id("session-42")
    };
    let requests = recorded(
        vec![
            (
                fireworks.clone(),
                hi.clone(),
                session(CacheRetention::Short),
            ),
            (fireworks, hi.clone(), session(CacheRetention::None)),
            (openrouter, hi.clone(), session(CacheRetention::Short)),
            (anthropic, hi, session(CacheRetention::Short)),
        ],
        &server,
    )
    .await;
    let affinity = |r: &Recorded| {
        (
            r.header("x-session-affinity").map(str::to_string),
            r.header("x-session-id").map(str::to_string),
        )
    };
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        requests.iter().map(affinity).collect::<Vec<_>>(),
        vec![
            (some("session-42"), None),
            (None, None),
            (None, some("session-42")),
            (None, None),
        ]
    );
}
