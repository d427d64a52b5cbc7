//! Models: what a provider serves, where, and at what price.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::thinking::{supported_thinking_levels, ThinkingLevel};
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
/// pi's own protocol (`pi-messages`): a POST of `{model, context, options}`, an SSE stream of
/// serialized events back.
pub const API_PI_MESSAGES: &str = "pi-messages";
/// OpenAI Codex over a ChatGPT login (`openai-codex-responses`); oxpi does not do that login.
pub const API_OPENAI_CODEX_RESPONSES: &str = "openai-codex-responses";

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
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
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
    /// Prices for requests above an input size (pi 1.6's `tiers`): the tier with the highest
    /// `input_tokens_above` that the request's input exceeds prices the whole request.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<CostTier>,
}

/// A price tier of [`ModelCost`]: prices per million tokens for a request whose input (cache
/// reads and writes included) is more than `input_tokens_above` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct CostTier {
    /// The input size above which the tier applies.
    pub input_tokens_above: u64,
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// Cache writes.
    pub cache_write: f64,
}

impl CostTier {
    /// A tier above `input_tokens_above` input tokens with these prices per million tokens.
    pub fn new(input_tokens_above: u64, input: f64, output: f64, read: f64, write: f64) -> Self {
        Self {
            input_tokens_above,
            input,
            output,
            cache_read: read,
            cache_write: write,
        }
    }
}

/// How images are shrunk before they are sent (pi's `inputLimits.images.resize`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct ImageResize {
    /// Widest image, in pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_width: Option<u64>,
    /// Tallest image, in pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_height: Option<u64>,
    /// Largest image, in base64 bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// JPEG quality of a re-encoded image, 1–100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jpeg_quality: Option<u64>,
}

/// Limits on a request's images (pi's `inputLimits.images`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct ImageLimits {
    /// How images are shrunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resize: Option<ImageResize>,
    /// Most images in one message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_per_message: Option<u64>,
    /// Most images in one request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_per_request: Option<u64>,
}

/// What a model's server accepts in one request (pi 1.6's `inputLimits`). oxpi reads and keeps
/// them; like pi it does not reject a request on them yet.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct InputLimits {
    /// Largest request body, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_request_bytes: Option<u64>,
    /// Limits on images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<ImageLimits>,
}

/// How long the server keeps a prompt cached per retention tier, in seconds (pi 1.6's
/// `promptCache`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct PromptCache {
    /// Lifetime of the short tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short: Option<f64>,
    /// Lifetime of the long tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long: Option<f64>,
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
    /// pi 1.6's model kind: `"chat"` for every model here (absent means chat too).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<String>,
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
    /// What the server accepts in one request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_limits: Option<InputLimits>,
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
    /// Prompt cache lifetimes per retention tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<PromptCache>,
    /// Sampling parameters merged into the request body (`temperature`, `top_p`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_params: Option<Map<String, Value>>,
    /// Sampling parameters per (clamped) thinking level, over `sampling_params`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_params_by_thinking_level: Option<BTreeMap<ThinkingLevel, Map<String, Value>>>,
    /// Fields of pi's JSON that oxpi does not model (a pi gateway's `lab`, `enabled`,
    /// `providers`, `free`), kept so a model serializes back unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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
            model_type: None,
            name: id.clone(),
            id,
            api: WireApi::OpenAiCompletions,
            provider: "openai-compatible".to_string(),
            base_url: base_url.into().trim_end_matches('/').to_string(),
            reasoning: false,
            input: text_only(),
            input_limits: None,
            cost: ModelCost::default(),
            context_window: 128_000,
            max_tokens: 4096,
            headers: BTreeMap::new(),
            compat: None,
            thinking_level_map: None,
            prompt_cache: None,
            sampling_params: None,
            sampling_params_by_thinking_level: None,
            extra: Map::new(),
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

    /// Whether the model takes `level` (pi's `getSupportedThinkingLevels`, which replaced
    /// `supportsXhigh`).
    pub fn supports_thinking_level(&self, level: ThinkingLevel) -> bool {
        supported_thinking_levels(self).contains(&level)
    }

    /// Fills in `usage.cost` from this model's prices and returns it (pi 1.6's
    /// `calculateCost`): the prices of the highest tier whose `input_tokens_above` the input
    /// (cache reads and writes included) exceeds, else the base prices; one-hour cache writes
    /// (`cache_write_1h`) at twice the input price; `total_from_provider` false.
    pub fn calculate_cost(&self, usage: &mut Usage) -> UsageCost {
        let input_tokens = usage
            .input
            .saturating_add(usage.cache_read)
            .saturating_add(usage.cache_write);
        let base = CostTier::new(
            0,
            self.cost.input,
            self.cost.output,
            self.cost.cache_read,
            self.cost.cache_write,
        );
        let rates = self
            .cost
            .tiers
            .iter()
            .filter(|tier| input_tokens > tier.input_tokens_above)
            .max_by_key(|tier| tier.input_tokens_above)
            .unwrap_or(&base);
        let long_write = usage.cache_write_1h.unwrap_or(0).min(usage.cache_write);
        let short_write = usage.cache_write - long_write;
        let per = |tokens: u64, price: f64| price / 1_000_000.0 * tokens as f64;
        let mut cost = UsageCost {
            input: per(usage.input, rates.input),
            output: per(usage.output, rates.output),
            cache_read: per(usage.cache_read, rates.cache_read),
            cache_write: (rates.cache_write * short_write as f64
                + rates.input * 2.0 * long_write as f64)
                / 1_000_000.0,
            total: 0.0,
            total_from_provider: Some(false),
        };
        cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write;
        usage.cost = cost;
        cost
    }
}
