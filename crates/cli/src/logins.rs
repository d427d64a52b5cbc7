//! The stored logins of `auth.json` (Anthropic, OpenAI Codex, GitHub Copilot) used by a run:
//! the agent's requests and the compaction summaries of a provider with a login go through
//! oxpi-ai's `Models` on the file, which takes the login's token (refreshed under pi's lock).

use oxpi_ai::{Model, StreamOptions};
use oxpi_session::ModelSummarizer;

use crate::auth_file::AuthKeys;

/// The agent's requests: those of a provider with a stored login (and no key of their own) go
/// through oxpi-ai's `Models` on `auth.json`, which takes the login's token (refreshed under
/// pi's lock when it expires, and once after a 401), its base URL (Copilot's `proxy-ep`) and
/// headers; the others through oxpi-ai's providers as before.
pub(crate) fn login_stream(
    auth: &AuthKeys,
) -> Option<
    impl Fn(&Model, &oxpi_ai::Context, StreamOptions) -> oxpi_ai::AssistantMessageEventStream
        + Send
        + Sync
        + 'static,
> {
    let path = auth.path()?;
    let models = oxpi_ai::Models::builder()
        .credentials(oxpi_ai::collection::AuthFile::new(path))
        .build();
    let auth = auth.clone();
    Some(
        move |model: &Model, context: &oxpi_ai::Context, options: StreamOptions| {
            if options.api_key.is_none() && auth.has_login(&model.provider) {
                models.stream(model, context, options)
            } else {
                oxpi_ai::stream(model, context, options)
            }
        },
    )
}

/// A summarizer on `model` with `options` that sends its request with the stored login of
/// `model`'s provider, when it has one (as the agent's requests do, [`login_stream`]).
pub(crate) fn summarizer(
    model: &Model,
    options: StreamOptions,
    auth: &AuthKeys,
) -> ModelSummarizer {
    let summarizer = ModelSummarizer::new(model.clone()).with_options(options);
    let (Some(path), true) = (auth.path(), auth.has_login(&model.provider)) else {
        return summarizer;
    };
    let models = oxpi_ai::Models::builder()
        .credentials(oxpi_ai::collection::AuthFile::new(path))
        .build();
    match models.login_registry(model) {
        Some(registry) => summarizer.with_registry(registry),
        None => summarizer,
    }
}
