//! `AgentOptions::with_identity` (pi 1.6's agent `identity`): every request of a run carries the
//! identity's `User-Agent` and the attribution headers of the service it goes to, over HTTP.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use oxpi_agent_core::{Agent, AgentOptions};
use oxpi_ai::identity::{ClientAttribution, ClientIdentity, UserAgentMode};
use oxpi_ai::{Model, StreamOptions};
use oxpi_testkit::{Reply, TestServer};

fn chat_text(text: &str) -> Reply {
    Reply::sse([
        format!("data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":\"stop\"}}]}}\n\n"),
        "data: [DONE]\n\n".to_string(),
    ])
}

/// A model of the `openrouter` provider served by `server` (attribution is matched by provider).
fn openrouter_model(server: &TestServer) -> Model {
    let mut model = Model::openai_compatible(format!("{}/v1", server.base_url()), "some/model");
    model.provider = "openrouter".into();
    model
}

fn options(model: Model) -> AgentOptions {
    AgentOptions::new(model).with_stream_options(
        StreamOptions::default()
            .with_api_key("test-key")
            .with_max_retries(0)
            .with_timeout(Duration::from_secs(10)),
    )
}

#[tokio::test]
async fn every_request_of_a_run_carries_the_agents_identity() {
    let server = TestServer::start(vec![chat_text("one"), chat_text("two")])
        .await
        .unwrap();
    let identity = ClientIdentity::default()
        .with_user_agent(UserAgentMode::Custom("acme-bot/2.0".into()))
        .with_attribution(ClientAttribution::new("Acme", "https://acme.example"));
    let agent = Agent::new(options(openrouter_model(&server)).with_identity(identity));
    agent.prompt("first").await.unwrap();
    agent.prompt("second").await.unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            (
                request.header("user-agent"),
                request.header("http-referer"),
                request.header("x-openrouter-title"),
            ),
            (
                Some("acme-bot/2.0"),
                Some("https://acme.example"),
                Some("Acme")
            )
        );
    }
}

#[tokio::test]
async fn without_an_identity_the_agent_attributes_to_no_one() {
    let server = TestServer::start(vec![chat_text("one")]).await.unwrap();
    let agent = Agent::new(options(openrouter_model(&server)));
    agent.prompt("first").await.unwrap();
    let request = &server.requests()[0];
    assert_eq!(
        (
            request.header("http-referer"),
            request.header("x-openrouter-title")
        ),
        (None, None)
    );
    assert_ne!(request.header("user-agent"), Some("acme-bot/2.0"));
}
