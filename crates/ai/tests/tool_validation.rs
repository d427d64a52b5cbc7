//! Tool definitions from `schemars` types (`tool::tool_definition`) and argument validation (`tool::ArgumentValidator`): schema shape, every kind of bad argument, and the error text sent back to the model (pi's `Validation failed for tool "NAME":` format).

use oxpi_ai::tool::{parameters_schema, tool_definition, ArgumentValidator, ValidationError};
use oxpi_ai::Tool;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Arguments of a `read` tool.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    offset: Option<u64>,
    limit: Option<u32>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Fast,
    Thorough,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Edit {
    old_text: String,
    new_text: String,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditOptions {
    dry_run: bool,
    context_lines: Option<u8>,
}

/// Arguments of an `edit` tool: nested structs, an array of structs and an enum.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    edits: Vec<Edit>,
    mode: Mode,
    options: EditOptions,
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().expect("a JSON object").clone()
}

fn read_validator() -> ArgumentValidator {
    let tool = tool_definition::<ReadArgs>("read", "Read a file").expect("an object schema");
    ArgumentValidator::new(&tool).expect("the schema compiles")
}

fn edit_validator() -> ArgumentValidator {
    let tool = tool_definition::<EditArgs>("edit", "Edit a file").expect("an object schema");
    ArgumentValidator::new(&tool).expect("the schema compiles")
}

/// The problems of an error, sorted by field (the validator's order is not part of the contract).
fn problems(error: &ValidationError) -> Vec<(String, String)> {
    let mut problems = error.problems.clone();
    problems.sort();
    problems
}

fn p(field: &str, message: &str) -> (String, String) {
    (field.to_string(), message.to_string())
}

fn valid_edit() -> Value {
    json!({
        "path": "src/main.rs",
        "edits": [
            {"old_text": "a", "new_text": "b"},
            {"old_text": "c", "new_text": "d"}
        ],
        "mode": "fast",
        "options": {"dry_run": true}
    })
}

#[test]
fn schema_is_a_plain_object_schema() {
    let tool = tool_definition::<ReadArgs>("read", "Read a file").unwrap();
    assert_eq!(tool.name, "read");
    assert_eq!(tool.description, "Read a file");
    assert_eq!(
        tool.parameters,
        json!({
            "type": "object",
            // The type's doc comment becomes the schema's description.
            "description": "Arguments of a `read` tool.",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": ["integer", "null"], "format": "uint64", "minimum": 0},
                "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    );
    assert_eq!(tool.parameters, parameters_schema::<ReadArgs>());
}

/// Every `$ref` in `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if key == "$ref" {
                    out.push(v.as_str().expect("a $ref is a string").to_string());
                }
                refs(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// Every object key anywhere in `value`.
fn keys(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                out.push(key.clone());
                keys(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

#[test]
fn nested_definitions_are_kept_at_the_root_and_every_ref_resolves() {
    let tool = tool_definition::<EditArgs>("edit", "Edit a file").unwrap();
    let schema = &tool.parameters;
    assert_eq!(schema["type"], json!("object"));
    let mut root_keys: Vec<&str> = schema
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    root_keys.sort_unstable();
    assert_eq!(
        root_keys,
        vec![
            "$defs",
            "additionalProperties",
            "description",
            "properties",
            "required",
            "type"
        ]
    );
    let mut found = Vec::new();
    refs(schema, &mut found);
    found.sort();
    found.dedup();
    assert_eq!(
        found,
        vec!["#/$defs/Edit", "#/$defs/EditOptions", "#/$defs/Mode"]
    );
    for reference in &found {
        let name = reference.strip_prefix("#/$defs/").unwrap();
        assert!(
            schema["$defs"][name].is_object(),
            "{reference} resolves in $defs"
        );
    }
    let mut all_keys = Vec::new();
    keys(schema, &mut all_keys);
    assert!(
        !all_keys.iter().any(|k| k == "$schema"),
        "no $schema anywhere"
    );
    assert_eq!(schema.get("title"), None);
    assert_eq!(
        schema["$defs"]["Mode"],
        json!({"type": "string", "enum": ["fast", "thorough"]})
    );
    // The compiled validator follows the refs.
    let validator = edit_validator();
    assert_eq!(
        validator.validate(&args(valid_edit())),
        Ok(args(valid_edit()))
    );
}

#[test]
fn a_non_object_type_is_not_a_tool_schema() {
    let error = tool_definition::<Vec<String>>("list", "A list").unwrap_err();
    assert_eq!(error.tool, "list");
    assert!(
        error
            .reason
            .starts_with("the root must be an object schema, got "),
        "{}",
        error.reason
    );
    assert!(tool_definition::<Mode>("mode", "An enum").is_err());
}

#[test]
fn a_schema_that_does_not_compile_is_an_error() {
    let tool = Tool {
        name: "broken".into(),
        description: "Bad schema".into(),
        parameters: json!({"type": "object", "properties": {"a": {"type": 17}}}),
        constrained_sampling: None,
    };
    let error = ArgumentValidator::new(&tool).unwrap_err();
    assert_eq!(error.tool, "broken");
    assert!(error
        .to_string()
        .starts_with("invalid schema for tool \"broken\": "));
}

#[test]
fn valid_arguments_parse_into_the_type() {
    let validator = read_validator();
    assert_eq!(
        validator.parse::<ReadArgs>(&args(json!({"path": "a.txt", "offset": 3, "limit": 10}))),
        Ok(ReadArgs {
            path: "a.txt".into(),
            offset: Some(3),
            limit: Some(10),
        })
    );
}

#[test]
fn optional_fields_may_be_absent_or_null() {
    let validator = read_validator();
    let expected = ReadArgs {
        path: "a.txt".into(),
        offset: None,
        limit: None,
    };
    assert_eq!(
        validator.parse::<ReadArgs>(&args(json!({"path": "a.txt"}))),
        Ok(expected)
    );
    assert_eq!(
        validator.parse::<ReadArgs>(&args(
            json!({"path": "a.txt", "offset": null, "limit": null})
        )),
        Ok(ReadArgs {
            path: "a.txt".into(),
            offset: None,
            limit: None,
        })
    );
    let validator = edit_validator();
    let mut edit = valid_edit();
    edit["options"]["context_lines"] = Value::Null;
    assert_eq!(validator.validate(&args(edit.clone())), Ok(args(edit)));
}

#[test]
fn missing_required_field() {
    let error = read_validator()
        .validate(&args(json!({"offset": 1})))
        .unwrap_err();
    assert_eq!(error.tool, "read");
    assert_eq!(error.problems.len(), 1);
    assert_eq!(error.problems[0].1, "must have required properties path");
}

#[test]
fn missing_required_field_is_named_like_pi() {
    let error = read_validator()
        .validate(&args(json!({"offset": 1})))
        .unwrap_err();
    assert_eq!(error.problems[0].0, "path");
}

#[test]
fn wrong_type() {
    let error = read_validator()
        .validate(&args(json!({"path": [3], "limit": "ten"})))
        .unwrap_err();
    assert_eq!(
        problems(&error),
        vec![
            p("limit", "must be either integer or null"),
            p("path", "must be string"),
        ]
    );
}

#[test]
fn out_of_range_integer() {
    let error = read_validator()
        .validate(&args(json!({"path": "a", "offset": -1})))
        .unwrap_err();
    assert_eq!(problems(&error), vec![p("offset", "must be >= 0")]);
}

#[test]
fn extra_field_is_rejected_with_deny_unknown_fields() {
    let error = read_validator()
        .validate(&args(json!({"path": "a", "recursive": true})))
        .unwrap_err();
    assert_eq!(
        problems(&error),
        vec![
            p("recursive", "schema is false"),
            p("root", "must not have additional properties")
        ]
    );
}

#[test]
fn non_object_arguments_fail_on_the_root() {
    let validator = read_validator();
    for (value, message) in [
        (json!(["a.txt"]), "must be object"),
        (json!("a.txt"), "must be object"),
        (Value::Null, "must be object"),
        (json!(7), "must be object"),
    ] {
        let error = validator.validate_value(&value).unwrap_err();
        assert_eq!(problems(&error), vec![p("root", message)], "{value}");
    }
    assert_eq!(validator.validate_value(&json!({"path": "a"})), Ok(()));
}

#[test]
fn errors_inside_nested_objects_and_arrays_name_the_path() {
    let mut bad = valid_edit();
    bad["edits"][1]["new_text"] = json!([5]);
    bad["edits"][0].as_object_mut().unwrap().remove("old_text");
    bad["options"]["dry_run"] = json!("yes");
    let error = edit_validator().validate(&args(bad)).unwrap_err();
    assert_eq!(
        problems(&error),
        vec![
            p("edits.0.old_text", "must have required properties old_text"),
            p("edits.1.new_text", "must be string"),
            p("options.dry_run", "must be boolean"),
        ]
    );
}

#[test]
fn array_of_the_wrong_type() {
    let mut bad = valid_edit();
    bad["edits"] = json!({"old_text": "a", "new_text": "b"});
    let error = edit_validator().validate(&args(bad)).unwrap_err();
    assert_eq!(problems(&error), vec![p("edits", "must be array")]);
}

#[test]
fn enum_value_outside_the_variants() {
    let mut bad = valid_edit();
    bad["mode"] = json!("slow");
    let error = edit_validator().validate(&args(bad)).unwrap_err();
    assert_eq!(
        problems(&error),
        vec![p("mode", "must be equal to one of the allowed values")]
    );
}

#[test]
fn every_bad_field_is_named_in_one_error() {
    let bad = json!({
        "path": ["not", "a", "string"],
        "edits": "none",
        "mode": 1,
        "options": {"dry_run": true, "context_lines": 300, "color": "red"},
        "extra": 0
    });
    let error = edit_validator().validate(&args(bad)).unwrap_err();
    let mut fields: Vec<String> = problems(&error).into_iter().map(|(f, _)| f).collect();
    // `mode: 1` becomes "1", which is no variant; each extra property is named too.
    fields.dedup();
    assert_eq!(
        fields,
        vec![
            "edits",
            "extra",
            "mode",
            "options",
            "options.color",
            "options.context_lines",
            "path",
            "root"
        ]
    );
}

#[test]
fn display_text_follows_pis_format() {
    let received = json!({"path": [3], "limit": "ten"});
    let error = read_validator()
        .validate(&args(received.clone()))
        .unwrap_err();
    let text = error.to_string();
    assert!(text.starts_with("Validation failed for tool \"read\":\n  - "));
    let lines: Vec<String> = error
        .problems
        .iter()
        .map(|(field, message)| format!("  - {field}: {message}"))
        .collect();
    assert_eq!(
        text,
        format!(
            "Validation failed for tool \"read\":\n{}\n\nReceived arguments:\n{}",
            lines.join("\n"),
            serde_json::to_string_pretty(&received).unwrap()
        )
    );
    let mut sorted = lines;
    sorted.sort();
    assert_eq!(
        sorted,
        vec![
            "  - limit: must be either integer or null",
            "  - path: must be string",
        ]
    );
    assert!(text
        .ends_with("Received arguments:\n{\n  \"limit\": \"ten\",\n  \"path\": [\n    3\n  ]\n}"));
}

#[test]
fn parse_reports_what_the_schema_cannot_express_as_a_deserialization_error() {
    // schemars describes u32 as `format: uint32` with no maximum, so the value passes the
    // schema; deserializing into the type then fails, and that is reported on the root.
    let received = json!({"path": "a", "limit": 5_000_000_000_u64});
    let validator = read_validator();
    assert_eq!(
        validator.validate(&args(received.clone())),
        Ok(args(received.clone()))
    );
    let error = validator
        .parse::<ReadArgs>(&args(received.clone()))
        .unwrap_err();
    assert_eq!(
        error,
        ValidationError {
            tool: "read".into(),
            problems: vec![p(
                "root",
                "invalid value: integer `5000000000`, expected u32"
            )],
            received: serde_json::to_string_pretty(&received).unwrap(),
        }
    );
}

#[test]
fn nested_paths_are_spelled_like_pi() {
    let mut bad = valid_edit();
    bad["edits"][1]["new_text"] = json!([5]);
    let error = edit_validator().validate(&args(bad)).unwrap_err();
    assert_eq!(error.problems[0].0, "edits.1.new_text");
}

#[test]
fn scalar_strings_are_coerced_like_pi() {
    assert_eq!(
        read_validator().parse::<ReadArgs>(&args(json!({"path": "a", "limit": "10"}))),
        Ok(ReadArgs {
            path: "a".into(),
            offset: None,
            limit: Some(10),
        })
    );
}

/// A schema with `levels` objects nested in one another under `properties.a`.
fn nested_schema(levels: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..levels {
        schema = json!({"type": "object", "properties": {"a": schema}});
    }
    schema
}

#[test]
fn a_schema_nested_too_deep_is_refused_not_a_stack_overflow() {
    let tool = Tool {
        name: "deep".into(),
        description: "Deep".into(),
        parameters: nested_schema(50),
        constrained_sampling: None,
    };
    let error = ArgumentValidator::new(&tool).unwrap_err();
    assert_eq!(error.tool, "deep");
    assert!(
        error.reason.contains("nested deeper than"),
        "{}",
        error.reason
    );
    // The dialect checks refuse it the same way before they recurse into it.
    for api in [
        "google-generative-ai",
        "anthropic-messages",
        "openai-completions",
    ] {
        assert_eq!(
            oxpi_ai::schema::check_for_api(api, &tool),
            Err(error.clone())
        );
    }
    // A schema of ordinary depth still compiles and validates.
    let tool = Tool {
        parameters: nested_schema(8),
        ..tool
    };
    let validator = ArgumentValidator::new(&tool).unwrap();
    let mut instance = json!("x");
    for _ in 0..8 {
        instance = json!({ "a": instance });
    }
    validator.validate(instance.as_object().unwrap()).unwrap();
}

/// A recursive schema (`a` refers to the root) takes arguments of any depth; past the bound the
/// validator answers with an error instead of recursing until the stack overflows.
#[test]
fn arguments_nested_too_deep_are_an_error_not_a_stack_overflow() {
    let tool = Tool {
        name: "tree".into(),
        description: "Tree".into(),
        parameters: json!({"type": "object", "properties": {"a": {"$ref": "#"}}}),
        constrained_sampling: None,
    };
    let validator = ArgumentValidator::new(&tool).unwrap();
    let mut instance = json!({});
    for _ in 0..120 {
        instance = json!({ "a": instance });
    }
    // As the model's JSON would arrive: serde_json takes up to 128 levels.
    let parsed: Map<String, Value> = serde_json::from_str(&instance.to_string()).unwrap();
    let error = validator.validate(&parsed).unwrap_err();
    assert_eq!(
        error.problems,
        vec![p("root", "must not be nested deeper than 32 levels")]
    );
    let mut shallow = json!({});
    for _ in 0..10 {
        shallow = json!({ "a": shallow });
    }
    validator.validate(shallow.as_object().unwrap()).unwrap();
}
