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
    /// The best total known: the provider's bill when `total_from_provider`, else the sum of
    /// the above.
    pub total: f64,
    /// `Some(true)` when `total` is what the provider billed (the parts may then not add up to
    /// it); `false` or absent for an estimate from the catalogue's prices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_from_provider: Option<bool>,
}

impl UsageCost {
    /// Multiplies every part by `factor` and recomputes the total (a service tier's price).
    pub fn scale(&mut self, factor: f64) {
        self.input *= factor;
        self.output *= factor;
        self.cache_read *= factor;
        self.cache_write *= factor;
        self.total = self.input + self.output + self.cache_read + self.cache_write;
    }
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
    /// The part of `cache_write` written with one-hour retention (Anthropic reports it).
    #[serde(rename = "cacheWrite1h", skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<u64>,
    /// Reasoning tokens, a part of `output`, when the provider reports them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    /// The request's total, as each API counts it:
    ///
    /// - `anthropic-messages`: input + output + cache read + cache write.
    /// - `openai-completions`: the prompt (cached tokens included) + the completion (reasoning
    ///   included), i.e. input + output + cache read.
    /// - `openai-responses`: the server's `total_tokens` (input, cached included, + output).
    /// - `google-generative-ai`: the server's `totalTokenCount`, which also counts tool-use
    ///   prompt tokens (code execution) that no other field holds, so it can exceed
    ///   input + output + cache read; the sum when the server sends no total.
    pub total_tokens: u64,
    /// Cost in US dollars.
    pub cost: UsageCost,
}
