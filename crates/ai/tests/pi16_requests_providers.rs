//! What oxpi sends on the Gemini, Mistral and Bedrock APIs, on the request bytes a local server
//! records, where pi-ai 1.6 sent something else than oxpi used to (issue 28, `cargo xtask
//! pi-reqdiff`): one test per fixed class. Models come from the catalogue (pi 1.6's data),
//! pointed at the local server; expected values are what pi 1.6 sent for the same case.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
mod common;

use std::time::Duration;

use common::{run, user_context};
use oxpi_ai::{
    AssistantContent, AssistantMessage, CacheRetention, Context, ImageContent, Message, Model,
    ReasoningLevel, StopReason, StreamOptions, Tool, ToolCall, ToolResultMessage, UserContent,
};
use oxpi_testkit::{Recorded, Reply, TestServer};
use serde_json::{json, Value};

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

/// Sends one request per case and returns what the server recorded (each answered with 400).
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

const PNG: &str = "iVBORw0KGgo=";

/// A tool call with id `call_id` made by `(api, provider, model)`, and its result: text and
/// an image.
fn history(api: &str, provider: &str, model: &str, call_id: &str) -> Context {
    let call = ToolCall::new(
        call_id,
        "read",
        json!({"path": "a.png"}).as_object().cloned().unwrap(),
    );
    let mut reply = AssistantMessage::empty(api, provider, model);
    reply.content = vec![AssistantContent::ToolCall(call.clone())];
    reply.stop_reason = StopReason::ToolUse;
    let mut result = ToolResultMessage::text(&call, "the file", false);
    result.content.push(UserContent::Image(ImageContent {
        data: PNG.into(),
        mime_type: "image/png".into(),
    }));
    user_context("look at a.png")
        .with_tool(read_tool())
        .with_message(Message::Assistant(reply))
        .with_message(Message::ToolResult(result))
}

// --- Gemini: call ids and tool-result images -----------------------------------------------

#[tokio::test]
async fn gemini_call_ids_and_result_images_follow_the_model_generation_as_pi_1_6() {
    let server = empty_server().await;
    let google = |id: &str| catalogue_model("google", id, &server, "/v1beta");
    let same = |m: &Model, id: &str| history(m.api.as_str(), &m.provider, &m.id, id);
    let old = google("gemini-2.5-flash");
    let new = google("gemini-3-flash-preview");
    let unnamed = google("deep-research-max-preview-04-2026");
    let requests = recorded(
        vec![
            (old.clone(), same(&old, "read_1"), options("k")),
            // A history from Anthropic: its id has characters Google does not take.
            (
                new.clone(),
                history(
                    "anthropic-messages",
                    "anthropic",
                    "claude-x",
                    "toolu_01|a.b",
                ),
                options("k"),
            ),
            (unnamed.clone(), same(&unnamed, "read_1"), options("k")),
        ],
        &server,
    )
    .await;
    let image = json!({"inlineData": {"mimeType": "image/png", "data": PNG}});
    let contents = |r: &Recorded| r.json()["contents"].clone();

    // Gemini 2.5: no ids; the image in a user turn after the responses.
    let old_contents = contents(&requests[0]);
    assert_eq!(
        old_contents[1]["parts"][0]["functionCall"],
        json!({"name": "read", "args": {"path": "a.png"}})
    );
    assert_eq!(
        old_contents[2]["parts"],
        json!([{"functionResponse": {"name": "read", "response": {"output": "the file"}}}])
    );
    assert_eq!(
        old_contents[3],
        json!({"role": "user", "parts": [{"text": "Tool result image:"}, image]})
    );
    assert_eq!(old_contents.as_array().unwrap().len(), 4);

    // Gemini 3: the id, cut to Google's characters, on both sides; the image nested.
    let new_contents = contents(&requests[1]);
    assert_eq!(
        new_contents[1]["parts"][0]["functionCall"]["id"],
        "toolu_01_a_b"
    );
    assert_eq!(
        new_contents[2]["parts"],
        json!([{"functionResponse": {"id": "toolu_01_a_b", "name": "read",
            "response": {"output": "the file"}, "parts": [image]}}])
    );
    assert_eq!(new_contents.as_array().unwrap().len(), 3);

    // An id that names no Gemini version: images nested, no ids.
    let unnamed_contents = contents(&requests[2]);
    assert!(unnamed_contents[1]["parts"][0]["functionCall"]
        .get("id")
        .is_none());
    assert_eq!(
        unnamed_contents[2]["parts"][0]["functionResponse"]["parts"],
        json!([image])
    );
    assert_eq!(unnamed_contents.as_array().unwrap().len(), 3);
}

// --- Mistral: reasoning, prompt cache, tool-call ids ---------------------------------------

#[tokio::test]
async fn mistral_reasoning_fields_come_from_the_thinking_level_map_as_pi_1_6() {
    let server = empty_server().await;
    let mistral = |id: &str| catalogue_model("mistral", id, &server, "");
    // A reasoning model without a map (a user's own model entry).
    let mut unmapped = mistral("magistral-medium-latest");
    unmapped.thinking_level_map = None;
    let with = |level: Option<ReasoningLevel>| {
        let mut o = options("k");
        o.reasoning = level;
        o
    };
    let cases = [
        // The map's `off` entry when no level is asked.
        (
            mistral("mistral-small-2603"),
            None,
            json!("none"),
            Value::Null,
        ),
        // Medium is not a level of this model: the nearest above.
        (
            mistral("mistral-small-2603"),
            Some(ReasoningLevel::Medium),
            json!("high"),
            Value::Null,
        ),
        // No `off` entry: nothing.
        (mistral("mistral-large-4"), None, Value::Null, Value::Null),
        (
            mistral("mistral-large-4"),
            Some(ReasoningLevel::Minimal),
            json!("low"),
            Value::Null,
        ),
        (
            unmapped.clone(),
            Some(ReasoningLevel::High),
            Value::Null,
            json!("reasoning"),
        ),
        (unmapped, None, Value::Null, Value::Null),
    ];
    let requests = recorded(
        cases
            .iter()
            .map(|(m, level, _, _)| (m.clone(), user_context("hi"), with(*level)))
            .collect(),
        &server,
    )
    .await;
    for ((model, level, effort, mode), request) in cases.iter().zip(&requests) {
        let body = request.json();
        assert_eq!(body["reasoning_effort"], *effort, "{} {level:?}", model.id);
        assert_eq!(body["prompt_mode"], *mode, "{} {level:?}", model.id);
    }
}

#[tokio::test]
async fn mistral_sends_the_session_as_prompt_cache_key_and_affinity_unless_caching_is_off() {
    let server = empty_server().await;
    let model = catalogue_model("mistral", "codestral-2508", &server, "");
    let session = |retention: Option<CacheRetention>| {
        let mut o = options("k").with_session_id("session-1");
        o.cache_retention = retention;
        o
    };
    let requests = recorded(
        vec![
            (model.clone(), user_context("hi"), session(None)),
            (
                model.clone(),
                user_context("hi"),
                session(Some(CacheRetention::Long)),
            ),
            (
                model.clone(),
                user_context("hi"),
                session(Some(CacheRetention::None)),
            ),
        ],
        &server,
    )
    .await;
    for request in &requests[..2] {
        assert_eq!(request.json()["prompt_cache_key"], "session-1");
        assert_eq!(request.header("x-affinity"), Some("session-1"));
    }
    assert!(requests[2].json().get("prompt_cache_key").is_none());
    assert_eq!(requests[2].header("x-affinity"), None);
}

#[tokio::test]
async fn mistral_tool_call_ids_are_pi_1_6s_nine_characters() {
    let server = empty_server().await;
    let model = catalogue_model("mistral", "codestral-2508", &server, "");
    let foreign = |id: &str| history("anthropic-messages", "anthropic", "claude-x", id);
    let requests = recorded(
        vec![
            // pi 1.6 sent `15wrgga1d` for this id (pi-reqdiff's Anthropic history).
            (model.clone(), foreign("toolu_01Reqdiff1"), options("k")),
            // Nine letters and digits once the rest is dropped: kept.
            (model.clone(), foreign("abc-def_ghi"), options("k")),
        ],
        &server,
    )
    .await;
    for (request, expected) in requests.iter().zip(["15wrgga1d", "abcdefghi"]) {
        let body = request.json();
        assert_eq!(body["messages"][2]["tool_calls"][0]["id"], expected);
        assert_eq!(body["messages"][3]["tool_call_id"], expected);
    }
}

// --- Bedrock: Claude 5 caching and adaptive thinking ---------------------------------------

#[cfg(feature = "bedrock")]
#[tokio::test]
async fn bedrock_claude_5_caches_and_thinks_adaptively_with_block_binding_as_pi_1_6() {
    let server = empty_server().await;
    let bedrock = |id: &str| catalogue_model("amazon-bedrock", id, &server, "");
    let high = || {
        let mut o = options("bedrock-api-key");
        o.reasoning = Some(ReasoningLevel::High);
        o
    };
    let prompt = || Context::new("Be brief.").with_message(Message::user("hi"));
    let requests = recorded(
        vec![
            (bedrock("anthropic.claude-fable-5"), prompt(), high()),
            (bedrock("anthropic.claude-opus-4-6-v1"), prompt(), high()),
        ],
        &server,
    )
    .await;
    let fable = requests[0].json();
    let point = json!({"cachePoint": {"type": "default"}});
    assert_eq!(fable["system"], json!([{"text": "Be brief."}, point]));
    assert_eq!(
        fable["messages"][0]["content"],
        json!([{"text": "hi"}, point])
    );
    assert_eq!(
        fable["additionalModelRequestFields"],
        json!({
            "thinking": {"type": "adaptive", "display": "summarized",
                "block_binding": {"prefix_mismatch_behavior": "drop_block"}},
            "output_config": {"effort": "high"},
            "anthropic_beta": ["thinking-binding-controls-2026-08-01"],
        })
    );
    // Opus 4.6 rejects `block_binding`: adaptive thinking without it, and no beta.
    assert_eq!(
        requests[1].json()["additionalModelRequestFields"],
        json!({
            "thinking": {"type": "adaptive", "display": "summarized"},
            "output_config": {"effort": "high"},
        })
    );
}

// --- Shared headers: Copilot's editor headers, OpenCode's session, Responses' session ------

/// The first catalogue model of `provider` on `api`, served by `server`.
fn catalogue_model_on(provider: &str, api: &str, server: &TestServer, suffix: &str) -> Model {
    let mut model = oxpi_ai::models::models(provider)
        .into_iter()
        .find(|m| m.api.as_str() == api)
        .unwrap_or_else(|| panic!("{provider} has a model on {api}"));
    model.base_url = format!("{}{suffix}", server.base_url());
    model
}

#[tokio::test]
async fn copilot_editor_headers_go_out_on_every_api_as_pi_1_6() {
    let server = empty_server().await;
    let apis = [
        ("anthropic-messages", ""),
        ("openai-responses", ""),
        ("openai-completions", ""),
    ];
    let mut cases = Vec::new();
    for (api, suffix) in apis {
        let model = catalogue_model_on("github-copilot", api, &server, suffix);
        // A user turn last, no image: the user started it.
        cases.push((model.clone(), user_context("hi"), options("gh-token")));
        // A tool result with an image last: the agent's follow-up, with vision.
        cases.push((
            model.clone(),
            history(model.api.as_str(), &model.provider, &model.id, "call_1"),
            options("gh-token"),
        ));
    }
    let requests = recorded(cases, &server).await;
    for (i, pair) in requests.chunks(2).enumerate() {
        let (plain, follow_up) = (&pair[0], &pair[1]);
        let api = apis[i].0;
        assert_eq!(plain.header("x-initiator"), Some("user"), "{api}");
        assert_eq!(
            plain.header("openai-intent"),
            Some("conversation-edits"),
            "{api}"
        );
        assert_eq!(plain.header("copilot-vision-request"), None, "{api}");
        assert_eq!(follow_up.header("x-initiator"), Some("agent"), "{api}");
        assert_eq!(
            follow_up.header("copilot-vision-request"),
            Some("true"),
            "{api}"
        );
    }
}

#[tokio::test]
async fn opencode_gets_its_session_header_and_responses_pis_session_id() {
    let server = empty_server().await;
    let session = |retention: CacheRetention| {
        options("k")
            .with_session_id("session-9")
            .with_cache_retention(retention)
    };
    let opencode_chat = catalogue_model_on("opencode", "openai-completions", &server, "");
    let opencode_anthropic = catalogue_model_on("opencode", "anthropic-messages", &server, "");
    let openai = catalogue_model_on("openai", "openai-responses", &server, "");
    let requests = recorded(
        vec![
            // OpenCode routes by its own header, caching or not.
            (
                opencode_chat,
                user_context("hi"),
                session(CacheRetention::None),
            ),
            (
                opencode_anthropic,
                user_context("hi"),
                session(CacheRetention::Short),
            ),
            (openai, user_context("hi"), session(CacheRetention::Short)),
        ],
        &server,
    )
    .await;
    for request in &requests[..2] {
        assert_eq!(request.header("x-opencode-session"), Some("session-9"));
    }
    let responses = &requests[2];
    assert_eq!(responses.header("x-opencode-session"), None);
    assert_eq!(responses.header("session-id"), Some("session-9"));
    assert_eq!(responses.header("x-client-request-id"), Some("session-9"));
    assert_eq!(responses.header("session_id"), None);
}

#[tokio::test]
async fn responses_session_headers_follow_the_session_affinity_format() {
    let server = empty_server().await;
    // OpenCode's Responses models say `sessionAffinityFormat: openai-nosession` in the catalogue.
    let opencode = catalogue_model_on("opencode", "openai-responses", &server, "");
    assert_eq!(
        opencode.compat.as_ref().unwrap()["sessionAffinityFormat"],
        "openai-nosession"
    );
    let mut routed = opencode.clone();
    routed.compat = Some(json!({"sessionAffinityFormat": "openrouter"}));
    let session = || {
        options("k")
            .with_session_id("session-9")
            .with_cache_retention(CacheRetention::Short)
    };
    let requests = recorded(
        vec![
            (opencode, user_context("hi"), session()),
            (routed, user_context("hi"), session()),
        ],
        &server,
    )
    .await;
    let names = |r: &Recorded| {
        [
            "session-id",
            "session_id",
            "x-client-request-id",
            "x-session-id",
        ]
        .into_iter()
        .filter(|n| r.header(n).is_some())
        .collect::<Vec<_>>()
    };
    assert_eq!(names(&requests[0]), ["x-client-request-id"]);
    assert_eq!(names(&requests[1]), ["x-session-id"]);
}
