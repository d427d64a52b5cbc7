//! Stream events, in pi-ai's JSON shape (`type` tag, camelCase fields).
//!
//! Unlike pi-ai, delta events carry no `partial` copy of the message: cost per event is
//! O(delta). [`crate::AssistantMessageEventStream`] accumulates the partial message for consumers
//! that want it.

use serde::{Deserialize, Serialize, Serializer};

pub use crate::delta::Delta;
use crate::types::content::ToolCall;
use crate::types::message::{AssistantMessage, StopReason};

/// One event of an assistant reply's stream. Every stream ends with exactly one
/// [`Done`](Self::Done) or [`Error`](Self::Error), then ends.
///
/// Messages and finished tool calls are boxed so that an event stays small (64 bytes): the
/// many delta events are moved through the provider's batch, the channel and the consumer.
///
/// `#[non_exhaustive]`: a `match` outside oxpi-ai needs a `_` arm, so a new event kind does not
/// break it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AssistantMessageEvent {
    /// The reply started; `partial` holds api, provider and model with no content yet.
    Start {
        /// The empty message.
        #[serde(serialize_with = "with_role")]
        partial: Box<AssistantMessage>,
    },
    /// A text block started at `content_index`.
    TextStart {
        /// Index of the block in `content`.
        content_index: usize,
    },
    /// Text appended to the block.
    TextDelta {
        /// Index of the block.
        content_index: usize,
        /// The new text.
        delta: Delta,
    },
    /// The text block is complete.
    TextEnd {
        /// Index of the block.
        content_index: usize,
        /// The whole text of the block.
        content: String,
    },
    /// A thinking block started.
    ThinkingStart {
        /// Index of the block.
        content_index: usize,
    },
    /// Thinking appended to the block.
    ThinkingDelta {
        /// Index of the block.
        content_index: usize,
        /// The new text.
        delta: Delta,
    },
    /// The thinking block is complete.
    ThinkingEnd {
        /// Index of the block.
        content_index: usize,
        /// The whole reasoning text.
        content: String,
    },
    /// A tool call started.
    ToolcallStart {
        /// Index of the block.
        content_index: usize,
        /// The call's id (oxpi extension; pi carries it in `partial`).
        #[serde(default)]
        id: String,
        /// The tool's name (oxpi extension; pi carries it in `partial`).
        #[serde(default)]
        name: String,
    },
    /// A fragment of the call's JSON arguments.
    ToolcallDelta {
        /// Index of the block.
        content_index: usize,
        /// Raw argument text.
        delta: Delta,
    },
    /// The tool call is complete, arguments parsed.
    ToolcallEnd {
        /// Index of the block.
        content_index: usize,
        /// The finished call.
        #[serde(serialize_with = "with_type")]
        tool_call: Box<ToolCall>,
    },
    /// The reply finished (`stop`, `length` or `toolUse`).
    Done {
        /// Why it finished.
        reason: StopReason,
        /// The final message.
        #[serde(serialize_with = "with_role")]
        message: Box<AssistantMessage>,
    },
    /// The reply failed (`error`) or was cancelled (`aborted`); partial content is kept.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// The final message, with `errorMessage` set.
        #[serde(serialize_with = "with_role")]
        error: Box<AssistantMessage>,
    },
}

impl AssistantMessageEvent {
    /// The final message, for the terminal events.
    pub fn final_message(&self) -> Option<&AssistantMessage> {
        match self {
            Self::Done { message, .. } => Some(message),
            Self::Error { error, .. } => Some(error),
            _ => None,
        }
    }

    /// True for `done` and `error`.
    pub fn is_terminal(&self) -> bool {
        self.final_message().is_some()
    }
}

/// Serializes an assistant message with pi's `"role": "assistant"` (the struct alone has no tag).
fn with_role<S: Serializer>(message: &AssistantMessage, serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    #[serde(tag = "role", rename_all = "camelCase")]
    enum Tagged<'a> {
        Assistant(&'a AssistantMessage),
    }
    Tagged::Assistant(message).serialize(serializer)
}

/// Serializes a tool call with pi's `"type": "toolCall"`.
fn with_type<S: Serializer>(call: &ToolCall, serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    #[serde(tag = "type")]
    enum Tagged<'a> {
        #[serde(rename = "toolCall")]
        ToolCall(&'a ToolCall),
    }
    Tagged::ToolCall(call).serialize(serializer)
}
