//! What `prompt` returns (issue 39, trap 1): the final assistant message of a run that ended
//! well; `AgentError::Run` for a run that ended early (provider error, connection refused,
//! missing key, abort), whose failure is still in the history as in pi.

mod common;

use common::*;
use oxpi_agent_core::{Agent, AgentError, AgentOptions};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::{Model, StopReason};
use serde_json::json;

#[tokio::test]
async fn a_run_that_ends_well_returns_its_last_reply() {
    let faux = faux();
    faux.push(call("call_1", "read", json!({"path": "a.txt"})));
    faux.push(FauxReply::text("It says hello."));
    let agent = Agent::new(options(&faux).with_tool(handle(ReadTool::default())));

    let outcome = agent.prompt("Read a.txt").await.expect("the run succeeds");

    assert_eq!(outcome.text(), "It says hello.");
    assert_eq!(outcome.stop_reason(), StopReason::Stop);
    assert_eq!(outcome.message, last_assistant(&agent.messages()));
    assert_eq!(agent.last_outcome(), Ok(outcome));
}

#[tokio::test]
async fn a_provider_error_is_an_error_and_stays_in_the_history() {
    let faux = faux();
    faux.push(FauxReply::error("overloaded"));
    let agent = Agent::new(options(&faux));

    let result = agent.prompt("hi").await;

    assert_eq!(
        result,
        Err(AgentError::Run {
            error_message: "overloaded".to_string(),
            stop_reason: Some(StopReason::Error),
        })
    );
    assert_eq!(result.unwrap_err().to_string(), "overloaded");
    // pi's "failures end up in the history": the failed reply is the last message.
    let messages = agent.messages();
    assert_eq!(roles(&messages), ["user", "assistant"]);
    let last = last_assistant(&messages);
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(last.error_message.as_deref(), Some("overloaded"));
    assert_eq!(agent.error_message().as_deref(), Some("overloaded"));
}

#[tokio::test]
async fn connection_refused_fails_the_prompt() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let model = Model::openai_compatible(format!("http://127.0.0.1:{port}/v1"), "m");
    let agent = Agent::new(AgentOptions::new(model));

    let error = agent.prompt("hi").await.expect_err("the run fails");

    assert!(error.is_run_failure());
    let AgentError::Run {
        error_message,
        stop_reason,
    } = &error
    else {
        panic!("not a run failure: {error:?}");
    };
    assert_eq!(*stop_reason, Some(StopReason::Error));
    assert_eq!(Some(error_message.clone()), agent.error_message());
    assert!(
        error_message.to_lowercase().contains("connect"),
        "{error_message}"
    );
}

#[tokio::test]
async fn continue_after_a_failure_returns_the_new_outcome() {
    let faux = faux();
    faux.push(FauxReply::error("overloaded"));
    faux.push(FauxReply::text("Back."));
    let agent = Agent::new(options(&faux));
    assert!(agent.prompt("hi").await.is_err());

    // The failed reply is the last message; drop it and continue, as a caller retrying would.
    let mut messages = agent.messages().to_vec();
    messages.pop();
    agent.replace_messages(messages).expect("idle");
    let outcome = agent.continue_().await.expect("the retry succeeds");

    assert_eq!(outcome.text(), "Back.");
    assert_eq!(agent.error_message(), None);
}

#[tokio::test]
async fn a_refused_prompt_is_not_a_run_failure() {
    let agent = Agent::new(options(&faux()));
    let error = agent.continue_().await.expect_err("nothing to continue");
    assert_eq!(error, AgentError::NoMessages);
    assert!(!error.is_run_failure());
}
