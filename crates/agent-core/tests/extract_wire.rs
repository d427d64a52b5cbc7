//! [`extract`] over real HTTP on the wire APIs with a forced tool choice of their own: Anthropic
//! Messages, OpenAI Responses and Gemini, each against a scripted local server. The first reply's
//! arguments do not match the type (one repair turn), the second's do; each request forces the
//! `respond` tool in the API's own form. (Chat Completions is `examples/extract.rs`.)

#![allow(clippy::unwrap_used)]

use oxpi_agent_core::oxpi_ai::{ApiKey, ToolChoice};
use oxpi_agent_core::prelude::*;
use oxpi_testkit::wire::{anthropic, completions, gemini, reply, responses, Script};
use oxpi_testkit::{Recorded, TestServer};
use serde_json::Value;

#[derive(Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct Person {
    name: String,
    age: u32,
}

/// Runs `extract::<Person>` against a server speaking `api` (at `path` under its origin), the
/// first reply invalid, the second valid; returns the result and the two requests.
async fn extract_on(
    api: &str,
    path: &str,
    render: fn(&Script) -> (Vec<String>, Vec<String>),
) -> (Result<Person, AgentError>, Vec<Recorded>) {
    let invalid = Script::calls(&[("respond", json!({"name": "Ada", "age": "thirty-six"}))]);
    let valid = Script::calls(&[("respond", json!({"name": "Ada Lovelace", "age": 36}))]);
    let server = TestServer::start(vec![reply(render(&invalid)), reply(render(&valid))])
        .await
        .unwrap();
    let mut model = Model::openai_compatible(format!("{}{path}", server.base_url()), "m");
    model.api = api.into();
    model.provider = "scripted".into();
    let options =
        AgentOptions::new(model).with_get_api_key(|_| async { Ok(Some(ApiKey::new("test-key"))) });
    let result = extract::<Person>(options, "Ada Lovelace, 36, mathematician").await;
    (result, server.requests())
}

fn check(result: Result<Person, AgentError>, requests: &[Recorded], forced: &str) {
    assert_eq!(
        result.unwrap(),
        Person {
            name: "Ada Lovelace".into(),
            age: 36
        }
    );
    assert_eq!(requests.len(), 2, "one request, then one repair turn");
    for request in requests {
        let body = request.json();
        assert_eq!(
            body.pointer(forced),
            Some(&Value::from("respond")),
            "the tool is forced: {body}"
        );
    }
    // The repair turn carries the rejected call and the validation error back to the model.
    let second = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(second.contains("thirty-six"), "{second}");
    assert!(second.contains("age"), "{second}");
}

#[tokio::test]
async fn extract_over_anthropic_messages() {
    let (result, requests) = extract_on("anthropic-messages", "/v1", anthropic).await;
    check(result, &requests, "/tool_choice/name");
}

#[tokio::test]
async fn extract_over_openai_responses() {
    let (result, requests) = extract_on("openai-responses", "/v1", responses).await;
    check(result, &requests, "/tool_choice/name");
}

#[tokio::test]
async fn extract_over_gemini() {
    let (result, requests) = extract_on("google-generative-ai", "/v1beta", gemini).await;
    check(
        result,
        &requests,
        "/toolConfig/functionCallingConfig/allowedFunctionNames/0",
    );
}

/// Two invalid answers: a clear error naming the mismatch, after exactly one repair turn.
#[tokio::test]
async fn a_second_invalid_answer_is_an_extract_error() {
    let invalid = Script::calls(&[("respond", json!({"name": "Ada", "age": "old"}))]);
    let server = TestServer::start(vec![reply(anthropic(&invalid)), reply(anthropic(&invalid))])
        .await
        .unwrap();
    let mut model = Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
    model.api = "anthropic-messages".into();
    let options =
        AgentOptions::new(model).with_get_api_key(|_| async { Ok(Some(ApiKey::new("test-key"))) });
    let err = extract::<Person>(options, "Ada, old").await.unwrap_err();
    assert!(matches!(err, AgentError::Extract(_)), "{err}");
    assert!(err.to_string().contains("age"), "{err}");
    assert_eq!(server.requests().len(), 2);
}

/// A Chat Completions model whose server constrains decoding to a JSON schema but does not
/// enforce `tool_choice` (llama.cpp, the embedded model): the forced call is asked for as
/// `response_format`, and the JSON object the reply's text holds is the call.
fn schema_model(server: &TestServer) -> Model {
    let mut model = Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
    model.compat = Some(json!({"toolCallsInText": true, "toolChoiceAsJsonSchema": true}));
    model
}

#[tokio::test]
async fn extract_over_chat_completions_asks_a_json_schema_where_the_server_constrains_decoding() {
    let call =
        Script::text(r#"{"name": "respond", "arguments": {"name": "Ada Lovelace", "age": 36}}"#);
    let server = TestServer::start(vec![reply(completions(&call))])
        .await
        .unwrap();
    let options = AgentOptions::new(schema_model(&server));
    let person: Person = extract(options, "Ada Lovelace, 36, mathematician")
        .await
        .unwrap();
    assert_eq!(
        person,
        Person {
            name: "Ada Lovelace".into(),
            age: 36
        }
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    assert_eq!(body.get("tool_choice"), None, "{body}");
    let schema = &body["response_format"]["json_schema"]["schema"];
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(schema["properties"]["name"]["const"], "respond");
    assert_eq!(
        schema["properties"]["arguments"], body["tools"][0]["function"]["parameters"],
        "the arguments are held to the tool's own schema"
    );
    assert_eq!(schema["required"], json!(["name", "arguments"]));
}

#[tokio::test]
async fn a_required_call_after_each_user_message_only() {
    let server = TestServer::start(vec![
        reply(completions(&Script::text(
            r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
        ))),
        reply(completions(&Script::text("It is sunny in Paris."))),
    ])
    .await
    .unwrap();
    #[derive(Deserialize, JsonSchema)]
    #[serde(crate = "oxpi_agent_core::serde")]
    #[schemars(crate = "oxpi_agent_core::schemars")]
    struct City {
        city: String,
    }
    let weather =
        AgentToolHandle::from_fn("get_weather", "Weather of a city", |a: City| async move {
            Ok::<_, ToolError>(format!("{}: sunny", a.city))
        })
        .unwrap();
    let agent = Agent::new(
        AgentOptions::new(schema_model(&server))
            .with_tool(weather)
            .with_tool_choice_after_user(ToolChoice::Required),
    );
    let reply = agent.prompt("What's the weather in Paris?").await.unwrap();
    assert_eq!(reply.text(), "It is sunny in Paris.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let (first, second) = (requests[0].json(), requests[1].json());
    let schema = &first["response_format"]["json_schema"]["schema"];
    assert_eq!(
        schema["properties"]["name"]["const"], "get_weather",
        "{first}"
    );
    assert_eq!(
        second.get("response_format"),
        None,
        "after a tool result the model answers freely: {second}"
    );
    assert_eq!(second.get("tool_choice"), None, "{second}");
}
