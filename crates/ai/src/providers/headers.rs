//! Request and response headers: the JSON content type, the model's and the options' headers,
//! the authentication header (marked sensitive), pi's session headers; responses' headers as a
//! record for `on_response`.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};

use crate::options::StreamOptions;
use crate::types::content::UserContent;
use crate::types::context::Context;
use crate::types::message::{Message, UserMessageContent};

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

/// The headers a provider's facts ask for on every API (`data/providers.json`): GitHub Copilot's
/// editor headers ([`add_copilot_headers`]) and a provider's own session header (OpenCode's
/// `x-opencode-session`, sent whenever there is a session id). Headers the model or the options
/// set win.
pub(crate) fn add_provider_headers(
    headers: &mut HeaderMap,
    model: &crate::types::model::Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<(), String> {
    let Some(facts) = crate::provider_facts::facts(&model.provider) else {
        return Ok(());
    };
    if facts.copilot_headers {
        add_copilot_headers(headers, context);
    }
    if let (Some(name), Some(session)) = (&facts.session_header, options.session_id.as_deref()) {
        let name = HeaderName::try_from(name.as_str())
            .map_err(|_| format!("invalid session header name {name:?}"))?;
        let value = HeaderValue::from_str(session).map_err(|_| {
            "the session id contains characters not allowed in a header".to_string()
        })?;
        headers.entry(name).or_insert(value);
    }
    Ok(())
}

/// GitHub Copilot's per-request headers (pi's `buildCopilotDynamicHeaders`): `X-Initiator`
/// (`user` when the last message is the user's, else `agent`), `Openai-Intent`, and
/// `Copilot-Vision-Request` when a user message or tool result holds an image. Headers the
/// model or the options set win.
pub(crate) fn add_copilot_headers(headers: &mut HeaderMap, context: &Context) {
    let initiator = match context.messages.last() {
        Some(Message::User(_)) | None => "user",
        Some(_) => "agent",
    };
    let image = |c: &UserContent| matches!(c, UserContent::Image(_));
    let vision = context.messages.iter().any(|m| match m {
        Message::User(u) => {
            matches!(&u.content, UserMessageContent::Blocks(b) if b.iter().any(image))
        }
        Message::ToolResult(r) => r.content.iter().any(image),
        _ => false,
    });
    let mut add = |name: &'static str, value: &'static str| {
        headers
            .entry(name)
            .or_insert(HeaderValue::from_static(value));
    };
    add("x-initiator", initiator);
    add("openai-intent", "conversation-edits");
    if vision {
        add("copilot-vision-request", "true");
    }
}

/// The Responses API's session headers by the model's `compat.sessionAffinityFormat` (pi 1.6):
/// `openai` (the default) `session-id` and `x-client-request-id`, `openai-nosession` only the
/// latter, `openrouter` `x-session-id`. `send_session_id_header: false` (pi 0.73's
/// `sendSessionIdHeader`) drops `session-id` as `openai-nosession` does.
pub(crate) fn responses_session_headers(
    model: &crate::types::model::Model,
    send_session_id_header: bool,
) -> &'static [&'static str] {
    let format = model
        .compat
        .as_ref()
        .and_then(|c| c.get("sessionAffinityFormat"))
        .and_then(|f| f.as_str());
    match format {
        Some("openrouter") => &["x-session-id"],
        Some("openai-nosession") => &["x-client-request-id"],
        _ if !send_session_id_header => &["x-client-request-id"],
        _ => &["session-id", "x-client-request-id"],
    }
}
