//! pi 1.6's client identity on the wire: every API sends oxpi's `User-Agent` by default (and
//! `accept: application/json` where pi's client does), the
//! attribution headers of the service a request goes to when the application names itself, and a
//! header set on the model or the request wins over the identity's.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
mod common;

use std::time::Duration;

use common::{run, user_context};
use oxpi_ai::identity::{ClientAttribution, ClientIdentity, UserAgentMode};
use oxpi_ai::{
    Model, StopReason, StreamOptions, API_ANTHROPIC_MESSAGES, API_GOOGLE_GENERATIVE_AI,
    API_MISTRAL_CONVERSATIONS, API_OPENAI_COMPLETIONS, API_OPENAI_RESPONSES,
};
use oxpi_testkit::{Recorded, Reply, TestServer};

/// A reply that ends at once, in the wire format of the API the path belongs to.
fn minimal_reply(request: &Recorded) -> Reply {
    let path = request.path.split('?').next().unwrap_or_default();
    if path.ends_with("/messages") {
        Reply::sse([
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ])
    } else if path.ends_with("/responses") {
        Reply::sse([
            "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1,\"total_tokens\":2}}}\n\n",
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

fn model(server: &TestServer, api: &str, provider: &str) -> Model {
    let base = if api == API_GOOGLE_GENERATIVE_AI {
        format!("{}/v1beta", server.base_url())
    } else {
        format!("{}/v1", server.base_url())
    };
    let mut model = Model::openai_compatible(base, "test-model");
    model.api = api.into();
    model.provider = provider.to_string();
    model
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key("test-key")
        .with_timeout(Duration::from_secs(10))
}

/// The one request `model` sends with `options`.
async fn request(server: &TestServer, model: &Model, options: StreamOptions) -> Recorded {
    let before = server.requests().len();
    let (_, message) = run(model, &user_context("hi"), options).await;
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{:?}",
        message.error_message
    );
    let requests = server.requests();
    assert_eq!(requests.len(), before + 1);
    requests.last().cloned().unwrap()
}

#[tokio::test]
async fn every_api_sends_oxpis_user_agent_and_no_attribution_by_default() {
    let server = TestServer::start_fn(minimal_reply).await.unwrap();
    let expected = format!(
        "oxpi/{} ({}; rust; {})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    for api in [
        API_ANTHROPIC_MESSAGES,
        API_OPENAI_RESPONSES,
        API_OPENAI_COMPLETIONS,
        API_MISTRAL_CONVERSATIONS,
        API_GOOGLE_GENERATIVE_AI,
    ] {
        let sent = request(&server, &model(&server, api, "openrouter"), options()).await;
        assert_eq!(sent.header("user-agent"), Some(expected.as_str()), "{api}");
        assert_eq!(sent.header("http-referer"), None, "{api}");
        assert_eq!(sent.header("x-openrouter-title"), None, "{api}");
        // pi's OpenAI and Anthropic clients ask for JSON even for a stream, its Mistral client
        // for the event stream; its Gemini client sends fetch's `*/*`, as reqwest does.
        let accept = match api {
            API_GOOGLE_GENERATIVE_AI => "*/*",
            API_MISTRAL_CONVERSATIONS => "text/event-stream",
            _ => "application/json",
        };
        assert_eq!(sent.header("accept"), Some(accept), "{api}");
    }
}

#[tokio::test]
async fn an_app_identity_sends_the_attribution_headers_of_the_service() {
    let server = TestServer::start_fn(minimal_reply).await.unwrap();
    let identity = ClientIdentity::default()
        .with_user_agent(UserAgentMode::Short)
        .with_attribution(
            ClientAttribution::new("acme", "https://acme.example")
                .with_categories(["cli-agent", "ide"]),
        );
    let opts = || options().with_identity(identity.clone());

    let openrouter = request(
        &server,
        &model(&server, API_OPENAI_COMPLETIONS, "openrouter"),
        opts(),
    )
    .await;
    assert_eq!(openrouter.header("user-agent"), Some("oxpi"));
    assert_eq!(
        openrouter.header("http-referer"),
        Some("https://acme.example")
    );
    assert_eq!(openrouter.header("x-openrouter-title"), Some("acme"));
    assert_eq!(
        openrouter.header("x-openrouter-categories"),
        Some("cli-agent,ide")
    );

    let nvidia = request(
        &server,
        &model(&server, API_OPENAI_COMPLETIONS, "nvidia"),
        opts(),
    )
    .await;
    assert_eq!(nvidia.header("x-billing-invoke-origin"), Some("Acme"));
    assert_eq!(nvidia.header("http-referer"), None);

    let opencode = request(
        &server,
        &model(&server, API_ANTHROPIC_MESSAGES, "opencode"),
        opts(),
    )
    .await;
    assert_eq!(opencode.header("x-opencode-client"), Some("acme"));

    // A service that reads none gets only the User-Agent.
    let openai = request(
        &server,
        &model(&server, API_OPENAI_RESPONSES, "openai"),
        opts(),
    )
    .await;
    assert_eq!(openai.header("user-agent"), Some("oxpi"));
    assert_eq!(openai.header("http-referer"), None);
    assert_eq!(openai.header("x-opencode-client"), None);
}

#[tokio::test]
async fn configured_headers_win_over_the_identity() {
    let server = TestServer::start_fn(minimal_reply).await.unwrap();
    let mut m = model(&server, API_OPENAI_COMPLETIONS, "openrouter");
    m.headers
        .insert("HTTP-Referer".into(), "https://from-the-model".into());
    let identity = ClientIdentity::default()
        .with_attribution(ClientAttribution::new("acme", "https://acme.example"));
    let sent = request(
        &server,
        &m,
        options()
            .with_identity(identity)
            .with_headers([("User-Agent", "from-the-request/1")]),
    )
    .await;
    assert_eq!(sent.header("user-agent"), Some("from-the-request/1"));
    assert_eq!(sent.header("http-referer"), Some("https://from-the-model"));
    assert_eq!(sent.header("x-openrouter-title"), Some("acme"));
}

#[tokio::test]
async fn a_user_agent_that_is_not_a_header_value_is_a_clear_error() {
    let server = TestServer::start_fn(minimal_reply).await.unwrap();
    let identity =
        ClientIdentity::default().with_user_agent(UserAgentMode::Custom("bad\nagent".into()));
    let (_, message) = run(
        &model(&server, API_OPENAI_COMPLETIONS, "openai"),
        &user_context("hi"),
        options().with_identity(identity),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let text = message.error_message.unwrap_or_default();
    assert!(text.contains("User-Agent"), "{text}");
    assert!(server.requests().is_empty(), "nothing was sent");
}
