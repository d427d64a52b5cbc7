//! [`WireApi`]: which request/stream format a model speaks (`model.api`), as a type. It reads
//! and writes pi's strings (`"openai-completions"`, …); any other string is a
//! [`Custom`](WireApi::Custom) API, served by a provider registered for it.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A wire API. Compares, hashes and orders by its name, so `WireApi::from("faux")` and
/// [`WireApi::Faux`] are the same value, and it compares with strings:
///
/// ```
/// use oxpi_ai::WireApi;
///
/// let api = WireApi::from("anthropic-messages");
/// assert_eq!(api, WireApi::AnthropicMessages);
/// assert_eq!(api, "anthropic-messages");
/// assert_eq!(serde_json::to_string(&api).unwrap(), "\"anthropic-messages\"");
///
/// let custom: WireApi = serde_json::from_str("\"my-echo\"").unwrap();
/// assert_eq!(custom, WireApi::Custom("my-echo".into()));
/// assert!(!custom.is_builtin());
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum WireApi {
    /// OpenAI Chat Completions and compatible servers (`openai-completions`).
    OpenAiCompletions,
    /// OpenAI Responses (`openai-responses`).
    OpenAiResponses,
    /// The Responses API on Azure OpenAI (`azure-openai-responses`).
    AzureOpenAiResponses,
    /// The Responses API of the ChatGPT (Codex) backend, over a ChatGPT login
    /// (`openai-codex-responses`).
    OpenAiCodexResponses,
    /// Anthropic Messages (`anthropic-messages`).
    AnthropicMessages,
    /// Mistral's chat API (`mistral-conversations`).
    MistralConversations,
    /// Google Gemini (`google-generative-ai`).
    GoogleGenerativeAi,
    /// Gemini on Google Vertex AI (`google-vertex`).
    GoogleVertex,
    /// Amazon Bedrock's ConverseStream (`bedrock-converse-stream`).
    BedrockConverseStream,
    /// The scripted test provider (`faux`).
    Faux,
    /// Any other API: a custom provider's, or one a later pi added.
    Custom(String),
}

const BUILTIN: [(WireApi, &str); 10] = [
    (WireApi::OpenAiCompletions, "openai-completions"),
    (WireApi::OpenAiResponses, "openai-responses"),
    (WireApi::AzureOpenAiResponses, "azure-openai-responses"),
    (WireApi::OpenAiCodexResponses, "openai-codex-responses"),
    (WireApi::AnthropicMessages, "anthropic-messages"),
    (WireApi::MistralConversations, "mistral-conversations"),
    (WireApi::GoogleGenerativeAi, "google-generative-ai"),
    (WireApi::GoogleVertex, "google-vertex"),
    (WireApi::BedrockConverseStream, "bedrock-converse-stream"),
    (WireApi::Faux, "faux"),
];

impl WireApi {
    /// pi's name of the API.
    pub fn as_str(&self) -> &str {
        match self {
            Self::OpenAiCompletions => "openai-completions",
            Self::OpenAiResponses => "openai-responses",
            Self::AzureOpenAiResponses => "azure-openai-responses",
            Self::OpenAiCodexResponses => "openai-codex-responses",
            Self::AnthropicMessages => "anthropic-messages",
            Self::MistralConversations => "mistral-conversations",
            Self::GoogleGenerativeAi => "google-generative-ai",
            Self::GoogleVertex => "google-vertex",
            Self::BedrockConverseStream => "bedrock-converse-stream",
            Self::Faux => "faux",
            Self::Custom(name) => name,
        }
    }

    /// Whether oxpi-ai has a provider for it built in.
    pub fn is_builtin(&self) -> bool {
        BUILTIN.iter().any(|(_, name)| *name == self.as_str())
    }

    /// The `accept` header pi's client for this API sends: JSON for the OpenAI and Anthropic
    /// SDKs (even for a stream), the event stream for Mistral's; `None` where it sends fetch's
    /// default (`*/*`, as reqwest does).
    pub fn accept_header(&self) -> Option<&'static str> {
        match self {
            Self::OpenAiCompletions
            | Self::OpenAiResponses
            | Self::AzureOpenAiResponses
            | Self::AnthropicMessages => Some("application/json"),
            Self::MistralConversations | Self::OpenAiCodexResponses => Some("text/event-stream"),
            Self::GoogleGenerativeAi
            | Self::GoogleVertex
            | Self::BedrockConverseStream
            | Self::Faux
            | Self::Custom(_) => None,
        }
    }

    /// Every built-in API, in a fixed order.
    pub fn builtins() -> impl Iterator<Item = WireApi> {
        BUILTIN.iter().map(|(api, _)| api.clone())
    }
}

impl From<&str> for WireApi {
    fn from(name: &str) -> Self {
        BUILTIN
            .iter()
            .find(|(_, known)| *known == name)
            .map_or_else(|| Self::Custom(name.to_string()), |(api, _)| api.clone())
    }
}

impl From<String> for WireApi {
    fn from(name: String) -> Self {
        match Self::from(name.as_str()) {
            Self::Custom(_) => Self::Custom(name),
            known => known,
        }
    }
}

impl From<&String> for WireApi {
    fn from(name: &String) -> Self {
        Self::from(name.as_str())
    }
}

impl From<&WireApi> for WireApi {
    fn from(api: &WireApi) -> Self {
        api.clone()
    }
}

impl std::str::FromStr for WireApi {
    type Err = std::convert::Infallible;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Ok(Self::from(name))
    }
}

impl From<WireApi> for String {
    fn from(api: WireApi) -> Self {
        match api {
            WireApi::Custom(name) => name,
            known => known.as_str().to_string(),
        }
    }
}

impl From<&WireApi> for String {
    fn from(api: &WireApi) -> Self {
        api.as_str().to_string()
    }
}

impl fmt::Display for WireApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for WireApi {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for WireApi {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for WireApi {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for WireApi {}

impl Hash for WireApi {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for WireApi {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for WireApi {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialEq<str> for WireApi {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for WireApi {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for WireApi {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<WireApi> for String {
    fn eq(&self, other: &WireApi) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<WireApi> for &str {
    fn eq(&self, other: &WireApi) -> bool {
        *self == other.as_str()
    }
}

impl Serialize for WireApi {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for WireApi {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_reads_back_from_its_name() {
        for api in WireApi::builtins() {
            let read = WireApi::from(api.as_str());
            assert!(!matches!(read, WireApi::Custom(_)), "{api}");
            assert_eq!(read, api);
        }
        assert_eq!(WireApi::builtins().count(), BUILTIN.len());
    }

    /// Exhaustive (no wildcard): a new variant does not compile until it is listed here, and
    /// then fails until it is in the name table too.
    fn listed(api: &WireApi) -> bool {
        match api {
            WireApi::OpenAiCompletions
            | WireApi::OpenAiResponses
            | WireApi::AzureOpenAiResponses
            | WireApi::OpenAiCodexResponses
            | WireApi::AnthropicMessages
            | WireApi::MistralConversations
            | WireApi::GoogleGenerativeAi
            | WireApi::GoogleVertex
            | WireApi::BedrockConverseStream
            | WireApi::Faux => true,
            WireApi::Custom(_) => false,
        }
    }

    #[test]
    fn every_variant_is_in_the_name_table() {
        let variants = [
            WireApi::OpenAiCompletions,
            WireApi::OpenAiResponses,
            WireApi::AzureOpenAiResponses,
            WireApi::OpenAiCodexResponses,
            WireApi::AnthropicMessages,
            WireApi::MistralConversations,
            WireApi::GoogleGenerativeAi,
            WireApi::GoogleVertex,
            WireApi::BedrockConverseStream,
            WireApi::Faux,
        ];
        for api in &variants {
            assert!(listed(api));
            assert!(api.is_builtin(), "{api} is missing from BUILTIN");
            assert!(!matches!(WireApi::from(api.as_str()), WireApi::Custom(_)));
        }
        assert_eq!(variants.len(), BUILTIN.len());
    }

    #[test]
    fn a_custom_api_named_like_a_builtin_is_that_builtin() {
        let custom = WireApi::Custom("faux".into());
        assert_eq!(custom, WireApi::Faux);
        let mut set = std::collections::HashSet::new();
        set.insert(custom);
        assert!(set.contains("faux"));
        assert!(set.contains(&WireApi::Faux));
    }
}
