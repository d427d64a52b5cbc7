//! Models: what a provider serves, where, and at what price.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::usage::{Usage, UsageCost};
use super::wire_api::WireApi;

/// Wire API name of OpenAI Chat Completions and compatible servers.
pub const API_OPENAI_COMPLETIONS: &str = "openai-completions";
/// Wire API name of Anthropic Messages.
pub const API_ANTHROPIC_MESSAGES: &str = "anthropic-messages";
/// Wire API name of OpenAI Responses (also xAI).
pub const API_OPENAI_RESPONSES: &str = "openai-responses";
/// Wire API name of the Responses API on Azure OpenAI.
pub const API_AZURE_OPENAI_RESPONSES: &str = "azure-openai-responses";
/// Wire API name of Mistral's chat API.
pub const API_MISTRAL_CONVERSATIONS: &str = "mistral-conversations";
/// Wire API name of Google Gemini.
pub const API_GOOGLE_GENERATIVE_AI: &str = "google-generative-ai";
/// Wire API name of Amazon Bedrock's ConverseStream.
pub const API_BEDROCK_CONVERSE_STREAM: &str = "bedrock-converse-stream";
/// Wire API name of Gemini on Google Vertex AI.
pub const API_GOOGLE_VERTEX: &str = "google-vertex";
/// Wire API name of the deterministic test provider.
pub const API_FAUX: &str = "faux";

/// Kinds of input a model accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// Text.
    Text,
    /// Images.
    Image,
}

/// Price in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct ModelCost {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// Cache writes.
    pub cache_write: f64,
}

impl ModelCost {
    /// Prices per million input and output tokens; cache reads and writes cost nothing until
    /// set.
    ///
    /// ```
    /// let cost = oxpi_ai::ModelCost::new(3.0, 15.0).with_cache(0.3, 3.75);
    /// assert_eq!((cost.input, cost.cache_write), (3.0, 3.75));
    /// ```
    pub fn new(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            ..Self::default()
        }
    }

    /// Sets the prices of cache reads and cache writes per million tokens.
    pub fn with_cache(mut self, read: f64, write: f64) -> Self {
        self.cache_read = read;
        self.cache_write = write;
        self
    }
}

/// A model on a provider: its wire API, endpoint, abilities, limits and prices.
///
/// `#[non_exhaustive]`, so a new field does not break users: get one from the catalogue, from
/// pi's JSON (serde), or from [`Model::openai_compatible`], then set its public fields.
///
/// ```
/// let mut model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
/// model.reasoning = true;
/// model.context_window = 32_768;
/// assert_eq!(model.provider, "openai-compatible");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Model {
    /// Model id sent to the provider.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// Wire API used to talk to it, e.g. [`WireApi::OpenAiCompletions`] (pi's
    /// `"openai-completions"` in JSON).
    pub api: WireApi,
    /// Provider name, e.g. `openai`; also selects the API key variable.
    pub provider: String,
    /// Base URL of the API, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Whether the model supports reasoning.
    #[serde(default)]
    pub reasoning: bool,
    /// Accepted inputs.
    #[serde(default = "text_only")]
    pub input: Vec<InputKind>,
    /// Prices per million tokens.
    #[serde(default)]
    pub cost: ModelCost,
    /// Context window in tokens.
    #[serde(default)]
    pub context_window: u64,
    /// Maximum output tokens.
    #[serde(default)]
    pub max_tokens: u64,
    /// Extra HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Provider-specific compatibility overrides (see each provider's docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Value>,
    /// pi's `thinkingLevelMap`: the wire value of each reasoning level (`"xhigh": "max"`), or
    /// `null` for a level the model does not take (`"off": null`: reasoning cannot be turned
    /// off). `xhigh` is supported only when listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<BTreeMap<String, Option<String>>>,
}

fn text_only() -> Vec<InputKind> {
    vec![InputKind::Text]
}

impl Model {
    /// A model on any OpenAI-compatible Chat Completions server (llama.cpp, Ollama, vLLM, …).
    ///
    /// ```
    /// let model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:8080/v1", "qwen");
    /// assert_eq!(model.api, "openai-completions");
    /// ```
    pub fn openai_compatible(base_url: impl Into<String>, id: impl Into<String>) -> Self {
        let id = id.into();
        Self {
            name: id.clone(),
            id,
            api: WireApi::OpenAiCompletions,
            provider: "openai-compatible".to_string(),
            base_url: base_url.into().trim_end_matches('/').to_string(),
            reasoning: false,
            input: text_only(),
            cost: ModelCost::default(),
            context_window: 128_000,
            max_tokens: 4096,
            headers: BTreeMap::new(),
            compat: None,
            thinking_level_map: None,
        }
    }

    /// The wire value for a reasoning level: the model's `thinking_level_map` entry when it has
    /// one, else the level's own name. `None` when the map says the model does not take it.
    pub fn thinking_level_value(&self, level: &str) -> Option<String> {
        match self.thinking_level_map.as_ref().and_then(|m| m.get(level)) {
            Some(Some(value)) => Some(value.clone()),
            Some(None) => None,
            None => Some(level.to_string()),
        }
    }

    /// Whether the model lists `xhigh` in its `thinking_level_map` (pi's rule for `xhigh`).
    pub fn supports_xhigh(&self) -> bool {
        self.thinking_level_map
            .as_ref()
            .and_then(|m| m.get("xhigh"))
            .is_some_and(Option::is_some)
    }

    /// Fills in `usage.cost` from this model's prices and returns it.
    pub fn calculate_cost(&self, usage: &mut Usage) -> UsageCost {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        let mut cost = UsageCost {
            input: per(usage.input, self.cost.input),
            output: per(usage.output, self.cost.output),
            cache_read: per(usage.cache_read, self.cost.cache_read),
            cache_write: per(usage.cache_write, self.cost.cache_write),
            total: 0.0,
            total_from_provider: None,
        };
        cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write;
        usage.cost = cost;
        cost
    }
}
