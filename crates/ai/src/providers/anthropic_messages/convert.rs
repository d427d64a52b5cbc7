//! Context → Messages request.
//!
//! The conversation first goes through [`transform_messages`] (failed or aborted turns dropped,
//! tool calls without a result answered, thinking from other models turned into text, tool-call
//! ids rewritten with [`anthropic_tool_id`]); then, as pi 1.6 sends it:
//!
//! - a user's plain text stays a string; user blocks become `text` / `image` (base64) blocks;
//!   empty text is left out;
//! - assistant text, `thinking` (with its signature) and `redacted_thinking` (its data) are
//!   replayed; thinking without a signature is sent as text; tool calls become `tool_use`;
//! - tool results become `tool_result` blocks in a user turn, consecutive results in ONE turn,
//!   with `is_error` always; a result without images is one string (its texts joined by
//!   newlines); the images of a failed result (Anthropic rejects them there) follow all results
//!   of the turn, after a caption;
//! - unless [`CacheRetention::None`], the system prompt, the last tool (where
//!   `compat.supportsCacheControlOnTools`, default true) and the last block of the last user
//!   turn carry a cache marker (as pi), with a one-hour TTL for [`CacheRetention::Long`] where
//!   the endpoint supports it ([`long_cache_supported`]);
//! - managed effort (`compat.supportsMidConvoEffort`, [`ThinkingPlan::Managed`]): an effort
//!   marker (a system turn with `output_config.effort`, no content) before every assistant turn
//!   this provider answered with a recorded `provider_thinking_level`, and one with the asked
//!   effort at the end;
//! - native tool changes ([`AnthropicCompat::native_tool_changes`]): the tools, then
//!   [`deferred_placeholder`].

use serde_json::{json, Value};

use super::thinking::{sends_temperature, AnthropicCompat, ThinkingPlan};
use super::wire::{
    CacheControl, ContentBlock, ImageSource, MessageContent, MessageParam, MessagesRequest,
    MetadataParam, Role, ToolChoiceParam, ToolParam,
};
use crate::options::{adjust_max_tokens_for_thinking, CacheRetention, StreamOptions, ToolChoice};
use crate::schema::anthropic::input_schema;
use crate::tool::SchemaError;
use crate::transform::{anthropic_tool_id, transform_messages};
use crate::types::content::{AssistantContent, ImageContent, UserContent};
use crate::types::context::Context;
use crate::types::message::{Message, ToolResultMessage, UserMessageContent};
use crate::types::model::{InputKind, Model, API_ANTHROPIC_MESSAGES};

/// `max_tokens` when neither the options nor the model give one.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// Text sent in place of an image to a model that does not accept images.
pub const IMAGE_OMITTED: &str = "(image omitted: this model does not accept images)";

/// The text block pi puts before the images of a tool result that has no text.
pub const SEE_ATTACHED_IMAGE: &str = "(see attached image)";

/// What stands in a failed tool result for its images, which follow the turn's results.
pub const ERROR_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

/// The name of the deferred placeholder tool.
pub const DEFERRED_PLACEHOLDER_NAME: &str = "__pi_deferred_placeholder__";

/// A tool that is declared, deferred and never available (pi's `DEFERRED_TOOL_PLACEHOLDER`):
/// with native tool changes the first tool change then keeps the cached prompt prefix, as the
/// server's scaffolding for tool changes is in it from the first request.
pub fn deferred_placeholder() -> ToolParam {
    ToolParam {
        name: DEFERRED_PLACEHOLDER_NAME.to_string(),
        description: "Reserved placeholder. Never available. Never call this.".to_string(),
        eager_input_streaming: None,
        input_schema: json!({"type": "object", "properties": {}, "required": []}),
        cache_control: None,
        defer_loading: Some(true),
    }
}

/// Builds the request body for `context` on `model`. A tool schema Anthropic cannot take is an
/// error (nothing is sent).
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<MessagesRequest, SchemaError> {
    let cache = cache_control(model, options.resolved_cache_retention());
    let compat = AnthropicCompat::for_model(model);
    let last_tool = context.tools.len().saturating_sub(1);
    let tool_cache = cache.clone().filter(|_| compat.cache_control_on_tools);
    let mut tools = context
        .tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            Ok(ToolParam {
                name: tool.name.clone(),
                description: tool.description.clone(),
                eager_input_streaming: compat.eager_input_streaming.then_some(true),
                input_schema: input_schema(&tool.name, &tool.parameters)?,
                cache_control: tool_cache.clone().filter(|_| index == last_tool),
                defer_loading: None,
            })
        })
        .collect::<Result<Vec<_>, SchemaError>>()?;
    if compat.native_tool_changes(!tools.is_empty()) {
        tools.push(deferred_placeholder());
    }
    let system = context
        .system_prompt
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            vec![ContentBlock::Text {
                text: s.to_string(),
                cache_control: cache.clone(),
            }]
        });
    let (max_tokens, budget) = if compat.force_adaptive_thinking {
        // Adaptive thinking has no budget to make room for.
        let max = options.resolved_max_tokens_in(model, context);
        (max.unwrap_or(DEFAULT_MAX_TOKENS), None)
    } else {
        output_limits(model, context, options)
    };
    let plan = ThinkingPlan::new(model, options, &compat, budget);
    let converted = convert_messages(model, context, cache);
    let messages = match plan.managed_effort() {
        Some(effort) => with_effort_markers(converted, effort),
        None => converted.messages,
    };
    Ok(MessagesRequest {
        model: model.id.clone(),
        max_tokens,
        messages,
        system,
        stream: true,
        temperature: options
            .temperature
            .filter(|_| sends_temperature(options, &compat)),
        tools,
        thinking: plan.param(),
        output_config: plan.output_config(),
        fallbacks: compat.fallbacks(),
        tool_choice: options.tool_choice.as_ref().map(|choice| match choice {
            ToolChoice::Auto => ToolChoiceParam::Auto,
            ToolChoice::None => ToolChoiceParam::None,
            ToolChoice::Required => ToolChoiceParam::Any,
            ToolChoice::Tool(name) => ToolChoiceParam::Tool { name: name.clone() },
        }),
        metadata: options
            .metadata
            .get("user_id")
            .and_then(Value::as_str)
            .map(|user_id| MetadataParam {
                user_id: user_id.to_string(),
            }),
    })
}

/// Whether `value` is an effort Anthropic takes in `output_config`.
fn is_effort(value: &str) -> bool {
    matches!(value, "low" | "medium" | "high" | "xhigh" | "max")
}

/// The turns with effort markers (see the module docs): before each assistant turn with a
/// recorded effort, and `effort` at the end.
fn with_effort_markers(converted: Converted, effort: &str) -> Vec<MessageParam> {
    let mut levels = converted.assistant_levels.into_iter().peekable();
    let mut out = Vec::with_capacity(converted.messages.len() + 1);
    for (index, message) in converted.messages.into_iter().enumerate() {
        if let Some((_, level)) = levels.next_if(|(at, _)| *at == index) {
            out.push(MessageParam::effort_marker(&level));
        }
        out.push(message);
    }
    out.push(MessageParam::effort_marker(effort));
    out
}

/// The cache marker for `retention`: none, five minutes, or an hour where
/// [`long_cache_supported`].
pub fn cache_control(model: &Model, retention: CacheRetention) -> Option<CacheControl> {
    match retention {
        CacheRetention::None => None,
        CacheRetention::Long if long_cache_supported(model) => Some(CacheControl::ONE_HOUR),
        CacheRetention::Short | CacheRetention::Long => Some(CacheControl::EPHEMERAL),
    }
}

/// Whether the endpoint takes `"ttl": "1h"`: `model.compat.supportsLongCacheRetention`,
/// default true (pi 1.6; the catalogue marks the hosts that reject it, such as Fireworks).
pub fn long_cache_supported(model: &Model) -> bool {
    AnthropicCompat::for_model(model).long_cache_retention
}

/// Anthropic's smallest thinking budget.
pub const MIN_THINKING_BUDGET: u64 = 1024;

/// `(max_tokens, thinking budget)`, as pi's `streamSimple`: `max_tokens` is
/// [`StreamOptions::resolved_max_tokens_in`] (the options' limit, else the model's, fitted into
/// the context window less the input, as pi 1.6),
/// else [`DEFAULT_MAX_TOKENS`]. With thinking (a reasoning model and `options.reasoning`) the
/// level's budget ([`StreamOptions::thinking_budgets`]) is added to it, capped by the model's
/// limit, and where that cap leaves too little room the budget shrinks to leave 1,024 tokens for
/// the answer ([`adjust_max_tokens_for_thinking`]). Thinking is left off when not even
/// [`MIN_THINKING_BUDGET`] fits (pi would send a budget Anthropic rejects).
pub fn output_limits(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> (u64, Option<u64>) {
    let max = options
        .resolved_max_tokens_in(model, context)
        .unwrap_or(DEFAULT_MAX_TOKENS);
    let Some(level) = options.reasoning.filter(|_| model.reasoning) else {
        return (max, None);
    };
    let cap = if model.max_tokens > 0 {
        model.max_tokens
    } else {
        u64::MAX
    };
    let (max, budget) = adjust_max_tokens_for_thinking(max, cap, level, &options.thinking_budgets);
    if budget < MIN_THINKING_BUDGET {
        return (max, None);
    }
    (max, Some(budget))
}

/// The converted conversation and, for managed effort, the effort recorded on each assistant
/// turn that was sent (by its index in `messages`).
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The turns.
    pub messages: Vec<MessageParam>,
    /// `(index, effort)` of the assistant turns this provider answered on this API with a
    /// recorded `provider_thinking_level` that is an effort.
    pub assistant_levels: Vec<(usize, String)>,
}

/// Converts the conversation (see the module docs). `cache` is put on the last block of the last
/// message when that message is a user turn.
pub fn convert_messages(
    model: &Model,
    context: &Context,
    cache: Option<CacheControl>,
) -> Converted {
    let images = model.input.contains(&InputKind::Image);
    let messages = transform_messages(&context.messages, model, anthropic_tool_id);
    let mut out: Vec<MessageParam> = Vec::with_capacity(messages.len());
    let mut assistant_levels = Vec::new();
    let mut index = 0;
    while index < messages.len() {
        match &messages[index] {
            // Replayed into the prompt and tools before a provider sees the context
            // (`Context::for_request`).
            Message::System(_) => {}
            Message::Custom(_) => {} // dropped by `Context::for_request`
            Message::User(user) => {
                let content = match &user.content {
                    UserMessageContent::Text(text) if text.trim().is_empty() => None,
                    UserMessageContent::Text(text) => Some(MessageContent::Text(text.clone())),
                    UserMessageContent::Blocks(blocks) => {
                        let blocks: Vec<ContentBlock> = blocks
                            .iter()
                            .filter_map(|b| user_block(b, images))
                            .collect();
                        (!blocks.is_empty()).then_some(MessageContent::Blocks(blocks))
                    }
                };
                if let Some(content) = content {
                    out.push(MessageParam {
                        role: Role::User,
                        content,
                        output_config: None,
                    });
                }
            }
            Message::Assistant(assistant) => {
                let content: Vec<ContentBlock> = assistant
                    .content
                    .iter()
                    .filter_map(assistant_block)
                    .collect();
                if !content.is_empty() {
                    if let Some(level) = assistant.provider_thinking_level.as_ref().filter(|l| {
                        assistant.api.as_str() == API_ANTHROPIC_MESSAGES
                            && assistant.provider == model.provider
                            && is_effort(l)
                    }) {
                        assistant_levels.push((out.len(), level.clone()));
                    }
                    out.push(MessageParam::blocks(Role::Assistant, content));
                }
            }
            Message::ToolResult(_) => {
                // Consecutive results go in one user turn; the images of failed ones after them.
                let mut blocks = Vec::new();
                let mut error_images = Vec::new();
                while let Some(Message::ToolResult(result)) = messages.get(index) {
                    blocks.push(tool_result_block(result, images, &mut error_images));
                    index += 1;
                }
                blocks.append(&mut error_images);
                out.push(MessageParam::blocks(Role::User, blocks));
                continue;
            }
        }
        index += 1;
    }
    if let Some(cache) = cache {
        if let Some(last) = out.last_mut().filter(|m| m.role == Role::User) {
            last.set_cache_control(cache);
        }
    }
    Converted {
        messages: out,
        assistant_levels,
    }
}

fn text_block(text: &str) -> Option<ContentBlock> {
    (!text.trim().is_empty()).then(|| ContentBlock::text(text))
}

fn image_block(image: &ImageContent) -> ContentBlock {
    ContentBlock::Image {
        source: ImageSource {
            kind: "base64",
            media_type: image.mime_type.clone(),
            data: image.data.clone(),
        },
        cache_control: None,
    }
}

fn user_block(block: &UserContent, images: bool) -> Option<ContentBlock> {
    match block {
        UserContent::Text(t) => text_block(&t.text),
        UserContent::Image(image) if images => Some(image_block(image)),
        UserContent::Image(_) => Some(ContentBlock::text(IMAGE_OMITTED)),
    }
}

fn assistant_block(block: &AssistantContent) -> Option<ContentBlock> {
    match block {
        AssistantContent::Text(t) => text_block(&t.text),
        AssistantContent::Thinking(t) => {
            let signature = t
                .thinking_signature
                .as_deref()
                .filter(|s| !s.trim().is_empty());
            match (t.redacted == Some(true), signature) {
                (true, Some(data)) => Some(ContentBlock::RedactedThinking {
                    data: data.to_string(),
                }),
                (true, None) => None,
                (false, Some(signature)) => Some(ContentBlock::Thinking {
                    thinking: t.thinking.clone(),
                    signature: signature.to_string(),
                }),
                // No signature (e.g. an interrupted stream): Anthropic would reject the block.
                (false, None) => text_block(&t.thinking),
            }
        }
        AssistantContent::ToolCall(call) => Some(ContentBlock::ToolUse {
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.arguments.clone(),
        }),
    }
}

/// A `tool_result` block (pi's `convertContentBlocks`): its texts joined by newlines when it has
/// no image, else its blocks, after [`SEE_ATTACHED_IMAGE`] when it has no text. A failed result's
/// images are left in `error_images` (after a caption) and stand as
/// [`ERROR_IMAGE_PLACEHOLDER`] in it: Anthropic takes only text in an error result.
fn tool_result_block(
    result: &ToolResultMessage,
    images: bool,
    error_images: &mut Vec<ContentBlock>,
) -> ContentBlock {
    let has_image = |content: &[UserContent]| {
        images && content.iter().any(|b| matches!(b, UserContent::Image(_)))
    };
    let mut content = result.content.clone();
    if result.is_error && has_image(&content) {
        error_images.push(ContentBlock::text(format!(
            "Images from the error result of tool call {} ({}):",
            result.tool_call_id, result.tool_name
        )));
        let mut kept = Vec::with_capacity(content.len());
        let mut after_placeholder = false;
        for block in content {
            match block {
                UserContent::Image(image) => {
                    error_images.push(image_block(&image));
                    if !after_placeholder {
                        kept.push(UserContent::text(ERROR_IMAGE_PLACEHOLDER));
                    }
                    after_placeholder = true;
                }
                UserContent::Text(text) => {
                    after_placeholder = text.text == ERROR_IMAGE_PLACEHOLDER;
                    kept.push(UserContent::Text(text));
                }
            }
        }
        content = kept;
    }
    let content = if has_image(&content) {
        let mut blocks: Vec<ContentBlock> = content
            .iter()
            .map(|block| match block {
                UserContent::Text(t) => ContentBlock::text(t.text.clone()),
                UserContent::Image(image) => image_block(image),
            })
            .collect();
        if !content.iter().any(|b| matches!(b, UserContent::Text(_))) {
            blocks.insert(0, ContentBlock::text(SEE_ATTACHED_IMAGE));
        }
        MessageContent::Blocks(blocks)
    } else {
        let texts: Vec<&str> = content
            .iter()
            .map(|block| match block {
                UserContent::Text(t) => t.text.as_str(),
                UserContent::Image(_) => IMAGE_OMITTED,
            })
            .collect();
        MessageContent::Text(texts.join("\n"))
    };
    ContentBlock::ToolResult {
        tool_use_id: result.tool_call_id.clone(),
        content,
        is_error: result.is_error,
        cache_control: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ReasoningLevel;

    fn model(max_tokens: u64, reasoning: bool) -> Model {
        let mut model = Model::openai_compatible("http://x", "claude");
        model.max_tokens = max_tokens;
        model.reasoning = reasoning;
        model
    }

    fn options(max_tokens: Option<u64>, reasoning: Option<ReasoningLevel>) -> StreamOptions {
        StreamOptions {
            max_tokens,
            reasoning,
            ..StreamOptions::default()
        }
    }

    #[test]
    fn max_tokens_comes_from_options_then_model_then_default() {
        assert_eq!(
            output_limits(
                &model(64_000, false),
                &Context::default(),
                &options(Some(100), None)
            ),
            (100, None)
        );
        assert_eq!(
            output_limits(
                &model(64_000, false),
                &Context::default(),
                &options(None, None)
            ),
            (64_000, None),
            "the model's limit, no 32,000 cap (pi 1.6)"
        );
        assert_eq!(
            output_limits(&model(0, false), &Context::default(), &options(None, None)),
            (4096, None)
        );
    }

    #[test]
    fn thinking_needs_room_above_its_budget() {
        use ReasoningLevel::*;
        // The model's limit: raised by the budget, but not past the limit.
        assert_eq!(
            output_limits(
                &model(64_000, true),
                &Context::default(),
                &options(None, Some(High))
            ),
            (64_000, Some(16_384))
        );
        // Raised by the budget.
        assert_eq!(
            output_limits(
                &model(64_000, true),
                &Context::default(),
                &options(Some(1000), Some(Medium))
            ),
            (9192, Some(8192))
        );
        // Raised, but not past the model's limit.
        assert_eq!(
            output_limits(
                &model(20_000, true),
                &Context::default(),
                &options(Some(16_000), Some(High))
            ),
            (20_000, Some(16_384))
        );
        // The model's limit is the budget: the budget shrinks.
        assert_eq!(
            output_limits(
                &model(8192, true),
                &Context::default(),
                &options(Some(4000), Some(Medium))
            ),
            (8192, Some(7168))
        );
        // No room for the smallest budget: no thinking.
        assert_eq!(
            output_limits(
                &model(1000, true),
                &Context::default(),
                &options(None, Some(Minimal))
            ),
            (1000, None)
        );
        // Unknown model limit.
        assert_eq!(
            output_limits(
                &model(0, true),
                &Context::default(),
                &options(Some(1024), Some(Minimal))
            ),
            (2048, Some(1024))
        );
        // Not a reasoning model: no thinking.
        assert_eq!(
            output_limits(
                &model(8192, false),
                &Context::default(),
                &options(None, Some(Low))
            ),
            (8192, None)
        );
    }
}
