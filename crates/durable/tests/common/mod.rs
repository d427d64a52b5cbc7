//! What the durable tests share: a Restate server (or a skip outside CI) and reading texts out of
//! a transcript.

#![allow(dead_code)] // each test file uses part of it

use oxpi_durable::server::RestateServer;
use serde_json::Value;

/// A started Restate server. Outside CI a server that cannot be had (no npm, no network) skips
/// the test with a `skipped` line (`None`); in CI (`CI` set) it fails the test.
pub async fn restate_or_skip() -> Option<RestateServer> {
    match RestateServer::start().await {
        Ok(server) => Some(server),
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: no Restate server ({e})");
            None
        }
        Err(e) => panic!("no Restate server: {e}"),
    }
}

/// The first text block of each message of `role` in `messages` (pi's JSON messages).
pub fn first_texts(messages: &[Value], role: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| {
            m["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}
