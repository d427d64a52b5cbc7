//! App-defined message kinds (pi-agent-core's `CustomAgentMessages`): a message of a transcript
//! with any role other than the four a model reads, kept with all its fields for the
//! application (a UI note, pi's coding agent's `custom`, `bashExecution`, `branchSummary`,
//! `compactionSummary`), never sent to a provider as it is.
//!
//! ```
//! use oxpi_ai::{CustomMessage, Message};
//! use serde_json::json;
//!
//! // pi's coding agent records a `!` shell command as a `bashExecution` message.
//! let pi = json!({"role": "bashExecution", "command": "ls", "output": "a.txt", "cancelled": false,
//!                 "truncated": false, "timestamp": 1_700_000_000_000_i64});
//! let message: Message = serde_json::from_value(pi.clone()).unwrap();
//! let Message::Custom(bash) = &message else { panic!("not a custom message") };
//! assert_eq!(bash.role(), "bashExecution");
//! assert_eq!(bash.get("command"), Some(&json!("ls")));
//! assert_eq!(serde_json::to_value(&message).unwrap(), pi, "written back unchanged");
//!
//! // A model's role is not an app-defined one.
//! assert!(CustomMessage::new("user", Default::default()).is_err());
//! ```

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The roles a model reads (pi-ai's `Message`); every other role is app-defined.
pub const LLM_ROLES: [&str; 4] = ["system", "user", "assistant", "toolResult"];

/// Why a [`CustomMessage`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CustomMessageError {
    /// The role is empty.
    #[error("an app-defined message needs a non-empty role")]
    EmptyRole,
    /// The role is one a model reads (`system`, `user`, `assistant`, `toolResult`).
    #[error("role {0:?} is a model message's role, not an app-defined one")]
    LlmRole(String),
    /// `role` was given among the fields: the role is set apart, once.
    #[error("`role` is the message's kind, not one of its fields; give it to CustomMessage::new")]
    RoleField,
    /// The JSON is not an object with a string `role`.
    #[error("an app-defined message is a JSON object with a string `role`; got {0}")]
    NotAMessage(String),
}

/// A message of an app-defined kind: its `role` and its other fields as JSON, written back
/// exactly as read (pi's JSON of a custom message round-trips; only the key order is not kept).
///
/// The role is never one of [`LLM_ROLES`], so the message always reads back as
/// [`Message::Custom`](super::message::Message::Custom).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomMessage {
    role: String,
    fields: Map<String, Value>,
}

impl CustomMessage {
    /// A message of kind `role` with `fields` (every field but `role`).
    pub fn new(
        role: impl Into<String>,
        fields: Map<String, Value>,
    ) -> Result<Self, CustomMessageError> {
        let role = role.into();
        if role.is_empty() {
            return Err(CustomMessageError::EmptyRole);
        }
        if LLM_ROLES.contains(&role.as_str()) {
            return Err(CustomMessageError::LlmRole(role));
        }
        if fields.contains_key("role") {
            return Err(CustomMessageError::RoleField);
        }
        Ok(Self { role, fields })
    }

    /// A message from its JSON object (`role` and the other fields, as pi writes it).
    pub fn from_value(value: Value) -> Result<Self, CustomMessageError> {
        let Value::Object(mut fields) = value else {
            return Err(CustomMessageError::NotAMessage(kind_of(&value)));
        };
        match fields.remove("role") {
            Some(Value::String(role)) => Self::new(role, fields),
            Some(other) => Err(CustomMessageError::NotAMessage(format!(
                "role {}",
                kind_of(&other)
            ))),
            None => Err(CustomMessageError::NotAMessage(
                "an object without role".into(),
            )),
        }
    }

    /// The message as one JSON object, `role` included.
    pub fn to_value(&self) -> Value {
        let mut object = Map::with_capacity(self.fields.len() + 1);
        object.insert("role".into(), Value::String(self.role.clone()));
        object.extend(self.fields.iter().map(|(k, v)| (k.clone(), v.clone())));
        Value::Object(object)
    }

    /// The kind (pi's `role`), e.g. `custom` or `bashExecution`.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// Every field but `role`.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// One field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// Sets a field, returning the value it replaced; `role` is refused.
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        value: Value,
    ) -> Result<Option<Value>, CustomMessageError> {
        let key = key.into();
        if key == "role" {
            return Err(CustomMessageError::RoleField);
        }
        Ok(self.fields.insert(key, value))
    }

    /// Removes a field, returning it.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.fields.remove(key)
    }

    /// The `timestamp` field (milliseconds since the epoch, as every pi message has), or 0.
    pub fn timestamp(&self) -> i64 {
        self.fields
            .get("timestamp")
            .and_then(|t| t.as_i64().or_else(|| t.as_f64().map(|f| f as i64)))
            .unwrap_or(0)
    }
}

fn kind_of(value: &Value) -> String {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
    .to_string()
}

impl Serialize for CustomMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len() + 1))?;
        map.serialize_entry("role", &self.role)?;
        for (key, value) in &self.fields {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for CustomMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::from_value(Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}
