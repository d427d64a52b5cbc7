//! Agent events, in pi-agent-core's JSON shape (`type` tag, camelCase fields).

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use oxpi_ai::{AssistantMessageEvent, Message, ToolResultMessage};

use crate::tool::AgentToolResult;

/// Something that happened during a run. Listeners see every event, in order.
///
/// `#[non_exhaustive]`: a `match` outside oxpi-agent-core needs a `_` arm, so a new event kind
/// does not break it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AgentEvent {
    /// A run started.
    AgentStart,
    /// The run ended; `messages` are the ones it added.
    AgentEnd {
        /// Messages added by this run.
        messages: Vec<Message>,
        /// Why the run stopped early, if it did (max turns, a provider error…). oxpi extension.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    /// A turn (one model request and its tool calls) started.
    TurnStart,
    /// A turn ended.
    TurnEnd {
        /// The assistant message of the turn.
        message: Message,
        /// The tool results of the turn, in call order.
        #[serde(serialize_with = "with_roles")]
        tool_results: Vec<ToolResultMessage>,
    },
    /// A message entered the conversation (for the assistant: its reply started).
    MessageStart {
        /// The message (for the assistant: empty so far).
        message: Message,
    },
    /// The streaming assistant message changed.
    MessageUpdate {
        /// The provider's event. (pi also sends the whole partial message; oxpi does not copy it
        /// per event: see [`crate::Agent::streaming_message`].)
        assistant_message_event: AssistantMessageEvent,
    },
    /// A message is complete.
    MessageEnd {
        /// The final message.
        message: Message,
    },
    /// A tool is about to run.
    ToolExecutionStart {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// Its arguments.
        args: Map<String, Value>,
    },
    /// A running tool reported progress.
    ToolExecutionUpdate {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// Its arguments.
        args: Map<String, Value>,
        /// The partial result.
        partial_result: AgentToolResult,
    },
    /// A tool finished (or was refused).
    ToolExecutionEnd {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// The result.
        result: AgentToolResult,
        /// True when it failed.
        is_error: bool,
        /// Milliseconds the tool ran; absent when it did not run (refused).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// A failed reply will be retried after `delay_ms` (pi's coding-agent session event
    /// `auto_retry_start`; see [`RetryPolicy`](crate::RetryPolicy)). The failed reply had its
    /// `message_end` but is not kept in the history.
    AutoRetryStart {
        /// Which retry this is (1 for the first).
        attempt: u32,
        /// The policy's most retries.
        max_attempts: u32,
        /// The wait before it.
        delay_ms: u64,
        /// Why the reply failed.
        error_message: String,
    },
    /// The wait is over and the retried request starts (pi-ai's `onRetryAttemptStart`).
    RetryAttemptStart {
        /// Which retry this is.
        attempt: u32,
    },
    /// The retries of a turn are over (pi's `auto_retry_end`): a reply that did not fail
    /// (`success`), or the last failure, or an abort while waiting (`Retry cancelled`).
    AutoRetryEnd {
        /// True when a retried reply did not fail.
        success: bool,
        /// The last retry made.
        attempt: u32,
        /// Why the turn still failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
}

/// Serializes tool results with pi's `"role": "toolResult"` (the struct alone has no tag).
fn with_roles<S: Serializer>(
    results: &[ToolResultMessage],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    #[serde(tag = "role", rename_all = "camelCase")]
    enum Tagged<'a> {
        ToolResult(&'a ToolResultMessage),
    }
    serializer.collect_seq(results.iter().map(Tagged::ToolResult))
}

impl AgentEvent {
    /// The event's `type` as it appears in its JSON (`"agent_start"`, `"message_update"`, …),
    /// for logs and `match`-free filtering.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::AgentStart => "agent_start",
            Self::AgentEnd { .. } => "agent_end",
            Self::TurnStart => "turn_start",
            Self::TurnEnd { .. } => "turn_end",
            Self::MessageStart { .. } => "message_start",
            Self::MessageUpdate { .. } => "message_update",
            Self::MessageEnd { .. } => "message_end",
            Self::ToolExecutionStart { .. } => "tool_execution_start",
            Self::ToolExecutionUpdate { .. } => "tool_execution_update",
            Self::ToolExecutionEnd { .. } => "tool_execution_end",
            Self::AutoRetryStart { .. } => "auto_retry_start",
            Self::RetryAttemptStart { .. } => "retry_attempt_start",
            Self::AutoRetryEnd { .. } => "auto_retry_end",
        }
    }
}
