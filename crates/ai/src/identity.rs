//! Who a request says it comes from, as pi 1.6's `ClientIdentity`: the `User-Agent` header and
//! the attribution headers some providers read (OpenRouter's app title, URL and categories,
//! NVIDIA's invoke origin, OpenCode's client name). Which provider reads which headers is data
//! (`attribution` in `data/providers.json`), matched by provider name or by the host of the
//! request's base URL, so a custom provider pointing at OpenRouter gets OpenRouter's headers.
//!
//! The identity headers go below the model's, the provider's and the request's own headers: a
//! header set there wins.
//!
//! ```
//! use oxpi_ai::identity::{ClientAttribution, ClientIdentity, UserAgentMode};
//!
//! let app = ClientIdentity::default()
//!     .with_user_agent(UserAgentMode::Custom("my-app/2.0".into()))
//!     .with_attribution(ClientAttribution::new("My App", "https://my.app"));
//! let headers = app.headers("openrouter", "https://openrouter.ai/api/v1");
//! assert_eq!(
//!     headers,
//!     [
//!         ("User-Agent".to_string(), "my-app/2.0".to_string()),
//!         ("HTTP-Referer".to_string(), "https://my.app".to_string()),
//!         ("X-OpenRouter-Title".to_string(), "My App".to_string()),
//!     ]
//! );
//! // Attribution is off by default; the User-Agent is oxpi's.
//! let plain = ClientIdentity::default().headers("openrouter", "https://openrouter.ai/api/v1");
//! assert_eq!(plain.len(), 1);
//! assert!(plain[0].1.starts_with("oxpi/"));
//! ```

use serde::{Deserialize, Serialize};

use crate::provider_facts::{facts, Attribution, ProviderFacts};

/// The `User-Agent` sent to providers (pi's `UserAgentMode`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UserAgentMode {
    /// Just the product name: `oxpi`.
    Short,
    /// `oxpi/<version> (<os>; rust; <arch>)`.
    Detailed,
    /// The given value.
    Custom(String),
}

/// Who requests are attributed to (pi's `ClientAttribution`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClientAttribution {
    /// The app's name: OpenRouter's app title, NVIDIA's invoke origin (first letter upper-cased),
    /// OpenCode's client.
    pub name: String,
    /// The app's URL: OpenRouter's `HTTP-Referer`.
    pub url: String,
    /// The app's categories, e.g. `["cli-agent"]`: OpenRouter's `X-OpenRouter-Categories`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
}

impl ClientAttribution {
    /// An attribution with a name and a URL and no categories.
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            categories: Vec::new(),
        }
    }

    /// Sets the [`categories`](Self::categories).
    pub fn with_categories<S: Into<String>>(
        mut self,
        categories: impl IntoIterator<Item = S>,
    ) -> Self {
        self.categories = categories.into_iter().map(Into::into).collect();
        self
    }
}

/// How oxpi identifies the calling app to providers (pi's `ClientIdentity`). Every field is
/// optional; an absent one takes the default: a detailed `User-Agent` with oxpi-ai's version and
/// no attribution. [`merge`](Self::merge) layers identities field by field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClientIdentity {
    /// The `User-Agent` (default: [`UserAgentMode::Detailed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<UserAgentMode>,
    /// Attribution: `None` leaves it to the identity below, `Some(None)` turns it off (pi's
    /// `null`), `Some(Some(..))` sets it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "serde_with_null"
    )]
    pub attribution: Option<Option<ClientAttribution>>,
    /// The version in the detailed `User-Agent` (default: oxpi-ai's version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl ClientIdentity {
    /// Sets the [`user_agent`](Self::user_agent).
    pub fn with_user_agent(mut self, mode: UserAgentMode) -> Self {
        self.user_agent = Some(mode);
        self
    }

    /// Sets the [`attribution`](Self::attribution).
    pub fn with_attribution(mut self, attribution: ClientAttribution) -> Self {
        self.attribution = Some(Some(attribution));
        self
    }

    /// Turns attribution off, also over an identity that set it.
    pub fn without_attribution(mut self) -> Self {
        self.attribution = Some(None);
        self
    }

    /// Sets the [`version`](Self::version).
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// `self` with the fields `over` sets replacing its own (pi's `mergeClientIdentity`).
    pub fn merge(&self, over: &ClientIdentity) -> ClientIdentity {
        ClientIdentity {
            user_agent: over.user_agent.clone().or_else(|| self.user_agent.clone()),
            attribution: over
                .attribution
                .clone()
                .or_else(|| self.attribution.clone()),
            version: over.version.clone().or_else(|| self.version.clone()),
        }
    }

    /// The `User-Agent` value.
    pub fn user_agent_header(&self) -> String {
        match self.user_agent.as_ref().unwrap_or(&UserAgentMode::Detailed) {
            UserAgentMode::Custom(value) => value.clone(),
            UserAgentMode::Short => "oxpi".into(),
            UserAgentMode::Detailed => format!(
                "oxpi/{} ({}; rust; {})",
                self.version.as_deref().unwrap_or(env!("CARGO_PKG_VERSION")),
                std::env::consts::OS,
                std::env::consts::ARCH
            ),
        }
    }

    /// The attribution headers for a request to `provider` at `base_url`; none when attribution
    /// is off or the target reads none.
    pub fn attribution_headers(&self, provider: &str, base_url: &str) -> Vec<(String, String)> {
        let Some(Some(app)) = &self.attribution else {
            return Vec::new();
        };
        let pair = |name: &str, value: String| (name.to_string(), value);
        match attribution_style(provider, base_url) {
            Some(Attribution::Openrouter) => {
                let mut headers = vec![
                    pair("HTTP-Referer", app.url.clone()),
                    pair("X-OpenRouter-Title", app.name.clone()),
                ];
                if !app.categories.is_empty() {
                    headers.push(pair("X-OpenRouter-Categories", app.categories.join(",")));
                }
                headers
            }
            Some(Attribution::Nvidia) => {
                let mut chars = app.name.chars();
                let origin = chars
                    .next()
                    .map(|first| first.to_uppercase().chain(chars).collect())
                    .unwrap_or_default();
                vec![pair("X-BILLING-INVOKE-ORIGIN", origin)]
            }
            Some(Attribution::Opencode) => vec![pair("x-opencode-client", app.name.clone())],
            None => Vec::new(),
        }
    }

    /// Every header this identity adds to a request: `User-Agent`, then the attribution headers
    /// (pi's `getIdentityHeaders`).
    pub fn headers(&self, provider: &str, base_url: &str) -> Vec<(String, String)> {
        let mut headers = vec![("User-Agent".to_string(), self.user_agent_header())];
        headers.extend(self.attribution_headers(provider, base_url));
        headers
    }
}

/// The attribution headers a target reads: the provider's own row, else the row whose
/// catalogue base URL has the same host as `base_url`.
fn attribution_style(provider: &str, base_url: &str) -> Option<Attribution> {
    if let Some(style) = facts(provider).and_then(|f| f.attribution) {
        return Some(style);
    }
    let host = host_of(base_url)?;
    crate::provider_facts::all()
        .iter()
        .filter_map(|(name, f): (&String, &ProviderFacts)| Some((name, f.attribution?)))
        .find(|(name, _)| {
            crate::models::provider_base_url(name)
                .and_then(host_of)
                .is_some_and(|h| h.eq_ignore_ascii_case(host))
        })
        .map(|(_, style)| style)
}

/// The host of a URL (`https://user@host:port/path` → `host`), or `None` when it has none.
fn host_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.0,
        None => host_port.split(':').next()?,
    };
    (!host.is_empty()).then_some(host)
}

/// serde for `Option<Option<T>>` where JSON `null` is `Some(None)` and an absent field `None`.
mod serde_with_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(
        value: &Option<Option<T>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => inner.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> ClientAttribution {
        ClientAttribution::new("pi", "https://pi.dev").with_categories(["cli-agent"])
    }

    #[test]
    fn each_service_gets_its_own_attribution_headers() {
        let id = ClientIdentity::default().with_attribution(app());
        let pairs = |provider: &str, url: &str| id.attribution_headers(provider, url);
        let owned = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            pairs("openrouter", "https://openrouter.ai/api/v1"),
            owned(&[
                ("HTTP-Referer", "https://pi.dev"),
                ("X-OpenRouter-Title", "pi"),
                ("X-OpenRouter-Categories", "cli-agent"),
            ])
        );
        assert_eq!(
            pairs("nvidia", "https://integrate.api.nvidia.com/v1"),
            owned(&[("X-BILLING-INVOKE-ORIGIN", "Pi")])
        );
        assert_eq!(
            pairs("opencode", "https://opencode.ai/zen/v1"),
            owned(&[("x-opencode-client", "pi")])
        );
        // A custom provider is matched by the host it points at.
        assert_eq!(
            pairs("my-router", "https://openrouter.ai/api/v1").len(),
            3,
            "a custom provider at openrouter.ai"
        );
        assert_eq!(pairs("openai", "https://api.openai.com/v1"), Vec::new());
        assert_eq!(pairs("my-server", "http://127.0.0.1:8080/v1"), Vec::new());
    }

    #[test]
    fn identities_merge_field_by_field_and_null_turns_attribution_off() {
        let base = ClientIdentity::default().with_attribution(app());
        let over = ClientIdentity::default().with_user_agent(UserAgentMode::Short);
        let merged = base.merge(&over);
        assert_eq!(merged.user_agent, Some(UserAgentMode::Short));
        assert_eq!(merged.attribution, Some(Some(app())));
        let off = merged.merge(&ClientIdentity::default().without_attribution());
        assert_eq!(off.attribution, Some(None));
        assert_eq!(
            off.attribution_headers("openrouter", "https://openrouter.ai/api/v1"),
            Vec::new()
        );
        assert_eq!(off.user_agent_header(), "oxpi");
    }

    #[test]
    fn identity_json_is_pis() {
        let json = serde_json::json!({
            "userAgent": {"custom": "x/1"},
            "attribution": null,
            "version": "9.9.9"
        });
        let id: ClientIdentity = serde_json::from_value(json.clone()).expect("parses");
        assert_eq!(
            id,
            ClientIdentity::default()
                .with_user_agent(UserAgentMode::Custom("x/1".into()))
                .without_attribution()
                .with_version("9.9.9")
        );
        assert_eq!(serde_json::to_value(&id).expect("json"), json);
        let detailed: ClientIdentity =
            serde_json::from_value(serde_json::json!({"userAgent": "detailed", "version": "2.0"}))
                .expect("parses");
        assert_eq!(
            detailed.user_agent_header(),
            format!(
                "oxpi/2.0 ({}; rust; {})",
                std::env::consts::OS,
                std::env::consts::ARCH
            )
        );
    }

    #[test]
    fn hosts_are_read_from_urls() {
        assert_eq!(
            host_of("https://openrouter.ai/api/v1"),
            Some("openrouter.ai")
        );
        assert_eq!(host_of("http://u:p@127.0.0.1:80/x"), Some("127.0.0.1"));
        assert_eq!(host_of("http://[::1]:8080/"), Some("::1"));
        assert_eq!(host_of("not a url"), None);
        assert_eq!(host_of("http:///path"), None);
    }
}
