//! [`ContextMessage`]: one agent message of a session context, either the JSON text of the
//! entry it was read from (shared, not copied) or a value built for the context (a summary, a
//! context edit's replacement).

use std::borrow::Cow;
use std::ops::Deref;
use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::text::Text;

/// One agent message of a [`SessionContext`](crate::SessionContext), of any role pi has.
///
/// A message read from the session file keeps that file's text, shared with its entry: building
/// a context copies no message. It reads as a [`serde_json::Value`] through `Deref` (the value is
/// built on first use and kept); [`deserialize`](Self::deserialize) reads a typed message
/// straight from the text. It serializes as the message's JSON.
#[derive(Clone)]
pub struct ContextMessage {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    /// The JSON text of an entry's message, with its role.
    Shared {
        text: Text,
        role: Option<Cow<'static, str>>,
        value: OnceLock<Box<Value>>,
    },
    /// A message built for the context.
    Built(Value),
}

impl ContextMessage {
    /// A message of its JSON value.
    pub fn from_value(value: Value) -> Self {
        Self {
            repr: Repr::Built(value),
        }
    }

    /// A message of an entry's text.
    pub(crate) fn shared(text: Text, role: Option<Cow<'static, str>>) -> Self {
        Self {
            repr: Repr::Shared {
                text,
                role,
                value: OnceLock::new(),
            },
        }
    }

    /// The message's `role` (`None` when it has no string role).
    pub fn role(&self) -> Option<&str> {
        match &self.repr {
            Repr::Shared { role, .. } => role.as_deref(),
            Repr::Built(value) => value.get("role").and_then(Value::as_str),
        }
    }

    /// The JSON text the message was read from, shared with its session entry; `None` for a
    /// message built for the context.
    pub fn json_text(&self) -> Option<&str> {
        match &self.repr {
            Repr::Shared { text, .. } => Some(text.as_str()),
            Repr::Built(_) => None,
        }
    }

    /// The message as a JSON value.
    pub fn as_value(&self) -> &Value {
        match &self.repr {
            Repr::Shared { text, value, .. } => {
                // The text parsed when its entry was read, so this parse succeeds.
                value.get_or_init(|| {
                    Box::new(serde_json::from_str(text.as_str()).unwrap_or(Value::Null))
                })
            }
            Repr::Built(value) => value,
        }
    }

    /// The message as a JSON value, taken.
    pub fn into_value(self) -> Value {
        match self.repr {
            Repr::Shared { text, value, .. } => match value.into_inner() {
                Some(value) => *value,
                None => serde_json::from_str(text.as_str()).unwrap_or(Value::Null),
            },
            Repr::Built(value) => value,
        }
    }

    /// The message read as `T` (from its text when it has one, without building the value).
    pub fn deserialize<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        match &self.repr {
            Repr::Shared { text, value, .. } if value.get().is_none() => {
                match serde_json::from_str(text.as_str()) {
                    Ok(message) => Ok(message),
                    // A key written twice reads as the last one in a value, as an error in
                    // a typed struct: read it as the value reads.
                    Err(e) if e.is_data() => T::deserialize(self.as_value()),
                    Err(e) => Err(e),
                }
            }
            _ => T::deserialize(self.as_value()),
        }
    }
}

impl From<Value> for ContextMessage {
    fn from(value: Value) -> Self {
        Self::from_value(value)
    }
}

impl Deref for ContextMessage {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.as_value()
    }
}

impl PartialEq for ContextMessage {
    fn eq(&self, other: &Self) -> bool {
        match (self.json_text(), other.json_text()) {
            (Some(a), Some(b)) if a == b => true,
            _ => self.as_value() == other.as_value(),
        }
    }
}

impl PartialEq<Value> for ContextMessage {
    fn eq(&self, other: &Value) -> bool {
        self.as_value() == other
    }
}

impl std::fmt::Debug for ContextMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.repr {
            Repr::Shared { text, .. } => f.write_str(text.as_str()),
            Repr::Built(value) => write!(f, "{value}"),
        }
    }
}

impl Serialize for ContextMessage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.repr {
            Repr::Shared { text, .. } => match serde_json::from_str::<&RawValue>(text.as_str()) {
                Ok(raw) => raw.serialize(serializer),
                Err(_) => self.as_value().serialize(serializer),
            },
            Repr::Built(value) => value.serialize(serializer),
        }
    }
}
