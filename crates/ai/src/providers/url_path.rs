//! Values that go into a URL path (model ids, deployment names, projects, locations): each
//! percent-encoded as one path segment, so `?`, `#`, `/` or `%` in a model id can never move
//! the request to another path or put the id into the query; a value that would be a dot
//! segment (`.`, `..`, which URL parsers resolve even when percent-encoded) or empty is refused.

/// Characters escaped in a path segment: all but RFC 3986's unreserved ones.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `value` as one percent-encoded path segment (a `/` in it is encoded too); `what` names the
/// value in the error (`"model id"`).
///
/// ```
/// use oxpi_ai::providers::url_path::segment;
/// assert_eq!(segment("gemini?x#y", "model id").unwrap(), "gemini%3Fx%23y");
/// assert_eq!(segment("us.anthropic.claude:0", "model id").unwrap(), "us.anthropic.claude%3A0");
/// assert!(segment("..", "model id").is_err());
/// ```
pub fn segment(value: &str, what: &str) -> Result<String, String> {
    if matches!(value, "" | "." | "..") {
        return Err(format!(
            "the {what} {value:?} cannot go into a URL path (it is empty, \".\" or \"..\")"
        ));
    }
    Ok(percent_encoding::utf8_percent_encode(value, PATH_SEGMENT).collect())
}

/// `value` as several path segments split at `/` (Gemini's `tunedModels/…` ids), each encoded
/// by [`segment`]; an empty, `.` or `..` segment is refused.
///
/// ```
/// use oxpi_ai::providers::url_path::segments;
/// assert_eq!(segments("tunedModels/my model", "model id").unwrap(), "tunedModels/my%20model");
/// assert!(segments("models/../../v1/files", "model id").is_err());
/// ```
pub fn segments(value: &str, what: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    for (i, part) in value.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        let encoded = segment(part, what).map_err(|_| {
            format!(
                "the {what} {value:?} cannot go into a URL path (it has an empty, \".\" or \"..\" segment)"
            )
        })?;
        out.push_str(&encoded);
    }
    Ok(out)
}
