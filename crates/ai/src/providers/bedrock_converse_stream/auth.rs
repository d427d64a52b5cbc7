//! Where a Bedrock request goes and how it is authenticated, as pi resolves it:
//!
//! - Region: [`BedrockConverseStreamProvider::with_region`](super::BedrockConverseStreamProvider::with_region),
//!   else `AWS_REGION` / `AWS_DEFAULT_REGION`, else the region of a standard endpoint in the
//!   model's base URL, else (with `AWS_PROFILE`) the profile's region, else `us-east-1`.
//! - Endpoint: the model's base URL unless a region or profile is configured and the base URL is
//!   a standard `bedrock-runtime.<region>.amazonaws.com` one (then the configured region's).
//! - Authentication: a Bedrock API key ([`crate::StreamOptions::api_key`] or
//!   `AWS_BEARER_TOKEN_BEDROCK`) as `Authorization: Bearer`; else SigV4 (`aws-sigv4`) with
//!   credentials from AWS's default chain (`aws-config`: environment keys and session token,
//!   `AWS_PROFILE` and its files, web identity, container and instance credentials);
//!   `AWS_BEDROCK_SKIP_AUTH=1` sends neither (for proxies that sign themselves).

use std::time::SystemTime;

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;

/// The region of a standard Bedrock runtime endpoint (`bedrock-runtime[-fips].<region>.amazonaws.com[.cn]`).
pub fn endpoint_region(base_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(base_url.trim()).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    let rest = host
        .strip_prefix("bedrock-runtime-fips.")
        .or_else(|| host.strip_prefix("bedrock-runtime."))?;
    let region = rest
        .strip_suffix(".amazonaws.com.cn")
        .or_else(|| rest.strip_suffix(".amazonaws.com"))?;
    (!region.is_empty()
        && region
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-'))
    .then(|| region.to_string())
}

/// A resolved target: the model's own endpoint when it is used, and the signing region
/// (`None`: ask the profile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The model's endpoint (a VPC endpoint, a proxy, the catalogue's standard one when nothing
    /// else is configured); `None`: the standard endpoint of the final region.
    pub endpoint: Option<String>,
    /// The signing region, when known without reading the profile.
    pub region: Option<String>,
}

impl Target {
    /// The base URL for the final signing `region` (the profile's, when [`Target::region`] was
    /// `None`).
    pub fn base_url(&self, region: &str) -> String {
        self.endpoint
            .clone()
            .unwrap_or_else(|| format!("https://bedrock-runtime.{region}.amazonaws.com"))
    }
}

/// pi's rules (see the module docs); `configured` is the explicit or environment region,
/// `profile` whether `AWS_PROFILE` is set.
pub fn resolve_target(base_url: &str, configured: Option<&str>, profile: bool) -> Target {
    let base = base_url.trim().trim_end_matches('/');
    let endpoint = endpoint_region(base);
    let explicit = endpoint.is_none() || (configured.is_none() && !profile);
    let region = configured
        .map(str::to_string)
        .or_else(|| endpoint.clone().filter(|_| explicit))
        .or_else(|| (!profile).then(|| "us-east-1".to_string()));
    let endpoint = (explicit && !base.is_empty()).then(|| base.to_string());
    Target { endpoint, region }
}

/// AWS's default credentials chain for `region`.
pub async fn default_credentials(region: Option<String>) -> SharedCredentialsProvider {
    let mut builder = aws_config::default_provider::credentials::DefaultCredentialsChain::builder();
    if let Some(region) = region {
        builder = builder.region(aws_config::Region::new(region));
    }
    SharedCredentialsProvider::new(builder.build().await)
}

/// The region of the profile chain (`AWS_PROFILE`'s config), if any.
pub async fn profile_region() -> Option<String> {
    aws_config::default_provider::region::DefaultRegionChain::builder()
        .build()
        .region()
        .await
        .map(|r| r.to_string())
}

/// Credentials from `provider`, or an error naming the chain's complaint.
pub async fn credentials(provider: &SharedCredentialsProvider) -> Result<Credentials, String> {
    provider.provide_credentials().await.map_err(|e| {
        format!(
            "No AWS credentials for Bedrock ({}); set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK",
            crate::diagnostics::error_chain(&e)
        )
    })
}

/// The SigV4 headers (`authorization`, `x-amz-date`, `x-amz-security-token`) of a POST of
/// `body` to `url` with `headers` signed, for service `bedrock` in `region`, at `time`.
pub fn sigv4_headers(
    credentials: &Credentials,
    region: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    time: SystemTime,
) -> Result<Vec<(String, String)>, String> {
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("bedrock")
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("could not sign the Bedrock request: {e}"))?
        .into();
    let request = SignableRequest::new(
        "POST",
        url,
        headers.iter().copied(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| format!("could not sign the Bedrock request: {e}"))?;
    let (instructions, _) = sign(request, &params)
        .map_err(|e| format!("could not sign the Bedrock request: {e}"))?
        .into_parts();
    Ok(instructions
        .headers()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect())
}

#[cfg(test)]
mod doc_examples {
    #[test]
    fn endpoint_region_example() {
        use crate::providers::bedrock_converse_stream::auth::endpoint_region;
        assert_eq!(
            endpoint_region("https://bedrock-runtime.eu-central-1.amazonaws.com"),
            Some("eu-central-1".into())
        );
        assert_eq!(endpoint_region("https://proxy.example/bedrock"), None);
    }

    #[test]
    fn resolve_target_example() {
        use crate::providers::bedrock_converse_stream::auth::resolve_target;
        let catalogue = "https://bedrock-runtime.us-east-1.amazonaws.com";
        // Nothing configured: the catalogue's endpoint and its region.
        assert_eq!(
            resolve_target(catalogue, None, false).region.as_deref(),
            Some("us-east-1")
        );
        // AWS_REGION wins over the catalogue's region.
        let t = resolve_target(catalogue, Some("eu-west-1"), false);
        assert_eq!(
            (t.base_url("eu-west-1").as_str(), t.region.as_deref()),
            (
                "https://bedrock-runtime.eu-west-1.amazonaws.com",
                Some("eu-west-1")
            )
        );
        // With only AWS_PROFILE, the region comes from the profile and so does the endpoint.
        let t = resolve_target(catalogue, None, true);
        assert_eq!((t.endpoint.as_deref(), t.region.as_deref()), (None, None));
        assert_eq!(
            t.base_url("ap-south-1"),
            "https://bedrock-runtime.ap-south-1.amazonaws.com"
        );
        // A custom endpoint (VPC, proxy) is kept.
        assert_eq!(
            resolve_target("http://127.0.0.1:9", Some("eu-west-1"), false).base_url("eu-west-1"),
            "http://127.0.0.1:9"
        );
    }
}
