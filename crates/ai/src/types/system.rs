//! pi 1.6's `SystemMessage`: the system prompt and the tool loadout kept in the transcript.
//!
//! The leading system message holds the base prompt (and the first tools); a later one adds
//! instructions (`content`), replaces or removes named `sections`, and changes the tools
//! (`toolsAdded`, `toolsRemoved`). Replaying them in order gives the current prompt and tools
//! ([`crate::types::transcript`]).

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::content::TextContent;
use super::context::Tool;
use super::message::now_millis;

/// A text block of a system message (`{"type": "text", "text": …}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum SystemContentBlock {
    /// Text.
    #[serde(rename = "text")]
    Text(TextContent),
}

/// The content of a system message: a string or text blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SystemMessageContent {
    /// A plain string (pi writes `""` for a message that only changes tools).
    Text(String),
    /// Text blocks.
    Blocks(Vec<SystemContentBlock>),
}

impl SystemMessageContent {
    /// The text: blocks joined with newlines (pi's `contentText`).
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Blocks(blocks) => blocks
                .iter()
                .map(|SystemContentBlock::Text(t)| t.text.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

impl Default for SystemMessageContent {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

/// Named prompt sections in their order: a name with its text, or `None` (JSON `null`) for a
/// section a later message removes. Serialized as a JSON object whose key order is kept (pi
/// renders sections in that order) when read from and written to text; a `serde_json::Value`
/// in between sorts the keys (serde_json's map without its `preserve_order` feature).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sections(pub Vec<(String, Option<String>)>);

impl Sections {
    /// Sets `name` (in place if present, else at the end), as a JavaScript object assignment.
    pub fn set(&mut self, name: impl Into<String>, value: Option<String>) {
        let name = name.into();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = value,
            None => self.0.push((name, value)),
        }
    }

    /// Removes `name`.
    pub fn remove(&mut self, name: &str) {
        self.0.retain(|(n, _)| n != name);
    }

    /// The value of `name`: `Some(None)` for an explicit `null`.
    pub fn get(&self, name: &str) -> Option<Option<&str>> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_deref())
    }

    /// True when there is no section.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Sections {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Sections {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SectionsVisitor;
        impl<'de> Visitor<'de> for SectionsVisitor {
            type Value = Sections;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of section names to strings or null")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sections, A::Error> {
                let mut sections = Sections::default();
                while let Some((name, value)) = map.next_entry::<String, Option<String>>()? {
                    sections.set(name, value);
                }
                Ok(sections)
            }
        }
        deserializer.deserialize_map(SectionsVisitor)
    }
}

/// A tool named by a system message's `toolsRemoved`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolReference {
    /// The tool's name.
    pub name: String,
}

/// pi's `SystemMessage` (role `system`): instructions and tool changes at one point of the
/// transcript.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessage {
    /// On the leading message the base prompt; on a later one, instructions added from there on.
    #[serde(default)]
    pub content: SystemMessageContent,
    /// Named sections rendered after `content`; a later message replaces one by name, `null`
    /// removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Sections>,
    /// Complete definitions of the tools that become available here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_added: Option<Vec<Tool>>,
    /// Tools that stop being available here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_removed: Option<Vec<ToolReference>>,
    /// Milliseconds since the epoch (pi writes `0` for the leading message it creates).
    #[serde(default)]
    pub timestamp: i64,
}

impl SystemMessage {
    /// A system message with `text` as its content, stamped now.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: SystemMessageContent::Text(text.into()),
            timestamp: now_millis(),
            ..Self::default()
        }
    }

    /// Adds tool definitions, builder style (empty lists stay absent, as pi writes them).
    pub fn with_tools_added(mut self, tools: Vec<Tool>) -> Self {
        if !tools.is_empty() {
            self.tools_added.get_or_insert_with(Vec::new).extend(tools);
        }
        self
    }

    /// Removes tools by name, builder style.
    pub fn with_tools_removed<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let removed: Vec<ToolReference> = names
            .into_iter()
            .map(|n| ToolReference { name: n.into() })
            .collect();
        if !removed.is_empty() {
            self.tools_removed
                .get_or_insert_with(Vec::new)
                .extend(removed);
        }
        self
    }

    /// Sets a section (`None` removes it from the prompt), builder style.
    pub fn with_section(mut self, name: impl Into<String>, value: Option<String>) -> Self {
        self.sections
            .get_or_insert_with(Sections::default)
            .set(name, value);
        self
    }

    /// The text this message adds to the prompt: its content, then its non-null sections,
    /// empties dropped, joined with blank lines (pi's `getSystemMessageText`).
    pub fn prompt_text(&self) -> String {
        let mut parts = vec![self.content.text()];
        if let Some(sections) = &self.sections {
            parts.extend(sections.0.iter().filter_map(|(_, v)| v.clone()));
        }
        parts.retain(|p| !p.is_empty());
        parts.join("\n\n")
    }

    /// The message as an update to a prompt sent before (pi's `renderSystemMessageUpdate`):
    /// its content, then per section `Removed system prompt section "<name>".` or
    /// `Updated system prompt section "<name>":` and the text, joined with blank lines.
    pub fn render_update(&self) -> String {
        let mut parts = vec![self.content.text()];
        if let Some(sections) = &self.sections {
            for (name, value) in &sections.0 {
                parts.push(match value {
                    None => format!("Removed system prompt section \"{name}\"."),
                    Some(text) => format!("Updated system prompt section \"{name}\":\n\n{text}"),
                });
            }
        }
        parts.retain(|p| !p.is_empty());
        parts.join("\n\n")
    }
}
