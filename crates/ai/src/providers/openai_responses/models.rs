//! Built-in models of the Responses API: none of its own.

use crate::types::model::Model;

/// No built-in models: OpenAI's models are listed once, under `openai-completions`
/// ([`crate::models`]). To use one through the Responses API, switch its wire API:
///
/// ```
/// let mut model = oxpi_ai::models::get_model("openai", "gpt-5-mini").unwrap();
/// model.api = oxpi_ai::API_OPENAI_RESPONSES.to_string();
/// assert_eq!(model.base_url, "https://api.openai.com/v1");
/// ```
///
/// The same works for xAI (`provider: "xai"`, base URL `https://api.x.ai/v1`).
pub fn builtin() -> Vec<Model> {
    Vec::new()
}
