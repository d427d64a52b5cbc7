//! Schema dialect: Gemini's legacy `parameters` field.
//!
//! Gemini takes a tool's JSON Schema as it is in `parametersJsonSchema`, which is what the
//! `google-generative-ai` provider sends by default. Its older `parameters` field takes only a
//! subset of OpenAPI 3.0 instead; a model whose `compat` sets `useLegacyParameters` gets the
//! schema rewritten by [`to_gemini_parameters`]:
//!
//! - `$ref`s into `$defs` (or `definitions`) are inlined; a recursive schema is an error.
//! - `type: [X, "null"]`, `anyOf`/`oneOf` with a `{"type": "null"}` branch and `null` in an
//!   `enum` become `nullable: true`; `oneOf` becomes `anyOf`; a union left with one branch is
//!   inlined; a union of string constants becomes one string `enum`.
//! - `const` becomes a one-value `enum`; enum values must be strings.
//! - `allOf` is merged when its parts are objects (or when there is only one part).
//! - Keywords Gemini does not know (`$schema`, `$defs`, `additionalProperties`, `title`,
//!   `default`, `examples`, `exclusiveMinimum`, `multipleOf`, `uniqueItems`, `not`, …) and formats
//!   other than `int32`/`int64`, `float`/`double` and `date-time`/`enum` are dropped. Dropping a
//!   constraint only loosens what the model is told: arguments are still validated against the
//!   full schema before a tool runs ([`crate::tool::ArgumentValidator`]).
//! - Shapes Gemini cannot describe are errors, reported before any request: recursion, maps
//!   (objects with free keys or no declared properties, except an empty root), tuples
//!   (`prefixItems`), non-string enums or constants, unconstrained values (`true`, `{}`), several
//!   non-null types in one `type`, and `allOf` over non-objects.
//!
//! ```
//! use serde_json::json;
//! let schema = json!({
//!     "type": "object",
//!     "properties": {"mode": {"$ref": "#/$defs/Mode"}, "n": {"type": ["integer", "null"]}},
//!     "required": ["mode"],
//!     "$defs": {"Mode": {"type": "string", "enum": ["fast", "slow"]}},
//!     "additionalProperties": false,
//! });
//! assert_eq!(
//!     oxpi_ai::schema::gemini::to_gemini_parameters(&schema).unwrap(),
//!     json!({
//!         "type": "object",
//!         "properties": {
//!             "mode": {"type": "string", "enum": ["fast", "slow"]},
//!             "n": {"type": "integer", "nullable": true},
//!         },
//!         "required": ["mode"],
//!     })
//! );
//! ```

use serde_json::{Map, Value};

use crate::tool::SchemaError;
use crate::types::context::Tool;

/// Keywords copied unchanged (after the conversion of their sub-schemas, if any).
const KEPT: &[&str] = &[
    "description",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "minProperties",
    "maxProperties",
];

/// Keywords that make a schema say something about the value's shape.
const STRUCTURAL: &[&str] = &[
    "type",
    "properties",
    "items",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
];

/// Rewrites a tool's JSON Schema for Gemini's legacy `parameters` field (see the module docs).
/// The error says what cannot be expressed and where (a JSON-pointer-like path).
pub fn to_gemini_parameters(schema: &Value) -> Result<Value, String> {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut converter = Converter {
        defs,
        stack: Vec::new(),
    };
    let out = converter.convert(schema, "parameters", true)?;
    if out.get("type").and_then(Value::as_str) != Some("object") {
        return Err(format!("parameters: must be an object schema, got {out}"));
    }
    Ok(out)
}

/// [`to_gemini_parameters`] for a tool, with the tool's name in the error.
pub fn tool_parameters(tool: &Tool) -> Result<Value, SchemaError> {
    to_gemini_parameters(&tool.parameters).map_err(|reason| SchemaError {
        tool: tool.name.clone(),
        reason: format!("Gemini's legacy `parameters` cannot express it: {reason}"),
    })
}

struct Converter {
    defs: Map<String, Value>,
    /// Definitions being inlined, to detect recursion.
    stack: Vec<String>,
}

impl Converter {
    fn convert(&mut self, node: &Value, path: &str, root: bool) -> Result<Value, String> {
        let map = match node {
            Value::Object(map) => map,
            Value::Bool(true) => {
                return Err(format!(
                    "{path}: accepts any value, which cannot be expressed (give it a type)"
                ))
            }
            other => return Err(format!("{path}: {other} is not a schema Gemini accepts")),
        };
        if let Some(reference) = map.get("$ref") {
            return self.inline_ref(reference, map, path, root);
        }
        if let Some(parts) = map.get("allOf") {
            return self.merge_all_of(parts, map, path, root);
        }
        if map.contains_key("anyOf") || map.contains_key("oneOf") {
            return self.union(map, path);
        }
        if !STRUCTURAL.iter().any(|k| map.contains_key(*k)) {
            return Err(format!(
                "{path}: accepts any value, which cannot be expressed (give it a type)"
            ));
        }
        if map.contains_key("prefixItems") || matches!(map.get("items"), Some(Value::Array(_))) {
            return Err(format!("{path}: tuples (prefixItems) cannot be expressed"));
        }

        let mut out = Map::new();
        let mut nullable = map.get("nullable") == Some(&Value::Bool(true));
        let mut ty = match map.get("type") {
            None => None,
            Some(Value::String(t)) if t == "null" => {
                return Err(format!(
                    "{path}: a value that can only be null cannot be expressed"
                ))
            }
            Some(Value::String(t)) => Some(t.clone()),
            Some(Value::Array(types)) => {
                let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
                let non_null: Vec<&str> = names.iter().copied().filter(|t| *t != "null").collect();
                nullable |= names.len() != non_null.len();
                match non_null.as_slice() {
                    [one] => Some((*one).to_string()),
                    [] => {
                        return Err(format!(
                            "{path}: a value that can only be null cannot be expressed"
                        ))
                    }
                    _ => {
                        return Err(format!(
                            "{path}: several types ({}) in one schema cannot be expressed",
                            non_null.join(", ")
                        ))
                    }
                }
            }
            Some(other) => return Err(format!("{path}: invalid type {other}")),
        };

        let values = match (map.get("const"), map.get("enum")) {
            (Some(value), _) => Some(vec![value.clone()]),
            (None, Some(Value::Array(values))) => Some(values.clone()),
            (None, Some(other)) => return Err(format!("{path}: invalid enum {other}")),
            (None, None) => None,
        };
        if let Some(values) = values {
            let mut strings = Vec::with_capacity(values.len());
            for value in values {
                match value {
                    Value::String(s) => strings.push(Value::String(s)),
                    Value::Null => nullable = true,
                    other => {
                        return Err(format!(
                            "{path}: enum values must be strings for Gemini, got {other}"
                        ))
                    }
                }
            }
            match ty.as_deref() {
                None | Some("string") => ty = Some("string".into()),
                Some(other) => {
                    return Err(format!(
                        "{path}: an enum of type {other} cannot be expressed (only strings)"
                    ))
                }
            }
            if strings.is_empty() {
                return Err(format!(
                    "{path}: a value that can only be null cannot be expressed"
                ));
            }
            out.insert("enum".into(), Value::Array(strings));
        }

        if ty.is_none() && map.contains_key("properties") {
            ty = Some("object".into());
        }
        if ty.is_none() && map.contains_key("items") {
            ty = Some("array".into());
        }
        let Some(ty) = ty else {
            return Err(format!(
                "{path}: a schema without a type cannot be expressed"
            ));
        };
        out.insert("type".into(), Value::String(ty.clone()));
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        for key in KEPT {
            if let Some(value) = map.get(*key) {
                out.insert((*key).to_string(), value.clone());
            }
        }
        if let Some(Value::String(format)) = map.get("format") {
            let known = matches!(
                (ty.as_str(), format.as_str()),
                ("integer", "int32" | "int64")
                    | ("number", "float" | "double")
                    | ("string", "date-time" | "enum")
            );
            if known {
                out.insert("format".into(), Value::String(format.clone()));
            }
        }

        match ty.as_str() {
            "object" => self.object(map, &mut out, path, root)?,
            "array" => {
                let items = map.get("items").ok_or_else(|| {
                    format!("{path}: an array without an items schema cannot be expressed")
                })?;
                let items = self.convert(items, &format!("{path}/items"), false)?;
                out.insert("items".into(), items);
            }
            "string" | "number" | "integer" | "boolean" => {}
            other => return Err(format!("{path}: unknown type {other:?}")),
        }
        Ok(Value::Object(out))
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
        root: bool,
    ) -> Result<(), String> {
        let properties = match map.get("properties") {
            None => Map::new(),
            Some(Value::Object(properties)) => properties.clone(),
            Some(other) => return Err(format!("{path}: invalid properties {other}")),
        };
        let free_keys = match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => false,
            Some(_) => true,
        } || map.contains_key("patternProperties");
        if properties.is_empty() && (free_keys || !root) {
            return Err(format!(
                "{path}: an object without declared properties (a map or free-form object) \
                 cannot be expressed"
            ));
        }
        let mut converted = Map::new();
        for (name, schema) in &properties {
            let child = self.convert(schema, &format!("{path}/{name}"), false)?;
            converted.insert(name.clone(), child);
        }
        out.insert("properties".into(), Value::Object(converted));
        if let Some(required) = map.get("required") {
            out.insert("required".into(), required.clone());
        }
        Ok(())
    }

    fn inline_ref(
        &mut self,
        reference: &Value,
        map: &Map<String, Value>,
        path: &str,
        root: bool,
    ) -> Result<Value, String> {
        let reference = reference
            .as_str()
            .ok_or_else(|| format!("{path}: invalid $ref {reference}"))?;
        let name = reference
            .strip_prefix("#/$defs/")
            .or_else(|| reference.strip_prefix("#/definitions/"));
        let Some(name) = name else {
            if reference == "#" {
                return Err(format!(
                    "{path}: recursive schema ($ref \"#\" refers to the root), which cannot be \
                     expressed"
                ));
            }
            return Err(format!("{path}: unsupported $ref {reference:?}"));
        };
        if self.stack.iter().any(|n| n == name) {
            let mut chain = self.stack.clone();
            chain.push(name.to_string());
            return Err(format!(
                "{path}: recursive schema ({}), which cannot be expressed",
                chain.join(" → ")
            ));
        }
        let mut merged = match self.defs.get(name) {
            Some(Value::Object(target)) => target.clone(),
            Some(Value::Bool(true)) => Map::new(),
            Some(other) => return Err(format!("{path}: $ref {reference:?} is {other}")),
            None => return Err(format!("{path}: $ref {reference:?} has no definition")),
        };
        for (key, value) in map {
            if key != "$ref" {
                merged.insert(key.clone(), value.clone());
            }
        }
        self.stack.push(name.to_string());
        let out = self.convert(&Value::Object(merged), path, root);
        self.stack.pop();
        out
    }

    fn merge_all_of(
        &mut self,
        parts: &Value,
        map: &Map<String, Value>,
        path: &str,
        root: bool,
    ) -> Result<Value, String> {
        let parts = parts
            .as_array()
            .ok_or_else(|| format!("{path}: invalid allOf {parts}"))?;
        let mut rest = map.clone();
        rest.remove("allOf");
        let mut raw: Vec<Value> = parts.clone();
        if STRUCTURAL.iter().any(|k| rest.contains_key(*k)) {
            raw.push(Value::Object(rest.clone()));
        }
        let mut converted = Vec::with_capacity(raw.len());
        for (i, part) in raw.iter().enumerate() {
            converted.push(self.convert(part, &format!("{path}/allOf/{i}"), root)?);
        }
        let mut merged = match converted.as_slice() {
            [] => return Err(format!("{path}: an empty allOf cannot be expressed")),
            [one] => one.clone(),
            many => {
                let mut properties = Map::new();
                let mut required = Vec::new();
                for part in many {
                    if part.get("type").and_then(Value::as_str) != Some("object") {
                        return Err(format!(
                            "{path}: allOf over schemas that are not all objects cannot be \
                             expressed"
                        ));
                    }
                    if let Some(Value::Object(p)) = part.get("properties") {
                        properties.extend(p.clone());
                    }
                    if let Some(Value::Array(r)) = part.get("required") {
                        for name in r {
                            if !required.contains(name) {
                                required.push(name.clone());
                            }
                        }
                    }
                }
                let mut out = Map::new();
                out.insert("type".into(), Value::String("object".into()));
                out.insert("properties".into(), Value::Object(properties));
                if !required.is_empty() {
                    out.insert("required".into(), Value::Array(required));
                }
                Value::Object(out)
            }
        };
        if let (Value::Object(out), Some(description)) = (&mut merged, rest.get("description")) {
            out.insert("description".into(), description.clone());
        }
        Ok(merged)
    }

    fn union(&mut self, map: &Map<String, Value>, path: &str) -> Result<Value, String> {
        let (key, branches) = match (map.get("anyOf"), map.get("oneOf")) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "{path}: anyOf together with oneOf cannot be expressed"
                ))
            }
            (Some(b), None) => ("anyOf", b),
            (None, Some(b)) => ("oneOf", b),
            (None, None) => return Err(format!("{path}: not a union")),
        };
        let branches = branches
            .as_array()
            .ok_or_else(|| format!("{path}: invalid {key} {branches}"))?;
        let mut nullable = map.get("nullable") == Some(&Value::Bool(true));
        let mut kept = Vec::new();
        for branch in branches {
            if is_null_schema(branch) {
                nullable = true;
            } else {
                kept.push(branch.clone());
            }
        }
        let mut rest = map.clone();
        rest.remove(key);
        rest.remove("nullable");
        if kept.len() == 1 {
            // One real branch: inline it, the node's own keywords (description…) on top.
            let mut node = Map::new();
            node.insert("allOf".into(), Value::Array(kept));
            node.extend(rest);
            let mut out = self.convert(&Value::Object(node), path, false)?;
            if nullable {
                if let Value::Object(o) = &mut out {
                    o.insert("nullable".into(), Value::Bool(true));
                }
            }
            return Ok(out);
        }
        if kept.is_empty() {
            return Err(format!(
                "{path}: a value that can only be null cannot be expressed"
            ));
        }
        let mut converted = Vec::with_capacity(kept.len());
        for (i, branch) in kept.iter().enumerate() {
            converted.push(self.convert(branch, &format!("{path}/{key}/{i}"), false)?);
        }
        let mut out = Map::new();
        if let Some(values) = string_constants(&converted) {
            out.insert("type".into(), Value::String("string".into()));
            out.insert("enum".into(), Value::Array(values));
        } else {
            out.insert("anyOf".into(), Value::Array(converted));
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        if let Some(description) = rest.get("description") {
            out.insert("description".into(), description.clone());
        }
        Ok(Value::Object(out))
    }
}

fn is_null_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().all(|t| t == "null"),
        _ => schema.get("const") == Some(&Value::Null),
    }
}

/// The values of a union whose every (converted) branch is a string enum, in order.
fn string_constants(branches: &[Value]) -> Option<Vec<Value>> {
    let mut values = Vec::new();
    for branch in branches {
        if branch.get("type").and_then(Value::as_str) != Some("string")
            || branch.get("nullable").is_some()
        {
            return None;
        }
        for value in branch.get("enum")?.as_array()? {
            if !values.contains(value) {
                values.push(value.clone());
            }
        }
    }
    Some(values)
}
