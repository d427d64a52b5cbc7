//! Replaying a transcript's system messages, as pi 1.6 does (`utils/transcript.js`): the current
//! tools, the current system message and prompt, the collapsed transcript, and the request view
//! a provider builds its request from.
//!
//! Only [`Message::System`] entries are read; every other message is skipped.
//!
//! ```
//! use oxpi_ai::{Context, Message, SystemMessage, Tool};
//! use serde_json::json;
//!
//! let tool = |name: &str| Tool::new(name, "", json!({"type": "object"}));
//! let context = Context::default()
//!     .with_message(SystemMessage::text("Base.").with_tools_added(vec![tool("read"), tool("bash")]))
//!     .with_message(Message::user("hi"))
//!     .with_message(SystemMessage::text("More.").with_tools_removed(["bash"]));
//! let request = context.for_request();
//! assert_eq!(request.system_prompt.as_deref(), Some("Base.\n\nMore."));
//! assert_eq!(request.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["read"]);
//! assert_eq!(request.messages.len(), 1); // the user message only
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use super::context::{Context, Tool};
use super::message::Message;
use super::system::{Sections, SystemMessage, SystemMessageContent};

fn system_messages(messages: &[Message]) -> impl Iterator<Item = &SystemMessage> {
    messages.iter().filter_map(|m| match m {
        Message::System(s) => Some(s),
        _ => None,
    })
}

/// The tools available after every system message's changes, in order: removals first, then
/// additions by name (a re-added tool moves to the end) (pi's `getCurrentTools`).
pub fn current_tools(messages: &[Message]) -> Vec<Tool> {
    let mut tools: Vec<Tool> = Vec::new();
    for message in system_messages(messages) {
        for removed in message.tools_removed.iter().flatten() {
            tools.retain(|t| t.name != removed.name);
        }
        for added in message.tools_added.iter().flatten() {
            match tools.iter_mut().find(|t| t.name == added.name) {
                Some(slot) => *slot = added.clone(),
                None => tools.push(added.clone()),
            }
        }
    }
    tools
}

/// Every system message replayed into one (pi's `getCurrentSystemMessage`): the non-empty
/// contents joined with blank lines, the sections patched in order (`null` removes one), the
/// current tools, the first message's timestamp. `None` when there is no system message and no
/// tool.
pub fn current_system_message(messages: &[Message]) -> Option<SystemMessage> {
    let mut content = Vec::new();
    let mut sections = Sections::default();
    let mut timestamp = None;
    for message in system_messages(messages) {
        timestamp.get_or_insert(message.timestamp);
        let text = message.content.text();
        if !text.is_empty() {
            content.push(text);
        }
        for (name, value) in message.sections.iter().flat_map(|s| s.0.iter()) {
            match value {
                None => sections.remove(name),
                Some(text) => sections.set(name.clone(), Some(text.clone())),
            }
        }
    }
    let tools = current_tools(messages);
    if timestamp.is_none() && tools.is_empty() {
        return None;
    }
    Some(SystemMessage {
        content: SystemMessageContent::Text(content.join("\n\n")),
        sections: (!sections.is_empty()).then_some(sections),
        tools_added: (!tools.is_empty()).then_some(tools),
        tools_removed: None,
        timestamp: timestamp.unwrap_or(0),
    })
}

/// The current system prompt text (pi's `getCurrentSystemPrompt`): the replayed message's
/// content and sections, or `""`.
pub fn current_system_prompt(messages: &[Message]) -> String {
    current_system_message(messages)
        .map(|m| m.prompt_text())
        .unwrap_or_default()
}

/// The transcript for an API without mid-conversation system messages (pi's
/// `collapseSystemMessages`): the replayed system message first, every other system message
/// dropped.
pub fn collapse_system_messages(messages: &[Message]) -> Vec<Message> {
    let head = current_system_message(messages).map(Message::System);
    head.into_iter()
        .chain(
            messages
                .iter()
                .filter(|m| !matches!(m, Message::System(_)))
                .cloned(),
        )
        .collect()
}

/// The leading system message pi makes of an old-style `system_prompt` and `tools`
/// (`createInitialSystemMessage`): `None` when both are empty.
pub fn initial_system_message(
    system_prompt: Option<&str>,
    tools: &[Tool],
) -> Option<SystemMessage> {
    let prompt = system_prompt.unwrap_or("");
    if prompt.is_empty() && tools.is_empty() {
        return None;
    }
    Some(SystemMessage {
        content: SystemMessageContent::Text(prompt.to_string()),
        tools_added: (!tools.is_empty()).then(|| tools.to_vec()),
        timestamp: 0,
        ..SystemMessage::default()
    })
}

impl Context {
    /// The transcript form of the context (pi's `normalizeContext`): `system_prompt` and `tools`
    /// folded into a leading system message before `messages` (kept as they are, even when they
    /// already start with a system message).
    pub fn normalized_messages(&self) -> Vec<Message> {
        initial_system_message(self.system_prompt.as_deref(), &self.tools)
            .map(Message::System)
            .into_iter()
            .chain(self.messages.iter().cloned())
            .collect()
    }

    /// What a provider sends (pi's rule for APIs without mid-conversation system messages):
    /// the system prompt and the tools replayed from the context's system messages (after
    /// `system_prompt` and `tools`, which count as a leading one), and the conversation
    /// without any system message and without any app-defined message ([`Message::Custom`]: no
    /// provider ever receives one). A context with neither is returned as it is.
    pub fn for_request(&self) -> Cow<'_, Context> {
        let system = self
            .messages
            .iter()
            .any(|m| matches!(m, Message::System(_)));
        let custom = self.messages.iter().any(|m| !m.is_llm());
        if !system && !custom {
            return Cow::Borrowed(self);
        }
        let conversation = |messages: Vec<Message>| {
            messages
                .into_iter()
                .filter(|m| m.is_llm() && !matches!(m, Message::System(_)))
                .collect::<Vec<_>>()
        };
        if !system {
            return Cow::Owned(Context {
                messages: Arc::new(conversation(self.messages.to_vec())),
                ..self.clone()
            });
        }
        let transcript = self.normalized_messages();
        let prompt = current_system_prompt(&transcript);
        Cow::Owned(Context {
            system_prompt: (!prompt.is_empty()).then_some(prompt),
            tools: current_tools(&transcript),
            messages: Arc::new(conversation(transcript)),
        })
    }
}
