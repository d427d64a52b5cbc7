//! Messages: system, user, assistant and tool result, in pi-ai 1.6's JSON shape, and the
//! app-defined kinds of an agent's transcript ([`CustomMessage`]).

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

pub use super::custom::{CustomMessage, CustomMessageError, LLM_ROLES};

use super::content::{AssistantContent, ToolCall, UserContent};
use super::record::{AssistantMessageDiagnostic, DeferredHandle, NestedToolCalls};
use super::system::SystemMessage;
use super::thinking::ThinkingLevel;
use super::usage::Usage;
use crate::failure::FailureKind;

/// Milliseconds since the Unix epoch, the timestamp unit of every message.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Why an assistant message ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The reply is still streaming: the stop reason of every partial message.
    Pending,
    /// The model finished its reply.
    #[default]
    Stop,
    /// The output token limit was reached.
    Length,
    /// The model asked for tools.
    ToolUse,
    /// The request or stream failed; see `error_message`.
    Error,
    /// The caller cancelled the request.
    Aborted,
    /// The reply will be fetched later; see `deferred`.
    Deferred,
}

/// User content: a plain string or a list of text and image blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserMessageContent {
    /// A plain string.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<UserContent>),
}

/// A message from the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// The content.
    pub content: UserMessageContent,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: i64,
}

impl UserMessage {
    /// A text message stamped now.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: UserMessageContent::Text(text.into()),
            timestamp: now_millis(),
        }
    }

    /// All text of the message, blocks joined with newlines.
    pub fn text_content(&self) -> String {
        match &self.content {
            UserMessageContent::Text(t) => t.clone(),
            UserMessageContent::Blocks(blocks) => join_text(blocks),
        }
    }
}

pub(crate) fn join_text(blocks: &[UserContent]) -> String {
    blocks
        .iter()
        .filter_map(UserContent::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A reply from the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks, in order.
    pub content: Vec<AssistantContent>,
    /// The wire API that produced it (e.g. `openai-completions`).
    pub api: String,
    /// The provider (e.g. `openai`).
    pub provider: String,
    /// The model id that was requested.
    pub model: String,
    /// The model id the server reported, when it differs from `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// Provider response id, if the provider sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The provider's own effort value used for the reply (e.g. Anthropic's `high`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_thinking_level: Option<String>,
    /// The thinking level the agent loop asked for (not clamped); absent outside an agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
    /// Notes of the provider adapter that did not change the outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<AssistantMessageDiagnostic>>,
    /// Tokens and cost.
    #[serde(default)]
    pub usage: Usage,
    /// Why the reply ended (`pending` while it streams).
    pub stop_reason: StopReason,
    /// Where to fetch the reply, for `deferred` (boxed: rare, and it would double the size of
    /// every message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred: Option<Box<DeferredHandle>>,
    /// What went wrong, for `error` and `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The provider's own stop or finish reason, before it was mapped to `stop_reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_stop_reason: Option<String>,
    /// Whether the provider said the model explicitly ended its turn (for debugging only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_turn: Option<bool>,
    /// What kind of failure it was, for `error` and `aborted` (oxpi only: absent from pi's
    /// JSON, and absent from a message read from pi's).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::failure::lenient_kind"
    )]
    pub failure_kind: Option<FailureKind>,
    /// Milliseconds since the epoch when the request started.
    #[serde(default)]
    pub timestamp: i64,
    /// Milliseconds from `timestamp` to the end of the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

impl AssistantMessage {
    /// An empty message for the given api, provider and model, stamped now.
    pub fn empty(
        api: impl Into<String>,
        provider: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            content: Vec::new(),
            api: api.into(),
            provider: provider.into(),
            model: model.into(),
            response_model: None,
            response_id: None,
            provider_thinking_level: None,
            thinking_level: None,
            diagnostics: None,
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            deferred: None,
            error_message: None,
            raw_stop_reason: None,
            end_turn: None,
            failure_kind: None,
            timestamp: now_millis(),
            duration_ms: None,
        }
    }

    /// The tool calls of the message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|c| match c {
            AssistantContent::ToolCall(tc) => Some(tc),
            _ => None,
        })
    }

    /// All text blocks joined (no separator), thinking and tool calls left out.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                AssistantContent::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// The result of running a tool, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// Id of the tool call this answers.
    pub tool_call_id: String,
    /// Name of the tool that ran.
    pub tool_name: String,
    /// What the model sees: text and images.
    pub content: Vec<UserContent>,
    /// Structured data for the application (not sent to the model). An explicit `null` is
    /// kept as `Some(Value::Null)`, so pi's JSON round-trips unchanged.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub details: Option<Value>,
    /// Tokens and cost of the tool's own run (a tool that calls a model); not part of the
    /// conversation's accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Calls this tool made to other tools, for the record; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested_calls: Option<NestedToolCalls>,
    /// True when the tool failed or was refused.
    #[serde(default)]
    pub is_error: bool,
    /// Milliseconds since the epoch when the result was created.
    #[serde(default)]
    pub timestamp: i64,
    /// Milliseconds the tool ran; absent when it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

impl ToolResultMessage {
    /// A text result for `call`, stamped now.
    pub fn text(call: &ToolCall, text: impl Into<String>, is_error: bool) -> Self {
        Self {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: vec![UserContent::text(text)],
            details: None,
            usage: None,
            nested_calls: None,
            is_error,
            timestamp: now_millis(),
            duration_ms: None,
        }
    }

    /// All text blocks joined with newlines.
    pub fn text_content(&self) -> String {
        join_text(&self.content)
    }
}

fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// A message in a conversation, tagged by `role` as in pi-ai.
///
/// [`Message::Custom`] is pi-agent-core's `CustomAgentMessages`: an application's own kind in an
/// agent's transcript (any other `role`), which the agent's default `convert_to_llm` leaves out
/// and [`Context::for_request`](super::context::Context::for_request) drops, so no provider ever
/// receives one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// System instructions and tool changes (pi 1.6's transcript form of the system prompt).
    System(SystemMessage),
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// A tool's result.
    ToolResult(ToolResultMessage),
    /// An app-defined kind (any role but the four above), kept for the application only.
    #[serde(untagged)]
    Custom(CustomMessage),
}

impl<'de> Deserialize<'de> for Message {
    /// The four roles a model reads parse into their structs (a bad field is an error naming
    /// it); any other string role is a [`Message::Custom`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        /// serde buffers the input once (keeping every object's key order, which `Sections`
        /// needs) and tries the roles; anything else lands in `Other`.
        #[derive(Deserialize)]
        #[serde(tag = "role", rename_all = "camelCase")]
        enum Wire {
            System(SystemMessage),
            User(UserMessage),
            Assistant(AssistantMessage),
            ToolResult(ToolResultMessage),
            #[serde(untagged)]
            Other(Value),
        }
        #[derive(Deserialize)]
        #[serde(tag = "role", rename_all = "camelCase")]
        enum Llm {
            System(SystemMessage),
            User(UserMessage),
            Assistant(AssistantMessage),
            ToolResult(ToolResultMessage),
        }
        let from_llm = |message: Llm| match message {
            Llm::System(m) => Self::System(m),
            Llm::User(m) => Self::User(m),
            Llm::Assistant(m) => Self::Assistant(m),
            Llm::ToolResult(m) => Self::ToolResult(m),
        };
        let other = match Wire::deserialize(deserializer)? {
            Wire::System(m) => return Ok(Self::System(m)),
            Wire::User(m) => return Ok(Self::User(m)),
            Wire::Assistant(m) => return Ok(Self::Assistant(m)),
            Wire::ToolResult(m) => return Ok(Self::ToolResult(m)),
            Wire::Other(other) => other,
        };
        match other.get("role") {
            // A model's role that did not parse: parse it again for the error naming the field.
            Some(Value::String(role)) if LLM_ROLES.contains(&role.as_str()) => {
                Llm::deserialize(other)
                    .map(from_llm)
                    .map_err(D::Error::custom)
            }
            None if other.is_object() => Err(D::Error::missing_field("role")),
            _ => CustomMessage::from_value(other)
                .map(Self::Custom)
                .map_err(D::Error::custom),
        }
    }
}

impl Message {
    /// The role string pi uses: `system`, `user`, `assistant`, `toolResult`, or an app-defined
    /// message's own.
    pub fn role(&self) -> &str {
        match self {
            Self::System(_) => "system",
            Self::User(_) => "user",
            Self::Assistant(_) => "assistant",
            Self::ToolResult(_) => "toolResult",
            Self::Custom(m) => m.role(),
        }
    }

    /// True for the four kinds a model reads (pi-agent-core's default `convertToLlm` keeps
    /// exactly these).
    pub fn is_llm(&self) -> bool {
        !matches!(self, Self::Custom(_))
    }

    /// A user text message stamped now.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User(UserMessage::text(text))
    }
}

impl From<SystemMessage> for Message {
    fn from(m: SystemMessage) -> Self {
        Self::System(m)
    }
}

impl From<UserMessage> for Message {
    fn from(m: UserMessage) -> Self {
        Self::User(m)
    }
}

impl From<AssistantMessage> for Message {
    fn from(m: AssistantMessage) -> Self {
        Self::Assistant(m)
    }
}

impl From<ToolResultMessage> for Message {
    fn from(m: ToolResultMessage) -> Self {
        Self::ToolResult(m)
    }
}

impl From<CustomMessage> for Message {
    fn from(m: CustomMessage) -> Self {
        Self::Custom(m)
    }
}
