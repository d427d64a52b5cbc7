//! Schema dialect: OpenAI strict mode (`"strict": true` function tools and structured outputs).
//!
//! Strict mode accepts a subset of JSON Schema and adds two rules: every object lists ALL its
//! properties in `required`, and every object has `additionalProperties: false`.
//! [`to_openai_strict`] rewrites a tool's schema (as `schemars` derives it) to fit:
//!
//! - Objects get `additionalProperties: false` and every property in `required`. A property that
//!   was optional becomes nullable (`"type": ["string", "null"]`, `null` added to an `enum`, or
//!   `anyOf` with `{"type": "null"}`), so the model sends `null` for "absent".
//!   [`remove_added_nulls`] turns those `null`s back into absent properties where the original
//!   schema does not allow `null`.
//! - `$ref` stands alone: keywords beside it are removed (a required `$ref` property loses its
//!   own `description`; an optional one keeps it on the `anyOf` wrapper). `$defs` are rewritten
//!   like the rest. `const` becomes a one-value `enum`, `oneOf` becomes `anyOf` (the same for
//!   serde's enums, whose variants never overlap), a one-entry `allOf` is merged into its parent.
//! - Kept as they are: `type`, `properties`, `items`, `anyOf`, `enum`, `description`, `title`,
//!   `pattern`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`,
//!   `minItems`, `maxItems`, and `format` when it is one OpenAI accepts (`date-time`, `time`,
//!   `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`).
//! - Removed: annotations (`default`, `examples`, `$schema`, `$id`, `$comment`, `deprecated`,
//!   `readOnly`, `writeOnly`, …), constraints strict mode rejects that only narrow a value
//!   (`minLength`, `maxLength`, `uniqueItems`, `minProperties`, `maxProperties`, `contains`,
//!   other `format`s such as `uint32`, …) and unknown keywords. The model is then less
//!   constrained than the tool: arguments must still be validated against the ORIGINAL schema
//!   (as [`crate::tool::ArgumentValidator`] does) before the tool runs.
//! - Reported as errors (the schema cannot be expressed): maps (`additionalProperties` other than
//!   `false`, `patternProperties`), free-form objects and values of any type, tuples
//!   (`prefixItems`, array `items`), arrays without `items`, `not`, `if`/`then`/`else`,
//!   `dependentRequired`, `dependentSchemas`, an `allOf` of several schemas, remote `$ref`s, a
//!   root that is not an object, more than 5,000 properties or 1,000 enum values in all
//!   (OpenAI's published limits).
//!
//! ```
//! use serde_json::json;
//! let schema = json!({
//!     "type": "object",
//!     "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "format": "uint32"}},
//!     "required": ["path"],
//! });
//! let strict = oxpi_ai::schema::openai_strict::to_openai_strict(&schema).unwrap();
//! assert_eq!(strict, json!({
//!     "type": "object",
//!     "properties": {"path": {"type": "string"}, "limit": {"type": ["integer", "null"]}},
//!     "required": ["limit", "path"],
//!     "additionalProperties": false,
//! }));
//! ```

use serde_json::{Map, Value};

use crate::tool::SchemaError;
use crate::types::context::Tool;

/// Why a schema cannot be sent in strict mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} (at {path})")]
pub struct StrictSchemaError {
    /// JSON pointer of the offending schema inside the tool's schema (`/` for the root).
    pub path: String,
    /// What cannot be expressed.
    pub reason: String,
}

/// Formats strict mode accepts on strings.
pub const SUPPORTED_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Most object properties a strict schema may have in all.
pub const MAX_PROPERTIES: usize = 5000;
/// Most enum values a strict schema may have in all.
pub const MAX_ENUM_VALUES: usize = 1000;
const MAX_DEPTH: usize = 64;

const KEPT: &[&str] = &[
    "description",
    "title",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "enum",
];

const UNEXPRESSIBLE: &[(&str, &str)] = &[
    ("patternProperties", "maps (patternProperties)"),
    ("prefixItems", "tuples (prefixItems)"),
    ("not", "`not`"),
    ("if", "`if`/`then`/`else`"),
    ("then", "`if`/`then`/`else`"),
    ("else", "`if`/`then`/`else`"),
    ("dependentRequired", "`dependentRequired`"),
    ("dependentSchemas", "`dependentSchemas`"),
    ("dependencies", "`dependencies`"),
    ("$dynamicRef", "`$dynamicRef`"),
    ("$recursiveRef", "`$recursiveRef`"),
];

/// Rewrites `schema` (an object schema, as a tool's parameters) for OpenAI strict mode; see the
/// module docs for every rule. The result is a new value; `schema` is not changed.
pub fn to_openai_strict(schema: &Value) -> Result<Value, StrictSchemaError> {
    let mut converter = Converter::default();
    let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
    if !is_object {
        return Err(error(
            "/",
            "the root must be an object schema (\"type\": \"object\")",
        ));
    }
    let out = converter.node(schema, "", true, 0)?;
    if converter.properties > MAX_PROPERTIES {
        return Err(error(
            "/",
            format!(
                "{} object properties in all; strict mode allows at most {MAX_PROPERTIES}",
                converter.properties
            ),
        ));
    }
    if converter.enum_values > MAX_ENUM_VALUES {
        return Err(error(
            "/",
            format!(
                "{} enum values in all; strict mode allows at most {MAX_ENUM_VALUES}",
                converter.enum_values
            ),
        ));
    }
    Ok(out)
}

/// [`to_openai_strict`] for a tool's parameters, with the error naming the tool.
pub fn strict_tool_parameters(tool: &Tool) -> Result<Value, SchemaError> {
    to_openai_strict(&tool.parameters).map_err(|e| SchemaError {
        tool: tool.name.clone(),
        reason: format!("cannot be sent in OpenAI strict mode: {e}"),
    })
}

fn error(path: &str, reason: impl Into<String>) -> StrictSchemaError {
    StrictSchemaError {
        path: if path.is_empty() {
            "/".to_string()
        } else {
            path.to_string()
        },
        reason: reason.into(),
    }
}

/// Escapes a key for a JSON pointer.
fn pointer_key(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[derive(Default)]
struct Converter {
    properties: usize,
    enum_values: usize,
}

impl Converter {
    fn node(
        &mut self,
        node: &Value,
        path: &str,
        root: bool,
        depth: usize,
    ) -> Result<Value, StrictSchemaError> {
        if depth > MAX_DEPTH {
            return Err(error(path, "the schema is nested too deeply"));
        }
        let map = match node {
            Value::Object(map) => map,
            Value::Bool(true) => {
                return Err(error(
                    path,
                    "a value of any type cannot be expressed (give it a type)",
                ))
            }
            _ => return Err(error(path, format!("not a schema: {node}"))),
        };
        // A one-entry allOf is merged into its parent (the parent's keywords win).
        if let Some(all_of) = map.get("allOf") {
            return match all_of.as_array().map(Vec::as_slice) {
                Some([single]) => {
                    let Value::Object(entry) = single else {
                        return Err(error(path, "allOf entry is not a schema"));
                    };
                    let mut merged = entry.clone();
                    for (key, value) in map {
                        if key != "allOf" {
                            merged.insert(key.clone(), value.clone());
                        }
                    }
                    self.node(&Value::Object(merged), path, root, depth + 1)
                }
                _ => Err(error(
                    path,
                    "`allOf` of several schemas cannot be expressed in strict mode",
                )),
            };
        }
        for (key, what) in UNEXPRESSIBLE {
            if map.contains_key(*key) {
                return Err(error(
                    path,
                    format!("{what} cannot be expressed in strict mode"),
                ));
            }
        }
        let mut out = Map::new();
        for defs_key in ["$defs", "definitions"] {
            if let Some(defs) = map.get(defs_key) {
                let Value::Object(defs) = defs else {
                    return Err(error(path, format!("{defs_key} is not an object")));
                };
                let mut converted = Map::new();
                for (name, def) in defs {
                    let def_path = format!("{path}/{defs_key}/{}", pointer_key(name));
                    converted.insert(name.clone(), self.node(def, &def_path, false, depth + 1)?);
                }
                out.insert(defs_key.to_string(), Value::Object(converted));
            }
        }
        if let Some(reference) = map.get("$ref") {
            let Some(target) = reference.as_str().filter(|r| r.starts_with('#')) else {
                return Err(error(
                    path,
                    format!("only local $refs (\"#/...\") can be sent, got {reference}"),
                ));
            };
            out.insert("$ref".into(), Value::String(target.to_string()));
            return Ok(Value::Object(out));
        }
        let mut any_of = None;
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = map.get(key) {
                if any_of.is_some() {
                    return Err(error(path, "both anyOf and oneOf cannot be expressed"));
                }
                let Some(branches) = branches.as_array() else {
                    return Err(error(path, format!("{key} is not an array")));
                };
                let mut converted = Vec::with_capacity(branches.len());
                for (i, branch) in branches.iter().enumerate() {
                    let branch_path = format!("{path}/{key}/{i}");
                    converted.push(self.node(branch, &branch_path, false, depth + 1)?);
                }
                any_of = Some(converted);
            }
        }
        for (key, value) in map {
            match key.as_str() {
                "format"
                    if value
                        .as_str()
                        .is_some_and(|f| SUPPORTED_FORMATS.contains(&f)) =>
                {
                    out.insert(key.clone(), value.clone());
                }
                "const" => {
                    self.enum_values += 1;
                    out.insert("enum".into(), Value::Array(vec![value.clone()]));
                }
                "enum" => {
                    self.enum_values += value.as_array().map_or(0, Vec::len);
                    out.insert(key.clone(), value.clone());
                }
                k if k == "type" || KEPT.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                _ => {}
            }
        }
        if let Some(branches) = any_of {
            out.insert("anyOf".into(), Value::Array(branches));
        }
        let is_array = match map.get("type") {
            Some(Value::String(t)) => t == "array",
            Some(Value::Array(types)) => types.iter().any(|t| t == "array"),
            _ => false,
        };
        if is_array && !map.contains_key("items") {
            return Err(error(
                path,
                "an array of values of any type (no items) cannot be expressed",
            ));
        }
        if let Some(items) = map.get("items") {
            match items {
                Value::Object(_) | Value::Bool(_) => {
                    let items = self.node(items, &format!("{path}/items"), false, depth + 1)?;
                    out.insert("items".into(), items);
                }
                _ => {
                    return Err(error(
                        path,
                        "tuples (items that is not a single schema) cannot be expressed",
                    ))
                }
            }
        }
        if is_object_schema(map) {
            self.object(map, &mut out, path, root, depth)?;
        } else if out.get("type").is_none()
            && out.get("anyOf").is_none()
            && out.get("enum").is_none()
        {
            return Err(error(
                path,
                "a value of any type cannot be expressed (give it a type)",
            ));
        }
        Ok(Value::Object(out))
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
        root: bool,
        depth: usize,
    ) -> Result<(), StrictSchemaError> {
        match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(error(
                    path,
                    "maps (additionalProperties other than false) cannot be expressed in strict mode; use a struct, or a list of key/value pairs",
                ))
            }
        }
        if matches!(map.get("unevaluatedProperties"), Some(v) if v != &Value::Bool(false)) {
            return Err(error(
                path,
                "unevaluatedProperties cannot be expressed in strict mode",
            ));
        }
        let properties = match map.get("properties") {
            Some(Value::Object(properties)) => properties.clone(),
            Some(_) => return Err(error(path, "properties is not an object")),
            None if root || map.get("additionalProperties") == Some(&Value::Bool(false)) => {
                Map::new()
            }
            None => {
                return Err(error(
                    path,
                    "a free-form object (no properties) cannot be expressed in strict mode",
                ))
            }
        };
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        self.properties += properties.len();
        let mut converted = Map::new();
        for (name, property) in &properties {
            let property_path = format!("{path}/properties/{}", pointer_key(name));
            let mut schema = self.node(property, &property_path, false, depth + 1)?;
            if !required.contains(&name.as_str()) {
                schema = nullable(schema, property);
            }
            converted.insert(name.clone(), schema);
        }
        let names: Vec<Value> = converted.keys().cloned().map(Value::String).collect();
        out.entry("type")
            .or_insert_with(|| Value::String("object".into()));
        out.insert("properties".into(), Value::Object(converted));
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), Value::Bool(false));
        Ok(())
    }
}

fn is_object_schema(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => map.contains_key("properties"),
    }
}

/// True when `schema` (already converted) accepts `null`.
fn allows_null(schema: &Value) -> bool {
    let type_has_null = match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    let enum_ok = schema
        .get("enum")
        .and_then(Value::as_array)
        .is_none_or(|values| values.contains(&Value::Null));
    if type_has_null && enum_ok {
        return true;
    }
    schema
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|branches| branches.iter().any(allows_null))
}

/// Makes a converted property schema accept `null`. `original` is the property's schema before
/// conversion (its description is kept on an `anyOf` wrapper around a `$ref`).
fn nullable(mut schema: Value, original: &Value) -> Value {
    if allows_null(&schema) {
        return schema;
    }
    let null_branch = serde_json::json!({"type": "null"});
    let Value::Object(map) = &mut schema else {
        return schema;
    };
    if map.contains_key("$ref") {
        let mut wrapper = Map::new();
        wrapper.insert("anyOf".into(), Value::Array(vec![schema, null_branch]));
        for key in ["description", "title"] {
            if let Some(value) = original.get(key) {
                wrapper.insert(key.into(), value.clone());
            }
        }
        return Value::Object(wrapper);
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.push(null_branch);
        return schema;
    }
    let with_null = match map.get("type") {
        Some(Value::String(t)) => Some(Value::Array(vec![
            Value::String(t.clone()),
            Value::String("null".into()),
        ])),
        Some(Value::Array(types)) => {
            let mut types = types.clone();
            types.push(Value::String("null".into()));
            Some(Value::Array(types))
        }
        _ => None,
    };
    match with_null {
        Some(types) => {
            map.insert("type".into(), types);
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                if !values.contains(&Value::Null) {
                    values.push(Value::Null);
                }
            }
            schema
        }
        None => {
            let mut wrapper = Map::new();
            wrapper.insert("anyOf".into(), Value::Array(vec![schema, null_branch]));
            Value::Object(wrapper)
        }
    }
}

/// Removes the `null`s a strict-mode model sends for absent optional properties, where the
/// ORIGINAL schema (`original`, the tool's own parameters) does not accept `null` for that
/// property, so the arguments validate against the original schema again. Follows `properties`,
/// `items`, local `$ref`s and `anyOf`/`oneOf`/`allOf` branches that are objects.
pub fn remove_added_nulls(arguments: &mut Value, original: &Value) {
    strip(arguments, original, original, 0);
}

fn strip(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        strip(value, target, root, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            strip(value, branch, root, depth + 1);
        }
    }
    match value {
        Value::Object(map) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            map.retain(|name, item| {
                let optional = !required.contains(&name.as_str());
                let null_ok = properties
                    .get(name)
                    .is_none_or(|p| original_allows_null(p, root, depth));
                !(item.is_null() && optional && !null_ok)
            });
            for (name, item) in map.iter_mut() {
                if let Some(sub) = properties.get(name) {
                    strip(item, sub, root, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for item in items {
                    strip(item, sub, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// True when an original (unconverted) schema accepts `null`.
fn original_allows_null(schema: &Value, root: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    match schema {
        Value::Bool(b) => return *b,
        Value::Object(map) if map.is_empty() => return true,
        _ => {}
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        return original_allows_null(target, root, depth + 1);
    }
    let by_type = match schema.get("type") {
        Some(Value::String(t)) => Some(t == "null"),
        Some(Value::Array(types)) => Some(types.iter().any(|t| t == "null")),
        _ => None,
    };
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.contains(&Value::Null) && by_type != Some(false);
    }
    if let Some(value) = schema.get("const") {
        return value.is_null();
    }
    if let Some(by_type) = by_type {
        return by_type;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            return branches
                .iter()
                .any(|b| original_allows_null(b, root, depth + 1));
        }
    }
    true
}
