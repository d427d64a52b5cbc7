//! Every fault of the matrix ends the reply with its typed [`FailureKind`] on every API, so
//! retry decisions and overflow detection read a kind instead of parsing the text back.

use std::time::Duration;

use oxpi_ai::{FailureKind, StopReason};
use oxpi_testkit::{Part, Reply};

use super::{hello, ok_reply, options, run, run_with, Api, APIS};

fn http(status: u16, retryable: bool) -> Option<FailureKind> {
    Some(FailureKind::Http { status, retryable })
}

#[tokio::test]
async fn each_fault_ends_with_its_failure_kind_on_every_api() {
    for api in APIS {
        let (body, end) = api.render(&hello());
        let stream_then = |last: Part| {
            let mut parts: Vec<Part> = body
                .iter()
                .map(|e| Part::Bytes(e.clone().into_bytes()))
                .collect();
            parts.push(last);
            Reply::sse_parts(parts)
        };
        let mut garbage = body.clone();
        garbage.insert(2, "data: {truncated json\n\n".to_string());
        garbage.extend(end.clone());
        let mut error_event = body.clone();
        error_event.push(api.error_event("upstream exploded"));
        let down = || Reply::json_error(503, &api.error_body("down"));

        let cases: Vec<(&str, Vec<Reply>, Option<FailureKind>)> = vec![
            (
                "401",
                vec![Reply::json_error(401, &api.error_body("bad key"))],
                http(401, false),
            ),
            (
                "503 until the limit",
                vec![down(), down(), down()],
                http(503, true),
            ),
            (
                "resets until the limit",
                vec![Reply::Reset; 3],
                Some(FailureKind::Connection),
            ),
            (
                "no terminal event",
                vec![Reply::sse(body.clone())],
                Some(FailureKind::Incomplete),
            ),
            (
                "cut after some events",
                vec![stream_then(Part::Cut)],
                Some(FailureKind::Connection),
            ),
            (
                "garbage",
                vec![Reply::sse(garbage)],
                Some(FailureKind::Parse),
            ),
            (
                "an error event",
                vec![Reply::sse(error_event)],
                // Transient where the wire says so: Responses' `server_error`, Anthropic's
                // `overloaded_error`, Gemini's code 500; Chat Completions' carries no code.
                Some(FailureKind::Provider {
                    retryable: !matches!(api, Api::Completions | Api::Mistral),
                }),
            ),
        ];
        for (label, replies, expected) in cases {
            let (message, _) = run(api, replies).await;
            assert_eq!(
                (message.stop_reason, message.failure_kind),
                (StopReason::Error, expected),
                "{api:?} {label}: {:?}",
                message.error_message
            );
        }

        let idle = options().with_idle_timeout(Duration::from_millis(200));
        let (message, _, _) = run_with(api, vec![stream_then(Part::Stall)], idle).await;
        assert_eq!(message.failure_kind, Some(FailureKind::Stall), "{api:?}");

        let (message, _) = run(api, vec![ok_reply(api, &hello())]).await;
        assert_eq!(
            (message.stop_reason, message.failure_kind),
            (StopReason::Stop, None),
            "{api:?}: a reply that succeeds has no failure kind"
        );
    }
}

#[tokio::test]
async fn deadline_timeout_refusal_and_abort_have_their_kinds() {
    // A listener that accepts and never answers: no response headers within the timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}/v1", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    // A port nothing listens on: the connection is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);

    let model = |url: &str| oxpi_ai::Model::openai_compatible(url, "kinds");
    let no_retries = || options().with_max_retries(0);
    let final_of = |model: oxpi_ai::Model, options: oxpi_ai::StreamOptions| async move {
        oxpi_ai::stream(&model, &super::context(), options)
            .result()
            .await
    };

    let timeout = no_retries().with_timeout(Duration::from_millis(300));
    let message = final_of(model(&silent_url), timeout).await;
    assert_eq!(
        message.failure_kind,
        Some(FailureKind::Timeout),
        "{:?}",
        message.error_message
    );

    let deadline = no_retries().with_deadline(Duration::from_millis(300));
    let message = final_of(model(&silent_url), deadline).await;
    assert_eq!(
        message.failure_kind,
        Some(FailureKind::Deadline),
        "{:?}",
        message.error_message
    );

    let message = final_of(model(&closed_url), no_retries()).await;
    assert_eq!(
        message.failure_kind,
        Some(FailureKind::Connection),
        "{:?}",
        message.error_message
    );

    let aborted = no_retries();
    aborted.cancel.cancel();
    let message = final_of(model(&silent_url), aborted).await;
    assert_eq!(
        (message.stop_reason, message.failure_kind),
        (StopReason::Aborted, Some(FailureKind::Aborted))
    );
    held.abort();
}

/// A provider that needs a key and has none fails before anything is sent, as `auth`.
#[tokio::test]
async fn a_missing_key_is_an_auth_failure_and_nothing_is_sent() {
    let vars = oxpi_ai::providers::auth::api_key_env_vars("cerebras");
    assert!(!vars.is_empty());
    if vars.iter().any(|v| std::env::var_os(v).is_some()) {
        eprintln!("skipped: {vars:?} is set in this environment");
        return;
    }
    let server = oxpi_testkit::TestServer::start(vec![]).await.unwrap();
    let mut model = oxpi_ai::Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
    model.provider = "cerebras".into();
    let message = oxpi_ai::stream(&model, &super::context(), oxpi_ai::StreamOptions::default())
        .result()
        .await;
    assert_eq!(
        (message.stop_reason, message.failure_kind),
        (StopReason::Error, Some(FailureKind::Auth)),
        "{:?}",
        message.error_message
    );
    assert_eq!(server.requests().len(), 0);
}
