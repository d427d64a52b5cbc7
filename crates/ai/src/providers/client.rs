//! The HTTP client every built-in provider uses, and its redirect policy: a redirect is followed
//! only within the origin (scheme, host and port) the request went to, so a credential header
//! (`x-api-key`, `api-key`, `x-goog-api-key`, `cf-aig-authorization`, SigV4's `authorization`
//! and `x-amz-security-token`, …) never reaches another server. reqwest's default policy strips
//! only `Authorization` and cookies, and only a provider knows which other headers are secret,
//! so the transport refuses every cross-origin hop instead of guessing.

use std::time::Duration;

use reqwest::redirect::{Attempt, Policy};
use reqwest::Url;

use crate::diagnostics::error_chain;

/// A new HTTP client as every built-in provider uses it ([`client_builder`]: a
/// 30 s connect timeout, redirects followed only within the request's origin); the error text is
/// sent as the stream's error if building one fails.
pub fn new_client() -> Result<reqwest::Client, String> {
    client_builder()
        .build()
        .map_err(|e| format!("could not create the HTTP client: {}", error_chain(&e)))
}

/// At most this many redirects (all within the origin) are followed for one request.
pub const MAX_REDIRECTS: usize = 10;

/// A client builder with oxpi's settings: a 30 s connect timeout and [`redirect_policy`]. Start
/// from it when a provider's `with_client` gets a client of yours (a proxy, custom TLS), so
/// that client keeps credentials on their origin too.
///
/// ```
/// let client = oxpi_ai::providers::client::client_builder()
///     .user_agent("my-app/1.0")
///     .build()
///     .expect("a client");
/// let provider = oxpi_ai::providers::openai_completions::OpenAiCompletionsProvider::with_client(client);
/// # drop(provider);
/// ```
pub fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .redirect(redirect_policy())
}

/// Follows a redirect only to the same origin as the request, up to [`MAX_REDIRECTS`]; any
/// other redirect is not followed, and the transport reports the 3xx response as an error
/// naming where it pointed (`redirect_text`).
pub fn redirect_policy() -> Policy {
    Policy::custom(|attempt: Attempt<'_>| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// The error text for a redirect that was not followed (a 3xx response reached the transport):
/// the status and the origin it pointed to, never the full location (it may carry a token).
pub(crate) fn redirect_text(
    status: reqwest::StatusCode,
    from: &Url,
    location: Option<&str>,
) -> String {
    let target = location
        .and_then(|location| from.join(location).ok())
        .map(|url| url.origin().ascii_serialization());
    match target {
        Some(target) if target != from.origin().ascii_serialization() => format!(
            "{status}: the server redirected the request to another origin ({target}); not followed, so the credentials are not sent there. Set the model's base URL to the final address"
        ),
        Some(_) => format!("{status}: the server redirected the request, and the redirect was not followed"),
        None => format!("{status}: the server answered with a redirect without a usable Location header"),
    }
}

/// The error text when a response came from another origin than the request went to: a client
/// given to `with_client` followed a cross-origin redirect (build it from [`client_builder`]).
pub(crate) fn cross_origin_text(requested: &Url, answered: &Url) -> String {
    format!(
        "the response came from {} although the request went to {}: the HTTP client followed a redirect to another origin (build clients given to with_client from oxpi_ai::providers::client::client_builder(), which keeps credentials on their origin)",
        answered.origin().ascii_serialization(),
        requested.origin().ascii_serialization()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_texts_name_the_origin_only() {
        let from = Url::parse("https://api.example.com/v1/chat").unwrap();
        assert_eq!(
            redirect_text(
                reqwest::StatusCode::TEMPORARY_REDIRECT,
                &from,
                Some("https://evil.example:8443/steal?token=abc")
            ),
            "307 Temporary Redirect: the server redirected the request to another origin (https://evil.example:8443); not followed, so the credentials are not sent there. Set the model's base URL to the final address"
        );
        assert_eq!(
            redirect_text(reqwest::StatusCode::FOUND, &from, None),
            "302 Found: the server answered with a redirect without a usable Location header"
        );
    }
}
