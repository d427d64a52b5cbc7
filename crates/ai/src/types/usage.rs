//! Token usage and its cost.

use serde::{Deserialize, Serialize};

/// Cost in US dollars, split like [`Usage`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UsageCost {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// Cache writes.
    pub cache_write: f64,
    /// Sum of the above.
    pub total: f64,
}

/// Tokens used by one request, and what they cost.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    /// Input tokens not read from cache.
    pub input: u64,
    /// Output tokens (including reasoning).
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// All of the above.
    pub total_tokens: u64,
    /// Cost in US dollars.
    pub cost: UsageCost,
}
