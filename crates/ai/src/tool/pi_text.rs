//! A validation error from `boon` in pi's words: the field path as pi prints it
//! (`edits.0.new_text`, `root`) and the message TypeBox's English locale gives for the keyword
//! (`must be string`, `must have required properties path`), so a model reads what pi's would.

use std::borrow::Cow;

use boon::{ErrorKind, InstanceToken, ValidationError};
use serde_json::Value;

/// Every problem under `error`, in pi's words, as (path, message) pairs, depth first. Container
/// errors (`allOf`, `$ref`, the schema itself) contribute their causes; `anyOf` and `oneOf`
/// contribute their branches' problems and then their own line, as TypeBox reports them.
pub(super) fn problems(error: &ValidationError<'_, '_>, schema: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    collect(error, schema, &mut out);
    out
}

fn collect(error: &ValidationError<'_, '_>, schema: &Value, out: &mut Vec<(String, String)>) {
    let mut path: Vec<Cow<'_, str>> = error
        .instance_location
        .tokens
        .iter()
        .map(|token| match token {
            InstanceToken::Prop(name) => Cow::Borrowed(name.as_ref()),
            InstanceToken::Item(index) => Cow::Owned(index.to_string()),
        })
        .collect();
    let message = match &error.kind {
        ErrorKind::Group
        | ErrorKind::Schema { .. }
        | ErrorKind::Reference { .. }
        | ErrorKind::AllOf
        | ErrorKind::ContentSchema => {
            if error.causes.is_empty() {
                Some(error.kind.to_string())
            } else {
                None
            }
        }
        ErrorKind::AnyOf => Some("must match a schema in anyOf".to_string()),
        ErrorKind::OneOf(_) => Some("must match exactly one schema in oneOf".to_string()),
        ErrorKind::Type { want, .. } => {
            let names = types_in_schema_order(error.schema_url, schema)
                .unwrap_or_else(|| want.iter().map(|t| t.to_string()).collect());
            Some(match names.as_slice() {
                [one] => format!("must be {one}"),
                many => format!("must be either {}", many.join(" or ")),
            })
        }
        ErrorKind::Required { want } => {
            if let Some(first) = want.first() {
                path.push(Cow::Borrowed(first));
            }
            Some(format!("must have required properties {}", want.join(", ")))
        }
        ErrorKind::AdditionalProperties { got } => {
            // TypeBox checks each extra property against `additionalProperties: false` first.
            for name in got {
                let mut at = path.clone();
                at.push(Cow::Borrowed(name.as_ref()));
                out.push((at.join("."), "schema is false".to_string()));
            }
            Some("must not have additional properties".to_string())
        }
        ErrorKind::AdditionalItems { .. } => Some("must not have additional items".to_string()),
        ErrorKind::FalseSchema => Some("schema is false".to_string()),
        ErrorKind::Const { .. } => Some("must be equal to constant".to_string()),
        ErrorKind::Enum { .. } => Some("must be equal to one of the allowed values".to_string()),
        ErrorKind::Format { want, .. } => Some(format!("must match format \"{want}\"")),
        ErrorKind::Pattern { want, .. } => Some(format!("must match pattern \"{want}\"")),
        ErrorKind::PropertyName { prop } => Some(format!("property names {prop} are invalid")),
        ErrorKind::Dependency { prop, missing }
        | ErrorKind::DependentRequired { prop, missing } => Some(format!(
            "must have properties {} when property {prop} is present",
            missing.join(", ")
        )),
        ErrorKind::MinProperties { want, .. } => {
            Some(format!("must not have fewer than {want} properties"))
        }
        ErrorKind::MaxProperties { want, .. } => {
            Some(format!("must not have more than {want} properties"))
        }
        ErrorKind::MinItems { want, .. } => Some(format!("must not have fewer than {want} items")),
        ErrorKind::MaxItems { want, .. } => Some(format!("must not have more than {want} items")),
        ErrorKind::Contains | ErrorKind::MinContains { .. } => {
            Some("must contain at least 1 valid item".to_string())
        }
        ErrorKind::MaxContains { want, .. } => {
            Some(format!("must contain at most {want} valid items"))
        }
        ErrorKind::UniqueItems { .. } => Some("must not have duplicate items".to_string()),
        ErrorKind::MinLength { want, .. } => {
            Some(format!("must not have fewer than {want} characters"))
        }
        ErrorKind::MaxLength { want, .. } => {
            Some(format!("must not have more than {want} characters"))
        }
        ErrorKind::Minimum { want, .. } => Some(format!("must be >= {want}")),
        ErrorKind::Maximum { want, .. } => Some(format!("must be <= {want}")),
        ErrorKind::ExclusiveMinimum { want, .. } => Some(format!("must be > {want}")),
        ErrorKind::ExclusiveMaximum { want, .. } => Some(format!("must be < {want}")),
        ErrorKind::MultipleOf { want, .. } => Some(format!("must be multiple of {want}")),
        ErrorKind::Not => Some("must not be valid".to_string()),
        ErrorKind::RefCycle { .. }
        | ErrorKind::ContentEncoding { .. }
        | ErrorKind::ContentMediaType { .. } => Some(error.kind.to_string()),
    };
    for cause in &error.causes {
        collect(cause, schema, out);
    }
    if let Some(message) = message {
        let path = if path.is_empty() {
            "root".to_string()
        } else {
            path.join(".")
        };
        out.push((path, message));
    }
}

/// The names in the `type` keyword of the failing schema (`schema_url`) in the order the schema lists them (TypeBox prints
/// them so); `None` when the keyword cannot be found in `schema`.
fn types_in_schema_order(schema_url: &str, schema: &Value) -> Option<Vec<String>> {
    let (_, fragment) = schema_url.split_once('#')?;
    let decoded = percent_encoding::percent_decode_str(fragment)
        .decode_utf8()
        .ok()?;
    match schema.pointer(&decoded)?.get("type")? {
        Value::String(one) => Some(vec![one.clone()]),
        Value::Array(many) => many
            .iter()
            .map(|t| t.as_str().map(str::to_string))
            .collect(),
        _ => None,
    }
}
