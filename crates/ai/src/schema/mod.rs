//! Schema dialects: one transform per target API from a tool's JSON Schema (as `schemars`
//! derives it), so each provider gets a schema it accepts. A schema a provider cannot take is
//! reported as a [`crate::tool::SchemaError`] before any request is made.

pub mod anthropic;
pub mod gemini;
pub mod openai_strict;

use crate::tool::SchemaError;
use crate::types::context::Tool;
use crate::types::wire_api::WireApi;

/// Checks that `tool`'s schema can be sent to the wire API `api` (a [`crate::Model`]'s `api`),
/// so a tool from elsewhere (an MCP server) fails when it is set up rather than with a 400 on
/// the first request. Anthropic and Gemini (also on Vertex) schemas go through their dialects; the OpenAI APIs
/// take the schema as it is (strict mode is checked when a request is built). A schema nested
/// deeper than [`crate::tool::MAX_SCHEMA_DEPTH`] levels is refused for every API.
///
/// ```
/// use oxpi_ai::schema::check_for_api;
/// let tool = oxpi_ai::Tool::new(
///     "count",
///     "Count",
///     serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
/// );
/// assert!(check_for_api("google-generative-ai", &tool).is_ok());
/// ```
pub fn check_for_api(api: impl Into<WireApi>, tool: &Tool) -> Result<(), SchemaError> {
    crate::tool::check_schema_depth(tool)?;
    // Normalized, so a `Custom` named like a built-in API gets that API's check.
    match WireApi::from(api.into().as_str()) {
        WireApi::AnthropicMessages => {
            anthropic::input_schema(&tool.name, &tool.parameters).map(drop)
        }
        WireApi::GoogleGenerativeAi | WireApi::GoogleVertex => {
            gemini::tool_parameters(tool).map(drop)
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_on_vertex_gets_gemini_s_check() {
        let tuple = Tool {
            name: "pair".into(),
            description: "A pair".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"p": {"type": "array", "prefixItems": [{"type": "string"}]}}
            }),
            constrained_sampling: None,
        };
        let refused: Vec<bool> = [
            "google-generative-ai",
            "google-vertex",
            "openai-completions",
            "my-custom-api",
        ]
        .into_iter()
        .map(|api| check_for_api(api, &tuple).is_err())
        .collect();
        assert_eq!(refused, vec![true, true, false, false]);
    }
}
