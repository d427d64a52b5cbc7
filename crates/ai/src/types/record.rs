//! What pi 1.6 records on messages beside their content: an assistant message's diagnostics
//! and deferred handle, a tool result's nested calls, and the thinking level an agent asked for.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The error of a diagnostic (pi's `DiagnosticErrorInfo`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticError {
    /// The error's class name, e.g. `Error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The error's text.
    #[serde(default)]
    pub message: String,
    /// The stack trace, if one was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// A code (a string such as `ECONNRESET`, or a number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Value>,
}

/// Something a provider adapter noted about a reply that does not change its outcome (pi's
/// `AssistantMessageDiagnostic`, e.g. `anthropic_strict_tools_fallback`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessageDiagnostic {
    /// What kind of note it is.
    #[serde(rename = "type")]
    pub kind: String,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: i64,
    /// The error behind it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<DiagnosticError>,
    /// Free-form details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
}

/// Where to fetch a deferred reply later (pi's `DeferredHandle`, on a message whose stop
/// reason is `deferred`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeferredHandle {
    /// The provider that holds the reply.
    pub provider: String,
    /// The model id.
    pub model_id: String,
    /// The wire API.
    pub api: String,
    /// The provider's token (a response id, a batch and row id).
    pub id: String,
    /// When the handle expires, milliseconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// How long to wait before polling, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_after_ms: Option<u64>,
    /// Provider data needed to rebuild the final message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// How a nested tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NestedCallStatus {
    /// It succeeded.
    Ok,
    /// It failed.
    Error,
    /// It was still running when the calling tool finished.
    Unfinished,
}

/// One call a tool made to another tool (pi's `NestedToolCallRecord`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedToolCallRecord {
    /// The call's id.
    pub id: String,
    /// The tool called.
    pub name: String,
    /// The arguments; absent when over the size limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// UTF-8 size of the arguments as JSON, when `arguments` is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_bytes: Option<u64>,
    /// How it ended.
    pub status: NestedCallStatus,
    /// How long it took, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The error text (truncated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The calls a tool made to other tools, kept for the record and never sent to the model
/// (pi's `NestedToolCalls`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedToolCalls {
    /// The calls, in order.
    #[serde(default)]
    pub calls: Vec<NestedToolCallRecord>,
    /// False when calls were dropped, arguments omitted, or calls had not finished.
    #[serde(default)]
    pub complete: bool,
}
