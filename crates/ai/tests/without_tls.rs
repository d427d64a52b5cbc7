//! A build without TLS (`--no-default-features`, neither `rustls` nor `native-tls`): an `https`
//! URL fails with an error that names the missing feature.
//!
//! Run by `cargo xtask ci` as `cargo test -p oxpi-ai --no-default-features --test without_tls`;
//! with a TLS feature on, this file compiles to nothing.
#![cfg(not(any(feature = "rustls", feature = "native-tls")))]

use oxpi_ai::{complete, Context, Model, StopReason, StreamOptions, UserMessage};

#[tokio::test]
async fn an_https_url_names_the_missing_tls_feature() {
    let model = Model::openai_compatible("https://127.0.0.1:9/v1", "any");
    let context = Context {
        messages: vec![UserMessage::text("hi").into()].into(),
        ..Context::default()
    };
    let mut options = StreamOptions::default();
    options.max_retries = 3;
    options.api_key = None;
    let reply = complete(&model, &context, options).await;
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert_eq!(
        reply.error_message.as_deref(),
        Some(
            "cannot reach https://127.0.0.1:9: oxpi-ai was built without TLS \
             (enable its feature \"rustls\" or \"native-tls\")"
        )
    );
}
