//! JSON compatibility with pi-ai: messages, content blocks, usage, context, model and stream events written in pi's exact shapes (packages/ai/src/types.ts) deserialize into oxpi types and serialize back to the same JSON.

use oxpi_ai::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Context, ImageContent, InputKind,
    Message, Model, ModelCost, StopReason, TextContent, ThinkingContent, Tool, ToolCall,
    ToolResultMessage, Usage, UsageCost, UserContent, UserMessage, UserMessageContent,
};
use serde_json::{json, Map, Value};

/// Parses `value` as `T`, serializes it again and asserts the JSON is unchanged.
fn round_trip<T>(value: &Value) -> T
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let parsed: T = serde_json::from_value(value.clone()).expect("pi JSON deserializes");
    let back = serde_json::to_value(&parsed).expect("serializes");
    assert_eq!(&back, value, "round trip changed the JSON");
    parsed
}

/// Every number as an f64, so `0` (how JavaScript writes a zero cost) equals `0.0` (how serde
/// writes an `f64` zero).
fn numbers_as_f64(value: Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().expect("a JSON number is an f64")),
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_as_f64).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, numbers_as_f64(v)))
                .collect(),
        ),
        other => other,
    }
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().expect("a JSON object").clone()
}

/// A pi `Usage` with non-integral costs (so serde's f64 output is byte-for-byte pi's).
fn pi_usage() -> Value {
    json!({
        "input": 1200,
        "output": 340,
        "cacheRead": 800,
        "cacheWrite": 64,
        "totalTokens": 2404,
        "cost": {
            "input": 0.0036,
            "output": 0.0051,
            "cacheRead": 0.00024,
            "cacheWrite": 0.00024,
            "total": 0.00918
        }
    })
}

fn oxpi_usage() -> Usage {
    Usage {
        input: 1200,
        output: 340,
        cache_read: 800,
        cache_write: 64,
        total_tokens: 2404,
        cost: UsageCost {
            input: 0.0036,
            output: 0.0051,
            cache_read: 0.00024,
            cache_write: 0.00024,
            total: 0.00918,
            total_from_provider: None,
        },
        cache_write_1h: None,
        reasoning: None,
    }
}

fn pi_user_text() -> Value {
    json!({"role": "user", "content": "Read notes.txt please", "timestamp": 1_731_000_000_000_i64})
}

fn pi_user_blocks() -> Value {
    json!({
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB", "mimeType": "image/png"}
        ],
        "timestamp": 1_731_000_000_001_i64
    })
}

fn pi_assistant_full() -> Value {
    json!({
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "The user wants the file.", "thinkingSignature": "rs_0123"},
            {"type": "thinking", "thinking": "", "thinkingSignature": "EncryptedBlob==", "redacted": true},
            {
                "type": "text",
                "text": "Reading it now.",
                "textSignature": "{\"v\":1,\"id\":\"msg_42\",\"phase\":\"commentary\"}"
            },
            {
                "type": "toolCall",
                "id": "call_abc",
                "name": "read",
                "arguments": {"path": "notes.txt", "limit": 20, "opts": {"raw": true, "tags": ["a", null]}},
                "thoughtSignature": "CiQBjz1rX"
            }
        ],
        "api": "openai-responses",
        "provider": "openai",
        "model": "gpt-5",
        "responseId": "resp_68a1",
        "usage": pi_usage(),
        "stopReason": "toolUse",
        "timestamp": 1_731_000_000_002_i64
    })
}

fn pi_assistant_error() -> Value {
    json!({
        "role": "assistant",
        "content": [{"type": "text", "text": "Partial ans"}],
        "api": "openai-completions",
        "provider": "openrouter",
        "model": "qwen/qwen3-coder",
        "usage": pi_usage(),
        "stopReason": "error",
        "errorMessage": "429 Too Many Requests: rate limit exceeded",
        "timestamp": 1_731_000_000_003_i64
    })
}

fn pi_tool_result() -> Value {
    json!({
        "role": "toolResult",
        "toolCallId": "call_abc",
        "toolName": "read",
        "content": [
            {"type": "text", "text": "line one\nline two"},
            {"type": "image", "data": "R0lGODlhAQABAAAAACw=", "mimeType": "image/gif"}
        ],
        "details": {"truncated": false, "lines": 2, "diff": null},
        "isError": false,
        "timestamp": 1_731_000_000_004_i64
    })
}

fn pi_tool_result_error() -> Value {
    json!({
        "role": "toolResult",
        "toolCallId": "call_def",
        "toolName": "bash",
        "content": [{"type": "text", "text": "Command exited with code 1"}],
        "isError": true,
        "timestamp": 1_731_000_000_005_i64
    })
}

#[test]
fn user_message_with_string_content() {
    let message: Message = round_trip(&pi_user_text());
    assert_eq!(
        message,
        Message::User(UserMessage {
            content: UserMessageContent::Text("Read notes.txt please".into()),
            timestamp: 1_731_000_000_000,
        })
    );
    assert_eq!(message.role(), "user");
}

#[test]
fn user_message_with_text_and_image_blocks() {
    let message: Message = round_trip(&pi_user_blocks());
    assert_eq!(
        message,
        Message::User(UserMessage {
            content: UserMessageContent::Blocks(vec![
                UserContent::text("What is in this picture?"),
                UserContent::Image(ImageContent {
                    data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB".into(),
                    mime_type: "image/png".into(),
                }),
            ]),
            timestamp: 1_731_000_000_001,
        })
    );
}

#[test]
fn assistant_message_with_every_block_kind_and_signature() {
    let message: Message = round_trip(&pi_assistant_full());
    let expected = AssistantMessage {
        content: vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "The user wants the file.".into(),
                thinking_signature: Some("rs_0123".into()),
                redacted: None,
            }),
            AssistantContent::Thinking(ThinkingContent {
                thinking: String::new(),
                thinking_signature: Some("EncryptedBlob==".into()),
                redacted: Some(true),
            }),
            AssistantContent::Text(TextContent {
                text: "Reading it now.".into(),
                text_signature: Some(r#"{"v":1,"id":"msg_42","phase":"commentary"}"#.into()),
            }),
            AssistantContent::ToolCall(ToolCall {
                id: "call_abc".into(),
                name: "read".into(),
                arguments: args(
                    json!({"path": "notes.txt", "limit": 20, "opts": {"raw": true, "tags": ["a", null]}}),
                ),
                thought_signature: Some("CiQBjz1rX".into()),
                arguments_error: None,
                namespace: None,
            }),
        ],
        api: "openai-responses".into(),
        provider: "openai".into(),
        model: "gpt-5".into(),
        response_id: Some("resp_68a1".into()),
        usage: oxpi_usage(),
        stop_reason: StopReason::ToolUse,
        error_message: None,
        failure_kind: None,
        timestamp: 1_731_000_000_002,
        response_model: None,
        provider_thinking_level: None,
        thinking_level: None,
        diagnostics: None,
        deferred: None,
        raw_stop_reason: None,
        end_turn: None,
        duration_ms: None,
    };
    assert_eq!(message, Message::Assistant(expected));
}

#[test]
fn assistant_error_message_keeps_error_message_and_partial_content() {
    let message: AssistantMessage = match round_trip::<Message>(&pi_assistant_error()) {
        Message::Assistant(m) => m,
        other => panic!("expected an assistant message, got {other:?}"),
    };
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("429 Too Many Requests: rate limit exceeded")
    );
    assert_eq!(message.content, vec![AssistantContent::text("Partial ans")]);
    assert_eq!(message.response_id, None);
}

#[test]
fn every_stop_reason_has_pis_spelling() {
    let cases = [
        (StopReason::Stop, "stop"),
        (StopReason::Length, "length"),
        (StopReason::ToolUse, "toolUse"),
        (StopReason::Error, "error"),
        (StopReason::Aborted, "aborted"),
    ];
    for (reason, text) in cases {
        assert_eq!(serde_json::to_value(reason).unwrap(), json!(text));
        assert_eq!(
            serde_json::from_value::<StopReason>(json!(text)).unwrap(),
            reason
        );
    }
}

#[test]
fn tool_result_message_with_details_and_image() {
    let message: Message = round_trip(&pi_tool_result());
    assert_eq!(
        message,
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_abc".into(),
            tool_name: "read".into(),
            content: vec![
                UserContent::text("line one\nline two"),
                UserContent::image("R0lGODlhAQABAAAAACw=", "image/gif"),
            ],
            details: Some(json!({"truncated": false, "lines": 2, "diff": null})),
            is_error: false,
            timestamp: 1_731_000_000_004,
            usage: None,
            nested_calls: None,
            duration_ms: None,
        })
    );
    assert_eq!(message.role(), "toolResult");
}

#[test]
fn tool_result_error_without_details() {
    let message: Message = round_trip(&pi_tool_result_error());
    let Message::ToolResult(result) = message else {
        panic!("expected a tool result");
    };
    assert!(result.is_error);
    assert_eq!(result.details, None);
    assert_eq!(result.text_content(), "Command exited with code 1");
}

#[test]
fn full_conversation_round_trips() {
    let conversation = json!([
        pi_user_text(),
        pi_assistant_full(),
        pi_tool_result(),
        pi_tool_result_error(),
        pi_user_blocks(),
        pi_assistant_error(),
    ]);
    let messages: Vec<Message> = round_trip(&conversation);
    let roles: Vec<&str> = messages.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        vec![
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "user",
            "assistant"
        ]
    );
}

#[test]
fn context_in_pis_shape_round_trips() {
    let context = json!({
        "systemPrompt": "You are a coding assistant.",
        "messages": [pi_user_text(), pi_assistant_full(), pi_tool_result()],
        "tools": [{
            "name": "read",
            "description": "Read a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"]
            }
        }]
    });
    let parsed: Context = round_trip(&context);
    assert_eq!(
        parsed.system_prompt.as_deref(),
        Some("You are a coding assistant.")
    );
    assert_eq!(parsed.messages.len(), 3);
    assert_eq!(
        parsed.tools,
        vec![Tool {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"]
            }),
            constrained_sampling: None,
        }]
    );
}

#[test]
fn context_without_optional_fields() {
    // pi's `systemPrompt?` and `tools?` are optional.
    let context = json!({"messages": [pi_user_text()]});
    let parsed: Context = round_trip(&context);
    assert_eq!(parsed.system_prompt, None);
    assert_eq!(parsed.tools, Vec::<Tool>::new());
}

#[test]
fn integer_valued_costs_as_javascript_writes_them_parse_and_stay_numerically_equal() {
    // JSON.stringify writes a zero cost as `0`; serde writes an f64 as `0.0`. Both are the same
    // JSON number, so a pi reader gets the same values back.
    let pi = json!({
        "role": "assistant",
        "content": [],
        "api": "openai-completions",
        "provider": "llama.cpp",
        "model": "qwen",
        "usage": {
            "input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
        },
        "stopReason": "stop",
        "timestamp": 1_731_000_000_006_i64
    });
    let parsed: Message = serde_json::from_value(pi.clone()).unwrap();
    let Message::Assistant(m) = &parsed else {
        panic!("expected an assistant message");
    };
    assert_eq!(
        m.usage,
        Usage {
            input: 10,
            output: 2,
            total_tokens: 12,
            ..Usage::default()
        }
    );
    let back = serde_json::to_value(&parsed).unwrap();
    assert_eq!(numbers_as_f64(back), numbers_as_f64(pi));
}

#[test]
fn model_in_pis_shape_round_trips() {
    let pi = json!({
        "id": "gpt-4o-mini",
        "name": "GPT-4o mini",
        "api": "openai-completions",
        "provider": "openai",
        "baseUrl": "https://api.openai.com/v1",
        "reasoning": false,
        "input": ["text", "image"],
        "cost": {"input": 0.15, "output": 0.6, "cacheRead": 0.075, "cacheWrite": 0},
        "contextWindow": 128000,
        "maxTokens": 16384,
        "headers": {"X-Title": "oxpi"},
        "compat": {"supportsStore": false, "maxTokensField": "max_tokens"}
    });
    let model: Model = serde_json::from_value(pi.clone()).unwrap();
    let mut headers = std::collections::BTreeMap::new();
    headers.insert("X-Title".to_string(), "oxpi".to_string());
    // Model is #[non_exhaustive]: every field is set on a constructed one instead of a literal.
    let mut expected = Model::openai_compatible("https://api.openai.com/v1", "gpt-4o-mini");
    expected.name = "GPT-4o mini".into();
    expected.api = "openai-completions".into();
    expected.provider = "openai".into();
    expected.reasoning = false;
    expected.input = vec![InputKind::Text, InputKind::Image];
    expected.cost = ModelCost::new(0.15, 0.6).with_cache(0.075, 0.0);
    expected.context_window = 128_000;
    expected.max_tokens = 16_384;
    expected.headers = headers;
    expected.compat = Some(json!({"supportsStore": false, "maxTokensField": "max_tokens"}));
    expected.thinking_level_map = None;
    assert_eq!(model, expected);
    let back = serde_json::to_value(&model).unwrap();
    assert_eq!(numbers_as_f64(back), numbers_as_f64(pi));
}

#[test]
fn unknown_fields_from_a_newer_pi_are_ignored() {
    let mut newer = pi_assistant_full();
    let obj = newer.as_object_mut().unwrap();
    obj.insert("duration".into(), json!(1532));
    obj.insert("ttft".into(), json!(211));
    // (pi 1.6's `responseModel`, `diagnostics` and `usage.reasoning`, unknown here before, are
    // kept now: tests/pi16_json.rs.)
    obj.insert("servedBy".into(), json!("gpt-5-2025-08-07"));
    obj.insert("traces".into(), json!([{"type": "retry", "attempt": 1}]));
    obj["usage"]
        .as_object_mut()
        .unwrap()
        .insert("audio".into(), json!(120));
    obj["usage"]["cost"]
        .as_object_mut()
        .unwrap()
        .insert("reasoning".into(), json!(0.001));
    obj["content"][2]
        .as_object_mut()
        .unwrap()
        .insert("citations".into(), json!([]));
    obj["content"][3]
        .as_object_mut()
        .unwrap()
        .insert("partialJson".into(), json!("{\"pa"));
    let parsed: Message = serde_json::from_value(newer).unwrap();
    let expected: Message = serde_json::from_value(pi_assistant_full()).unwrap();
    assert_eq!(parsed, expected);
    // The unknown fields are dropped, the rest is pi's JSON again.
    assert_eq!(serde_json::to_value(&parsed).unwrap(), pi_assistant_full());

    let mut user = pi_user_blocks();
    user.as_object_mut()
        .unwrap()
        .insert("synthetic".into(), json!(true));
    user["content"][1]
        .as_object_mut()
        .unwrap()
        .insert("detail".into(), json!("high"));
    let parsed: Message = serde_json::from_value(user).unwrap();
    assert_eq!(serde_json::to_value(&parsed).unwrap(), pi_user_blocks());

    let mut result = pi_tool_result_error();
    result
        .as_object_mut()
        .unwrap()
        .insert("prunedAt".into(), json!(1_731_000_000_999_i64));
    let parsed: Message = serde_json::from_value(result).unwrap();
    assert_eq!(
        serde_json::to_value(&parsed).unwrap(),
        pi_tool_result_error()
    );
}

#[test]
fn oxpi_arguments_error_extension_round_trips_and_is_absent_when_unset() {
    let call = ToolCall {
        arguments_error: Some("Tool call arguments are not valid JSON".into()),
        ..ToolCall::new("call_1", "read", Map::new())
    };
    let value = serde_json::to_value(AssistantContent::ToolCall(call.clone())).unwrap();
    assert_eq!(
        value,
        json!({
            "type": "toolCall",
            "id": "call_1",
            "name": "read",
            "arguments": {},
            "argumentsError": "Tool call arguments are not valid JSON"
        })
    );
    assert_eq!(
        serde_json::from_value::<AssistantContent>(value).unwrap(),
        AssistantContent::ToolCall(call)
    );
    let plain = ToolCall::new("call_2", "ls", Map::new());
    assert_eq!(
        serde_json::to_value(AssistantContent::ToolCall(plain)).unwrap(),
        json!({"type": "toolCall", "id": "call_2", "name": "ls", "arguments": {}})
    );
}

/// pi's partial message at some point of a stream (events carry it as `partial`).
fn pi_partial() -> Value {
    json!({
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Hel"},
            {"type": "toolCall", "id": "call_abc", "name": "read", "arguments": {}}
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": pi_usage(),
        "stopReason": "stop",
        "timestamp": 1_731_000_000_010_i64
    })
}

#[test]
fn pi_stream_events_with_partial_deserialize() {
    let partial = pi_partial();
    let tool_call = json!({"type": "toolCall", "id": "call_abc", "name": "read", "arguments": {"path": "a.txt"}});
    let mut final_message = pi_partial();
    final_message["stopReason"] = json!("toolUse");
    let mut error_message = pi_partial();
    error_message["stopReason"] = json!("aborted");
    error_message["errorMessage"] = json!("Request was aborted");

    let pi_events = json!([
        {"type": "start", "partial": partial},
        {"type": "text_start", "contentIndex": 0, "partial": partial},
        {"type": "text_delta", "contentIndex": 0, "delta": "Hel", "partial": partial},
        {"type": "text_end", "contentIndex": 0, "content": "Hel", "partial": partial},
        {"type": "thinking_start", "contentIndex": 1, "partial": partial},
        {"type": "thinking_delta", "contentIndex": 1, "delta": "hmm", "partial": partial},
        {"type": "thinking_end", "contentIndex": 1, "content": "hmm", "partial": partial},
        {"type": "toolcall_start", "contentIndex": 1, "partial": partial},
        {"type": "toolcall_delta", "contentIndex": 1, "delta": "{\"path\":", "partial": partial},
        {"type": "toolcall_end", "contentIndex": 1, "toolCall": tool_call, "partial": partial},
        {"type": "done", "reason": "toolUse", "message": final_message},
        {"type": "error", "reason": "aborted", "error": error_message}
    ]);
    let events: Vec<AssistantMessageEvent> = serde_json::from_value(pi_events).unwrap();
    let partial_message: AssistantMessage = serde_json::from_value(pi_partial()).unwrap();
    let final_message: AssistantMessage = serde_json::from_value(final_message).unwrap();
    let error_message: AssistantMessage = serde_json::from_value(error_message).unwrap();
    use AssistantMessageEvent as E;
    assert_eq!(
        events,
        vec![
            E::Start {
                partial: Box::new(partial_message)
            },
            E::TextStart { content_index: 0 },
            E::TextDelta {
                content_index: 0,
                delta: "Hel".into()
            },
            E::TextEnd {
                content_index: 0,
                content: "Hel".into()
            },
            E::ThinkingStart { content_index: 1 },
            E::ThinkingDelta {
                content_index: 1,
                delta: "hmm".into()
            },
            E::ThinkingEnd {
                content_index: 1,
                content: "hmm".into()
            },
            // pi's toolcall_start has no id/name of its own (they are in `partial`), so oxpi's
            // extension fields default to empty.
            E::ToolcallStart {
                content_index: 1,
                id: String::new(),
                name: String::new()
            },
            E::ToolcallDelta {
                content_index: 1,
                delta: "{\"path\":".into()
            },
            E::ToolcallEnd {
                content_index: 1,
                tool_call: Box::new(ToolCall::new(
                    "call_abc",
                    "read",
                    args(json!({"path": "a.txt"}))
                ))
            },
            E::Done {
                reason: StopReason::ToolUse,
                message: Box::new(final_message)
            },
            E::Error {
                reason: StopReason::Aborted,
                error: Box::new(error_message)
            },
        ]
    );
}

/// `message` without its `role` field.
#[test]
fn oxpi_events_serialize_with_pis_field_names() {
    use AssistantMessageEvent as E;
    let message: AssistantMessage = serde_json::from_value(pi_assistant_error()).unwrap();
    let pi_message = pi_assistant_error();
    let cases = vec![
        (
            E::Start {
                partial: Box::new(message.clone()),
            },
            json!({"type": "start", "partial": pi_message}),
        ),
        (
            E::TextStart { content_index: 0 },
            json!({"type": "text_start", "contentIndex": 0}),
        ),
        (
            E::TextDelta {
                content_index: 0,
                delta: "Hi".into(),
            },
            json!({"type": "text_delta", "contentIndex": 0, "delta": "Hi"}),
        ),
        (
            E::TextEnd {
                content_index: 0,
                content: "Hi!".into(),
            },
            json!({"type": "text_end", "contentIndex": 0, "content": "Hi!"}),
        ),
        (
            E::ThinkingStart { content_index: 1 },
            json!({"type": "thinking_start", "contentIndex": 1}),
        ),
        (
            E::ThinkingDelta {
                content_index: 1,
                delta: "so".into(),
            },
            json!({"type": "thinking_delta", "contentIndex": 1, "delta": "so"}),
        ),
        (
            E::ThinkingEnd {
                content_index: 1,
                content: "so...".into(),
            },
            json!({"type": "thinking_end", "contentIndex": 1, "content": "so..."}),
        ),
        (
            E::ToolcallStart {
                content_index: 2,
                id: "call_1".into(),
                name: "read".into(),
            },
            json!({"type": "toolcall_start", "contentIndex": 2, "id": "call_1", "name": "read"}),
        ),
        (
            E::ToolcallDelta {
                content_index: 2,
                delta: "{\"a\"".into(),
            },
            json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"a\""}),
        ),
        (
            E::Done {
                reason: StopReason::Length,
                message: Box::new(message.clone()),
            },
            json!({"type": "done", "reason": "length", "message": pi_message}),
        ),
        (
            E::Error {
                reason: StopReason::Error,
                error: Box::new(message),
            },
            json!({"type": "error", "reason": "error", "error": pi_message}),
        ),
    ];
    for (event, expected) in cases {
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(value, expected);
        assert_eq!(
            serde_json::from_value::<AssistantMessageEvent>(value).unwrap(),
            event
        );
    }
}

#[test]
fn toolcall_end_event_uses_pis_field_names() {
    let event = AssistantMessageEvent::ToolcallEnd {
        content_index: 2,
        tool_call: Box::new(ToolCall::new(
            "call_1",
            "read",
            args(json!({"path": "a.txt"})),
        )),
    };
    let value = serde_json::to_value(&event).unwrap();
    assert_eq!(value["type"], json!("toolcall_end"));
    assert_eq!(value["contentIndex"], json!(2));
    assert_eq!(value["toolCall"]["id"], json!("call_1"));
    assert_eq!(value["toolCall"]["name"], json!("read"));
    assert_eq!(value["toolCall"]["arguments"], json!({"path": "a.txt"}));
    assert_eq!(
        serde_json::from_value::<AssistantMessageEvent>(value).unwrap(),
        event
    );
}

#[test]
fn toolcall_end_event_tool_call_has_pis_type_field() {
    let event = AssistantMessageEvent::ToolcallEnd {
        content_index: 2,
        tool_call: Box::new(ToolCall::new(
            "call_1",
            "read",
            args(json!({"path": "a.txt"})),
        )),
    };
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({
            "type": "toolcall_end",
            "contentIndex": 2,
            "toolCall": {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}
        })
    );
}

#[test]
fn tool_result_details_null_survives_round_trip() {
    let mut pi = pi_tool_result_error();
    pi.as_object_mut()
        .unwrap()
        .insert("details".into(), Value::Null);
    let _: Message = round_trip(&pi);
}

#[test]
fn event_messages_carry_pis_role_field() {
    let message: AssistantMessage = serde_json::from_value(pi_assistant_error()).unwrap();
    let events = [
        (
            AssistantMessageEvent::Start {
                partial: Box::new(message.clone()),
            },
            json!({"type": "start", "partial": pi_assistant_error()}),
        ),
        (
            AssistantMessageEvent::Done {
                reason: StopReason::Stop,
                message: Box::new(message.clone()),
            },
            json!({"type": "done", "reason": "stop", "message": pi_assistant_error()}),
        ),
        (
            AssistantMessageEvent::Error {
                reason: StopReason::Error,
                error: Box::new(message),
            },
            json!({"type": "error", "reason": "error", "error": pi_assistant_error()}),
        ),
    ];
    for (event, pi) in events {
        assert_eq!(serde_json::to_value(&event).unwrap(), pi);
    }
}
