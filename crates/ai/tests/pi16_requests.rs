//! What oxpi sends, on the request bytes a local server records, where pi-ai 1.6 sends
//! something else than oxpi used to (issue 28): one test per class of difference on the
//! Anthropic, Google, Bedrock, Mistral and Responses APIs, and the retry rules of the shared
//! transport. Models come from the catalogue (pi 1.6's data), pointed at the local server.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
mod common;

use std::time::Duration;

use common::{run, user_context};
use oxpi_ai::{
    AssistantContent, AssistantMessage, Context, FailureKind, ImageContent, Message, Model,
    ReasoningLevel, StopReason, StreamOptions, TextContent, Tool, ToolCall, ToolResultMessage,
    UserContent, UserMessage, UserMessageContent,
};
use oxpi_testkit::{Recorded, Reply, TestServer};
use serde_json::{json, Value};

/// A catalogue model served by `server` (`suffix` after its address: `/v1` where the API's
/// paths need it).
fn catalogue_model(provider: &str, id: &str, server: &TestServer, suffix: &str) -> Model {
    let mut model = oxpi_ai::models::get_model(provider, id)
        .unwrap_or_else(|| panic!("{provider}/{id} is in the catalogue"));
    model.base_url = format!("{}{suffix}", server.base_url());
    model
}

fn options(key: &str) -> StreamOptions {
    StreamOptions::default()
        .with_api_key(key)
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(20))
        .with_cache_retention(oxpi_ai::CacheRetention::None)
}

fn read_tool() -> Tool {
    Tool {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
            "required": ["path"]}),
        constrained_sampling: None,
    }
}

/// Sends one request per `(model, context, options)` and returns what the server recorded.
/// The server answers each with an error: only the request matters here.
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

async fn empty_server() -> TestServer {
    TestServer::start(Vec::new()).await.unwrap()
}

// --- 1. Anthropic format -------------------------------------------------------------------

#[tokio::test]
async fn anthropic_requests_carry_auth_betas_eager_tools_and_thinking_as_pi_1_6() {
    let server = empty_server().await;
    let tools = || user_context("read a.txt").with_tool(read_tool());
    let budget = catalogue_model("anthropic", "claude-sonnet-4-5", &server, "/v1");
    let adaptive = catalogue_model("anthropic", "claude-opus-4-7", &server, "/v1");
    let copilot = catalogue_model("github-copilot", "claude-haiku-4.5", &server, "/v1");
    let key = "sk-ant-test";
    let requests = recorded(
        vec![
            // Copilot: a bearer token; its Claude models take no eager tool streaming.
            (copilot.clone(), tools(), options("ghu_copilot_token")),
            // Budget thinking with tools: the interleaved-thinking beta, `display`.
            (
                budget.clone(),
                tools(),
                options(key).with_reasoning(ReasoningLevel::Medium),
            ),
            // Opus 4.7 rejects budget thinking: adaptive, with an effort; no temperature.
            (
                adaptive.clone(),
                tools(),
                options(key)
                    .with_reasoning(ReasoningLevel::High)
                    .with_temperature(0.3),
            ),
            // No level on a thinking model: thinking off, said so; temperature kept.
            (budget.clone(), tools(), options(key).with_temperature(0.3)),
        ],
        &server,
    )
    .await;

    let copilot_request = &requests[0];
    assert_eq!(
        copilot_request.header("authorization"),
        Some("Bearer ghu_copilot_token")
    );
    assert_eq!(copilot_request.header("x-api-key"), None);
    assert_eq!(
        copilot_request.header("anthropic-beta"),
        Some("fine-grained-tool-streaming-2025-05-14")
    );
    assert_eq!(
        copilot_request.json()["tools"][0].get("eager_input_streaming"),
        None
    );
    assert_eq!(
        copilot_request.json()["thinking"],
        json!({"type": "disabled"})
    );

    let thinking = &requests[1];
    assert_eq!(thinking.header("x-api-key"), Some(key));
    assert_eq!(
        thinking.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    let body = thinking.json();
    assert_eq!(body["tools"][0]["eager_input_streaming"], json!(true));
    assert_eq!(body["thinking"]["type"], "enabled");
    assert_eq!(body["thinking"]["display"], "summarized");
    assert!(body["thinking"]["budget_tokens"].as_u64().unwrap() >= 1024);

    let opus = &requests[2];
    assert_eq!(opus.header("anthropic-beta"), None);
    let body = opus.json();
    assert_eq!(
        body["thinking"],
        json!({"type": "adaptive", "display": "summarized"})
    );
    assert_eq!(body["output_config"], json!({"effort": "high"}));
    assert_eq!(body.get("temperature"), None);

    let off = requests[3].json();
    assert_eq!(off["thinking"], json!({"type": "disabled"}));
    assert_eq!(off["temperature"], json!(0.3));
    assert_eq!(requests[3].header("anthropic-beta"), None);
}

// --- 2. Google -----------------------------------------------------------------------------

#[tokio::test]
async fn gemini_off_is_sent_as_off_and_levels_are_clamped_and_mapped() {
    let server = empty_server().await;
    let gemini = |id: &str| catalogue_model("google", id, &server, "/v1beta");
    let hi = || user_context("hi");
    let key = "gemini-key";
    let cases = [
        ("gemini-2.5-flash", None, json!({"thinkingBudget": 0})),
        // Gemini 3 cannot stop thinking: its lowest level.
        (
            "gemini-3-flash-preview",
            None,
            json!({"thinkingLevel": "MINIMAL"}),
        ),
        (
            "gemini-3.1-pro-preview",
            None,
            json!({"thinkingLevel": "LOW"}),
        ),
        // Minimal is not a level of 3.1 Pro: the nearest above.
        (
            "gemini-3.1-pro-preview",
            Some(ReasoningLevel::Minimal),
            json!({"includeThoughts": true, "thinkingLevel": "LOW"}),
        ),
        (
            "gemini-3-flash-preview",
            Some(ReasoningLevel::Medium),
            json!({"includeThoughts": true, "thinkingLevel": "MEDIUM"}),
        ),
        (
            "gemini-2.5-pro",
            Some(ReasoningLevel::Xhigh),
            json!({"includeThoughts": true, "thinkingBudget": 32768}),
        ),
    ];
    let requests = recorded(
        cases
            .iter()
            .map(|(id, level, _)| {
                let mut options = options(key);
                options.reasoning = *level;
                (gemini(id), hi(), options)
            })
            .collect(),
        &server,
    )
    .await;
    for ((id, level, expected), request) in cases.iter().zip(&requests) {
        assert_eq!(
            request.json()["generationConfig"]["thinkingConfig"],
            *expected,
            "{id} {level:?}"
        );
    }
}

// --- 3. Images for text-only models --------------------------------------------------------

fn image() -> UserContent {
    UserContent::Image(ImageContent {
        data: "iVBORw0KGgo=".into(),
        mime_type: "image/png".into(),
    })
}

/// A user turn with text and two images, a tool call, and its result with an image.
fn image_context(model: &Model) -> Context {
    let call = ToolCall::new(
        "call_1",
        "read",
        json!({"path": "a.png"}).as_object().cloned().unwrap(),
    );
    let mut reply = AssistantMessage::empty(&model.api, &model.provider, &model.id);
    reply.content = vec![AssistantContent::ToolCall(call.clone())];
    reply.stop_reason = StopReason::ToolUse;
    let mut result = ToolResultMessage::text(&call, "the file", false);
    result.content.push(image());
    Context::new("Be brief.")
        .with_tool(read_tool())
        .with_message(Message::User(UserMessage {
            content: UserMessageContent::Blocks(vec![
                UserContent::text("what is this?"),
                image(),
                image(),
            ]),
            timestamp: 0,
        }))
        .with_message(Message::Assistant(reply))
        .with_message(Message::ToolResult(result))
}

const USER_PLACEHOLDER: &str = "(image omitted: model does not support images)";
const TOOL_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";

#[tokio::test]
async fn mistral_text_only_models_get_pi_placeholders_for_images() {
    let server = empty_server().await;
    let model = catalogue_model("mistral", "codestral-latest", &server, "");
    assert!(!model.input.contains(&oxpi_ai::InputKind::Image));
    let requests = recorded(
        vec![(model.clone(), image_context(&model), options("mistral-key"))],
        &server,
    )
    .await;
    let body = String::from_utf8(requests[0].body.clone()).unwrap();
    assert!(
        !body.contains("image_url") && !body.contains("iVBORw0KGgo"),
        "{body}"
    );
    let json = requests[0].json();
    assert_eq!(
        json["messages"][1]["content"],
        json!([{"type": "text", "text": "what is this?"}, {"type": "text", "text": USER_PLACEHOLDER}])
    );
    assert!(body.contains(TOOL_PLACEHOLDER), "{body}");
}

#[cfg(feature = "bedrock")]
#[tokio::test]
async fn bedrock_text_only_models_get_pi_placeholders_for_images() {
    let server = empty_server().await;
    let model = catalogue_model("amazon-bedrock", "amazon.nova-micro-v1:0", &server, "");
    assert!(!model.input.contains(&oxpi_ai::InputKind::Image));
    let requests = recorded(
        vec![(
            model.clone(),
            image_context(&model),
            options("bedrock-api-key"),
        )],
        &server,
    )
    .await;
    let body = String::from_utf8(requests[0].body.clone()).unwrap();
    assert!(
        !body.contains("\"image\"") && !body.contains("iVBORw0KGgo"),
        "{body}"
    );
    let json = requests[0].json();
    assert_eq!(
        json["messages"][0]["content"],
        json!([{"text": "what is this?"}, {"text": USER_PLACEHOLDER}])
    );
    assert!(body.contains(TOOL_PLACEHOLDER), "{body}");
}

// --- 4. Responses: replayed assistant messages ---------------------------------------------

fn responses_event(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap()
    )
}

#[tokio::test]
async fn responses_replay_keeps_each_message_id_status_and_phase() {
    let reply = [
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "item": {"type": "message", "id": "msg_commentary_1",
            "role": "assistant", "content": [], "status": "in_progress", "phase": "commentary"}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_commentary_1", "content_index": 0, "delta": "Looking."}),
        json!({"type": "response.output_item.done", "item": {"type": "message", "id": "msg_commentary_1",
            "role": "assistant", "status": "completed", "phase": "commentary",
            "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]}}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
            "usage": {"input_tokens": 3, "output_tokens": 2}}}),
    ];
    let server = TestServer::start(vec![Reply::sse(reply.map(responses_event))])
        .await
        .unwrap();
    let model = catalogue_model("openai", "gpt-5.2", &server, "/v1");
    let (_, first) = run(&model, &user_context("look"), options("sk-test")).await;
    assert_eq!(
        first.stop_reason,
        StopReason::Stop,
        "{:?}",
        first.error_message
    );
    // Text from another model has no item id of its own: pi's stand-in.
    let mut other = AssistantMessage::empty("anthropic-messages", "anthropic", "claude-x");
    other.content = vec![AssistantContent::Text(TextContent {
        text: "Earlier.".into(),
        text_signature: None,
    })];
    let context = Context::new("Be brief.")
        .with_message(Message::user("before"))
        .with_message(Message::Assistant(other))
        .with_message(Message::user("look"))
        .with_message(Message::Assistant(first))
        .with_message(Message::user("go on"));
    server.push(Reply::json_error(
        400,
        r#"{"error":{"message":"recorded"}}"#,
    ));
    run(&model, &context, options("sk-test")).await;
    let input = server.requests()[1].json()["input"].clone();
    let assistants: Vec<&Value> = input
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["role"] == "assistant")
        .collect();
    assert_eq!(
        assistants,
        [
            &json!({"type": "message", "role": "assistant", "status": "completed", "id": "msg_pi_1",
                "content": [{"type": "output_text", "text": "Earlier.", "annotations": []}]}),
            &json!({"type": "message", "role": "assistant", "status": "completed",
                "id": "msg_commentary_1", "phase": "commentary",
                "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]}),
        ]
    );
}

// --- 5. Retries ----------------------------------------------------------------------------

fn retry_options() -> StreamOptions {
    options("sk-ant-test")
        .with_max_retries(2)
        .with_retry_base_delay(Duration::from_millis(5))
}

fn anthropic_ok() -> Reply {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [], "model": "claude-sonnet-4-5", "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ];
    Reply::sse(events.map(responses_event))
}

#[tokio::test]
async fn retries_follow_x_should_retry_dates_and_never_an_exhausted_quota() {
    let context = user_context("hi");
    // An exhausted quota is a 429 that waiting does not lift: asked once.
    let server = TestServer::start(vec![
        Reply::json_error(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"You exceeded your current quota, please check your plan and billing details. insufficient_quota"}}"#,
        ),
        anthropic_ok(),
    ])
    .await
    .unwrap();
    let model = catalogue_model("anthropic", "claude-sonnet-4-5", &server, "/v1");
    let (_, reply) = run(&model, &context, retry_options()).await;
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        reply.failure_kind,
        Some(FailureKind::Http {
            status: 429,
            retryable: false
        })
    );

    // The server's `x-should-retry` decides over the status: a 400 asked again, a 503 not.
    let server = TestServer::start(vec![
        Reply::json_error(400, r#"{"error":{"message":"try again"}}"#)
            .with_header("x-should-retry", "true"),
        anthropic_ok(),
    ])
    .await
    .unwrap();
    let model = catalogue_model("anthropic", "claude-sonnet-4-5", &server, "/v1");
    let (_, reply) = run(&model, &context, retry_options()).await;
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        reply.stop_reason,
        StopReason::Stop,
        "{:?}",
        reply.error_message
    );

    let server = TestServer::start(vec![
        Reply::json_error(503, r#"{"error":{"message":"down"}}"#)
            .with_header("x-should-retry", "false"),
        anthropic_ok(),
    ])
    .await
    .unwrap();
    let model = catalogue_model("anthropic", "claude-sonnet-4-5", &server, "/v1");
    let (_, reply) = run(&model, &context, retry_options()).await;
    assert_eq!(server.requests().len(), 1);
    assert_eq!(reply.stop_reason, StopReason::Error);

    // `Retry-After` as an HTTP-date (one in the past: no wait), then the stream: sent twice,
    // and never again once the stream was accepted.
    let server = TestServer::start(vec![
        Reply::json_error(429, r#"{"error":{"message":"slow down"}}"#)
            .with_header("retry-after", "Tue, 01 Dec 2020 10:00:00 GMT"),
        anthropic_ok(),
        anthropic_ok(),
    ])
    .await
    .unwrap();
    let model = catalogue_model("anthropic", "claude-sonnet-4-5", &server, "/v1");
    let (_, reply) = run(&model, &context, retry_options()).await;
    assert_eq!(
        reply.stop_reason,
        StopReason::Stop,
        "{:?}",
        reply.error_message
    );
    assert_eq!(server.requests().len(), 2);
}
