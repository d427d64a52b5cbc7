//! Tests of the Chat Completions wire types (`super`).

use super::*;
use serde_json::json;

#[test]
fn strings_without_escapes_are_borrowed_and_escaped_ones_owned() {
    let data = r#"{"id":"c1","choices":[{"delta":{"content":"a\nb","tool_calls":[{"index":0,"function":{"arguments":"{\"p\""}},{"index":1,"function":{"arguments":"xy"}}]}}]}"#;
    let chunk: ChatChunk<'_> = serde_json::from_str(data).unwrap();
    assert!(matches!(chunk.id, Some(Text(Cow::Borrowed("c1")))));
    let delta = chunk.choice.unwrap().delta;
    assert_eq!(delta.content, Some(Text(Cow::Owned("a\nb".into()))));
    let calls = delta.tool_calls.unwrap();
    let arguments: Vec<_> = calls
        .into_iter()
        .map(|c| c.function.unwrap().arguments.unwrap())
        .collect();
    assert_eq!(
        arguments,
        [
            ArgumentsDelta::Text(Cow::Owned("{\"p\"".into())),
            ArgumentsDelta::Text(Cow::Borrowed("xy")),
        ]
    );
    assert!(matches!(
        &arguments[1],
        ArgumentsDelta::Text(Cow::Borrowed(_))
    ));
}

#[test]
fn only_the_first_choice_is_kept_and_null_or_missing_choices_are_none() {
    let data = json!({"choices": [
        {"delta": {"content": "first"}, "finish_reason": "stop"},
        {"delta": {"content": "second", "tool_calls": [{"index": 0}]}, "extra": [1, {"a": null}]}
    ]})
    .to_string();
    let chunk: ChatChunk<'_> = serde_json::from_str(&data).unwrap();
    let choice = chunk.choice.unwrap();
    assert_eq!(choice.delta.content.unwrap().as_str(), "first");
    assert_eq!(choice.finish_reason, Some(FinishReason::Stop));
    for data in [r#"{"choices":null}"#, r#"{"choices":[]}"#, r#"{}"#] {
        let chunk: ChatChunk<'_> = serde_json::from_str(data).unwrap();
        assert_eq!(chunk.choice, None, "{data}");
    }
}

#[test]
fn arguments_sent_as_json_values_are_kept_as_values() {
    for (arguments, expected) in [
        (json!({"path": "a"}), json!({"path": "a"})),
        (json!([1, 2]), json!([1, 2])),
        (json!(7), json!(7)),
        (json!(-7), json!(-7)),
        (json!(1.5), json!(1.5)),
        (json!(true), json!(true)),
    ] {
        let data = json!({"choices": [{"delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": arguments}}
        ]}}]})
        .to_string();
        let chunk: ChatChunk<'_> = serde_json::from_str(&data).unwrap();
        let calls = chunk.choice.unwrap().delta.tool_calls.unwrap();
        let got = calls.as_slice()[0]
            .function
            .as_ref()
            .unwrap()
            .arguments
            .clone();
        assert_eq!(got, Some(ArgumentsDelta::Json(expected)));
    }
}

#[test]
fn a_string_field_holding_another_type_is_an_error_naming_it() {
    let err = serde_json::from_str::<ChatChunk<'_>>(r#"{"id": 5}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid type: integer `5`, expected a string at line 1 column 8"
    );
}

#[test]
fn one_tool_call_fragment_is_kept_inline_and_any_number_reads_in_order() {
    let call = |n: u64| ToolCallDelta {
        index: Some(n),
        ..ToolCallDelta::default()
    };
    for (json, expected) in [
        ("[]", ToolCallDeltas::Many(vec![])),
        (r#"[{"index":0}]"#, ToolCallDeltas::One(call(0))),
        (
            r#"[{"index":0},{"index":1}]"#,
            ToolCallDeltas::Many(vec![call(0), call(1)]),
        ),
        (
            r#"[{"index":0},{"index":1},{"index":2}]"#,
            ToolCallDeltas::Many(vec![call(0), call(1), call(2)]),
        ),
    ] {
        let got: ToolCallDeltas<'_> = serde_json::from_str(json).unwrap();
        assert_eq!(got, expected, "{json}");
        assert_eq!(ToolCallDeltas::from(got.as_slice().to_vec()), expected);
        let order: Vec<_> = got.into_iter().map(|c| c.index).collect();
        let wanted: Vec<_> = expected.as_slice().iter().map(|c| c.index).collect();
        assert_eq!(order, wanted);
    }
    let err = serde_json::from_str::<ToolCallDeltas<'_>>(r#"{"index":0}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid type: map, expected a sequence at line 1 column 0"
    );
}
