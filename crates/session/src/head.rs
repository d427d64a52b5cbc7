//! The fields of a session line that the tree and the context need, read in one pass over the
//! line without building its JSON value: `type`, `id`, `parentId`, `timestamp`, and where the
//! `message` of a `message` entry lies in the line with its `role`. The rest of the line stays
//! text until something asks for it.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::entry::EntryType;
use crate::text::Span;

/// The eagerly read fields of an entry's line; the string fields as spans of the line.
#[derive(Debug, Clone)]
pub(crate) struct Head {
    /// `type` (`None`: missing or null).
    pub(crate) kind: Option<EntryType>,
    pub(crate) id: Option<Span>,
    pub(crate) parent_id: Option<Span>,
    pub(crate) timestamp: Option<Span>,
    /// The `message` of a `message` entry.
    pub(crate) message: Option<MessageHead>,
}

/// Where a `message` entry's message is in its line, and what the context needs of it.
#[derive(Debug, Clone)]
pub(crate) struct MessageHead {
    /// The message's JSON text in the line.
    pub(crate) span: Span,
    /// Its `role` (`None`: not an object, or no string role).
    pub(crate) role: Option<Cow<'static, str>>,
    /// The content the context gives it when its `content` is missing or null.
    pub(crate) fill: Fill,
}

/// The `content` pi's `buildSessionContext` gives a message that has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    /// It has one (or its role gets none).
    Nothing,
    /// A `system` message: `""`.
    EmptyText,
    /// A `user`, `assistant` or `toolResult` message: `[]`.
    EmptyList,
}

#[derive(Deserialize)]
struct LineFields<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<&'a str>,
    #[serde(default, borrow)]
    id: Option<&'a str>,
    #[serde(rename = "parentId", default, borrow)]
    parent_id: Option<&'a str>,
    #[serde(default, borrow)]
    timestamp: Option<&'a str>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MessageFields<'a> {
    #[serde(default, borrow)]
    role: Option<&'a str>,
    #[serde(default)]
    content: Option<IgnoredAny>,
}

/// The roles pi writes, kept without an allocation.
const ROLES: [&str; 9] = [
    "user",
    "assistant",
    "toolResult",
    "system",
    "custom",
    "bashExecution",
    "branchSummary",
    "compactionSummary",
    "hookMessage",
];

fn role_name(role: &str) -> Cow<'static, str> {
    match ROLES.iter().find(|known| **known == role) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(role.to_string()),
    }
}

/// The head of `line` (a whole JSON object, already valid UTF-8), or `None` when the fast
/// reading does not apply and the line must be parsed in full: not valid JSON or not an
/// object, one of these fields not a string (or written with escapes), a key twice, a
/// `message` entry whose message is missing or null or has a role that is not a plain string.
pub(crate) fn read(line: &str) -> Option<Head> {
    let fields: LineFields<'_> = serde_json::from_str(line).ok()?;
    let kind = fields.kind.map(EntryType::from_name);
    let message = match (&kind, fields.message) {
        (Some(EntryType::Message), None) => return None,
        (Some(EntryType::Message), Some(raw)) => Some(message_head(line, raw)?),
        _ => None,
    };
    let span = |field: Option<&str>| match field {
        Some(text) => Span::of(line, text).map(Some),
        None => Some(None),
    };
    Some(Head {
        kind,
        id: span(fields.id)?,
        parent_id: span(fields.parent_id)?,
        timestamp: span(fields.timestamp)?,
        message,
    })
}

fn message_head(line: &str, raw: &RawValue) -> Option<MessageHead> {
    let text = raw.get();
    let span = Span::of(line, text)?;
    if !text.starts_with('{') {
        // A message that is not an object goes to the context as it is.
        return Some(MessageHead {
            span,
            role: None,
            fill: Fill::Nothing,
        });
    }
    let fields: MessageFields<'_> = serde_json::from_str(text).ok()?;
    let fill = match (fields.content.is_none(), fields.role) {
        (true, Some("system")) => Fill::EmptyText,
        (true, Some("user" | "assistant" | "toolResult")) => Fill::EmptyList,
        _ => Fill::Nothing,
    };
    Some(MessageHead {
        span,
        role: fields.role.map(role_name),
        fill,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_of_a_message_line() {
        let line = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}"#;
        let head = read(line).expect("head");
        assert_eq!(head.kind, Some(EntryType::Message));
        assert_eq!(head.id.map(|s| &line[s.range()]), Some("a1"));
        assert_eq!(head.parent_id, None);
        let message = head.message.expect("message");
        assert_eq!(
            &line[message.span.range()],
            r#"{"role":"user","content":"hi"}"#
        );
        assert_eq!(message.role.as_deref(), Some("user"));
        assert_eq!(message.fill, Fill::Nothing);
    }

    #[test]
    fn lines_it_cannot_read_fast_are_left_to_the_full_parse() {
        for line in [
            r#"{"type":"message","id":5}"#,
            r#"{"type":"message","id":"a","message":null}"#,
            r#"{"type":"message","id":"a"}"#,
            r#"{"type":"label","id":"a","id":"b"}"#,
            r#"{"type":"message","id":"a","message":{"role":"u\u0073er"}}"#,
            r#"[1]"#,
            r#"{"type":"message""#,
        ] {
            assert!(read(line).is_none(), "{line}");
        }
    }

    #[test]
    fn a_message_without_content_is_filled_as_pi_fills_it() {
        let fill = |line: &str| read(line).and_then(|h| h.message).map(|m| m.fill);
        assert_eq!(
            fill(r#"{"type":"message","message":{"role":"system"}}"#),
            Some(Fill::EmptyText)
        );
        assert_eq!(
            fill(r#"{"type":"message","message":{"role":"assistant","content":null}}"#),
            Some(Fill::EmptyList)
        );
        assert_eq!(
            fill(r#"{"type":"message","message":{"role":"custom"}}"#),
            Some(Fill::Nothing)
        );
    }
}
