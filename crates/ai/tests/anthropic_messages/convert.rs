//! Conversion: context → request body.

use super::*;
use oxpi_ai::CacheRetention;

#[test]
fn tool_results_merge_into_one_user_turn_with_normalised_ids() {
    let model = model_at("http://unused/v1");
    let read = ToolCall::new("call|1/a.b", "read", object(json!({"path": "a"})));
    let shot = ToolCall::new("call_2", "screenshot", object(json!({})));
    let mut failed = ToolResultMessage::text(&shot, "screen", true);
    failed
        .content
        .push(UserContent::image("iVBOR", "image/png"));
    let context = Context::new("sys")
        .with_message(Message::user("go"))
        .with_message(assistant(
            &model,
            vec![
                AssistantContent::text("Two calls."),
                AssistantContent::ToolCall(read.clone()),
                AssistantContent::ToolCall(shot.clone()),
            ],
            StopReason::ToolUse,
        ))
        .with_message(ToolResultMessage::text(&read, "content of a", false))
        .with_message(failed)
        .with_message(Message::user("next"));
    let body = request_json(&model, &context, &fast_options());
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Two calls."},
                {"type": "tool_use", "id": "call_1_a_b", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "call_2", "name": "screenshot", "input": {}},
            ]},
            // pi 1.6: a result without images is a string, `is_error` always; the images of a
            // failed result follow the turn's results (Anthropic takes only text there).
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1_a_b", "is_error": false,
                 "content": "content of a"},
                {"type": "tool_result", "tool_use_id": "call_2", "is_error": true,
                 "content": "screen\n(image attached after the tool results)"},
                {"type": "text", "text": "Images from the error result of tool call call_2 (screenshot):"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
            ]},
            {"role": "user", "content": "next"},
        ])
    );
}

#[test]
fn a_call_without_result_gets_one_and_long_ids_are_cut() {
    let model = model_at("http://unused/v1");
    let long_id = format!("fc_{}", "x".repeat(80));
    let call = ToolCall::new(long_id, "read", object(json!({})));
    let context = Context::default()
        .with_message(Message::user("go"))
        .with_message(assistant(
            &model,
            vec![AssistantContent::ToolCall(call)],
            StopReason::ToolUse,
        ))
        .with_message(Message::user("never mind"));
    let body = request_json(&model, &context, &fast_options());
    let id = body["messages"][1]["content"][0]["id"].as_str().unwrap();
    assert_eq!(id.len(), 64);
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
            "is_error": true, "content": "No result provided"}]})
    );
}

#[test]
fn thinking_is_replayed_to_the_same_model_only() {
    let model = model_at("http://unused/v1");
    let mut other = model.clone();
    other.provider = "openai".into();
    other.api = "openai-completions".into();
    other.id = "gpt-x".into();
    let thinking = |text: &str, signature: Option<&str>, redacted: Option<bool>| {
        AssistantContent::Thinking(ThinkingContent {
            thinking: text.into(),
            thinking_signature: signature.map(str::to_string),
            redacted,
        })
    };
    let context = Context::default()
        .with_message(Message::user("q1"))
        .with_message(assistant(
            &model,
            vec![
                thinking("mine", Some("sig-1"), None),
                thinking("[Reasoning redacted]", Some("blob"), Some(true)),
                thinking("unsigned", None, None),
                AssistantContent::text("a1"),
            ],
            StopReason::Stop,
        ))
        .with_message(Message::user("q2"))
        .with_message(assistant(
            &other,
            vec![
                thinking("theirs", Some("their-sig"), None),
                thinking("[Reasoning redacted]", Some("their-blob"), Some(true)),
                AssistantContent::text("a2"),
            ],
            StopReason::Stop,
        ))
        .with_message(Message::user("q3"));
    let body = request_json(&model, &context, &fast_options());
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "mine", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "blob"},
            {"type": "text", "text": "unsigned"},
            {"type": "text", "text": "a1"},
        ]})
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "a2"},
        ]}),
        "another model's thinking is dropped (pi 1.6), its redacted thinking too"
    );
}

#[test]
fn images_in_user_messages_and_models_without_images() {
    let mut model = model_at("http://unused/v1");
    let context = Context::default().with_message(user_blocks(vec![
        UserContent::text("what is this?"),
        UserContent::text("  "),
        UserContent::image("R0lGOD", "image/gif"),
    ]));
    let body = request_json(&model, &context, &fast_options());
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGOD"}},
        ]}])
    );
    model.input = vec![oxpi_ai::InputKind::Text];
    let body = request_json(&model, &context, &fast_options());
    assert_eq!(
        body["messages"][0]["content"][1],
        // pi 1.6's placeholder, from the shared transform (`image_fallback`).
        json!({"type": "text", "text": "(image omitted: model does not support images)"})
    );
}

#[test]
fn cache_markers_follow_cache_retention() {
    let model = model_at("http://unused/v1");
    let call = ToolCall::new("toolu_1", "read", object(json!({})));
    let context = Context::new("sys")
        .with_tool(Tool {
            name: "ls".into(),
            description: "List".into(),
            parameters: json!({"type": "object", "properties": {}}),
            constrained_sampling: None,
        })
        .with_tool(Tool {
            name: "read".into(),
            description: "Read".into(),
            parameters: json!({"type": "object", "properties": {}}),
            constrained_sampling: None,
        })
        .with_message(Message::user("go"))
        .with_message(assistant(
            &model,
            vec![AssistantContent::ToolCall(call.clone())],
            StopReason::ToolUse,
        ))
        .with_message(ToolResultMessage::text(&call, "done", false));
    let with = |retention| fast_options().with_cache_retention(retention);
    let off = request_json(&model, &context, &with(CacheRetention::None));
    assert!(!off.to_string().contains("cache_control"), "{off}");

    // Short (pi's default): system prompt, last tool, last block of the last user turn.
    let on = request_json(&model, &context, &with(CacheRetention::Short));
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        on["system"],
        json!([{"type": "text", "text": "sys", "cache_control": ephemeral}])
    );
    assert_eq!(on["tools"][0].get("cache_control"), None);
    assert_eq!(on["tools"][1]["cache_control"], ephemeral);
    assert_eq!(on["messages"][0]["content"][0].get("cache_control"), None);
    assert_eq!(
        on["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "is_error": false,
               "content": "done", "cache_control": ephemeral})
    );
    let context = context.with_message(Message::user("more"));
    let on = request_json(&model, &context, &with(CacheRetention::Short));
    assert_eq!(
        on["messages"][3]["content"],
        json!([{"type": "text", "text": "more", "cache_control": ephemeral}])
    );
    assert_eq!(on["messages"][2]["content"][0].get("cache_control"), None);

    // Long: a one-hour TTL (pi 1.6's default), unless the model says its endpoint takes none.
    let long = request_json(&model, &context, &with(CacheRetention::Long));
    let hour = json!({"type": "ephemeral", "ttl": "1h"});
    assert_eq!(long["system"][0]["cache_control"], hour);
    assert_eq!(long["tools"][1]["cache_control"], hour);
    assert_eq!(long["messages"][3]["content"][0]["cache_control"], hour);
    let mut proxy = model.clone();
    proxy.compat = Some(json!({"supportsLongCacheRetention": false}));
    let long = request_json(&proxy, &context, &with(CacheRetention::Long));
    assert_eq!(long["system"][0]["cache_control"], ephemeral);
}

#[test]
fn thinking_budget_replaces_temperature() {
    let model = model_at("http://unused/v1");
    let context = user_context("hi").with_tool(Tool {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        constrained_sampling: None,
    });
    let options = fast_options().with_temperature(0.2).with_max_tokens(4000);
    let body = request_json(&model, &context, &options);
    assert_eq!(
        (
            &body["max_tokens"],
            &body["temperature"],
            body.get("thinking")
        ),
        (
            &json!(4000),
            &json!(0.2f32),
            Some(&json!({"type": "disabled"}))
        )
    );
    assert_eq!(
        body["tools"],
        json!([{"name": "read", "description": "Read a file", "eager_input_streaming": true, "input_schema":
            {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}])
    );
    let thinking = options.with_reasoning(ReasoningLevel::Medium);
    let body = request_json(&model, &context, &thinking);
    assert_eq!(
        (
            &body["max_tokens"],
            body.get("temperature"),
            &body["thinking"]
        ),
        (
            &json!(8192),
            None,
            &json!({"type": "enabled", "budget_tokens": 7168, "display": "summarized"})
        )
    );
}
