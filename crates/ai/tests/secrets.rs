//! API keys never appear in Debug output, error messages, events or tracing: a run with a known
//! key through retries and an error that echoes the key, with every trace event captured.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use oxpi_ai::{Context, Message, Model, StreamOptions};
use oxpi_testkit::{Reply, TestServer};

const KEY: &str = "sk-oxpi-canary-7f3a9c41";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_key_never_leaks() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let mut seen = tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let echo = format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}"}}}}"#);
            let server = TestServer::start(vec![
                Reply::json_error(500, &format!("upstream saw Bearer {KEY}")),
                Reply::json_error(401, &echo),
            ])
            .await
            .unwrap();
            let mut model = Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
            model.provider = "openai".into();
            let options = StreamOptions::default()
                .with_api_key(KEY)
                .with_retry_base_delay(Duration::from_millis(1));
            let mut seen = format!("{options:?}\n{model:?}\n");
            let context = Context::new("s").with_message(Message::user("hi"));
            let mut stream = oxpi_ai::stream(&model, &context, options);
            while let Some(event) = stream.next().await {
                seen.push_str(&format!(
                    "{event:?}\n{}\n",
                    serde_json::to_string(&event).unwrap()
                ));
            }
            // The key did reach the server, so the canary is a real one.
            let requests = server.requests();
            assert_eq!(requests.len(), 2);
            assert_eq!(
                requests[0].header("authorization"),
                Some(format!("Bearer {KEY}").as_str())
            );
            seen
        })
    });
    seen.push_str(&String::from_utf8_lossy(&captured.0.lock().unwrap()));
    assert!(
        seen.contains("401 Incorrect API key provided: <redacted>"),
        "{seen}"
    );
    assert!(
        seen.contains("retrying request"),
        "the retry was traced: {seen}"
    );
    assert!(!seen.contains(KEY), "the key leaked:\n{seen}");
}
