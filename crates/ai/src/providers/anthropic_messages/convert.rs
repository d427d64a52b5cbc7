//! Context → Messages request.
//!
//! The conversation first goes through [`transform_messages`] (failed or aborted turns dropped,
//! tool calls without a result answered, thinking from other models turned into text, tool-call
//! ids rewritten with [`anthropic_tool_id`]); then:
//!
//! - user text and images become `text` / `image` (base64) blocks; empty text is left out;
//! - assistant text, `thinking` (with its signature) and `redacted_thinking` (its data) are
//!   replayed; thinking without a signature is sent as text; tool calls become `tool_use`;
//! - tool results become `tool_result` blocks in a user turn, consecutive results in ONE turn;
//! - with `compat.cacheControl` the system prompt and the last user turn carry a cache marker.

use serde_json::Value;

use super::wire::{
    CacheControl, ContentBlock, ImageSource, MessageParam, MessagesRequest, Role, ThinkingParam,
    ToolParam,
};
use crate::options::{ReasoningLevel, StreamOptions};
use crate::schema::anthropic::input_schema;
use crate::tool::SchemaError;
use crate::transform::{anthropic_tool_id, transform_messages};
use crate::types::content::{AssistantContent, ImageContent, UserContent};
use crate::types::context::Context;
use crate::types::message::{Message, ToolResultMessage, UserMessageContent};
use crate::types::model::{InputKind, Model};

/// `max_tokens` when neither the options nor the model give one.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// Text sent in place of an image to a model that does not accept images.
pub const IMAGE_OMITTED: &str = "(image omitted: this model does not accept images)";

/// Text of a tool result that has no content.
pub const NO_OUTPUT: &str = "(no output)";

/// Builds the request body for `context` on `model`. A tool schema Anthropic cannot take is an
/// error (nothing is sent).
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<MessagesRequest, SchemaError> {
    let tools = context
        .tools
        .iter()
        .map(|tool| {
            Ok(ToolParam {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: input_schema(&tool.name, &tool.parameters)?,
            })
        })
        .collect::<Result<Vec<_>, SchemaError>>()?;
    let cache = cache_control_enabled(model);
    let system = context
        .system_prompt
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            vec![ContentBlock::Text {
                text: s.to_string(),
                cache_control: cache.then_some(CacheControl::EPHEMERAL),
            }]
        });
    let (max_tokens, budget) = output_limits(model, options);
    Ok(MessagesRequest {
        model: model.id.clone(),
        max_tokens,
        messages: convert_messages(model, context, cache),
        system,
        stream: true,
        temperature: options.temperature.filter(|_| budget.is_none()),
        tools,
        thinking: budget.map(|budget_tokens| ThinkingParam {
            kind: "enabled",
            budget_tokens,
        }),
    })
}

/// True when `model.compat.cacheControl` is `true` (default off).
pub fn cache_control_enabled(model: &Model) -> bool {
    model
        .compat
        .as_ref()
        .and_then(|c| c.get("cacheControl"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Thinking budget of a reasoning level (as pi: 1,024 / 2,048 / 8,192 / 16,384; `xhigh` is
/// treated as `high`, budget-based thinking has no higher level).
pub fn thinking_budget(level: ReasoningLevel) -> u64 {
    match level {
        ReasoningLevel::Minimal => 1024,
        ReasoningLevel::Low => 2048,
        ReasoningLevel::Medium => 8192,
        ReasoningLevel::High | ReasoningLevel::Xhigh => 16_384,
    }
}

/// Anthropic's smallest thinking budget.
pub const MIN_THINKING_BUDGET: u64 = 1024;

/// `(max_tokens, thinking budget)`. `max_tokens` is the options' limit, else the model's, else
/// [`DEFAULT_MAX_TOKENS`]. With thinking (a reasoning model and `options.reasoning`), Anthropic
/// needs `max_tokens` above the budget: a smaller limit is raised by the budget (the answer keeps
/// the room asked for) but not past the model's own limit; where that limit leaves too little
/// room, the budget shrinks to leave 1,024 tokens for the answer (as pi), and thinking is left
/// off when not even [`MIN_THINKING_BUDGET`] fits.
pub fn output_limits(model: &Model, options: &StreamOptions) -> (u64, Option<u64>) {
    let cap = model.max_tokens;
    let max = options
        .max_tokens
        .filter(|m| *m > 0)
        .or((cap > 0).then_some(cap))
        .unwrap_or(DEFAULT_MAX_TOKENS);
    let Some(level) = options.reasoning.filter(|_| model.reasoning) else {
        return (max, None);
    };
    let budget = thinking_budget(level);
    if max > budget {
        return (max, Some(budget));
    }
    let raised = budget.saturating_add(max);
    let max = if cap > 0 { raised.min(cap) } else { raised };
    let budget = if max > budget {
        budget
    } else {
        max.saturating_sub(1024).max(MIN_THINKING_BUDGET)
    };
    (max, (max > budget).then_some(budget))
}

/// Converts the conversation (see the module docs). `cache` puts a cache marker on the last
/// block of the last message when that message is a user turn.
pub fn convert_messages(model: &Model, context: &Context, cache: bool) -> Vec<MessageParam> {
    let images = model.input.contains(&InputKind::Image);
    let messages = transform_messages(&context.messages, model, anthropic_tool_id);
    let mut out: Vec<MessageParam> = Vec::with_capacity(messages.len());
    let mut last_was_tool_result = false;
    for message in &messages {
        let is_tool_result = matches!(message, Message::ToolResult(_));
        match message {
            Message::User(user) => {
                let content: Vec<ContentBlock> = match &user.content {
                    UserMessageContent::Text(text) => text_block(text).into_iter().collect(),
                    UserMessageContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| user_block(b, images))
                        .collect(),
                };
                if !content.is_empty() {
                    out.push(MessageParam {
                        role: Role::User,
                        content,
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
                    out.push(MessageParam {
                        role: Role::Assistant,
                        content,
                    });
                }
            }
            Message::ToolResult(result) => {
                let block = tool_result_block(result, images);
                match out.last_mut() {
                    Some(last) if last_was_tool_result => last.content.push(block),
                    _ => out.push(MessageParam {
                        role: Role::User,
                        content: vec![block],
                    }),
                }
            }
        }
        last_was_tool_result = is_tool_result;
    }
    if cache {
        if let Some(last) = out.last_mut().filter(|m| m.role == Role::User) {
            if let Some(block) = last.content.last_mut() {
                block.set_cache_control(CacheControl::EPHEMERAL);
            }
        }
    }
    out
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

fn tool_result_block(result: &ToolResultMessage, images: bool) -> ContentBlock {
    let mut content: Vec<ContentBlock> = result
        .content
        .iter()
        .filter_map(|b| user_block(b, images))
        .collect();
    if content.is_empty() {
        content.push(ContentBlock::text(NO_OUTPUT));
    }
    ContentBlock::ToolResult {
        tool_use_id: result.tool_call_id.clone(),
        content,
        is_error: result.is_error.then_some(true),
        cache_control: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            output_limits(&model(64_000, false), &options(Some(100), None)),
            (100, None)
        );
        assert_eq!(
            output_limits(&model(64_000, false), &options(None, None)),
            (64_000, None)
        );
        assert_eq!(
            output_limits(&model(0, false), &options(None, None)),
            (4096, None)
        );
    }

    #[test]
    fn thinking_needs_room_above_its_budget() {
        use ReasoningLevel::*;
        // Plenty of room: unchanged.
        assert_eq!(
            output_limits(&model(64_000, true), &options(None, Some(High))),
            (64_000, Some(16_384))
        );
        // Raised by the budget.
        assert_eq!(
            output_limits(&model(64_000, true), &options(Some(1000), Some(Medium))),
            (9192, Some(8192))
        );
        // Raised, but not past the model's limit.
        assert_eq!(
            output_limits(&model(20_000, true), &options(Some(16_000), Some(High))),
            (20_000, Some(16_384))
        );
        // The model's limit is the budget: the budget shrinks.
        assert_eq!(
            output_limits(&model(8192, true), &options(Some(4000), Some(Medium))),
            (8192, Some(7168))
        );
        // No room for the smallest budget: no thinking.
        assert_eq!(
            output_limits(&model(1000, true), &options(None, Some(Minimal))),
            (1000, None)
        );
        // Unknown model limit.
        assert_eq!(
            output_limits(&model(0, true), &options(Some(1024), Some(Minimal))),
            (2048, Some(1024))
        );
        // Not a reasoning model: no thinking.
        assert_eq!(
            output_limits(&model(8192, false), &options(None, Some(Low))),
            (8192, None)
        );
    }
}
