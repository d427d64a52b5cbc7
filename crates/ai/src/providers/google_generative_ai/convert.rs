//! Context → Gemini `streamGenerateContent` request.
//!
//! Messages go through [`transform_messages`] first (failed turns dropped, synthetic results for
//! calls without one, thinking and signatures of other models stripped), then:
//!
//! - user text and images → a `user` turn of `text` and `inlineData` parts;
//! - assistant turns → a `model` turn: thinking of the same model as `thought: true` parts, text,
//!   and `functionCall`s, each with the `thoughtSignature` it was streamed with (Gemini 3 rejects
//!   a replayed call without its signature; calls from another model, which have none, get
//!   Google's documented `skip_thought_signature_validator` placeholder on Gemini 3 models);
//! - consecutive tool results → one `user` turn of `functionResponse`s (`{"output": text}` or
//!   `{"error": text}`), in the order of the calls they answer: Gemini pairs responses with calls
//!   by name and order. Call ids go in `functionCall.id` / `functionResponse.id` only for models
//!   that need them, as pi 1.6 decides ([`requires_call_id`]: Gemini 3 and later, and the Claude
//!   and gpt-oss models Google serves), with other APIs' ids cut to `[a-zA-Z0-9_-]{1,64}`;
//! - tool-result images sit inside `functionResponse.parts` where the model takes multimodal
//!   function responses ([`multimodal_function_response`]), else in a following user turn.

use serde::Deserialize;
use serde_json::{json, Value};

use super::wire::{
    Content, FunctionCall, FunctionResponse, GenerateContentRequest, GenerationConfig, Part,
};
use crate::options::{StreamOptions, ToolChoice};
use crate::providers::shared::safe_call_id;
use crate::schema::gemini::tool_parameters;
use crate::tool::SchemaError;
use crate::transform::{is_same_model, transform_messages};
use crate::types::content::{AssistantContent, ImageContent, UserContent};
use crate::types::context::{Context, Tool};
use crate::types::message::{AssistantMessage, Message, ToolResultMessage, UserMessageContent};
use crate::types::model::{InputKind, Model};

/// Signature Google documents for replaying a function call whose real signature is unknown.
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// Per-model settings from `model.compat` (camelCase keys).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GeminiCompat {
    /// Send tool schemas in the legacy `parameters` field, rewritten to Gemini's OpenAPI subset
    /// by [`crate::schema::gemini`], instead of the full JSON Schema in `parametersJsonSchema`.
    /// For endpoints or models that do not accept `parametersJsonSchema`. Default: false.
    pub use_legacy_parameters: bool,
}

impl GeminiCompat {
    /// The settings of `model`; an unreadable `compat` value is an error naming the bad field.
    pub fn for_model(model: &Model) -> Result<Self, String> {
        match &model.compat {
            None => Ok(Self::default()),
            Some(value) => serde_json::from_value(value.clone())
                .map_err(|e| format!("invalid compat settings for model {}: {e}", model.id)),
        }
    }
}

/// Builds the request body. Fails only when a tool schema cannot be expressed in the legacy
/// `parameters` dialect.
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    compat: &GeminiCompat,
) -> Result<GenerateContentRequest, SchemaError> {
    let config = GenerationConfig {
        max_output_tokens: options.resolved_max_tokens_in(model, context),
        temperature: options.temperature,
        thinking_config: super::thinking::thinking_config(
            model,
            options.reasoning,
            &options.thinking_budgets,
        ),
    };
    Ok(GenerateContentRequest {
        contents: convert_messages(model, context),
        system_instruction: context
            .system_prompt
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .map(|s| Content {
                // As pi 1.6 sends it (its SDK makes the instruction a user turn).
                role: Some("user".into()),
                parts: vec![Part::text(s)],
            }),
        tools: convert_tools(&context.tools, compat)?,
        tool_config: options
            .tool_choice
            .as_ref()
            .filter(|_| !context.tools.is_empty())
            .map(tool_config),
        generation_config: (!config.is_empty()).then_some(config),
    })
}

/// `toolConfig.functionCallingConfig` for a tool choice: `AUTO`, `NONE`, `ANY`, or `ANY` limited
/// to one function by `allowedFunctionNames`.
pub fn tool_config(choice: &ToolChoice) -> Value {
    let config = match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
    };
    json!({"functionCallingConfig": config})
}

/// `[{"functionDeclarations": [...]}]`, or nothing without tools.
pub fn convert_tools(tools: &[Tool], compat: &GeminiCompat) -> Result<Vec<Value>, SchemaError> {
    if tools.is_empty() {
        return Ok(Vec::new());
    }
    let mut declarations = Vec::with_capacity(tools.len());
    for tool in tools {
        let mut declaration = json!({"name": tool.name, "description": tool.description});
        if compat.use_legacy_parameters {
            declaration["parameters"] = tool_parameters(tool)?;
        } else {
            declaration["parametersJsonSchema"] = tool.parameters.clone();
        }
        declarations.push(declaration);
    }
    Ok(vec![json!({"functionDeclarations": declarations})])
}

/// A call of the latest model turn: its id, name and the id sent for it (if any).
struct SentCall {
    id: String,
    sent_id: Option<String>,
}

/// The major version of a `gemini-N…` / `gemini-live-N…` model id.
fn gemini_major_version(model_id: &str) -> Option<u32> {
    let id = model_id.to_ascii_lowercase();
    let rest = id
        .strip_prefix("gemini-live-")
        .or_else(|| id.strip_prefix("gemini-"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Whether function calls and responses carry their call id for `model_id` (pi 1.6's
/// `requiresToolCallId`): Gemini 3 and later, and Claude and gpt-oss models on Google's APIs.
pub fn requires_call_id(model_id: &str) -> bool {
    model_id.starts_with("claude-")
        || model_id.starts_with("gpt-oss-")
        || gemini_major_version(model_id).is_some_and(|v| v >= 3)
}

/// Whether tool-result images go inside `functionResponse.parts` (Gemini 3 and later, and models
/// whose id names no Gemini version); older Gemini models get them in a separate user turn.
pub fn multimodal_function_response(model_id: &str) -> bool {
    gemini_major_version(model_id).is_none_or(|v| v >= 3)
}

/// Converts the conversation into `contents`.
pub fn convert_messages(model: &Model, context: &Context) -> Vec<Content> {
    let images = model.input.contains(&InputKind::Image);
    let gemini3 = model.id.to_ascii_lowercase().contains("gemini-3");
    let with_ids = requires_call_id(&model.id);
    let nested_images = multimodal_function_response(&model.id);
    let messages = transform_messages(&context.messages, model, |id| {
        if with_ids {
            safe_call_id(id)
        } else {
            id.to_string()
        }
    });
    let mut contents: Vec<Content> = Vec::with_capacity(messages.len());
    let mut calls: Vec<SentCall> = Vec::new();
    let mut index = 0;
    while let Some(message) = messages.get(index) {
        index += 1;
        match message {
            // Replayed into the prompt and tools before a provider sees the context
            // (`Context::for_request`).
            Message::System(_) => {}
            Message::Custom(_) => {} // dropped by `Context::for_request`
            Message::User(user) => {
                let parts = match &user.content {
                    UserMessageContent::Text(text) => text_part(text).into_iter().collect(),
                    UserMessageContent::Blocks(blocks) => user_parts(blocks, images),
                };
                push(&mut contents, "user", parts);
            }
            Message::Assistant(assistant) => {
                let (parts, sent) = model_parts(assistant, model, gemini3, with_ids);
                calls = sent;
                push(&mut contents, "model", parts);
            }
            Message::ToolResult(first) => {
                let mut results = vec![first];
                while let Some(Message::ToolResult(next)) = messages.get(index) {
                    results.push(next);
                    index += 1;
                }
                let position = |r: &ToolResultMessage| {
                    calls
                        .iter()
                        .position(|c| c.id == r.tool_call_id)
                        .unwrap_or(usize::MAX)
                };
                results.sort_by_key(|r| position(r));
                let (parts, extra) = response_parts(&results, &calls, images, nested_images);
                push(&mut contents, "user", parts);
                push(&mut contents, "user", extra);
            }
        }
    }
    contents
}

fn push(contents: &mut Vec<Content>, role: &str, parts: Vec<Part>) {
    if !parts.is_empty() {
        contents.push(Content {
            role: Some(role.to_string()),
            parts,
        });
    }
}

fn text_part(text: &str) -> Option<Part> {
    (!text.trim().is_empty()).then(|| Part::text(text))
}

fn image_part(image: &ImageContent) -> Part {
    Part::image(&image.mime_type, &image.data)
}

fn user_parts(blocks: &[UserContent], images: bool) -> Vec<Part> {
    blocks
        .iter()
        .filter_map(|block| match block {
            UserContent::Text(t) => text_part(&t.text),
            UserContent::Image(img) if images => Some(image_part(img)),
            UserContent::Image(_) => Some(Part::text(
                "(image omitted: this model does not accept images)",
            )),
        })
        .collect()
}

fn model_parts(
    assistant: &AssistantMessage,
    model: &Model,
    gemini3: bool,
    with_ids: bool,
) -> (Vec<Part>, Vec<SentCall>) {
    // transform_messages already removed other models' signatures and thinking; the check here
    // only decides whether a call needs the Gemini 3 placeholder signature.
    let same = is_same_model(assistant, model);
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for block in &assistant.content {
        match block {
            AssistantContent::Text(t) => {
                if t.text.is_empty() && t.text_signature.is_none() {
                    continue;
                }
                parts.push(Part {
                    text: Some(t.text.clone()),
                    thought_signature: t.text_signature.clone(),
                    ..Part::default()
                });
            }
            AssistantContent::Thinking(t) => {
                if t.redacted == Some(true)
                    || (t.thinking.trim().is_empty() && t.thinking_signature.is_none())
                {
                    continue;
                }
                parts.push(Part {
                    text: Some(t.thinking.clone()),
                    thought: Some(true),
                    thought_signature: t.thinking_signature.clone(),
                    ..Part::default()
                });
            }
            AssistantContent::ToolCall(call) => {
                let sent_id = with_ids.then(|| call.id.clone());
                // The model's own calls are replayed as streamed (Gemini 3 signs only the first
                // of parallel calls); calls from elsewhere carry no signature at all.
                let signature = call
                    .thought_signature
                    .clone()
                    .or_else(|| (gemini3 && !same).then(|| SKIP_SIGNATURE.to_string()));
                parts.push(Part {
                    function_call: Some(FunctionCall {
                        id: sent_id.clone(),
                        name: call.name.clone(),
                        args: Some(Value::Object(call.arguments.clone())),
                    }),
                    thought_signature: signature,
                    ..Part::default()
                });
                calls.push(SentCall {
                    id: call.id.clone(),
                    sent_id,
                });
            }
        }
    }
    (parts, calls)
}

/// The `functionResponse` parts of a group of results, and the extra parts (images for models
/// before Gemini 3, which cannot take images inside a function response).
fn response_parts(
    results: &[&ToolResultMessage],
    calls: &[SentCall],
    images: bool,
    nested_images: bool,
) -> (Vec<Part>, Vec<Part>) {
    let mut parts = Vec::with_capacity(results.len());
    let mut extra = Vec::new();
    for result in results {
        let text = result.text_content();
        let result_images: Vec<&ImageContent> = result
            .content
            .iter()
            .filter_map(|c| match c {
                UserContent::Image(img) => Some(img),
                UserContent::Text(_) => None,
            })
            .collect();
        let mut output = match (text.is_empty(), result_images.is_empty()) {
            (false, _) => text,
            (true, false) => "(see attached image)".to_string(),
            (true, true) => "(no output)".to_string(),
        };
        if !images && !result_images.is_empty() {
            output.push_str("\n(image omitted: this model does not accept images)");
        }
        let key = if result.is_error { "error" } else { "output" };
        let mut nested = Vec::new();
        if images && !result_images.is_empty() {
            let image_parts = result_images.iter().map(|img| image_part(img));
            if nested_images {
                nested.extend(image_parts);
            } else {
                if extra.is_empty() {
                    extra.push(Part::text("Tool result image:"));
                }
                extra.extend(image_parts);
            }
        }
        let id = calls
            .iter()
            .find(|c| c.id == result.tool_call_id)
            .and_then(|c| c.sent_id.clone());
        parts.push(Part {
            function_response: Some(FunctionResponse {
                id,
                name: result.tool_name.clone(),
                response: json!({ key: output }),
                parts: nested,
            }),
            ..Part::default()
        });
    }
    (parts, extra)
}
