//! Ids as pi makes them: UUIDv7 session ids, 8-hex-digit entry ids checked for collisions.

use std::collections::HashMap;

/// A new session id (a UUIDv7, as pi's `uuidv7()`).
pub(crate) fn session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A short entry id not yet in `taken`: the first 8 characters of a random UUID, falling back to
/// a whole UUID after 100 collisions (pi's `generateId`).
pub(crate) fn entry_id<V>(taken: &HashMap<String, V>) -> String {
    for _ in 0..100 {
        let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        if !taken.contains_key(&id) {
            return id;
        }
    }
    uuid::Uuid::new_v4().to_string()
}

/// Whether `id` is a session id pi accepts: alphanumerics, `-`, `_`, `.`, starting and ending
/// with an alphanumeric (pi's `assertValidSessionId`).
pub(crate) fn is_valid_session_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    let edge = |b: &u8| b.is_ascii_alphanumeric();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) if edge(first) && edge(last) => bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_are_short_hex_and_session_ids_valid() {
        let taken: HashMap<String, ()> = HashMap::new();
        let id = entry_id(&taken);
        assert_eq!(id.len(), 8);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert!(is_valid_session_id(&session_id()));
        for bad in ["", "-a", "a-", "a/b", "a b"] {
            assert!(!is_valid_session_id(bad), "{bad:?}");
        }
        assert!(is_valid_session_id("a.b_c-1"));
    }
}
