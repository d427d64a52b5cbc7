//! The request context: system prompt, conversation and tools. A conversation may also carry
//! its prompt and tools as system messages ([`crate::types::transcript`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::message::Message;

/// A tool the model may call: a name, a description and a JSON Schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Name the model uses to call it.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
    /// pi 1.6's `constrainedSampling` (`false`, `{"type": "json_schema", …}` or
    /// `{"type": "grammar", …}`), kept as given; oxpi's providers do not act on it yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained_sampling: Option<Value>,
}

impl Tool {
    /// A tool with a name, a description and a JSON Schema for its arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            constrained_sampling: None,
        }
    }
}

/// Everything a provider needs for one request.
///
/// `messages` is shared: cloning a `Context` copies a pointer, not the history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The conversation so far.
    #[serde(default)]
    pub messages: Arc<Vec<Message>>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
}

impl Context {
    /// A context with a system prompt and no messages.
    pub fn new(system_prompt: impl Into<String>) -> Self {
        Self {
            system_prompt: Some(system_prompt.into()),
            ..Self::default()
        }
    }

    /// Appends a message (copies the history only if another `Context` still shares it).
    pub fn push(&mut self, message: impl Into<Message>) {
        Arc::make_mut(&mut self.messages).push(message.into());
    }

    /// Adds a tool.
    pub fn with_tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Appends a message, builder style.
    pub fn with_message(mut self, message: impl Into<Message>) -> Self {
        self.push(message);
        self
    }
}
