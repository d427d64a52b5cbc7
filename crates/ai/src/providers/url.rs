//! Where a request goes: a model's base URL (placeholders filled from the environment), the
//! version segment pi's catalogue leaves out, and values that go into a URL path (model ids,
//! deployment names, projects, locations): each percent-encoded as one path segment, so `?`,
//! `#`, `/` or `%` in a model id can never move the request to another path or put the id into
//! the query; a value that would be a dot segment (`.`, `..`, which URL parsers resolve even
//! when percent-encoded) or empty is refused.

use crate::types::model::Model;

/// A model's base URL, ready to append a path to: trimmed, without a final `/`, `default` when
/// empty, and each `{NAME}` placeholder (pi's catalogue has them, e.g. Cloudflare's
/// `{CLOUDFLARE_ACCOUNT_ID}`) replaced by that environment variable. An unset variable is an
/// error naming it.
pub fn base_url(model: &Model, default: &str) -> Result<String, String> {
    fill_placeholders(model.base_url.trim(), |name| std::env::var(name).ok())
        .map(|url| match url.trim_end_matches('/') {
            "" => default.trim_end_matches('/').to_string(),
            url => url.to_string(),
        })
        .map_err(|name| {
            format!(
                "the base URL of model {} needs {name}: set that environment variable (or the model's base_url)",
                model.id
            )
        })
}

/// Replaces each `{NAME}` (letters, digits, `_`) in `url` by `lookup(NAME)`; `Err(NAME)` for the
/// first one `lookup` does not know.
pub fn fill_placeholders(
    url: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with('}') {
            let name = &after[..name_len];
            out.push_str(&lookup(name).ok_or_else(|| name.to_string())?);
            rest = &after[name_len + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `{base}{path}` when the base URL ends in `/v1`, else `{base}/v1{path}`: pi's catalogue gives
/// Anthropic- and Mistral-format endpoints as hosts, whose SDKs add `/v1`.
pub fn versioned_url(base: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}{path}")
    } else {
        format!("{base}/v1{path}")
    }
}

/// Characters escaped in a path segment: all but RFC 3986's unreserved ones.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `value` as one percent-encoded path segment (a `/` in it is encoded too); `what` names the
/// value in the error (`"model id"`).
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

#[cfg(test)]
mod doc_examples {
    #[test]
    fn fill_placeholders_example() {
        use crate::providers::url::fill_placeholders;
        let lookup = |name: &str| (name == "ACCOUNT").then(|| "acme".to_string());
        assert_eq!(
            fill_placeholders("https://x/{ACCOUNT}/v1", lookup),
            Ok("https://x/acme/v1".into())
        );
        assert_eq!(
            fill_placeholders("https://x/{GATEWAY}", lookup),
            Err("GATEWAY".into())
        );
        assert_eq!(
            fill_placeholders("https://x/{not a name}", lookup),
            Ok("https://x/{not a name}".into())
        );
    }

    #[test]
    fn versioned_url_example() {
        use crate::providers::url::versioned_url;
        assert_eq!(
            versioned_url("https://api.anthropic.com", "/messages"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            versioned_url("http://127.0.0.1:9/v1/", "/messages"),
            "http://127.0.0.1:9/v1/messages"
        );
    }

    #[test]
    fn segment_example() {
        use crate::providers::url::segment;
        assert_eq!(segment("gemini?x#y", "model id").unwrap(), "gemini%3Fx%23y");
        assert_eq!(
            segment("us.anthropic.claude:0", "model id").unwrap(),
            "us.anthropic.claude%3A0"
        );
        assert!(segment("..", "model id").is_err());
    }

    #[test]
    fn segments_example() {
        use crate::providers::url::segments;
        assert_eq!(
            segments("tunedModels/my model", "model id").unwrap(),
            "tunedModels/my%20model"
        );
        assert!(segments("models/../../v1/files", "model id").is_err());
    }
}
