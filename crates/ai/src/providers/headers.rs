//! Request and response headers: the JSON content type, the model's and the options' headers,
//! the authentication header (marked sensitive), pi's session headers; responses' headers as a
//! record for `on_response`.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};

use crate::options::StreamOptions;

/// Response headers as `name → value` (lowercase names; repeated headers joined with `, `;
/// values that are not text are left out).
pub fn header_record(headers: &HeaderMap) -> std::collections::BTreeMap<String, String> {
    let mut record = std::collections::BTreeMap::<String, String>::new();
    for (name, value) in headers {
        let Ok(value) = value.to_str() else { continue };
        record
            .entry(name.as_str().to_string())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(value);
            })
            .or_insert_with(|| value.to_string());
    }
    record
}

/// The request headers: JSON content type (and `accept` where pi's client sends it), the
/// identity's headers (`User-Agent`, attribution;
/// see [`crate::identity`]), the model's headers, the options' headers, then the authentication
/// header (marked sensitive so it never shows in debug output). A later source wins.
pub fn request_headers(
    model: &crate::types::model::Model,
    options: &StreamOptions,
    auth: Option<(HeaderName, String)>,
) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(accept) = model.api.accept_header() {
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
    }
    let identity = options
        .identity
        .clone()
        .unwrap_or_default()
        .headers(&model.provider, &model.base_url);
    let configured = model.headers.iter().chain(options.headers.iter());
    for (name, value) in identity.iter().map(|(n, v)| (n, v)).chain(configured) {
        match (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            (Ok(name), Ok(value)) => {
                headers.insert(name, value);
            }
            _ => return Err(format!("invalid HTTP header {name:?}")),
        }
    }
    if let Some((name, value)) = auth {
        let mut value = HeaderValue::try_from(value)
            .map_err(|_| "the API key contains characters not allowed in a header".to_string())?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Adds the session id under each of `names` that the headers do not set already (the model's
/// and the options' own headers win), as pi's cache-routing headers.
pub fn add_session_headers(
    headers: &mut HeaderMap,
    names: &[&'static str],
    session: &str,
) -> Result<(), String> {
    let value = HeaderValue::from_str(session)
        .map_err(|_| "the session id contains characters not allowed in a header".to_string())?;
    for name in names {
        headers
            .entry(HeaderName::from_static(name))
            .or_insert(value.clone());
    }
    Ok(())
}
