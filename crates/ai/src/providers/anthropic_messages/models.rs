//! The Claude models of the `anthropic` provider, from the catalogue ([`crate::models`]).

use crate::types::model::{Model, API_ANTHROPIC_MESSAGES};

/// Every catalogue model of the `anthropic` provider (api `anthropic-messages`). Other providers
/// that speak this API (Fireworks, MiniMax, Kimi, Vercel's gateway, …) are in
/// [`crate::models::models`] under their own names.
///
/// ```
/// let models = oxpi_ai::providers::anthropic_messages::models::builtin();
/// let sonnet = models.iter().find(|m| m.id == "claude-sonnet-4-5").unwrap();
/// assert_eq!((sonnet.cost.input, sonnet.cost.cache_write), (3.0, 3.75));
/// assert_eq!(sonnet.base_url, "https://api.anthropic.com");
/// ```
pub fn builtin() -> Vec<Model> {
    crate::models::models("anthropic")
        .into_iter()
        .filter(|m| m.api == API_ANTHROPIC_MESSAGES)
        .collect()
}
