//! Schema dialect for Anthropic Messages (`input_schema` of a tool).
//!
//! Anthropic takes most of JSON Schema (draft 2020-12, `$defs` and local `$ref`s included), with
//! two rules at the root: it must be an object schema (`"type": "object"`), and it may not be an
//! `anyOf` / `oneOf` / `allOf` of alternatives. This transform:
//!
//! - drops `$schema` (a meta-schema URI, not a constraint);
//! - sets `"type": "object"` where the root has no type (an empty schema, or one with only
//!   `properties`), and narrows `["object", "null"]` to `"object"`;
//! - reports a root that is not a JSON object, has another type, or combines alternatives as a
//!   [`SchemaError`], so the request is never sent.
//!
//! ```
//! use oxpi_ai::schema::anthropic::input_schema;
//! use serde_json::json;
//!
//! let schema = json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
//!                     "properties": {"path": {"type": "string"}}});
//! assert_eq!(
//!     input_schema("read", &schema).unwrap(),
//!     json!({"type": "object", "properties": {"path": {"type": "string"}}})
//! );
//! assert!(input_schema("bad", &json!({"type": "string"})).is_err());
//! ```

use serde_json::Value;

use crate::tool::SchemaError;

/// The `input_schema` Anthropic accepts for a tool named `tool` with parameter schema `schema`.
pub fn input_schema(tool: &str, schema: &Value) -> Result<Value, SchemaError> {
    let error = |reason: String| SchemaError {
        tool: tool.to_string(),
        reason,
    };
    let Value::Object(root) = schema else {
        return Err(error(format!(
            "Anthropic needs an object schema at the root of input_schema, got {schema}"
        )));
    };
    let mut root = root.clone();
    root.remove("$schema");
    for key in ["anyOf", "oneOf", "allOf"] {
        if root.contains_key(key) {
            return Err(error(format!(
                "Anthropic does not accept {key} at the root of input_schema; wrap the \
                 alternatives in a property"
            )));
        }
    }
    let object = Value::String("object".to_string());
    match root.get("type") {
        None => {
            root.insert("type".to_string(), object);
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(Value::Array(types)) if types.iter().any(|t| t == "object") => {
            let others_only_null = types.iter().all(|t| t == "object" || t == "null");
            if !others_only_null {
                return Err(error(format!(
                    "Anthropic needs \"type\": \"object\" at the root of input_schema, got {}",
                    Value::Array(types.clone())
                )));
            }
            root.insert("type".to_string(), object);
        }
        Some(other) => {
            return Err(error(format!(
                "Anthropic needs \"type\": \"object\" at the root of input_schema, got {other}"
            )))
        }
    }
    Ok(Value::Object(root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_an_object_schema_and_its_definitions() {
        let schema = json!({
            "type": "object",
            "title": "Args",
            "properties": {"item": {"$ref": "#/$defs/Item"}},
            "required": ["item"],
            "$defs": {"Item": {"type": "string", "format": "uuid"}},
        });
        assert_eq!(input_schema("t", &schema), Ok(schema.clone()));
    }

    #[test]
    fn strips_the_meta_schema_and_adds_the_root_type() {
        assert_eq!(
            input_schema("t", &json!({"$schema": "x"})),
            Ok(json!({"type": "object"}))
        );
        assert_eq!(
            input_schema("t", &json!({"type": ["object", "null"], "properties": {}})),
            Ok(json!({"type": "object", "properties": {}}))
        );
    }

    #[test]
    fn rejects_roots_anthropic_refuses() {
        for (schema, needle) in [
            (json!(true), "object schema at the root"),
            (json!({"type": "array"}), "\"type\": \"object\""),
            (
                json!({"type": ["object", "string"]}),
                "\"type\": \"object\"",
            ),
            (
                json!({"anyOf": [{"type": "object"}, {"type": "object"}]}),
                "anyOf",
            ),
            (json!({"type": "object", "oneOf": []}), "oneOf"),
        ] {
            let error = input_schema("tool", &schema).unwrap_err();
            assert_eq!(error.tool, "tool");
            assert!(error.reason.contains(needle), "{schema}: {}", error.reason);
        }
    }
}
