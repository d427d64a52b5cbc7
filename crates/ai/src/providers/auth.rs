//! API keys and authentication headers: the environment variables that hold each provider's
//! key (pi's `getEnvApiKey`), the key a request uses, and Cloudflare's AI Gateway header.

use reqwest::header::HeaderName;

use crate::options::{ApiKey, StreamOptions};

/// The environment variables that hold a provider's API key, in the order they are tried: pi's
/// `getEnvApiKey` (0.73.1, with the providers pi 1.6 added). Anthropic's OAuth tokens and
/// Bedrock's AWS credentials are not keys oxpi can send; see the README's provider table.
pub fn api_key_env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "openai" => &["OPENAI_API_KEY"],
        "anthropic" => &["ANTHROPIC_API_KEY"],
        "azure-openai-responses" | "azure" => &["AZURE_OPENAI_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "google" => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "zai-coding-cn" => &["ZAI_CODING_CN_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "github-copilot" => &["COPILOT_GITHUB_TOKEN"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        "nvidia" => &["NVIDIA_API_KEY"],
        "baseten" => &["BASETEN_API_KEY"],
        "meta" => &["META_API_KEY"],
        "ant-ling" => &["ANT_LING_API_KEY"],
        "typesafe" => &["TYPESAFE_API_KEY"],
        "radius" => &["RADIUS_API_KEY"],
        "qwen-token-plan" => &["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"],
        "qwen-token-plan-cn" => &[
            "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "qwen-token-plan-individual" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
            "QWEN_TOKEN_PLAN_API_KEY",
        ],
        "qwen-token-plan-individual-cn" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        _ => &[],
    }
}

/// The key from `options`, else from the provider's environment variables.
pub fn resolve_api_key(provider: &str, options: &StreamOptions) -> Option<ApiKey> {
    if let Some(key) = &options.api_key {
        return Some(key.clone());
    }
    api_key_env_vars(provider)
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()))
        .map(ApiKey::new)
}

/// The API key for a request: from `options` or the provider's variables. A provider that has
/// key variables needs one (the error names them); others (local servers) may go without.
pub fn required_api_key(provider: &str, options: &StreamOptions) -> Result<Option<ApiKey>, String> {
    let key = resolve_api_key(provider, options);
    let env_vars = api_key_env_vars(provider);
    if key.is_none() && !env_vars.is_empty() {
        return Err(format!(
            "No API key for provider {provider}: set {} or pass StreamOptions::api_key",
            env_vars.join(" or ")
        ));
    }
    Ok(key)
}

/// An environment variable's value, trimmed; `None` when it is unset or blank.
pub fn env_value(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The provider whose gateway takes the key in its own header.
pub const CLOUDFLARE_AI_GATEWAY: &str = "cloudflare-ai-gateway";

/// The authentication header of a request: Cloudflare's AI Gateway takes the key as
/// `cf-aig-authorization: Bearer …` (as pi sends it) in place of the API's own header; every
/// other provider gets `default`.
pub fn auth_header(
    provider: &str,
    key: &ApiKey,
    default: impl FnOnce(&ApiKey) -> (HeaderName, String),
) -> (HeaderName, String) {
    if provider == CLOUDFLARE_AI_GATEWAY {
        (
            HeaderName::from_static("cf-aig-authorization"),
            format!("Bearer {}", key.expose()),
        )
    } else {
        default(key)
    }
}
