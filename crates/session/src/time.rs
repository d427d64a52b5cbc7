//! Timestamps as pi writes them: entries carry ISO 8601 text (`toISOString`), messages
//! carry Unix milliseconds.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

/// Now, as JavaScript's `new Date().toISOString()` writes it (`2024-12-03T14:00:00.000Z`).
pub(crate) fn now_iso() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The file-name form of an ISO timestamp: `:` and `.` become `-`, as pi names its files.
pub(crate) fn file_stamp(iso: &str) -> String {
    iso.replace([':', '.'], "-")
}

/// `new Date(iso).getTime()` as JSON: the milliseconds, or `null` where JavaScript gives NaN.
pub(crate) fn iso_to_millis_json(iso: Option<&Value>) -> Value {
    iso.and_then(Value::as_str)
        .and_then(iso_to_millis)
        .map_or(Value::Null, Value::from)
}

/// Milliseconds since the epoch of an RFC 3339 timestamp.
pub(crate) fn iso_to_millis(iso: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(iso)
        .ok()
        .map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_text_has_millis_and_z_and_parses_back() {
        let now = now_iso();
        assert_eq!(now.len(), "2024-12-03T14:00:00.000Z".len(), "{now}");
        assert!(now.ends_with('Z'), "{now}");
        assert!(iso_to_millis(&now).is_some());
        assert_eq!(
            iso_to_millis("2024-12-03T14:00:01.000Z"),
            Some(1_733_234_401_000)
        );
        assert_eq!(
            iso_to_millis_json(Some(&Value::from("not a date"))),
            Value::Null
        );
        assert_eq!(
            file_stamp("2024-12-03T14:00:01.000Z"),
            "2024-12-03T14-00-01-000Z"
        );
    }
}
