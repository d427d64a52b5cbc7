//! The OpenAI strict schema dialect: golden outputs for `schemars`-derived types, the schemas
//! it must refuse, and that what a strict-mode model sends still passes the tool's own schema.

use std::collections::HashMap;

use oxpi_ai::schema::openai_strict::{
    remove_added_nulls, strict_tool_parameters, to_openai_strict, StrictSchemaError,
};
use oxpi_ai::tool::{parameters_schema, tool_definition, ArgumentValidator};
use oxpi_ai::Tool;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

fn strict<T: JsonSchema>() -> Value {
    to_openai_strict(&parameters_schema::<T>()).expect("test data")
}

fn refused<T: JsonSchema>() -> StrictSchemaError {
    to_openai_strict(&parameters_schema::<T>()).expect_err("refused")
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
struct Optionals {
    /// Path of the file.
    path: String,
    limit: Option<u32>,
    /// A note.
    note: Option<String>,
    #[serde(default)]
    verbose: bool,
}

#[test]
fn optional_fields_become_required_and_nullable() {
    assert_eq!(
        strict::<Optionals>(),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file."},
                "limit": {"type": ["integer", "null"], "minimum": 0},
                "note": {"type": ["string", "null"], "description": "A note."},
                "verbose": {"type": ["boolean", "null"]},
            },
            "required": ["limit", "note", "path", "verbose"],
            "additionalProperties": false,
        })
    );
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
struct Inner {
    /// The name.
    name: String,
    count: u32,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
struct Nested {
    /// Required inner.
    inner: Inner,
    /// Optional inner.
    maybe: Option<Inner>,
    list: Vec<Inner>,
}

fn strict_inner() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The name."},
            "count": {"type": "integer", "minimum": 0},
        },
        "required": ["count", "name"],
        "additionalProperties": false,
    })
}

#[test]
fn nested_structs_vec_and_option_of_a_struct() {
    assert_eq!(
        strict::<Nested>(),
        json!({
            "$defs": {"Inner": strict_inner()},
            "type": "object",
            "properties": {
                // No keyword may stand beside `$ref`: the description goes.
                "inner": {"$ref": "#/$defs/Inner"},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}], "description": "Optional inner."},
                "list": {"type": "array", "items": {"$ref": "#/$defs/Inner"}},
            },
            "required": ["inner", "list", "maybe"],
            "additionalProperties": false,
        })
    );
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Fast,
    Slow,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
enum Shape {
    Circle { r: f64 },
    Square(f64),
    Empty,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
enum Tagged {
    A { x: i32 },
    B,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
struct Enums {
    mode: Mode,
    opt_mode: Option<Mode>,
    shape: Shape,
    tagged: Tagged,
}

#[test]
fn enums_unit_externally_and_internally_tagged() {
    assert_eq!(
        strict::<Enums>(),
        json!({
            "$defs": {
                "Mode": {"type": "string", "enum": ["fast", "slow"]},
                "Shape": {"anyOf": [
                    {"type": "string", "enum": ["Empty"]},
                    {
                        "type": "object",
                        "properties": {"Circle": {
                            "type": "object",
                            "properties": {"r": {"type": "number"}},
                            "required": ["r"],
                            "additionalProperties": false,
                        }},
                        "required": ["Circle"],
                        "additionalProperties": false,
                    },
                    {
                        "type": "object",
                        "properties": {"Square": {"type": "number"}},
                        "required": ["Square"],
                        "additionalProperties": false,
                    },
                ]},
                "Tagged": {"anyOf": [
                    {
                        "type": "object",
                        "properties": {"kind": {"type": "string", "enum": ["A"]}, "x": {"type": "integer"}},
                        "required": ["kind", "x"],
                        "additionalProperties": false,
                    },
                    {
                        "type": "object",
                        "properties": {"kind": {"type": "string", "enum": ["B"]}},
                        "required": ["kind"],
                        "additionalProperties": false,
                    },
                ]},
            },
            "type": "object",
            "properties": {
                "mode": {"$ref": "#/$defs/Mode"},
                "opt_mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]},
                "shape": {"$ref": "#/$defs/Shape"},
                "tagged": {"$ref": "#/$defs/Tagged"},
            },
            "required": ["mode", "opt_mode", "shape", "tagged"],
            "additionalProperties": false,
        })
    );
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
struct Constrained {
    #[schemars(email, length(max = 40))]
    mail: String,
    #[schemars(range(min = 1, max = 5))]
    level: u8,
    #[schemars(length(min = 1, max = 3))]
    tags: Vec<String>,
    #[serde(default = "default_unit")]
    #[schemars(extend("examples" = ["cm"]))]
    unit: String,
}

fn default_unit() -> String {
    "cm".into()
}

#[test]
fn supported_constraints_stay_others_go() {
    assert_eq!(
        strict::<Constrained>(),
        json!({
            "type": "object",
            "properties": {
                // `email` is a format strict mode knows; maxLength is not supported.
                "mail": {"type": "string", "format": "email"},
                // `uint8` is no format of strict mode; the bounds stay.
                "level": {"type": "integer", "minimum": 1, "maximum": 5},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
                // default and examples are annotations strict mode rejects.
                "unit": {"type": ["string", "null"]},
            },
            "required": ["level", "mail", "tags", "unit"],
            "additionalProperties": false,
        })
    );
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
struct Tree {
    label: String,
    children: Vec<Tree>,
    next: Option<Box<Tree>>,
}

#[test]
fn recursive_types_keep_their_root_refs() {
    assert_eq!(
        strict::<Tree>(),
        json!({
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#"}},
                "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
            },
            "required": ["children", "label", "next"],
            "additionalProperties": false,
        })
    );
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
struct WithMap {
    counts: HashMap<String, u32>,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
struct WithAny {
    payload: serde_json::Value,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
struct WithTuple {
    pair: (u32, String),
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
struct WithNestedMap {
    inner: Vec<WithMap>,
}

#[test]
fn maps_any_values_and_tuples_are_reported() {
    assert_eq!(
        refused::<WithMap>(),
        StrictSchemaError {
            path: "/properties/counts".into(),
            reason: "maps (additionalProperties other than false) cannot be expressed in strict mode; use a struct, or a list of key/value pairs".into(),
        }
    );
    assert_eq!(
        refused::<WithNestedMap>().path,
        "/$defs/WithMap/properties/counts"
    );
    assert_eq!(
        refused::<WithAny>(),
        StrictSchemaError {
            path: "/properties/payload".into(),
            reason: "a value of any type cannot be expressed (give it a type)".into(),
        }
    );
    assert_eq!(
        refused::<WithTuple>(),
        StrictSchemaError {
            path: "/properties/pair".into(),
            reason: "tuples (prefixItems) cannot be expressed in strict mode".into(),
        }
    );
}

#[test]
fn hand_written_schemas_it_cannot_express_are_reported() {
    let cases = [
        (
            json!({"type": "string"}),
            "/",
            "the root must be an object schema (\"type\": \"object\")",
        ),
        (
            json!({"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"maxLength": 3}]}}}),
            "/properties/a",
            "`allOf` of several schemas cannot be expressed in strict mode",
        ),
        (
            json!({"type": "object", "properties": {"a": {"not": {"type": "string"}}}}),
            "/properties/a",
            "`not` cannot be expressed in strict mode",
        ),
        (
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}),
            "/properties/a",
            "only local $refs (\"#/...\") can be sent, got \"https://example.com/s.json\"",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "object", "patternProperties": {"^x": {"type": "string"}}}}}),
            "/properties/a",
            "maps (patternProperties) cannot be expressed in strict mode",
        ),
        (
            json!({"type": "object", "properties": {"a/b": {"type": "object"}}}),
            "/properties/a~1b",
            "a free-form object (no properties) cannot be expressed in strict mode",
        ),
        (
            json!({"type": "object", "properties": {"list": {"type": "array"}}}),
            "/properties/list",
            "an array of values of any type (no items) cannot be expressed",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "enum": (0..1001).map(|i| i.to_string()).collect::<Vec<_>>()}}}),
            "/",
            "1001 enum values in all; strict mode allows at most 1000",
        ),
    ];
    for (schema, path, reason) in cases {
        assert_eq!(
            to_openai_strict(&schema),
            Err(StrictSchemaError {
                path: path.into(),
                reason: reason.into()
            }),
            "{schema}"
        );
    }
}

#[test]
fn hand_written_rewrites() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            // A one-entry allOf is merged; the parent's keywords win.
            "merged": {"allOf": [{"type": "string", "description": "inner"}], "description": "outer"},
            "fixed": {"const": 3, "type": "integer"},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "choice": {"type": "string", "enum": ["a", "b"]},
            "loose": {"type": "object", "properties": {}, "additionalProperties": false, "unevaluatedProperties": false},
        },
        "required": ["merged", "fixed", "either"],
    });
    let original = schema.clone();
    assert_eq!(
        to_openai_strict(&schema).unwrap(),
        json!({
            "type": "object",
            "properties": {
                "merged": {"type": "string", "description": "outer"},
                "fixed": {"type": "integer", "enum": [3]},
                "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "choice": {"type": ["string", "null"], "enum": ["a", "b", null]},
                "loose": {"type": ["object", "null"], "properties": {}, "required": [], "additionalProperties": false},
            },
            "required": ["choice", "either", "fixed", "loose", "merged"],
            "additionalProperties": false,
        })
    );
    assert_eq!(schema, original, "the input is not changed");
    // A parameterless tool.
    assert_eq!(
        to_openai_strict(&json!({"type": "object"})).unwrap(),
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
    );
}

#[test]
fn the_rewrite_is_idempotent() {
    for schema in [
        parameters_schema::<Optionals>(),
        parameters_schema::<Nested>(),
        parameters_schema::<Enums>(),
        parameters_schema::<Constrained>(),
        parameters_schema::<Tree>(),
    ] {
        let once = to_openai_strict(&schema).unwrap();
        assert_eq!(to_openai_strict(&once).unwrap(), once);
    }
}

#[test]
fn the_tool_error_names_the_tool() {
    let tool = tool_definition::<WithMap>("count", "Count things").unwrap();
    let error = strict_tool_parameters(&tool).unwrap_err();
    assert_eq!(error.tool, "count");
    assert_eq!(
        error.to_string(),
        "invalid schema for tool \"count\": cannot be sent in OpenAI strict mode: maps (additionalProperties other than false) cannot be expressed in strict mode; use a struct, or a list of key/value pairs (at /properties/counts)"
    );
}

/// A validator for any schema (the strict form of a tool's).
fn schema_validator(schema: &Value) -> ArgumentValidator {
    ArgumentValidator::new(&Tool {
        name: "strict".to_string(),
        description: String::new(),
        parameters: schema.clone(),
        constrained_sampling: None,
    })
    .expect("the strict schema compiles")
}

/// What a strict-mode model sends (every property, `null` for absent ones) passes the strict
/// schema and, once the forced `null`s are removed, the tool's own schema and type.
#[test]
fn strict_arguments_pass_the_original_schema_after_removing_forced_nulls() {
    let tool = tool_definition::<Nested>("nest", "Nest").unwrap();
    let strict_schema = strict_tool_parameters(&tool).unwrap();
    let strict_validator = schema_validator(&strict_schema);
    let mut sent = json!({
        "inner": {"name": "a", "count": 1},
        "maybe": null,
        "list": [{"name": "b", "count": 2}],
    });
    assert_eq!(strict_validator.validate_value(&sent), Ok(()));
    remove_added_nulls(&mut sent, &tool.parameters);
    // `maybe` is an Option: null is its own value, so it stays.
    assert_eq!(sent["maybe"], Value::Null);
    let args = sent.as_object().unwrap().clone();
    let parsed: Nested = ArgumentValidator::new(&tool).unwrap().parse(&args).unwrap();
    assert!(parsed.maybe.is_none());

    let tool = tool_definition::<Constrained>("c", "C").unwrap();
    let strict_schema = strict_tool_parameters(&tool).unwrap();
    let mut sent = json!({"mail": "a@b.c", "level": 2, "tags": ["x"], "unit": null});
    assert_eq!(
        schema_validator(&strict_schema).validate_value(&sent),
        Ok(())
    );
    let validator = ArgumentValidator::new(&tool).unwrap();
    // Left in, the forced null would become "" (pi's null-to-string rule), not the default "cm".
    assert_eq!(
        validator.validate_value(&sent).map_err(|e| e.problems),
        Err(vec![("unit".to_string(), "must be string".to_string())])
    );
    assert_eq!(
        validator.validate(sent.as_object().unwrap()).unwrap()["unit"],
        ""
    );
    remove_added_nulls(&mut sent, &tool.parameters);
    assert_eq!(sent, json!({"mail": "a@b.c", "level": 2, "tags": ["x"]}));
    let parsed: Constrained = validator.parse(sent.as_object().unwrap()).unwrap();
    assert_eq!(parsed.unit, "cm");
}

#[test]
fn forced_nulls_are_removed_inside_refs_and_arrays() {
    let original = json!({
        "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}, "tag": {"type": "string"}}, "required": ["n"]}},
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "required": ["items"],
    });
    let mut sent = json!({"items": [{"n": 1, "tag": null}, {"n": 2, "tag": "x"}]});
    remove_added_nulls(&mut sent, &original);
    assert_eq!(sent, json!({"items": [{"n": 1}, {"n": 2, "tag": "x"}]}));
}
