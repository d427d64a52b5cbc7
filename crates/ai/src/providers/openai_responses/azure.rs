//! Azure OpenAI (`azure-openai-responses`): the Responses API on an Azure resource. Only the
//! endpoint and the authentication differ from OpenAI's, as pi's `azure-openai-responses`:
//!
//! - base URL: `AZURE_OPENAI_BASE_URL`, else `https://{AZURE_OPENAI_RESOURCE_NAME}.openai.azure.com/openai/v1`,
//!   else the model's `base_url`; an Azure host without a path gets `/openai/v1`;
//! - `POST {base}/responses?api-version={AZURE_OPENAI_API_VERSION, default v1}`;
//! - the body's `model` is the deployment: `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`
//!   (`model=deployment,…`) maps a model id to it, else the model id is the deployment name;
//! - the key goes in the `api-key` header, from [`crate::StreamOptions::api_key`] or
//!   `AZURE_OPENAI_API_KEY`.

use super::Endpoint;
use crate::types::model::{Model, API_AZURE_OPENAI_RESPONSES};

/// Characters escaped in a query value.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'&')
    .add(b'+')
    .add(b'<')
    .add(b'=')
    .add(b'>');

/// pi's default `api-version`.
pub const DEFAULT_API_VERSION: &str = "v1";

/// Where and as what an Azure request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AzureTarget {
    /// `https://…/openai/v1` (no trailing `/`).
    pub base_url: String,
    /// The `api-version` query value.
    pub api_version: String,
    /// The deployment name sent as the body's `model`.
    pub deployment: String,
}

impl AzureTarget {
    /// Resolves the target of `model` with `env` as the environment (the provider passes
    /// `std::env::var`; tests pass a map).
    pub fn resolve(model: &Model, env: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let env = |name: &str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let base = env("AZURE_OPENAI_BASE_URL")
            .or_else(|| {
                env("AZURE_OPENAI_RESOURCE_NAME")
                    .map(|name| format!("https://{name}.openai.azure.com/openai/v1"))
            })
            .or_else(|| Some(model.base_url.trim().to_string()).filter(|u| !u.is_empty()))
            .ok_or(
                "Azure OpenAI base URL is required: set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME, or the model's base_url",
            )?;
        let deployment = env("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")
            .and_then(|map| deployment_from_map(&map, &model.id))
            .unwrap_or_else(|| model.id.clone());
        Ok(Self {
            base_url: normalize_base_url(&base)?,
            api_version: env("AZURE_OPENAI_API_VERSION")
                .unwrap_or_else(|| DEFAULT_API_VERSION.to_string()),
            deployment,
        })
    }

    /// The request URL.
    pub fn url(&self) -> String {
        let version: String =
            percent_encoding::utf8_percent_encode(&self.api_version, QUERY_VALUE).collect();
        format!("{}/responses?api-version={version}", self.base_url)
    }
}

/// The deployment of `model_id` in a `model=deployment,…` list.
fn deployment_from_map(map: &str, model_id: &str) -> Option<String> {
    map.split(',').find_map(|entry| {
        let (model, deployment) = entry.trim().split_once('=')?;
        (model.trim() == model_id && !deployment.trim().is_empty())
            .then(|| deployment.trim().to_string())
    })
}

/// Trims the URL; an Azure host (`*.openai.azure.com`, `*.cognitiveservices.azure.com`) whose
/// path is empty or `/openai` gets `/openai/v1`, as pi does.
fn normalize_base_url(base: &str) -> Result<String, String> {
    let mut url = reqwest::Url::parse(base.trim().trim_end_matches('/'))
        .map_err(|e| format!("Invalid Azure OpenAI base URL {base:?}: {e}"))?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "Invalid Azure OpenAI base URL {base:?}: it may not have a query or fragment (api-version is added by oxpi)"
        ));
    }
    let azure = url.host_str().is_some_and(|host| {
        host.ends_with(".openai.azure.com") || host.ends_with(".cognitiveservices.azure.com")
    });
    let path = url.path().trim_end_matches('/').to_string();
    if azure && (path.is_empty() || path == "/openai") {
        url.set_path("/openai/v1");
        url.set_query(None);
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

http_provider!(
    /// The Azure OpenAI Responses provider. Cloning shares the HTTP connection pool.
    AzureOpenAiResponsesProvider,
    API_AZURE_OPENAI_RESPONSES,
    |model, context, options| super::prepare::prepare(Endpoint::Azure, model, context, options),
    |out, seed, model| super::decode::ResponsesDecoder::new(out, model, seed)
);

#[cfg(test)]
mod tests {
    use super::*;

    fn target(base: &str, env: &[(&str, &str)]) -> Result<AzureTarget, String> {
        let model = Model::openai_compatible(base, "gpt-4o");
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AzureTarget::resolve(&model, |name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn base_url_comes_from_env_then_resource_then_model() {
        let t = target(
            "https://model.example/v1",
            &[("AZURE_OPENAI_BASE_URL", "https://x.openai.azure.com")],
        )
        .unwrap();
        assert_eq!(t.base_url, "https://x.openai.azure.com/openai/v1");
        let t = target(
            "https://model.example/v1",
            &[("AZURE_OPENAI_RESOURCE_NAME", "res")],
        )
        .unwrap();
        assert_eq!(t.base_url, "https://res.openai.azure.com/openai/v1");
        let t = target("https://gw.example/azure/", &[]).unwrap();
        assert_eq!(t.base_url, "https://gw.example/azure");
        assert_eq!(
            target("https://r.cognitiveservices.azure.com/openai", &[])
                .unwrap()
                .base_url,
            "https://r.cognitiveservices.azure.com/openai/v1"
        );
        assert!(target("", &[])
            .unwrap_err()
            .contains("AZURE_OPENAI_BASE_URL"));
        assert!(target("not a url", &[])
            .unwrap_err()
            .contains("Invalid Azure OpenAI base URL"));
    }

    #[test]
    fn version_and_deployment() {
        let t = target(
            "https://r.openai.azure.com",
            &[
                ("AZURE_OPENAI_API_VERSION", "2025-04-01-preview"),
                (
                    "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
                    "gpt-5=a, gpt-4o = b ,bad",
                ),
            ],
        )
        .unwrap();
        assert_eq!(t.deployment, "b");
        assert_eq!(
            t.url(),
            "https://r.openai.azure.com/openai/v1/responses?api-version=2025-04-01-preview"
        );
        let t = target("https://r.openai.azure.com", &[]).unwrap();
        assert_eq!(
            (t.deployment.as_str(), t.api_version.as_str()),
            ("gpt-4o", "v1")
        );
    }
}

#[cfg(test)]
mod doc_examples {
    #[test]
    fn azure_target_resolve_example() {
        use crate::providers::openai_responses::azure::AzureTarget;
        let model = crate::Model::openai_compatible("", "gpt-5");
        let env = |name: &str| match name {
            "AZURE_OPENAI_RESOURCE_NAME" => Some("acme".to_string()),
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP" => Some("gpt-4o=prod-4o, gpt-5=prod-5".to_string()),
            _ => None,
        };
        let target = AzureTarget::resolve(&model, env).unwrap();
        assert_eq!(
            target.url(),
            "https://acme.openai.azure.com/openai/v1/responses?api-version=v1"
        );
        assert_eq!(target.deployment, "prod-5");
    }
}
