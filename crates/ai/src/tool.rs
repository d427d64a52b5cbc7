//! Tools from Rust types: a JSON Schema derived with `schemars`, and validation of a call's
//! arguments against it before they are deserialized into the arguments type.
//!
//! ```
//! use oxpi_ai::tool::{tool_definition, ArgumentValidator};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Debug, Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct ReadArgs {
//!     /// Path of the file.
//!     path: String,
//! }
//!
//! let tool = tool_definition::<ReadArgs>("read", "Read a file").unwrap();
//! let validator = ArgumentValidator::new(&tool).unwrap();
//! let args = serde_json::json!({"path": 3}).as_object().unwrap().clone();
//! let err = validator.parse::<ReadArgs>(&args).unwrap_err();
//! assert!(err.to_string().starts_with("Validation failed for tool \"read\":\n  - path:"));
//! ```

use schemars::{generate::SchemaSettings, JsonSchema};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::types::context::Tool;

/// A tool's schema could not be made or compiled.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid schema for tool \"{tool}\": {reason}")]
pub struct SchemaError {
    /// The tool.
    pub tool: String,
    /// What is wrong.
    pub reason: String,
}

/// A call's arguments did not match the tool's schema. `Display` gives the text sent back to
/// the model: every bad field, then the arguments received.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{received}", format_problems(.problems))]
pub struct ValidationError {
    /// The tool.
    pub tool: String,
    /// One entry per problem: (JSON pointer of the field, or `root`; what is wrong).
    pub problems: Vec<(String, String)>,
    /// The arguments as received, pretty-printed.
    pub received: String,
}

fn format_problems(problems: &[(String, String)]) -> String {
    problems
        .iter()
        .map(|(path, msg)| format!("  - {path}: {msg}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The JSON Schema of `A` as a tool parameter schema: an object at the root, `$defs` kept at the
/// root for `$ref`s, no `$schema` and no `title`.
pub fn parameters_schema<A: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.meta_schema = None;
    });
    let schema = settings.into_generator().into_root_schema_for::<A>();
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        map.remove("title");
        map.remove("$schema");
    }
    value
}

/// A [`Tool`] whose parameters are the JSON Schema of `A`.
///
/// Fails when `A`'s schema is not an object schema (tool arguments are always a JSON object).
pub fn tool_definition<A: JsonSchema>(
    name: impl Into<String>,
    description: impl Into<String>,
) -> Result<Tool, SchemaError> {
    let name = name.into();
    let parameters = parameters_schema::<A>();
    let is_object = parameters.get("type").and_then(Value::as_str) == Some("object");
    if !is_object {
        return Err(SchemaError {
            tool: name,
            reason: format!("the root must be an object schema, got {parameters}"),
        });
    }
    Ok(Tool {
        name,
        description: description.into(),
        parameters,
    })
}

/// Checks arguments against a tool's schema; compiled once, used for every call.
#[derive(Debug)]
pub struct ArgumentValidator {
    tool: String,
    schema: Value,
    validator: jsonschema::Validator,
}

impl ArgumentValidator {
    /// Compiles `tool.parameters`.
    pub fn new(tool: &Tool) -> Result<Self, SchemaError> {
        let validator = jsonschema::validator_for(&tool.parameters).map_err(|e| SchemaError {
            tool: tool.name.clone(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            tool: tool.name.clone(),
            schema: tool.parameters.clone(),
            validator,
        })
    }

    /// Validates `arguments` and returns them normalized: like pi (AJV's `coerceTypes`), a string
    /// where the schema wants a number, integer or boolean is converted when it parses as one
    /// (`"10"` → `10`). The error names every failing field.
    pub fn validate(
        &self,
        arguments: &Map<String, Value>,
    ) -> Result<Map<String, Value>, ValidationError> {
        let mut instance = Value::Object(arguments.clone());
        coerce(&mut instance, &self.schema, &self.schema, 0);
        self.validate_value(&instance)?;
        match instance {
            Value::Object(map) => Ok(map),
            _ => Ok(arguments.clone()),
        }
    }

    /// Validates any JSON value as it is (no coercion; a non-object fails on the root).
    pub fn validate_value(&self, instance: &Value) -> Result<(), ValidationError> {
        let problems: Vec<(String, String)> = self
            .validator
            .iter_errors(instance)
            .map(|e| {
                let mut pointer = e
                    .instance_path()
                    .to_string()
                    .trim_start_matches('/')
                    .to_string();
                if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind() {
                    let property = property
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| property.to_string());
                    if !pointer.is_empty() {
                        pointer.push('/');
                    }
                    pointer.push_str(&property);
                }
                let path = if pointer.is_empty() {
                    "root".to_string()
                } else {
                    pointer
                };
                (path, e.to_string())
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(self.error(problems, instance))
        }
    }

    /// Validates (with coercion, see [`validate`](Self::validate)), then deserializes into `A`.
    pub fn parse<A: DeserializeOwned>(
        &self,
        arguments: &Map<String, Value>,
    ) -> Result<A, ValidationError> {
        let instance = Value::Object(self.validate(arguments)?);
        serde_json::from_value(instance.clone())
            .map_err(|e| self.error(vec![("root".to_string(), e.to_string())], &instance))
    }

    fn error(&self, problems: Vec<(String, String)>, instance: &Value) -> ValidationError {
        ValidationError {
            tool: self.tool.clone(),
            problems,
            received: serde_json::to_string_pretty(instance)
                .unwrap_or_else(|_| instance.to_string()),
        }
    }
}

/// Converts strings to the number, integer or boolean the schema asks for, where they parse.
/// Follows `properties`, `items`, local `$ref`s and `anyOf`/`oneOf`/`allOf` branches.
fn coerce(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > 32 {
        return;
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        coerce(value, target, root, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            coerce(value, branch, root, depth + 1);
        }
    }
    match value {
        Value::String(text) => {
            let wants = |t: &str| match schema.get("type") {
                Some(Value::String(s)) => s == t,
                Some(Value::Array(types)) => types.iter().any(|v| v == t),
                _ => false,
            };
            if wants("string") {
                return;
            }
            let trimmed = text.trim();
            let as_integer = || trimmed.parse::<i64>().ok().map(Value::from);
            let as_number = || {
                trimmed
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
            };
            let coerced = match trimmed {
                _ if wants("integer") && as_integer().is_some() => as_integer(),
                _ if wants("number") && as_number().is_some() => as_integer().or_else(as_number),
                "true" if wants("boolean") => Some(Value::Bool(true)),
                "false" if wants("boolean") => Some(Value::Bool(false)),
                _ => None,
            };
            if let Some(new) = coerced {
                *value = new;
            }
        }
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, item) in map.iter_mut() {
                    if let Some(sub) = properties.get(name) {
                        coerce(item, sub, root, depth + 1);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for item in items.iter_mut() {
                    coerce(item, sub, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}
