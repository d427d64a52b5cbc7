//! A model server for the subscriptions of [`crate::oauth_issuer`]: it answers a streamed
//! "ok" in the wire format of the flavour's API (Anthropic Messages, Codex Responses, chat
//! completions for Copilot) when the request's bearer token is one the issuer currently
//! accepts, and 401 otherwise. Every request is recorded.

use serde_json::{json, Value};

use crate::oauth_issuer::{FakeIssuer, Flavor};
use crate::{Reply, TestServer};

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

fn reply(flavor: Flavor) -> Reply {
    match flavor {
        Flavor::Anthropic => Reply::sse([
            sse(
                Some("message_start"),
                &json!({"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            ),
            sse(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            sse(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
            ),
            sse(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": 0}),
            ),
            sse(
                Some("message_delta"),
                &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
            ),
            sse(Some("message_stop"), &json!({"type": "message_stop"})),
        ]),
        Flavor::Codex => {
            let event = |data: Value| sse(data["type"].as_str(), &data);
            Reply::sse([
                event(
                    json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "m", "role": "assistant", "content": []}}),
                ),
                event(
                    json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": "ok"}),
                ),
                event(
                    json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": "m", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}}),
                ),
                event(
                    json!({"type": "response.done", "response": {"id": "r", "status": "completed", "usage": {"input_tokens": 1, "output_tokens": 1}}}),
                ),
            ])
        }
        Flavor::Copilot => Reply::sse([
            sse(
                None,
                &json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]}),
            ),
            sse(
                None,
                &json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ),
            "data: [DONE]\n\n".to_string(),
        ]),
    }
}

impl FakeIssuer {
    /// A model server taking this issuer's current access tokens (Codex: with the account
    /// id of the token in `chatgpt-account-id`).
    pub async fn model_server(&self) -> std::io::Result<TestServer> {
        let flavor = self.flavor();
        let accepts = self.checker();
        let account = self.state().account_id.clone();
        TestServer::start_fn(move |request| {
            let token = request
                .header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or_default();
            let account_ok =
                flavor != Flavor::Codex || request.header("chatgpt-account-id") == Some(&account);
            if !accepts(token) || !account_ok {
                return Reply::json_error(
                    401,
                    r#"{"type":"error","error":{"type":"authentication_error","message":"invalid or expired token"}}"#,
                );
            }
            reply(flavor)
        })
        .await
    }
}
