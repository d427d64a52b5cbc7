//! What the Chat Completions provider sends, over real HTTP, against pi-ai 1.6's request
//! shapes (issue 28): one test per class of difference the request-diff found. Catalogue models
//! are pointed at a local recording server; the assertions are on the request bytes.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

#[allow(dead_code)]
mod common;
use common::run;

use std::time::Duration;

use oxpi_ai::models::get_model;
use oxpi_ai::{
    AssistantContent, AssistantMessage, CacheRetention, Context, Message, Model, ReasoningLevel,
    StopReason, StreamOptions, ThinkingContent, Tool, ToolCall, ToolResultMessage,
};
use oxpi_testkit::{Reply, TestServer};
use serde_json::{json, Value};

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key("sk-test")
        .with_retry_base_delay(Duration::from_millis(5))
        .with_timeout(Duration::from_secs(20))
}

fn sse(chunks: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    out.push("data: [DONE]\n\n".to_string());
    out
}

fn stop_reply() -> Reply {
    Reply::sse(sse(&[
        json!({"id": "c1", "choices": [{"index": 0, "delta": {"content": "ok"}}]}),
        json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]))
}

/// A catalogue model, pointed at `server`.
fn catalogue(server: &TestServer, provider: &str, id: &str) -> Model {
    let mut model = get_model(provider, id).unwrap_or_else(|| panic!("{provider}/{id}"));
    model.base_url = format!("{}/v1", server.base_url());
    model
}

/// The body of each request `model` sends for `context` with `options`, one server per call.
async fn bodies(
    model: impl Fn(&TestServer) -> Model,
    context: &Context,
    options: StreamOptions,
) -> Value {
    let server = TestServer::start(vec![stop_reply()]).await.unwrap();
    let model = model(&server);
    let (_, message) = run(&model, context, options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    server.requests()[0].json()
}

fn call(id: &str) -> ToolCall {
    ToolCall::new(
        id,
        "read",
        json!({"path": "a"}).as_object().unwrap().clone(),
    )
}

fn assistant(model: &Model, content: Vec<AssistantContent>) -> AssistantMessage {
    let mut message = AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id);
    message.content = content;
    message.stop_reason = StopReason::ToolUse;
    message
}

fn thinking(text: &str, signature: &str) -> AssistantContent {
    AssistantContent::Thinking(ThinkingContent {
        thinking: text.into(),
        thinking_signature: Some(signature.into()),
        redacted: None,
    })
}

fn read_tool() -> Tool {
    Tool::new(
        "read",
        "Read a file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    )
}

/// Class 1: same-model thinking goes back in the field it came in; DeepSeek (and every model
/// with `requiresReasoningContentOnAssistantMessages`) gets `reasoning_content` on each
/// assistant turn, empty when there is nothing to replay (DeepSeek answers 400 otherwise).
#[tokio::test]
async fn same_model_thinking_is_replayed_in_its_field_and_deepseek_always_gets_reasoning_content() {
    let deepseek = |s: &TestServer| catalogue(s, "deepseek", "deepseek-v4-pro");
    let probe = get_model("deepseek", "deepseek-v4-pro").unwrap();
    let context = Context::new("sys")
        .with_message(Message::user("read a"))
        .with_message(assistant(
            &probe,
            vec![
                thinking("I should read a.", "reasoning_content"),
                AssistantContent::ToolCall(call("call_1")),
            ],
        ))
        .with_message(ToolResultMessage::text(&call("call_1"), "A", false))
        .with_message(assistant(
            &probe,
            vec![AssistantContent::ToolCall(call("call_2"))],
        ))
        .with_message(ToolResultMessage::text(&call("call_2"), "A again", false))
        .with_tool(read_tool());
    let body = bodies(deepseek, &context, options()).await;
    let turns: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(turns.len(), 2, "{body}");
    assert_eq!(turns[0]["reasoning_content"], "I should read a.", "{body}");
    assert_eq!(turns[1]["reasoning_content"], "", "{body}");
    assert_eq!(turns[1]["content"], Value::Null, "{body}");

    // Any server: the field named by the block's signature (`reasoning` here).
    let local = |s: &TestServer| {
        let mut m = Model::openai_compatible(format!("{}/v1", s.base_url()), "gpt-oss");
        m.reasoning = true;
        m
    };
    let probe = local(&TestServer::start(vec![]).await.unwrap());
    let context = Context::new("sys")
        .with_message(Message::user("hi"))
        .with_message(assistant(
            &probe,
            vec![
                thinking("think", "reasoning"),
                AssistantContent::text("hello"),
            ],
        ))
        .with_message(Message::user("again"));
    let body = bodies(local, &context, options()).await;
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": "hello", "reasoning": "think"})
    );
}

/// Class 1, OpenRouter: encrypted reasoning arrives only in `reasoning_details`; the reply keeps
/// an (empty) thinking block carrying it, and the next request sends it back.
#[tokio::test]
async fn openrouter_reasoning_details_are_kept_and_sent_back() {
    let encrypted = json!({"type": "reasoning.encrypted", "id": "rs_1", "format": "openai-responses-v1", "index": 0, "data": "gAAAA-secret"});
    let server = TestServer::start(vec![
        Reply::sse(sse(&[
            json!({"id": "g1", "choices": [{"index": 0, "delta": {"content": "", "reasoning_details": [encrypted]}}]}),
            json!({"id": "g1", "choices": [{"index": 0, "delta": {"content": "Hi."}}]}),
            json!({"id": "g1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ])),
        stop_reply(),
    ])
    .await
    .unwrap();
    let model = catalogue(&server, "openrouter", "openai/gpt-5-mini");
    let context = Context::new("sys").with_message(Message::user("hi"));
    let (_, reply) = run(&model, &context, options()).await;
    let signature = match reply.content.first() {
        Some(AssistantContent::Thinking(t)) => {
            assert_eq!(t.thinking, "");
            t.thinking_signature.clone().unwrap()
        }
        other => panic!("expected a thinking block first, got {other:?}"),
    };
    assert_eq!(
        serde_json::from_str::<Value>(&signature).unwrap(),
        json!([encrypted])
    );
    let context = context
        .with_message(reply)
        .with_message(Message::user("more"));
    let (_, second) = run(&model, &context, options()).await;
    assert_eq!(second.stop_reason, StopReason::Stop);
    let body = server.requests()[1].json();
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": "Hi.", "reasoning_details": [encrypted]}),
        "{body}"
    );
}

/// Class 2: ids from a Responses history (`call|item`, with `+/=`, 400+ characters) become
/// `[a-zA-Z0-9_-]` ids of at most 40 characters, the same in the call and its result.
#[tokio::test]
async fn responses_tool_call_ids_are_normalised_in_calls_and_results() {
    let codex = get_model("openai", "gpt-5-mini")
        .or_else(|| get_model("openai-codex", "gpt-5.1-codex-mini"))
        .unwrap_or_else(|| Model::openai_compatible("http://x", "other"));
    let long = format!("call_abc|fc_{}+/=", "x".repeat(400));
    let short = "call_d|fc_e+f";
    let mut turn = assistant(
        &codex,
        vec![
            AssistantContent::ToolCall(call(&long)),
            AssistantContent::ToolCall(call(short)),
        ],
    );
    turn.api = "openai-responses".into();
    let context = Context::new("sys")
        .with_message(Message::user("read"))
        .with_message(turn)
        .with_message(ToolResultMessage::text(&call(&long), "A", false))
        .with_message(ToolResultMessage::text(&call(short), "B", false))
        .with_tool(read_tool());
    let body = bodies(
        |s| catalogue(s, "openrouter", "openai/gpt-5-mini"),
        &context,
        options(),
    )
    .await;
    let messages = body["messages"].as_array().unwrap();
    let calls: Vec<&str> = messages[2]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    // pi 1.6 under Node gives these two ids.
    assert_eq!(calls, ["call_abc_3uiaof17", "call_d_fc_e_f"], "{body}");
    assert_eq!(messages[3]["tool_call_id"], calls[0]);
    assert_eq!(messages[4]["tool_call_id"], calls[1]);
}

/// Class 3: `supportsReasoningEffort`, the clamp to the model's levels, "off" sent as off.
#[tokio::test]
async fn reasoning_effort_follows_the_server_and_the_model_levels() {
    let context = Context::new("sys").with_message(Message::user("hi"));
    let low = || options().with_reasoning(ReasoningLevel::Low);
    // Cerebras takes reasoning_effort (pi's default); oxpi dropped it.
    let body = bodies(
        |s| catalogue(s, "cerebras", "gpt-oss-120b"),
        &context,
        low(),
    )
    .await;
    assert_eq!(body["reasoning_effort"], "low", "{body}");
    // No level on a model whose map names an `off` value: sent as that value.
    let body = bodies(
        |s| catalogue(s, "cerebras", "qwen-3.8-27b"),
        &context,
        options(),
    )
    .await;
    assert_eq!(body["reasoning_effort"], "none", "{body}");
    // DeepSeek V4 Pro takes only high and max: low is clamped up to high.
    let body = bodies(
        |s| catalogue(s, "deepseek", "deepseek-v4-pro"),
        &context,
        low(),
    )
    .await;
    assert_eq!(body["reasoning_effort"], "high", "{body}");
    assert_eq!(body["thinking"], json!({"type": "enabled"}), "{body}");
    // xAI (grok-4 answers reasoning_effort with 400): none sent, from the host rule.
    let xai = |s: &TestServer| {
        let mut m = Model::openai_compatible(format!("{}/v1", s.base_url()), "grok-4");
        m.provider = "xai".into();
        m.reasoning = true;
        m
    };
    let body = bodies(xai, &context, low()).await;
    assert_eq!(body.get("reasoning_effort"), None, "{body}");
    // OpenRouter, no level: reasoning off as `none`.
    let body = bodies(
        |s| catalogue(s, "openrouter", "x-ai/grok-4.3"),
        &context,
        options(),
    )
    .await;
    assert_eq!(body["reasoning"], json!({"effort": "none"}), "{body}");
}

/// Class 4: z.ai's `tool_stream`, and the host defaults (`max_tokens` vs
/// `max_completion_tokens`, `store`, `strict`, the developer role) as pi 1.6 detects them.
#[tokio::test]
async fn zai_streams_tools_and_host_defaults_follow_pi() {
    let context = Context::new("sys")
        .with_message(Message::user("hi"))
        .with_tool(read_tool());
    let zai_id = get_model("zai", "glm-4.6")
        .map(|m| m.id)
        .unwrap_or_else(|| oxpi_ai::models::models("zai")[0].id.clone());
    let body = bodies(|s| catalogue(s, "zai", &zai_id), &context, options()).await;
    assert_eq!(body["tool_stream"], true, "{body}");
    assert!(body["max_tokens"].is_u64(), "{body}");
    assert_eq!(body.get("max_completion_tokens"), None, "{body}");
    assert_eq!(body.get("store"), None, "{body}");
    assert_eq!(body["thinking"], json!({"type": "disabled"}), "{body}");
    // Any other server: store false and max_completion_tokens (pi's defaults).
    let body = bodies(
        |s| Model::openai_compatible(format!("{}/v1", s.base_url()), "m"),
        &context,
        options(),
    )
    .await;
    assert_eq!(body["store"], false, "{body}");
    assert_eq!(body["max_completion_tokens"], 4096, "{body}");
    assert_eq!(body.get("tool_stream"), None, "{body}");
    // supportsStrictMode: `strict: false` on each function; OpenAI reasoning models: developer.
    let openai = |s: &TestServer| {
        let mut m = Model::openai_compatible(format!("{}/v1", s.base_url()), "o4-mini");
        m.provider = "openai".into();
        m.reasoning = true;
        m.compat = Some(json!({"supportsStrictMode": true}));
        m
    };
    let body = bodies(openai, &context, options()).await;
    assert_eq!(body["tools"][0]["function"]["strict"], false, "{body}");
    assert_eq!(body["messages"][0]["role"], "developer", "{body}");
}

/// Class 5: the output limit is the model's, fitted into the window less the input (no 32,000
/// cap), and `prompt_cache_key` is cut to 64 characters.
#[tokio::test]
async fn output_limit_fits_the_window_and_the_cache_key_is_cut() {
    let big = |s: &TestServer| {
        let mut m = Model::openai_compatible(format!("{}/v1", s.base_url()), "m");
        m.context_window = 400_000;
        m.max_tokens = 128_000;
        m
    };
    let session = "s".repeat(100);
    let context = Context::new("sys").with_message(Message::user("hi"));
    let body = bodies(
        big,
        &context,
        options()
            .with_session_id(&session)
            .with_cache_retention(CacheRetention::Long),
    )
    .await;
    assert_eq!(body["max_completion_tokens"], 128_000, "{body}");
    assert_eq!(body["prompt_cache_key"], "s".repeat(64), "{body}");
    assert_eq!(body["prompt_cache_retention"], "24h", "{body}");
    // A window nearly full: 40,000 - 2 (the input: "sys" and "hi", a token each, the system
    // prompt counted as pi's leading system message) - 4,096.
    let small = |s: &TestServer| {
        let mut m = big(s);
        m.context_window = 40_000;
        m
    };
    let body = bodies(small, &context, options()).await;
    assert_eq!(body["max_completion_tokens"], 35_902, "{body}");
}
