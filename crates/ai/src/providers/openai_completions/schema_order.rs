//! Writing a JSON schema with each object's required properties first, in the order its
//! `required` list gives them.
//!
//! `serde_json::Value` keeps object keys sorted, so `{"name", "arguments"}` would be written
//! `arguments` first. A server that decodes under a grammar built from the schema (llama.cpp)
//! makes the model write the properties in the order the schema text lists them; a forced tool
//! call then had to give its arguments before saying which tool it calls (measured on the
//! embedded model: a `read` with a made-up `offset`, a `bash` whose command was a Python call)
//! and an `edit` its `newText` before its `oldText`. The `required` list keeps the order the
//! schema's author chose (a tool's fields as declared), so it orders the properties here.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// `schema`, serialized with every `properties` object's keys in `required` order first, the
/// rest after them in their usual (sorted) order. Everything else is written as `Value` writes
/// it.
pub(crate) struct RequiredFirst<'a>(pub &'a Value);

impl Serialize for RequiredFirst<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|names| names.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (key, value) in map {
                    match value {
                        Value::Object(properties) if key == "properties" => out.serialize_entry(
                            key,
                            &Ordered {
                                properties,
                                required: &required,
                            },
                        )?,
                        _ => out.serialize_entry(key, &RequiredFirst(value))?,
                    }
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&RequiredFirst(item))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// A `properties` object: the keys `required` names (those present, each once), then the rest.
struct Ordered<'a> {
    properties: &'a serde_json::Map<String, Value>,
    required: &'a [&'a str],
}

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(Some(self.properties.len()))?;
        let mut written: Vec<&str> = Vec::with_capacity(self.required.len());
        for &name in self.required {
            if let Some(value) = self.properties.get(name) {
                if !written.contains(&name) {
                    out.serialize_entry(name, &RequiredFirst(value))?;
                    written.push(name);
                }
            }
        }
        for (key, value) in self.properties {
            if !written.contains(&key.as_str()) {
                out.serialize_entry(key, &RequiredFirst(value))?;
            }
        }
        out.end()
    }
}

/// For `#[serde(serialize_with)]` on an optional schema-holding field.
pub(crate) fn serialize_option<S: Serializer>(
    value: &Option<Value>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => serializer.serialize_some(&RequiredFirst(value)),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(value: &Value) -> String {
        serde_json::to_string(&RequiredFirst(value)).unwrap()
    }

    #[test]
    fn required_properties_come_first_in_required_order_at_every_depth() {
        let schema = json!({
            "type": "object",
            "properties": {
                "arguments": {
                    "type": "object",
                    "properties": {
                        "limit": {"type": "integer"},
                        "offset": {"type": "integer"},
                        "path": {"type": "string"},
                    },
                    "required": ["path"],
                },
                "name": {"const": "read"},
            },
            "required": ["name", "arguments"],
            "anyOf": [{"properties": {"b": {}, "a": {}}, "required": ["b", "a", "b", "gone"]}],
        });
        assert_eq!(
            text(&schema),
            concat!(
                r#"{"anyOf":[{"properties":{"b":{},"a":{}},"required":["b","a","b","gone"]}],"#,
                r#""properties":{"name":{"const":"read"},"arguments":{"properties":"#,
                r#"{"path":{"type":"string"},"limit":{"type":"integer"},"offset":"#,
                r#"{"type":"integer"}},"required":["path"],"type":"object"}},"#,
                r#""required":["name","arguments"],"type":"object"}"#
            )
        );
        // The same value, whatever the order: nothing is lost or added.
        assert_eq!(
            serde_json::from_str::<Value>(&text(&schema)).unwrap(),
            schema
        );
    }

    #[test]
    fn a_property_named_properties_and_odd_required_lists_are_written_as_they_are() {
        let schema = json!({
            "properties": {"properties": {"type": "object", "properties": {"z": 1, "y": 2}, "required": ["y"]}},
            "required": "not a list",
        });
        assert_eq!(
            text(&schema),
            r#"{"properties":{"properties":{"properties":{"y":2,"z":1},"required":["y"],"type":"object"}},"required":"not a list"}"#
        );
        assert_eq!(text(&json!([1, "x", null])), r#"[1,"x",null]"#);
    }
}
