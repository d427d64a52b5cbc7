//! Cross-provider handoff (`transform::transform_messages`) and the tool-call id rules.

use oxpi_ai::transform::{
    anthropic_tool_id, mistral_tool_id, openai_tool_id, transform_messages, MISSING_RESULT,
};
use oxpi_ai::{
    AssistantContent, AssistantMessage, Message, Model, StopReason, TextContent, ThinkingContent,
    ToolCall, ToolResultMessage, UserContent,
};
use serde_json::json;

fn target() -> Model {
    let mut model = Model::openai_compatible("http://x/v1", "target-model");
    model.provider = "target".into();
    model
}

fn assistant(
    provider: &str,
    model: &str,
    content: Vec<AssistantContent>,
    stop: StopReason,
) -> Message {
    let mut m = AssistantMessage::empty("some-api", provider, model);
    m.content = content;
    m.stop_reason = stop;
    m.timestamp = 0;
    Message::Assistant(m)
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        thought_signature: Some("sig".into()),
        ..ToolCall::new(
            id,
            "read",
            json!({"path": "a"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )
    }
}

fn result(id: &str, text: &str) -> Message {
    let mut r = ToolResultMessage::text(&call(id), text, false);
    r.timestamp = 0;
    Message::ToolResult(r)
}

fn user(text: &str) -> Message {
    let mut m = oxpi_ai::UserMessage::text(text);
    m.timestamp = 0;
    Message::User(m)
}

fn thinking(text: &str, redacted: bool) -> AssistantContent {
    AssistantContent::Thinking(ThinkingContent {
        thinking: text.into(),
        thinking_signature: Some("sig".into()),
        redacted: redacted.then_some(true),
    })
}

#[test]
fn another_models_thinking_and_signatures_are_dropped() {
    // pi 1.6: thinking from another model is dropped, not replayed as text.
    let text = AssistantContent::Text(TextContent {
        text: "answer".into(),
        text_signature: Some("tsig".into()),
    });
    let history = vec![
        user("q"),
        assistant(
            "other",
            "m",
            vec![
                thinking("let me think", false),
                thinking("", true),
                text,
                AssistantContent::ToolCall(call("c1")),
            ],
            StopReason::ToolUse,
        ),
        result("c1", "r"),
    ];
    let out = transform_messages(&history, &target(), str::to_string);
    let expected_call = ToolCall {
        thought_signature: None,
        ..call("c1")
    };
    assert_eq!(
        out,
        vec![
            user("q"),
            assistant(
                "other",
                "m",
                vec![
                    AssistantContent::text("answer"),
                    AssistantContent::ToolCall(expected_call),
                ],
                StopReason::ToolUse
            ),
            result("c1", "r"),
        ]
    );
}

#[test]
fn the_same_models_blocks_are_kept_for_replay() {
    let content = vec![
        thinking("hmm", false),
        thinking("", true),
        AssistantContent::ToolCall(call("c1")),
    ];
    let mut same = AssistantMessage::empty("openai-completions", "target", "target-model");
    same.content = content;
    same.stop_reason = StopReason::ToolUse;
    let history = vec![user("q"), Message::Assistant(same), result("c1", "r")];
    assert_eq!(
        transform_messages(&history, &target(), str::to_string),
        history
    );
}

#[test]
fn failed_turns_are_dropped_with_their_results_and_missing_results_are_filled() {
    let history = vec![
        user("q"),
        assistant(
            "p",
            "m",
            vec![AssistantContent::ToolCall(call("dead"))],
            StopReason::Aborted,
        ),
        result("dead", "late result"),
        assistant(
            "p",
            "m",
            vec![
                AssistantContent::ToolCall(call("a")),
                AssistantContent::ToolCall(call("b")),
            ],
            StopReason::ToolUse,
        ),
        result("b", "rb"),
        user("next"),
    ];
    let out = transform_messages(&history, &target(), str::to_string);
    let roles: Vec<&str> = out.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "toolResult", "user"]
    );
    let Message::ToolResult(missing) = &out[3] else {
        panic!("a result")
    };
    assert_eq!(
        (
            missing.tool_call_id.as_str(),
            missing.is_error,
            missing.content.clone()
        ),
        ("a", true, vec![UserContent::text(MISSING_RESULT)])
    );
}

#[test]
fn ids_are_rewritten_consistently_in_calls_and_results() {
    let long = "call_0123456789012345678901234567890123456789|item_abc/def";
    let history = vec![
        user("q"),
        assistant(
            "p",
            "m",
            vec![AssistantContent::ToolCall(call(long))],
            StopReason::ToolUse,
        ),
        result(long, "r"),
    ];
    for normalize in [anthropic_tool_id, openai_tool_id, mistral_tool_id] {
        let out = transform_messages(&history, &target(), normalize);
        let (Message::Assistant(a), Message::ToolResult(r)) = (&out[1], &out[2]) else {
            panic!("shape")
        };
        let id = &a
            .tool_calls()
            .next()
            .map(|c| c.id.clone())
            .unwrap_or_default();
        assert_eq!(id, &r.tool_call_id);
        assert_eq!(id, &normalize(long));
    }
}

#[test]
fn id_rules() {
    let long = "call_0123456789012345678901234567890123456789|item_abc/def";
    let anthropic = anthropic_tool_id(long);
    assert!(
        anthropic.len() <= 64
            && anthropic
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    );
    assert_eq!(anthropic_tool_id("toolu_01AbC-x"), "toolu_01AbC-x");
    assert_eq!(anthropic_tool_id(""), "call");
    assert_eq!(openai_tool_id(long).chars().count(), 40);
    assert_eq!(openai_tool_id("call_short"), "call_short");
    let mistral = mistral_tool_id(long);
    assert!(mistral.len() == 9 && mistral.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_eq!(mistral_tool_id(long), mistral, "stable");
    assert_ne!(mistral_tool_id("call_1"), mistral_tool_id("call_2"));
    assert_eq!(mistral_tool_id("abcDEF123"), "abcDEF123");
}

#[test]
fn a_system_message_between_a_call_and_its_result_moves_after_the_result() {
    let system = Message::System(oxpi_ai::SystemMessage::text("Note."));
    let messages = vec![
        user("go"),
        assistant(
            "target",
            "target-model",
            vec![AssistantContent::ToolCall(call("c1"))],
            StopReason::ToolUse,
        ),
        system.clone(),
        result("c1", "ok"),
        system.clone(),
        user("next"),
    ];
    let transformed = transform_messages(&messages, &target(), str::to_string);
    let roles: Vec<&str> = transformed.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "system",
            "system",
            "user"
        ]
    );
}
