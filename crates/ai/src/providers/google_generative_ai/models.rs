//! The Gemini models of the `google` provider, from the catalogue ([`crate::models`]).

use crate::types::model::{Model, API_GOOGLE_GENERATIVE_AI};

/// Every catalogue model of the `google` provider (api `google-generative-ai`).
///
/// ```
/// let models = oxpi_ai::providers::google_generative_ai::models::builtin();
/// let flash = models.iter().find(|m| m.id == "gemini-2.5-flash").unwrap();
/// assert_eq!(flash.api, "google-generative-ai");
/// assert_eq!((flash.cost.input, flash.cost.output), (0.30, 2.50));
/// ```
pub fn builtin() -> Vec<Model> {
    crate::models::models("google")
        .into_iter()
        .filter(|m| m.api == API_GOOGLE_GENERATIVE_AI)
        .collect()
}
