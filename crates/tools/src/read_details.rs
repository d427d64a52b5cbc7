//! What a successful `read` of a file reports in its result's `details`: the public
//! [`ReadDetails`] for text and for images, and their JSON form. Both the text path (`read`) and
//! the image path (`image`) build them. (A directory listed by a `read` that lists directories
//! reports `ls`'s [`LsDetails`](crate::LsDetails).)

use serde::{Deserialize, Serialize};

/// What a successful `read` did, in
/// [`AgentToolResult::details`](oxpi_agent_core::AgentToolResult::details) (as JSON, tagged by
/// `kind`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ReadDetails {
    /// Text was returned.
    Text(TextDetails),
    /// An image was returned.
    Image(ImageDetails),
}

/// Details of a text read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextDetails {
    /// The file, relative to the workspace root.
    pub path: String,
    /// First line shown (1-indexed).
    pub start_line: u64,
    /// Whole lines shown (0 when only the beginning of one long line is shown).
    pub lines: u64,
    /// Lines in the file; `None` when counting them would have meant reading more than
    /// [`Limits::max_scan_bytes`](crate::Limits::max_scan_bytes) past the text returned.
    pub total_lines: Option<u64>,
    /// Why the text stops before the end of the file, if it does.
    pub truncated_by: Option<TruncatedBy>,
    /// The `offset` to continue with, if there is more.
    pub next_offset: Option<u64>,
    /// Bytes actually read from the file (including read-ahead).
    pub bytes_read: u64,
    /// Whether invalid UTF-8 was replaced with U+FFFD.
    pub invalid_utf8: bool,
}

/// Why a text read stops before the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
    /// The caller's `limit`.
    Limit,
    /// The first line alone is over the byte limit; only its beginning is shown.
    LongLine,
}

/// Details of an image read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageDetails {
    /// The file, relative to the workspace root.
    pub path: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
    /// Size of the image in bytes.
    pub bytes: u64,
}

/// `details` as the JSON value put in the tool result.
pub(crate) fn to_json(details: &ReadDetails) -> serde_json::Value {
    serde_json::to_value(details).unwrap_or(serde_json::Value::Null)
}
