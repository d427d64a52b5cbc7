//! Golden tests of the Gemini schema dialect (`schema::gemini`) on `schemars`-derived types:
//! what the legacy `parameters` field gets for common Rust shapes, and the errors for shapes it
//! cannot express.
#![allow(dead_code)] // the types exist for their schemas

use std::collections::HashMap;

use oxpi_ai::schema::gemini::to_gemini_parameters;
use oxpi_ai::tool::parameters_schema;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// Where to send the report.
#[derive(Debug, Deserialize, JsonSchema)]
struct Address {
    /// Street and number.
    street: String,
    /// Postal code.
    zip: Option<String>,
}

/// Output format.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Format {
    Json,
    Text,
}

/// How hard to try.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Effort {
    /// Quick.
    Low,
    /// Thorough.
    High,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Shape {
    /// A circle.
    Circle { radius: f64 },
    /// A square.
    Square { side: f64 },
}

/// Arguments of a report tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Report {
    /// Title of the report.
    title: String,
    /// Number of pages.
    pages: u32,
    /// Offset in bytes.
    offset: i64,
    /// Scale factor.
    scale: f64,
    /// Draft mode.
    #[serde(default)]
    draft: bool,
    /// Tags.
    tags: Vec<String>,
    /// Delivery address.
    address: Address,
    /// Optional second address.
    backup: Option<Address>,
    format: Format,
    /// Effort, if any.
    effort: Option<Effort>,
    shape: Shape,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Node {
    name: String,
    children: Vec<Node>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Tree {
    root: Node,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct WithMap {
    labels: HashMap<String, String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct WithAny {
    payload: Value,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct WithTuple {
    point: (i32, i32),
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Empty {}

fn gemini<T: JsonSchema>() -> Result<Value, String> {
    to_gemini_parameters(&parameters_schema::<T>())
}

#[test]
fn a_rich_struct_becomes_the_openapi_subset() {
    let address = json!({
        "type": "object",
        "properties": {
            "street": {"type": "string", "description": "Street and number."},
            "zip": {"type": "string", "nullable": true, "description": "Postal code."},
        },
        "required": ["street"],
    });
    let with = |mut schema: Value, extra: Value| {
        for (k, v) in extra.as_object().unwrap() {
            schema[k] = v.clone();
        }
        schema
    };
    let shape = |kind: &str, field: &str, doc: &str| {
        json!({
            "type": "object",
            "description": doc,
            "properties": {
                "kind": {"type": "string", "enum": [kind]},
                field: {"type": "number", "format": "double"},
            },
            "required": ["kind", field],
        })
    };
    assert_eq!(
        gemini::<Report>(),
        Ok(json!({
            "type": "object",
            "description": "Arguments of a report tool.",
            "properties": {
                "title": {"type": "string", "description": "Title of the report."},
                // uint32 is not a Gemini format; the bound stays.
                "pages": {"type": "integer", "minimum": 0, "description": "Number of pages."},
                "offset": {"type": "integer", "format": "int64", "description": "Offset in bytes."},
                "scale": {"type": "number", "format": "double", "description": "Scale factor."},
                // `default` is dropped.
                "draft": {"type": "boolean", "description": "Draft mode."},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."},
                // $ref inlined; the field's description wins over the type's.
                "address": with(address.clone(), json!({"description": "Delivery address."})),
                // anyOf [$ref, null] → the object, nullable.
                "backup": with(address, json!({"description": "Optional second address.", "nullable": true})),
                "format": {"type": "string", "enum": ["json", "text"], "description": "Output format."},
                // oneOf of documented string constants → one string enum.
                "effort": {"type": "string", "enum": ["low", "high"], "nullable": true, "description": "Effort, if any."},
                // Internally tagged enum: anyOf of objects, the tag a one-value enum.
                "shape": {"anyOf": [
                    shape("circle", "radius", "A circle."),
                    shape("square", "side", "A square."),
                ]},
            },
            "required": ["title", "pages", "offset", "scale", "tags", "address", "format", "shape"],
        }))
    );
}

#[test]
fn an_argument_free_tool_is_an_empty_object() {
    assert_eq!(
        gemini::<Empty>(),
        Ok(json!({"type": "object", "properties": {}}))
    );
}

#[test]
fn shapes_gemini_cannot_express_are_errors_naming_the_field() {
    assert_eq!(
        gemini::<Tree>(),
        Err("parameters/root/children/items: recursive schema (Node → Node), which cannot be expressed".into())
    );
    assert_eq!(
        gemini::<WithMap>(),
        Err("parameters/labels: an object without declared properties (a map or free-form object) cannot be expressed".into())
    );
    assert_eq!(
        gemini::<WithAny>(),
        Err(
            "parameters/payload: accepts any value, which cannot be expressed (give it a type)"
                .into()
        )
    );
    assert_eq!(
        gemini::<WithTuple>(),
        Err("parameters/point: tuples (prefixItems) cannot be expressed".into())
    );
}

#[test]
fn hand_written_schemas_cover_the_remaining_rules() {
    let cases = [
        // const → one-value enum; null in an enum → nullable.
        (
            json!({"type": "object", "properties": {
                "v": {"const": "fixed"},
                "e": {"enum": ["a", null]},
            }}),
            Ok(json!({"type": "object", "properties": {
                "v": {"type": "string", "enum": ["fixed"]},
                "e": {"type": "string", "enum": ["a"], "nullable": true},
            }})),
        ),
        // Unknown keywords and formats dropped; allOf of objects merged.
        (
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T",
                   "type": "object", "additionalProperties": false,
                   "properties": {
                       "u": {"type": "string", "format": "uri", "examples": ["x"], "minLength": 1},
                       "when": {"type": "string", "format": "date-time"},
                       "both": {"allOf": [
                           {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                           {"type": "object", "properties": {"b": {"type": "boolean"}}},
                       ]},
                   }}),
            Ok(json!({"type": "object", "properties": {
                "u": {"type": "string", "minLength": 1},
                "when": {"type": "string", "format": "date-time"},
                "both": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}, "required": ["a"]},
            }})),
        ),
        // A union of different types stays an anyOf.
        (
            json!({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}}}),
            Ok(json!({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": true}}})),
        ),
        (
            json!({"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}}),
            Err("parameters/n: enum values must be strings for Gemini, got 1".to_string()),
        ),
        (
            json!({"type": "object", "properties": {"x": {"type": ["string", "integer"]}}}),
            Err("parameters/x: several types (string, integer) in one schema cannot be expressed".to_string()),
        ),
        (
            json!({"type": "object", "properties": {"x": {"allOf": [{"type": "string"}, {"type": "object", "properties": {"a": {"type": "string"}}}]}}}),
            Err("parameters/x: allOf over schemas that are not all objects cannot be expressed".to_string()),
        ),
        (
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}}),
            Err("parameters/x: $ref \"#/$defs/Missing\" has no definition".to_string()),
        ),
        (
            json!({"type": "array", "items": {"type": "string"}}),
            Err("parameters: must be an object schema, got {\"items\":{\"type\":\"string\"},\"type\":\"array\"}".to_string()),
        ),
    ];
    for (schema, expected) in cases {
        assert_eq!(to_gemini_parameters(&schema), expected, "{schema}");
    }
}
