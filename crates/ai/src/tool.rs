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
//! // Like pi, a value of another primitive type is converted where it can be.
//! let args = serde_json::json!({"path": 3}).as_object().unwrap().clone();
//! assert_eq!(validator.parse::<ReadArgs>(&args).unwrap().path, "3");
//! // What cannot be converted is an error, in pi's words, sent back to the model.
//! let args = serde_json::json!({"path": [3]}).as_object().unwrap().clone();
//! let err = validator.parse::<ReadArgs>(&args).unwrap_err();
//! assert!(err.to_string().starts_with("Validation failed for tool \"read\":\n  - path: must be string"));
//! ```

use schemars::{generate::SchemaSettings, JsonSchema};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::types::context::Tool;

mod pi_text;

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
    Ok(Tool::new(name, description, parameters))
}

/// Checks arguments against a tool's schema; compiled once, used for every call.
///
/// The schema is compiled by [`boon`] (JSON Schema 2020-12 unless `$schema` says otherwise).
/// Only `$ref`s inside the schema resolve: a reference to a file or a URL is a [`SchemaError`],
/// never a read. Problems are reported in pi's words (`must be string`).
pub struct ArgumentValidator {
    tool: String,
    schema: Value,
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentValidator")
            .field("tool", &self.tool)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// The deepest nesting (objects and arrays) of a schema that is compiled. `boon` compiles and
/// validates recursively; a debug build's 2 MiB thread stack overflowed at 80 levels (40 nested
/// `properties`), so deeper schemas are refused rather than aborting the process.
pub const MAX_SCHEMA_DEPTH: usize = 40;

/// The deepest nesting of arguments that is validated (a recursive schema takes any depth;
/// validation overflowed a 2 MiB stack at 96 levels).
pub const MAX_ARGUMENT_DEPTH: usize = 32;

/// Whether `value` nests objects and arrays deeper than `max` levels (counted without
/// recursion, so any input is safe).
pub(crate) fn nested_deeper_than(value: &Value, max: usize) -> bool {
    let mut stack = vec![(value, 0usize)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Object(map) => Box::new(map.values()),
            Value::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        if depth + 1 > max {
            return true;
        }
        stack.extend(children.map(|child| (child, depth + 1)));
    }
    false
}

/// Refuses a schema nested deeper than [`MAX_SCHEMA_DEPTH`] (before anything recurses into it).
pub(crate) fn check_schema_depth(tool: &Tool) -> Result<(), SchemaError> {
    if nested_deeper_than(&tool.parameters, MAX_SCHEMA_DEPTH) {
        return Err(SchemaError {
            tool: tool.name.clone(),
            reason: format!(
                "the schema is nested deeper than {MAX_SCHEMA_DEPTH} levels (objects and arrays)"
            ),
        });
    }
    Ok(())
}

/// The address the tool's schema is known by while it is compiled.
const SCHEMA_URL: &str = "urn:oxpi:tool-parameters";

/// Refuses to load anything: a tool schema must be self-contained.
struct NoLoader;

impl boon::UrlLoader for NoLoader {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("{url} is outside the schema (only local $refs resolve)").into())
    }
}

impl ArgumentValidator {
    /// Compiles `tool.parameters`. A schema nested deeper than [`MAX_SCHEMA_DEPTH`] levels is
    /// refused.
    pub fn new(tool: &Tool) -> Result<Self, SchemaError> {
        let schema_error = |reason: String| SchemaError {
            tool: tool.name.clone(),
            reason,
        };
        check_schema_depth(tool)?;
        let mut compiler = boon::Compiler::new();
        compiler.use_loader(Box::new(NoLoader));
        compiler
            .add_resource(SCHEMA_URL, tool.parameters.clone())
            .map_err(|e| schema_error(crate::diagnostics::error_chain(&e)))?;
        let mut schemas = boon::Schemas::new();
        let index = compiler
            .compile(SCHEMA_URL, &mut schemas)
            .map_err(|e| schema_error(crate::diagnostics::error_chain(&e)))?;
        Ok(Self {
            tool: tool.name.clone(),
            schema: tool.parameters.clone(),
            schemas,
            index,
        })
    }

    /// Validates `arguments` and returns them normalized: like pi, a string where the schema
    /// wants a number, integer or boolean is converted when it parses as one (`"10"` → `10`).
    /// The error names every failing field and shows the arguments as received; arguments
    /// nested deeper than [`MAX_ARGUMENT_DEPTH`] levels are an error at the root.
    pub fn validate(
        &self,
        arguments: &Map<String, Value>,
    ) -> Result<Map<String, Value>, ValidationError> {
        let received = Value::Object(arguments.clone());
        if let Some(error) = self.too_deep(&received) {
            return Err(error);
        }
        let mut instance = received.clone();
        coerce(&mut instance, &self.schema, &self.schema, 0);
        let problems = self.problems(&instance);
        if !problems.is_empty() {
            return Err(self.error(problems, &received));
        }
        match instance {
            Value::Object(map) => Ok(map),
            _ => Ok(arguments.clone()),
        }
    }

    /// Validates any JSON value as it is (no coercion; a non-object fails on the root).
    pub fn validate_value(&self, instance: &Value) -> Result<(), ValidationError> {
        if let Some(error) = self.too_deep(instance) {
            return Err(error);
        }
        let problems = self.problems(instance);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(self.error(problems, instance))
        }
    }

    /// The error for an instance nested deeper than [`MAX_ARGUMENT_DEPTH`], if it is.
    fn too_deep(&self, instance: &Value) -> Option<ValidationError> {
        nested_deeper_than(instance, MAX_ARGUMENT_DEPTH).then(|| {
            let problem = format!("must not be nested deeper than {MAX_ARGUMENT_DEPTH} levels");
            self.error(vec![("root".to_string(), problem)], instance)
        })
    }

    fn problems(&self, instance: &Value) -> Vec<(String, String)> {
        match self.schemas.validate(instance, self.index) {
            Ok(()) => Vec::new(),
            Err(error) => pi_text::problems(&error, &self.schema),
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

/// Converts primitives to the type the schema asks for, by pi's rules (`coercePrimitiveByType`):
/// where the value is none of the schema's `type`s, the first type it converts to wins
/// (`"10"` → `10`, `"true"` → `true`, `3` → `"3"`, `null` → `0`, `false`, `""`).
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
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.iter().any(|t| is_of_type(value, t)) {
        if let Some(converted) = types.iter().find_map(|t| convert_primitive(value, t)) {
            *value = converted;
        }
    }
    match value {
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

/// Whether `value` is of the JSON Schema type `name`.
fn is_of_type(value: &Value, name: &str) -> bool {
    match (name, value) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// `value` converted to the type `name` by pi's rules, or `None` when it does not convert.
fn convert_primitive(value: &Value, name: &str) -> Option<Value> {
    let number = |text: &str| {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return None;
        }
        trimmed.parse::<i64>().map(Value::from).ok().or_else(|| {
            let float = trimmed.parse::<f64>().ok().filter(|f| f.is_finite())?;
            if float.fract() == 0.0 && float.abs() < 9.007_199_254_740_992e15 {
                // Integral: written without a fraction, as JavaScript's Number does.
                return Some(Value::from(float as i64));
            }
            serde_json::Number::from_f64(float).map(Value::Number)
        })
    };
    let converted = match (name, value) {
        ("number" | "integer", Value::Null) => Value::from(0),
        ("number" | "integer", Value::Bool(b)) => Value::from(u8::from(*b)),
        ("number", Value::String(text)) => number(text)?,
        ("integer", Value::String(text)) => number(text).filter(|n| is_of_type(n, "integer"))?,
        ("boolean", Value::Null) => Value::Bool(false),
        ("boolean", Value::String(text)) if text == "true" => Value::Bool(true),
        ("boolean", Value::String(text)) if text == "false" => Value::Bool(false),
        ("boolean", Value::Number(n)) if n.as_f64() == Some(1.0) => Value::Bool(true),
        ("boolean", Value::Number(n)) if n.as_f64() == Some(0.0) => Value::Bool(false),
        ("string", Value::Null) => Value::String(String::new()),
        ("string", Value::Number(n)) => Value::String(n.to_string()),
        ("string", Value::Bool(b)) => Value::String(b.to_string()),
        ("null", Value::String(text)) if text.is_empty() => Value::Null,
        ("null", Value::Number(n)) if n.as_f64() == Some(0.0) => Value::Null,
        ("null", Value::Bool(false)) => Value::Null,
        _ => return None,
    };
    Some(converted)
}
