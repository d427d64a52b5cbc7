//! The `pi-messages` wire API over real HTTP: a local server streams pi's serialized events;
//! oxpi and pi-ai 1.6.0's own client (under Node, when installed) send the same request to it
//! and build the same message from the same bytes. Then every way it fails: an HTTP error with
//! pi's error body, an `error` event, a stream cut before its terminal event, a bad block index,
//! a missing key.

#![allow(clippy::unwrap_used)]

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxpi_ai::collection::{Env, Models};
use oxpi_ai::{
    AssistantContent, Context, Model, ReasoningLevel, StopReason, StreamOptions, ToolChoice,
};
use oxpi_testkit::{Recorded, Reply, TestServer};
use serde_json::{json, Value};

/// pi's serialized events of one reply: thinking, text and a tool call, then `done`.
fn events() -> Vec<Value> {
    let call =
        json!({"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.txt"}});
    vec![
        json!({"type": "start"}),
        json!({"type": "thinking_start", "contentIndex": 0}),
        json!({"type": "thinking_delta", "contentIndex": 0, "delta": "Let me "}),
        json!({"type": "thinking_delta", "contentIndex": 0, "delta": "look."}),
        json!({"type": "thinking_end", "contentIndex": 0, "content": "Let me look.", "contentSignature": "sig-1"}),
        json!({"type": "text_start", "contentIndex": 1}),
        json!({"type": "text_delta", "contentIndex": 1, "delta": "Reading "}),
        json!({"type": "text_delta", "contentIndex": 1, "delta": "it."}),
        json!({"type": "text_end", "contentIndex": 1, "content": "Reading it."}),
        json!({"type": "toolcall_start", "contentIndex": 2, "id": "call_1", "toolName": "read"}),
        json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"path\":"}),
        json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "\"a.txt\"}"}),
        json!({"type": "toolcall_end", "contentIndex": 2, "toolCall": call}),
        json!({"type": "done", "reason": "toolUse", "responseId": "resp-1", "usage": {
            "input": 120, "output": 30, "cacheRead": 10, "cacheWrite": 0, "totalTokens": 160,
            "cost": {"input": 0.00036, "output": 0.00045, "cacheRead": 0.000003, "cacheWrite": 0, "total": 0.000813}
        }}),
    ]
}

fn sse(events: &[Value]) -> Reply {
    Reply::sse(
        events
            .iter()
            .map(|e| format!("event: message\ndata: {e}\n\n")),
    )
}

/// A radius model of the catalogue, pointed at `server`.
fn model(server: &TestServer) -> Model {
    let mut model = oxpi_ai::models::models("radius")
        .into_iter()
        .find(|m| m.api == "pi-messages")
        .expect("the catalogue has radius models on pi-messages");
    model.base_url = format!("{}/v1", server.base_url());
    model
}

/// The context, in pi's JSON (what both clients are given).
fn context_json() -> Value {
    json!({
        "systemPrompt": "You read files.",
        "tools": [{"name": "read", "description": "Read a file", "parameters": {
            "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]
        }}],
        "messages": [{"role": "user", "content": "Read a.txt", "timestamp": 1_767_225_600_000_i64}]
    })
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key("rad-key")
        .with_temperature(0.5)
        .with_max_tokens(2048)
        .with_session_id("session-7")
        .with_reasoning(ReasoningLevel::High)
        .with_tool_choice(ToolChoice::Auto)
        .with_timeout(Duration::from_secs(20))
        .with_max_retries(0)
}

/// The final message as JSON without what each client measures itself (its timestamp; pi's
/// `durationMs`, which oxpi does not record), numbers compared as numbers (`0` is `0.0`).
fn comparable(mut message: Value) -> Value {
    fn numbers(value: &mut Value) {
        match value {
            Value::Number(n) => *value = json!(n.as_f64()),
            Value::Array(items) => items.iter_mut().for_each(numbers),
            Value::Object(map) => map.values_mut().for_each(numbers),
            _ => {}
        }
    }
    let object = message.as_object_mut().unwrap();
    object.remove("timestamp");
    object.remove("durationMs");
    numbers(&mut message);
    message
}

/// pi's client against `server`: the message it built, or `None` without Node.
fn pi_client(server: &TestServer, model: &Model) -> Option<Value> {
    let dir = oxpi_testkit::pi::pi16().unwrap()?;
    let input = json!({
        "model": model,
        "context": context_json(),
        "options": {"apiKey": "rad-key", "temperature": 0.5, "maxTokens": 2048, "sessionId": "session-7",
                    "reasoning": "high", "toolChoice": "auto"},
    });
    let input_path =
        std::env::temp_dir().join(format!("oxpi-pi-messages-{}.json", std::process::id()));
    std::fs::write(&input_path, input.to_string()).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../bench/node/pi16/pi_messages.mjs"
    );
    let output = Command::new("node")
        .arg(script)
        .arg(&dir)
        .arg(&model.base_url)
        .arg(&input_path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&input_path);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = server;
    Some(serde_json::from_slice(&output.stdout).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oxpi_sends_and_builds_what_pis_own_client_does() {
    let server = TestServer::start_fn(|_| sse(&events())).await.unwrap();
    let model = model(&server);
    let context: Context = serde_json::from_value(context_json()).unwrap();
    let models = Models::builder()
        .env(Env::from_pairs::<&str, &str>([]))
        .build();
    let message = models.complete(&model, &context, options()).await;
    assert_eq!(
        message.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        message.error_message
    );
    assert_eq!(message.response_id.as_deref(), Some("resp-1"));
    assert_eq!(
        (message.usage.input, message.usage.total_tokens),
        (120, 160)
    );
    assert_eq!(
        message.usage.cost.total, 0.000813,
        "the backend's cost is kept"
    );
    let kinds: Vec<&str> = message
        .content
        .iter()
        .map(|c| match c {
            AssistantContent::Thinking(_) => "thinking",
            AssistantContent::Text(_) => "text",
            AssistantContent::ToolCall(_) => "toolCall",
        })
        .collect();
    assert_eq!(kinds, ["thinking", "text", "toolCall"]);
    assert_eq!(message.text(), "Reading it.");

    let requests = server.requests();
    let ours = &requests[0];
    assert_eq!(
        (ours.method.as_str(), ours.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(ours.header("authorization"), Some("Bearer rad-key"));
    assert_eq!(ours.header("accept"), Some("text/event-stream"));
    let body = ours.json();
    assert_eq!(body["model"], json!(model.id));
    assert_eq!(
        body["context"]["messages"][0],
        json!({"role": "system", "content": "You read files.", "toolsAdded": context_json()["tools"], "timestamp": 0})
    );
    assert_eq!(
        body["options"],
        json!({"temperature": 0.5, "maxTokens": 2048, "reasoning": "high", "sessionId": "session-7", "toolChoice": "auto"})
    );

    let ours_json = serde_json::to_value(oxpi_ai::Message::Assistant(message)).unwrap();
    match pi_client(&server, &model) {
        None => eprintln!("node not found: pi's client was not compared"),
        Some(pi) => {
            let requests = server.requests();
            let theirs: &Recorded = &requests[1];
            assert_eq!(ours.json(), theirs.json(), "the same request body as pi's");
            for header in ["authorization", "accept", "content-type"] {
                assert_eq!(ours.header(header), theirs.header(header), "{header}");
            }
            assert_eq!(
                comparable(ours_json),
                comparable(pi),
                "the same message as pi's"
            );
        }
    }
}

async fn fails_with(reply: Reply, options: StreamOptions) -> (oxpi_ai::AssistantMessage, usize) {
    let server = TestServer::start(vec![reply]).await.unwrap();
    let model = model(&server);
    let context: Context = serde_json::from_value(context_json()).unwrap();
    let message = oxpi_ai::complete(&model, &context, options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    (message, server.requests().len())
}

#[tokio::test]
async fn each_failure_ends_with_a_clear_error() {
    let error = Reply::json_error(
        401,
        r#"{"error":{"message":"bad key","code":"unauthorized"}}"#,
    );
    let (message, _) = fails_with(error, options()).await;
    let text = message.error_message.unwrap();
    assert!(text.contains("401") && text.contains("bad key"), "{text}");

    let mut stream = events()[..3].to_vec();
    stream.push(
        json!({"type": "error", "reason": "error", "errorMessage": "upstream overloaded",
                       "usage": events()[13]["usage"]}),
    );
    let (message, _) = fails_with(sse(&stream), options()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("upstream overloaded")
    );
    assert_eq!(message.usage.input, 120);
    assert_eq!(message.content.len(), 1, "the thinking so far is kept");

    let (message, _) = fails_with(sse(&events()[..9]), options()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("radius stream ended without a terminal event")
    );

    let bad = vec![
        json!({"type": "start"}),
        json!({"type": "text_delta", "contentIndex": 3, "delta": "x"}),
    ];
    let (message, _) = fails_with(sse(&bad), options()).await;
    let text = message.error_message.unwrap();
    assert!(
        text.contains("Invalid contentIndex 3 in pi-messages text_delta"),
        "{text}"
    );

    let unparsable = Reply::sse(["data: {not json\n\n"]);
    let (message, _) = fails_with(unparsable, options()).await;
    assert!(message
        .error_message
        .unwrap()
        .contains("Could not parse a pi-messages event"));

    let mut keyless = options();
    keyless.api_key = None;
    let mut model = model(&TestServer::start(vec![]).await.unwrap());
    model.provider = "my-gateway".into();
    let context: Context = serde_json::from_value(context_json()).unwrap();
    let message = oxpi_ai::complete(&model, &context, keyless).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("No API key provided for provider \"my-gateway\"")
    );
}

#[tokio::test]
async fn a_custom_provider_on_pi_messages_gets_its_key_from_the_collection() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = TestServer::start_fn(move |request| {
        log.lock()
            .unwrap()
            .push(request.header("authorization").unwrap_or("").to_string());
        sse(&events())
    })
    .await
    .unwrap();
    let mut template = model(&server);
    template.base_url = String::new();
    let gateway = oxpi_ai::collection::Provider::new("team-gateway")
        .with_base_url(format!("{}/v1", server.base_url()))
        .with_auth(oxpi_ai::collection::ProviderAuth::api_key_env([
            "TEAM_GATEWAY_KEY",
        ]))
        .with_model(template);
    let models = Models::builder()
        .env(Env::from_pairs([("TEAM_GATEWAY_KEY", "tg-1")]))
        .provider(gateway)
        .build();
    let model = models.models(Some("team-gateway"))[0].clone();
    let context: Context = serde_json::from_value(context_json()).unwrap();
    let message = models
        .complete(&model, &context, StreamOptions::default())
        .await;
    assert_eq!(
        message.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        message.error_message
    );
    assert_eq!(message.provider, "team-gateway");
    assert_eq!(*seen.lock().unwrap(), ["Bearer tg-1"]);
}
