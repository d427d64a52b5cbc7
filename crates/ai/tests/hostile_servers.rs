//! Servers that answer as an adversary would, on every wire API over real HTTP: a redirect to
//! another origin (which must never receive the credentials) and absurd retry delays (which
//! must never panic). Bedrock's own cases are in `bedrock.rs`.

#[allow(dead_code)]
mod common;

use std::time::Duration;

use oxpi_ai::{Model, ProviderRegistry, StopReason, StreamOptions};
use oxpi_testkit::{Reply, TestServer};

/// Every HTTP wire API of the default build, with the path its base URL ends in.
const APIS: [(&str, &str); 8] = [
    ("openai-completions", "/v1"),
    ("openai-responses", "/v1"),
    ("azure-openai-responses", "/openai/v1"),
    ("anthropic-messages", "/v1"),
    ("google-generative-ai", "/v1beta"),
    ("google-vertex", ""),
    ("mistral-conversations", ""),
    ("openai-codex-responses", "/backend-api"),
];

/// A JWT (the Codex backend reads an account id from it); its last part is the canary.
const KEY: &str = "eyJhbGciOiJub25lIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdC1jb25mb3JtYW5jZSJ9fQ.sk-oxpi-redirect-canary-0123456789";

fn model(api: &str, path: &str, server: &TestServer) -> Model {
    let mut model = Model::openai_compatible(format!("{}{path}", server.base_url()), "m-1");
    model.api = api.into();
    model.provider = "hostile".to_string();
    model
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key(KEY)
        .with_max_retries(1)
        .with_retry_base_delay(Duration::from_millis(5))
}

async fn complete(registry: &ProviderRegistry, model: &Model) -> oxpi_ai::AssistantMessage {
    let mut stream = registry.stream(model, &common::user_context("hi"), options());
    let mut last = None;
    while let Some(event) = futures::StreamExt::next(&mut stream).await {
        last = event.final_message().cloned();
    }
    last.expect("a terminal event")
}

fn redirect(status: u16, location: &str) -> Reply {
    Reply::Respond {
        status,
        headers: vec![("location".into(), location.into())],
        body: Vec::new(),
    }
}

/// A 302, 307 or 308 to another origin is not followed on any API: that origin receives
/// nothing (reqwest's default policy would have sent it every credential header but
/// `Authorization`), and the reply is an error naming the origin it pointed to.
#[tokio::test]
async fn a_redirect_to_another_origin_is_never_followed() {
    for (api, path) in APIS {
        for status in [302, 307, 308] {
            let elsewhere = TestServer::start(Vec::new()).await.unwrap();
            let location = format!("{}{path}/steal?code=1", elsewhere.base_url());
            let server = TestServer::start(vec![redirect(status, &location)])
                .await
                .unwrap();
            let (_, message) = common::run(
                &model(api, path, &server),
                &common::user_context("hi"),
                options(),
            )
            .await;
            let label = format!("{api} {status}");
            assert_eq!(
                elsewhere.requests(),
                Vec::new(),
                "{label}: nothing sent there"
            );
            assert_eq!(server.requests().len(), 1, "{label}: not retried");
            assert_eq!(message.stop_reason, StopReason::Error, "{label}");
            let error = message.error_message.unwrap_or_default();
            let expected = format!(
                "the server redirected the request to another origin ({}); not followed",
                elsewhere.base_url()
            );
            assert!(error.contains(&expected), "{label}: {error}");
            assert!(
                !error.contains("steal"),
                "{label}: the location's path is not quoted"
            );
        }
    }
}

/// A redirect within the origin (a proxy moving a path) is still followed.
#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let server = TestServer::start(Vec::new()).await.unwrap();
    let location = format!("{}/moved/chat/completions", server.base_url());
    server.push(redirect(307, &location));
    server.push(Reply::sse([
        r#"data: {"id":"c1","choices":[{"index":0,"delta":{"content":"moved"}}]}"#.to_string()
            + "\n\n",
        r#"data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#
            .to_string()
            + "\n\n",
        "data: [DONE]\n\n".to_string(),
    ]));
    let (_, message) = common::run(
        &model("openai-completions", "/v1", &server),
        &common::user_context("hi"),
        options(),
    )
    .await;
    assert_eq!(message.text(), "moved", "{:?}", message.error_message);
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/chat/completions", "/moved/chat/completions"]);
}

/// A client of the caller's own (given to `with_client`) with reqwest's default policy follows
/// the redirect, so that origin does see the request: the transport cannot stop a client it did
/// not build. It refuses the foreign response, naming the fix (`client_builder`).
#[tokio::test]
async fn a_callers_client_that_followed_a_redirect_is_refused() {
    use oxpi_ai::providers::openai_completions::OpenAiCompletionsProvider;
    let elsewhere = TestServer::start(Vec::new()).await.unwrap();
    let location = format!("{}/v1/chat/completions", elsewhere.base_url());
    let server = TestServer::start(vec![redirect(307, &location)])
        .await
        .unwrap();
    let mut registry = ProviderRegistry::new();
    registry.register(OpenAiCompletionsProvider::with_client(
        reqwest::Client::new(),
    ));
    let message = complete(&registry, &model("openai-completions", "/v1", &server)).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.unwrap_or_default();
    assert!(
        error.contains("followed a redirect to another origin") && error.contains("client_builder"),
        "{error}"
    );

    // The same client built from client_builder() sends nothing there.
    let elsewhere = TestServer::start(Vec::new()).await.unwrap();
    let location = format!("{}/v1/chat/completions", elsewhere.base_url());
    let server = TestServer::start(vec![redirect(307, &location)])
        .await
        .unwrap();
    let client = oxpi_ai::providers::client::client_builder()
        .build()
        .unwrap();
    let mut registry = ProviderRegistry::new();
    registry.register(OpenAiCompletionsProvider::with_client(client));
    let message = complete(&registry, &model("openai-completions", "/v1", &server)).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(elsewhere.requests(), Vec::new());
}

/// `retry-after-ms: 1e30`, a `Retry-After` of 1e300 seconds or a date in the year 9999 panicked
/// the provider (`Duration::from_secs_f64` overflows); now each is a wait longer than
/// `max_retry_delay`, so the request fails at once saying so, on every API.
#[tokio::test]
async fn absurd_retry_delays_fail_cleanly() {
    let headers = [
        ("retry-after-ms", "1e30"),
        ("retry-after", "1e300"),
        ("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"),
    ];
    for (api, path) in APIS {
        for (name, value) in headers {
            let busy = Reply::json_error(429, r#"{"error":{"message":"slow down"}}"#)
                .with_header(name, value);
            let server = TestServer::start(vec![busy]).await.unwrap();
            let (_, message) = common::run(
                &model(api, path, &server),
                &common::user_context("hi"),
                options(),
            )
            .await;
            let label = format!("{api} {name}: {value}");
            assert_eq!(message.stop_reason, StopReason::Error, "{label}");
            let error = message.error_message.unwrap_or_default();
            assert!(
                error.contains("the server asked to retry after 86400.0s, more than the 60.0s allowed by max_retry_delay"),
                "{label}: {error}"
            );
            assert_eq!(server.requests().len(), 1, "{label}: not retried");
        }
    }
}

/// A provider whose stream sends tool-call input while no call is open (`ReplyBuilder`
/// dropped it, so the reply ended `toolUse` with no call): the reply is an error quoting it.
#[tokio::test]
async fn tool_input_with_no_open_call_is_an_error() {
    struct OutOfOrder;
    impl oxpi_ai::ApiProvider for OutOfOrder {
        fn api(&self) -> &str {
            "out-of-order"
        }
        fn stream(
            &self,
            model: Model,
            _context: oxpi_ai::Context,
            _options: StreamOptions,
            sink: oxpi_ai::EventSink,
        ) -> futures::future::BoxFuture<'static, ()> {
            Box::pin(async move {
                let mut out = oxpi_ai::ReplyBuilder::new(&model, sink);
                out.text("Calling.").await;
                out.tool_call_delta(r#"{"path":"a.txt"}"#).await;
                out.finish(StopReason::ToolUse).await;
            })
        }
    }
    let mut registry = ProviderRegistry::new();
    registry.register(OutOfOrder);
    let mut model = Model::openai_compatible("http://127.0.0.1:9", "m-1");
    model.api = "out-of-order".into();
    let message = complete(&registry, &model).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some(
            r#"The stream sent tool-call input while no tool call was open, so it cannot be placed: {"path":"a.txt"}"#
        )
    );
    assert_eq!(message.text(), "Calling.", "what arrived is kept");
}

/// Gemini's model id goes into the path encoded: `?` and `#` no longer move it into the query
/// or fragment; an id with a `..` segment is refused before anything is sent.
#[tokio::test]
async fn gemini_model_ids_are_encoded_path_segments() {
    for (api, path) in [("google-generative-ai", "/v1beta"), ("google-vertex", "")] {
        let server = TestServer::start(vec![Reply::json_error(404, "{}")])
            .await
            .unwrap();
        let mut model = model(api, path, &server);
        model.id = "gemini-2.5-flash?alt=json#x".into();
        common::run(&model, &common::user_context("hi"), options()).await;
        let expected = match api {
            "google-vertex" => "/v1/publishers/google/models/gemini-2.5-flash%3Falt%3Djson%23x:streamGenerateContent?alt=sse",
            _ => "/v1beta/models/gemini-2.5-flash%3Falt%3Djson%23x:streamGenerateContent?alt=sse",
        };
        assert_eq!(server.requests()[0].path, expected, "{api}");
    }
    let server = TestServer::start(Vec::new()).await.unwrap();
    let mut model = model("google-generative-ai", "/v1beta", &server);
    model.id = "tunedModels/../../v1/files".into();
    let (_, message) = common::run(&model, &common::user_context("hi"), options()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some(
            r#"the model id "tunedModels/../../v1/files" cannot go into a URL path (it has an empty, "." or ".." segment)"#
        )
    );
    assert_eq!(server.requests(), Vec::new());
}

/// Two tool calls with the same id in one reply (servers that number calls per response):
/// the second gets a unique id (`_2` appended) when it ends, in its `toolcall_end` and the
/// final message, so each call can have exactly one result; Chat Completions (and Mistral,
/// which reads the same chunks), Anthropic, and Responses (where the call part before `|` is
/// what pairs a result, so it is the part made unique). Bedrock: `bedrock/hostile.rs`.
#[tokio::test]
async fn repeated_call_ids_in_one_reply_are_made_unique() {
    let completions = vec![
        r#"data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}}]}"#,
        r#"data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_0","type":"function","function":{"name":"read","arguments":"{\"path\":\"b\"}"}}]}}]}"#,
        r#"data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        "data: [DONE]",
    ];
    let anthropic = vec![
        r#"event: message_start
data: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":"m-1","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}"#,
        r#"event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}"#,
        r#"event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\":\"a\"}"}}"#,
        r#"event: content_block_stop
data: {"type":"content_block_stop","index":0}"#,
        r#"event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}"#,
        r#"event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":\"b\"}"}}"#,
        r#"event: content_block_stop
data: {"type":"content_block_stop","index":1}"#,
        r#"event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}"#,
        r#"event: message_stop
data: {"type":"message_stop"}"#,
    ];
    // Responses: the call id pairs a result (`call_id|item_id`); two items with one call id.
    let call_item = |item: &str, index: usize, path: &str| -> Vec<String> {
        let raw = format!("{{\"path\":\"{path}\"}}");
        vec![
            format!(
                r#"event: response.output_item.added
data: {{"type":"response.output_item.added","output_index":{index},"item":{{"type":"function_call","id":"{item}","call_id":"call_1","name":"read","arguments":"","status":"in_progress"}}}}"#
            ),
            format!(
                r#"event: response.function_call_arguments.delta
data: {{"type":"response.function_call_arguments.delta","item_id":"{item}","output_index":{index},"delta":{}}}"#,
                serde_json::Value::from(raw.clone())
            ),
            format!(
                r#"event: response.output_item.done
data: {{"type":"response.output_item.done","output_index":{index},"item":{{"type":"function_call","id":"{item}","call_id":"call_1","name":"read","arguments":{},"status":"completed"}}}}"#,
                serde_json::Value::from(raw)
            ),
        ]
    };
    let mut responses = call_item("fc_1", 0, "a");
    responses.extend(call_item("fc_2", 1, "b"));
    responses.push(r#"event: response.completed
data: {"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}}"#.to_string());
    let responses: Vec<&str> = responses.iter().map(String::as_str).collect();
    for (api, path, chunks, ids) in [
        (
            "openai-completions",
            "/v1",
            completions.clone(),
            ["call_0", "call_0_2"],
        ),
        (
            "mistral-conversations",
            "",
            completions,
            ["call_0", "call_0_2"],
        ),
        (
            "anthropic-messages",
            "/v1",
            anthropic,
            ["toolu_1", "toolu_1_2"],
        ),
        (
            "openai-responses",
            "/v1",
            responses,
            ["call_1|fc_1", "call_1_2|fc_2"],
        ),
    ] {
        let body: Vec<String> = chunks.into_iter().map(|c| format!("{c}\n\n")).collect();
        let server = TestServer::start(vec![Reply::sse(body)]).await.unwrap();
        let (events, message) = common::run(
            &model(api, path, &server),
            &common::user_context("read a and b"),
            options(),
        )
        .await;
        let got: Vec<&str> = message.tool_calls().map(|c| c.id.as_str()).collect();
        assert_eq!(got, ids, "{api}: {:?}", message.error_message);
        let ended: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                oxpi_ai::AssistantMessageEvent::ToolcallEnd { tool_call, .. } => {
                    Some(tool_call.id.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(ended, ids, "{api}: toolcall_end ids");
    }
}
