//! The models of the `openai` provider, from the catalogue ([`crate::models`]).

use crate::types::model::{Model, API_OPENAI_RESPONSES};

/// Every catalogue model of the `openai` provider (pi lists them all on the Responses API).
///
/// ```
/// let model = oxpi_ai::models::get_model("openai", "gpt-5-mini").unwrap();
/// assert_eq!(model.api, oxpi_ai::API_OPENAI_RESPONSES);
/// assert_eq!(model.base_url, "https://api.openai.com/v1");
/// ```
pub fn builtin() -> Vec<Model> {
    crate::models::models("openai")
        .into_iter()
        .filter(|m| m.api == API_OPENAI_RESPONSES)
        .collect()
}
