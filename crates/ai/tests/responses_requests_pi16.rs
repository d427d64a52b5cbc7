//! What oxpi sends on the Responses APIs (`openai-responses`, `azure-openai-responses`), on the
//! request bytes a local server records, where pi-ai 1.6 sends something else than oxpi used
//! to (issue 28): one test per class of difference `cargo xtask pi-reqdiff` found. Models come
//! from the catalogue (pi 1.6's data), pointed at the local server.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
mod common;

use std::time::Duration;

use common::{run, user_context};
use oxpi_ai::{
    AssistantContent, AssistantMessage, CacheRetention, Context, Message, Model, ReasoningLevel,
    StopReason, StreamOptions, Tool, ToolCall, ToolResultMessage, UserContent,
};
use oxpi_testkit::{Recorded, Reply, TestServer};
use serde_json::{json, Value};

/// A catalogue model served by `server`.
fn catalogue_model(provider: &str, id: &str, server: &TestServer) -> Model {
    let mut model = oxpi_ai::models::get_model(provider, id)
        .unwrap_or_else(|| panic!("{provider}/{id} is in the catalogue"));
    model.base_url = if model.api == oxpi_ai::API_AZURE_OPENAI_RESPONSES {
        format!("{}/openai/v1", server.base_url())
    } else {
        format!("{}/v1", server.base_url())
    };
    model
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key("sk-test-key")
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(20))
        .with_cache_retention(CacheRetention::None)
}

/// A tool whose schema strict mode would rewrite: an optional nested object.
fn read_tool() -> Tool {
    Tool {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "options": {"type": "object", "properties": {"limit": {"type": "integer"}}},
        }, "required": ["path"]}),
        constrained_sampling: None,
    }
}

fn tools_context() -> Context {
    user_context("read a.txt").with_tool(read_tool())
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

fn object(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap()
}

/// A history: an assistant turn of `source` (provider, API, model) calling `read` with
/// `call_id`, and its result (text and an image).
fn history(source: (&str, &str, &str), call_id: &str) -> Context {
    let call = ToolCall::new(call_id, "read", object(json!({"path": "a.txt"})));
    let mut turn = AssistantMessage::empty(source.1, source.0, source.2);
    turn.content = vec![AssistantContent::ToolCall(call.clone())];
    turn.stop_reason = StopReason::ToolUse;
    let result = ToolResultMessage {
        content: vec![
            UserContent::text("fn main() {}"),
            UserContent::image("iVBORw0KGgo", "image/png"),
        ],
        ..ToolResultMessage::text(&call, "", false)
    };
    tools_context()
        .with_message(Message::Assistant(turn))
        .with_message(result)
}

fn items_of<'a>(body: &'a Value, kind: &str) -> Vec<&'a Value> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

#[tokio::test]
async fn tools_go_as_given_with_strict_false_only_where_the_model_takes_it() {
    let server = empty_server().await;
    let requests = recorded(
        vec![
            // `supportsStrictMode` in the catalogue.
            (
                catalogue_model("cloudflare-ai-gateway", "gpt-4.1", &server),
                tools_context(),
                options(),
            ),
            // No compat: no `strict` at all.
            (
                catalogue_model("meta", "muse-ember-1.0", &server),
                tools_context(),
                options(),
            ),
            // Azure's provider takes `strict` by default.
            (
                catalogue_model("azure", "chat-latest", &server),
                tools_context(),
                options(),
            ),
        ],
        &server,
    )
    .await;
    let as_given = |strict: Option<bool>| {
        let mut tool = json!({"type": "function", "name": "read", "description": "Read a file",
            "parameters": read_tool().parameters});
        if let Some(strict) = strict {
            tool["strict"] = json!(strict);
        }
        json!([tool])
    };
    assert_eq!(requests[0].json()["tools"], as_given(Some(false)));
    assert_eq!(requests[1].json()["tools"], as_given(None));
    assert_eq!(requests[2].json()["tools"], as_given(Some(false)));
}

#[tokio::test]
async fn a_tool_results_images_go_in_its_output_after_its_text() {
    let server = empty_server().await;
    let model = catalogue_model("azure", "chat-latest", &server);
    let context = history(("azure", "azure-openai-responses", "chat-latest"), "call_1");
    let requests = recorded(vec![(model, context, options())], &server).await;
    let body = requests[0].json();
    assert_eq!(
        items_of(&body, "function_call_output"),
        vec![
            &json!({"type": "function_call_output", "call_id": "call_1", "output": [
                {"type": "input_text", "text": "fn main() {}"},
                {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,iVBORw0KGgo"},
            ]})
        ]
    );
    // No separate user message carries the image.
    let last = body["input"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["type"], "function_call_output");
}

#[tokio::test]
async fn a_reasoning_model_with_no_level_asked_gets_its_off_effort() {
    let server = empty_server().await;
    let plain = || user_context("hi");
    let requests = recorded(
        vec![
            // No map: `none`.
            (
                catalogue_model("azure", "chat-latest", &server),
                plain(),
                options(),
            ),
            // The map's `off` value.
            (
                catalogue_model("openai", "gpt-5.6-luna", &server),
                plain(),
                options(),
            ),
            // `off: null`: nothing.
            (
                catalogue_model("meta", "muse-ember-1.0", &server),
                plain(),
                options(),
            ),
            // Copilot takes no off effort (pi 1.6), and the asked level clamped to the map.
            (
                catalogue_model("github-copilot", "gpt-5.6-luna", &server),
                plain(),
                options(),
            ),
            (
                catalogue_model("github-copilot", "gpt-5.6-luna", &server),
                plain(),
                options().with_reasoning(ReasoningLevel::Minimal),
            ),
        ],
        &server,
    )
    .await;
    let reasoning: Vec<Value> = requests
        .iter()
        .map(|r| r.json().get("reasoning").cloned().unwrap_or(Value::Null))
        .collect();
    assert_eq!(
        reasoning,
        vec![
            json!({"effort": "none"}),
            json!({"effort": "none"}),
            Value::Null,
            Value::Null,
            json!({"effort": "low", "summary": "auto"}),
        ]
    );
    assert_eq!(requests[0].json().get("include"), None);
}

#[tokio::test]
async fn models_with_additional_tools_declare_them_in_the_input() {
    let server = empty_server().await;
    let model = catalogue_model("github-copilot", "gpt-5.6-luna", &server);
    let requests = recorded(vec![(model, tools_context(), options())], &server).await;
    let body = requests[0].json();
    assert_eq!(body.get("tools"), None);
    assert_eq!(
        body["input"][0],
        json!({"type": "additional_tools", "role": "developer", "tools": [
            {"type": "function", "name": "read", "description": "Read a file", "strict": false,
                "parameters": read_tool().parameters},
        ]})
    );
    assert_eq!(
        body["input"][1],
        json!({"role": "developer", "content": "Be brief."})
    );
}

#[tokio::test]
async fn replayed_tool_call_ids_change_only_for_another_model_as_pi_changes_them() {
    let server = empty_server().await;
    let openai = ("openai", "openai-responses", "gpt-4.1");
    let requests = recorded(
        vec![
            // The same model: the ids as they are, odd characters and all.
            (
                catalogue_model("openai", "gpt-4.1", &server),
                history(openai, "call_1.x|fc_1.odd+id"),
                options(),
            ),
            // Another model of the same provider and API: no item id.
            (
                catalogue_model("openai", "gpt-5.6-luna", &server),
                history(openai, "call_1.x|fc_1.odd+id"),
                options(),
            ),
            // Another provider that keeps item ids: `fc_` and pi's hash of the item id.
            (
                catalogue_model("azure", "chat-latest", &server),
                history(openai, "call_abc|fc_abc"),
                options(),
            ),
            // A provider that does not: the whole id cleaned, as the call id.
            (
                catalogue_model("xai", "grok-4.3", &server),
                history(openai, "call_abc|fc_abc"),
                options(),
            ),
        ],
        &server,
    )
    .await;
    let ids = |request: &Recorded| {
        let body = request.json();
        let call = items_of(&body, "function_call")[0].clone();
        let output = items_of(&body, "function_call_output")[0].clone();
        (
            call.get("id").cloned(),
            call["call_id"].clone(),
            output["call_id"].clone(),
        )
    };
    assert_eq!(
        ids(&requests[0]),
        (
            Some(json!("fc_1.odd+id")),
            json!("call_1.x"),
            json!("call_1.x")
        )
    );
    assert_eq!(
        ids(&requests[1]),
        (None, json!("call_1_x"), json!("call_1_x"))
    );
    // `1qaoofs1vxahbg`: pi-ai 1.6's `shortHash("fc_abc")`, run under Node.
    assert_eq!(
        ids(&requests[2]),
        (
            Some(json!("fc_1qaoofs1vxahbg")),
            json!("call_abc"),
            json!("call_abc")
        )
    );
    assert_eq!(
        ids(&requests[3]),
        (None, json!("call_abc_fc_abc"), json!("call_abc_fc_abc"))
    );
}

#[tokio::test]
async fn xai_always_asks_for_the_encrypted_reasoning() {
    let server = empty_server().await;
    let model = catalogue_model("xai", "grok-4.3", &server);
    let requests = recorded(vec![(model, user_context("hi"), options())], &server).await;
    let body = requests[0].json();
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["reasoning"], json!({"effort": "none"}));
    // The developer role for its instructions too (pi 1.6 no longer makes xAI an exception).
    assert_eq!(body["input"][0]["role"], "developer");
}

#[tokio::test]
async fn prompt_cache_fields_follow_the_compat_and_the_key_is_cut_at_64() {
    let server = empty_server().await;
    let long_session = "s".repeat(80);
    let with = |retention: CacheRetention| {
        options()
            .with_cache_retention(retention)
            .with_session_id(&long_session)
    };
    let requests = recorded(
        vec![
            // Long retention on any host that does not say otherwise.
            (
                catalogue_model("cloudflare-ai-gateway", "gpt-4.1", &server),
                user_context("hi"),
                with(CacheRetention::Long),
            ),
            // Explicit cache modes: `prompt_cache_options`, no retention.
            (
                catalogue_model("openai", "gpt-5.6-cyber", &server),
                user_context("hi"),
                with(CacheRetention::Long),
            ),
            (
                catalogue_model("openai", "gpt-5.6-cyber", &server),
                user_context("hi"),
                with(CacheRetention::None),
            ),
            // Azure: the session id is the key whatever the retention.
            (
                catalogue_model("azure", "chat-latest", &server),
                user_context("hi"),
                with(CacheRetention::None),
            ),
        ],
        &server,
    )
    .await;
    let fields = |request: &Recorded| {
        let body = request.json();
        json!({
            "key": body.get("prompt_cache_key"),
            "retention": body.get("prompt_cache_retention"),
            "options": body.get("prompt_cache_options"),
        })
    };
    let key = "s".repeat(64);
    assert_eq!(
        fields(&requests[0]),
        json!({"key": key, "retention": "24h", "options": null})
    );
    assert_eq!(
        fields(&requests[1]),
        json!({"key": key, "retention": null, "options": {"ttl": "30m"}})
    );
    assert_eq!(
        fields(&requests[2]),
        json!({"key": null, "retention": null, "options": {"mode": "explicit"}})
    );
    assert_eq!(
        fields(&requests[3]),
        json!({"key": key, "retention": null, "options": null})
    );
}

#[tokio::test]
async fn mid_conversation_effort_goes_in_a_configuration_update_item() {
    let server = empty_server().await;
    let model = catalogue_model("openai", "gpt-6-astra", &server);
    let requests = recorded(
        vec![(
            model,
            user_context("hi"),
            options().with_reasoning(ReasoningLevel::High),
        )],
        &server,
    )
    .await;
    let body = requests[0].json();
    assert_eq!(
        body["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_eq!(
        body["input"].as_array().unwrap().last(),
        Some(&json!({"type": "configuration_update", "reasoning": {"effort": "high"}}))
    );
}
