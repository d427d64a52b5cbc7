//! oxpi-ai: one streaming API over LLM provider APIs.
//!
//! - [`types`]: pi-ai's vocabulary — [`Message`], content blocks, [`Usage`], [`Model`], [`Context`].
//! - [`stream()`] / [`complete()`]: start a request; get an [`AssistantMessageEventStream`] of
//!   [`AssistantMessageEvent`]s ending in exactly one `done` or `error`.
//! - [`tool`]: tool definitions from `schemars` types and argument validation.
//! - [`providers`]: the wire APIs; [`ProviderRegistry`] dispatches on `model.api`.
//! - [`collection`]: [`Models`], pi's `createModels`: providers by id, keys resolved per provider
//!   from a [`CredentialStore`] (pi's `auth.json` as [`AuthFile`]) and the environment.
//! - [`faux`]: a scripted provider for tests.
//!
//! ```
//! use futures::StreamExt;
//! use oxpi_ai::{AssistantMessageEvent, Context, Message, Model, StreamOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use oxpi_testkit::wire::{completions, reply, Script};
//! # let server = oxpi_testkit::TestServer::start(vec![reply(completions(&Script::text("Hi there.")))]).await?;
//! # let url = format!("{}/v1", server.base_url());
//! // Any OpenAI-compatible server (`url` is e.g. http://127.0.0.1:8080/v1), or a catalogue
//! // model: `oxpi_ai::Models::new().model("anthropic", "claude-haiku-4-5")?`.
//! let model = Model::openai_compatible(&url, "qwen");
//! let context = Context::new("You are terse.").with_message(Message::user("Hi!"));
//! let mut events = oxpi_ai::stream(&model, &context, StreamOptions::default());
//! let mut text = String::new();
//! while let Some(event) = events.next().await {
//!     match event {
//!         AssistantMessageEvent::TextDelta { delta, .. } => text.push_str(&delta),
//!         AssistantMessageEvent::Error { error, .. } => {
//!             return Err(error.error_message.unwrap_or_default().into())
//!         }
//!         _ => {}
//!     }
//! }
//! assert_eq!(text, "Hi there.");
//! # Ok(())
//! # }
//! ```

pub mod collection;
mod delta;
pub(crate) mod diagnostics;
pub mod event;
pub mod failure;
pub mod faux;
pub mod identity;
pub(crate) mod image_fallback;
#[doc(hidden)]
pub mod internals;
pub(crate) mod json_text;
pub mod models;
pub mod oauth;
pub mod options;
pub mod output_limit;
pub mod overflow;
pub mod partial_json;
pub mod provider_facts;
pub mod provider_kit;
pub mod providers;
pub mod registry;
pub mod reply;
pub mod schema;
pub mod secret;
pub(crate) mod spare_buffer;
pub mod sse;
pub mod stream;
pub mod tool;
pub mod transform;
pub mod types;

pub use collection::{
    AuthFile, Credential, CredentialStore, Env, InMemoryCredentialStore, Models, ModelsError,
    SimpleStreamOptions,
};
pub use event::{AssistantMessageEvent, Delta};
pub use failure::{Failure, FailureKind};
pub use options::{
    ApiKey, CacheRetention, PayloadHook, ProviderResponse, ReasoningLevel, ReasoningSummary,
    ResponseHook, ServiceTier, StreamOptions, ThinkingBudgets, ToolChoice,
};
pub use overflow::is_context_overflow;
pub use registry::{complete, stream, ApiProvider, ProviderRegistry};
pub use reply::{EventSink, ReplyBuilder};
pub use stream::{AssistantMessageEventStream, PartialMessage, PartialView, SharedPartial};
pub use types::content::{
    AssistantContent, ImageContent, TextContent, ThinkingContent, ToolCall, UserContent,
};
pub use types::context::{Context, Tool};
pub use types::message::{
    now_millis, AssistantMessage, CustomMessage, CustomMessageError, Message, StopReason,
    ToolResultMessage, UserMessage, UserMessageContent,
};
pub use types::model::{
    CostTier, ImageLimits, ImageResize, InputKind, InputLimits, Model, ModelCost, PromptCache,
    API_ANTHROPIC_MESSAGES, API_AZURE_OPENAI_RESPONSES, API_BEDROCK_CONVERSE_STREAM, API_FAUX,
    API_GOOGLE_GENERATIVE_AI, API_GOOGLE_VERTEX, API_MISTRAL_CONVERSATIONS,
    API_OPENAI_CODEX_RESPONSES, API_OPENAI_COMPLETIONS, API_OPENAI_RESPONSES, API_PI_MESSAGES,
};
pub use types::record::{
    AssistantMessageDiagnostic, DeferredHandle, DiagnosticError, NestedCallStatus,
    NestedToolCallRecord, NestedToolCalls,
};
pub use types::system::{
    Sections, SystemContentBlock, SystemMessage, SystemMessageContent, ToolReference,
};
pub use types::thinking::{clamp_thinking_level, supported_thinking_levels, ThinkingLevel};
pub use types::usage::{Usage, UsageCost};
pub use types::wire_api::WireApi;
