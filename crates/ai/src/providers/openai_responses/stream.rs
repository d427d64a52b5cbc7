//! Responses stream events → events, through [`ReplyBuilder`].
//!
//! Each output item becomes one block: a `reasoning` item a thinking block (its summary parts
//! joined by a blank line; the item itself, encrypted content included, is kept as the
//! block's signature for replay), a `message` item a text block (refusals included), a
//! `function_call` item a tool call whose id is `{call_id}|{item_id}`.

use std::collections::HashMap;

use serde_json::Value;

use super::wire::{FunctionCallItem, ResponseObject, ResponseUsage, StreamEvent};
use crate::failure::Failure;
use crate::options::ServiceTier;
use crate::providers::openai_completions::stream::generate_call_id;
use crate::reply::ReplyBuilder;
use crate::schema::openai_strict::remove_added_nulls;
use crate::types::content::ThinkingContent;
use crate::types::message::StopReason;
use crate::types::model::Model;
use crate::types::usage::Usage;

/// The event types this processor reads; every other type is skipped.
pub const HANDLED_EVENTS: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.output_item.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

pub use crate::providers::transport::Flow;

#[derive(Debug)]
enum Item {
    Reasoning {
        has_block: bool,
        separator_due: bool,
    },
    Message {
        /// A text block was opened for it.
        has_text: bool,
    },
    FunctionCall {
        item_id: Option<String>,
        raw: String,
        /// The tool's original schema when it was sent strict: arguments are held back and
        /// the `null`s strict mode forces for absent optional properties are removed.
        strict_schema: Option<Value>,
    },
    Other,
}

/// Turns parsed events into reply events and, at the end, the final message.
#[derive(Debug)]
pub struct EventProcessor {
    out: ReplyBuilder,
    model: Model,
    strict_schemas: HashMap<String, Value>,
    current: Option<Item>,
    usage: Option<ResponseUsage>,
    terminal: Option<Terminal>,
    /// The tier asked for, until the response names the one that served it.
    service_tier: Option<ServiceTier>,
}

#[derive(Debug)]
enum Terminal {
    Completed,
    Incomplete(Option<String>),
}

impl EventProcessor {
    /// A processor for a reply from `model`. `strict_schemas` maps the name of each tool sent
    /// with `strict: true` to its original parameters schema.
    pub fn new(out: ReplyBuilder, model: &Model, strict_schemas: HashMap<String, Value>) -> Self {
        Self {
            out,
            model: model.clone(),
            strict_schemas,
            current: None,
            usage: None,
            terminal: None,
            service_tier: None,
        }
    }

    /// Prices the reply for this tier (the response's own `service_tier` wins when it sends one).
    pub fn with_service_tier(mut self, tier: Option<ServiceTier>) -> Self {
        self.service_tier = tier;
        self
    }

    /// Applies one event. A failed response, an `error` event or an impossible event is
    /// returned as `Err`.
    pub async fn process(&mut self, event: StreamEvent) -> Result<Flow, Failure> {
        self.out.start().await;
        match event.type_.as_str() {
            "response.created" | "response.in_progress" => {
                self.take_response_id(event.response.as_ref());
            }
            "response.output_item.added" => {
                self.end_item().await;
                let item = event.item.unwrap_or_default();
                self.current = Some(match item_type(&item) {
                    "reasoning" => Item::Reasoning {
                        has_block: false,
                        separator_due: false,
                    },
                    "message" => Item::Message { has_text: false },
                    "function_call" => self.start_call(&item).await,
                    _ => Item::Other,
                });
            }
            "response.reasoning_summary_part.added" => {
                if let Some(Item::Reasoning {
                    has_block,
                    separator_due,
                }) = &mut self.current
                {
                    *separator_due = *has_block;
                }
            }
            "response.reasoning_summary_text.delta" => {
                let delta = event.delta.unwrap_or_default();
                if delta.is_empty() {
                    return Ok(Flow::Continue);
                }
                let mut text = delta;
                if let Some(Item::Reasoning {
                    has_block,
                    separator_due,
                }) = &mut self.current
                {
                    if std::mem::take(separator_due) {
                        text.insert_str(0, "\n\n");
                    }
                    *has_block = true;
                }
                self.out.thinking(&text).await;
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = event.delta.unwrap_or_default();
                if let Some(Item::Message { has_text }) = &mut self.current {
                    *has_text |= !delta.is_empty();
                }
                self.out.text(&delta).await;
            }
            "response.function_call_arguments.delta" => {
                let delta = event.delta.unwrap_or_default();
                self.call_arguments(event.item_id.as_deref(), |_| Some(delta))
                    .await
                    .map_err(Failure::parse)?;
            }
            "response.function_call_arguments.done" => {
                let full = event.arguments.unwrap_or_default();
                self.call_arguments(event.item_id.as_deref(), |raw| rest_of(raw, &full))
                    .await
                    .map_err(Failure::parse)?;
            }
            "response.output_item.done" => {
                let item = event.item.unwrap_or_default();
                match item_type(&item) {
                    "reasoning" => self.end_reasoning(&item).await,
                    "function_call" => self.end_call(&item).await.map_err(Failure::parse)?,
                    "message" => {
                        // The item's id and phase, replayed with its text (see `replay`).
                        if matches!(self.current, Some(Item::Message { has_text: true })) {
                            if let Some(id) = item.get("id").and_then(Value::as_str) {
                                let phase = item.get("phase").and_then(Value::as_str);
                                self.out
                                    .text_signature(super::replay::encode_text_signature(
                                        id, phase,
                                    ));
                            }
                        }
                        self.end_item().await
                    }
                    _ => self.end_item().await,
                }
            }
            "response.completed" => {
                self.take_usage(event.response.as_ref());
                self.terminal = Some(Terminal::Completed);
                return Ok(Flow::Complete);
            }
            "response.incomplete" => {
                self.take_usage(event.response.as_ref());
                let reason = event
                    .response
                    .and_then(|r| r.incomplete_details)
                    .and_then(|d| d.reason);
                self.terminal = Some(Terminal::Incomplete(reason));
                return Ok(Flow::Complete);
            }
            "response.failed" => {
                self.take_usage(event.response.as_ref());
                let code = event
                    .response
                    .as_ref()
                    .and_then(|r| r.error.as_ref())
                    .and_then(|e| e.code.as_ref());
                return Err(Failure::in_stream(
                    failed_text(event.response.as_ref()),
                    is_transient_code(code),
                ));
            }
            "error" => {
                let code = event
                    .code
                    .as_ref()
                    .or_else(|| event.error.as_ref().and_then(|e| e.get("code")));
                return Err(Failure::in_stream(
                    error_event_text(&event),
                    is_transient_code(code),
                ));
            }
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn take_response_id(&mut self, response: Option<&ResponseObject>) {
        if let Some(id) = response
            .and_then(|r| r.id.clone())
            .filter(|id| !id.is_empty())
        {
            if self.out.message().response_id.is_none() {
                self.out.set_response_id(id);
            }
        }
    }

    fn take_usage(&mut self, response: Option<&ResponseObject>) {
        self.take_response_id(response);
        if let Some(usage) = response.and_then(|r| r.usage) {
            self.usage = Some(usage);
        }
        if let Some(tier) = response
            .and_then(|r| r.service_tier.as_deref())
            .and_then(ServiceTier::parse)
        {
            self.service_tier = Some(tier);
        }
    }

    async fn start_call(&mut self, item: &Value) -> Item {
        let call: FunctionCallItem = serde_json::from_value(item.clone()).unwrap_or_default();
        let call_id = call
            .call_id
            .filter(|id| !id.is_empty())
            .unwrap_or_else(generate_call_id);
        let item_id = call.id.filter(|id| !id.is_empty());
        let id = match item_id.as_deref() {
            Some(item_id) => format!("{call_id}|{item_id}"),
            None => call_id,
        };
        let name = call.name.unwrap_or_default();
        let strict_schema = self.strict_schemas.get(&name).cloned();
        self.out.tool_call_start(id, name).await;
        let mut current = Item::FunctionCall {
            item_id,
            raw: String::new(),
            strict_schema,
        };
        if let Some(arguments) = call.arguments.filter(|a| !a.is_empty()) {
            self.push_arguments(&mut current, arguments).await;
        }
        current
    }

    async fn push_arguments(&mut self, item: &mut Item, fragment: String) {
        if let Item::FunctionCall {
            raw, strict_schema, ..
        } = item
        {
            raw.push_str(&fragment);
            if strict_schema.is_none() {
                self.out.tool_call_delta(&fragment).await;
            }
        }
    }

    /// Adds argument text to the open call; `fragment` gets the text so far and returns what
    /// to add. An argument event for a call that is not open is an error.
    async fn call_arguments(
        &mut self,
        item_id: Option<&str>,
        fragment: impl FnOnce(&str) -> Option<String>,
    ) -> Result<(), String> {
        let Some(mut item) = self.current.take() else {
            return Err(format!(
                "function call arguments arrived for item {} while no function call was open",
                item_id.unwrap_or("(none)")
            ));
        };
        let matches = match &item {
            Item::FunctionCall { item_id: open, .. } => {
                item_id.is_none() || open.is_none() || open.as_deref() == item_id
            }
            _ => false,
        };
        if !matches {
            self.current = Some(item);
            return Err(format!(
                "function call arguments arrived for item {} while another item was open",
                item_id.unwrap_or("(none)")
            ));
        }
        let raw = match &item {
            Item::FunctionCall { raw, .. } => raw.clone(),
            _ => String::new(),
        };
        if let Some(text) = fragment(&raw).filter(|t| !t.is_empty()) {
            self.push_arguments(&mut item, text).await;
        }
        self.current = Some(item);
        Ok(())
    }

    async fn end_call(&mut self, item: &Value) -> Result<(), String> {
        let call: FunctionCallItem = serde_json::from_value(item.clone()).unwrap_or_default();
        if !matches!(self.current, Some(Item::FunctionCall { .. })) {
            // A call that was never announced: open it now.
            self.end_item().await;
            let mut announced = item.clone();
            if let Some(object) = announced.as_object_mut() {
                object.remove("arguments");
            }
            let started = self.start_call(&announced).await;
            self.current = Some(started);
        }
        let full = call.arguments.unwrap_or_default();
        self.call_arguments(call.id.as_deref(), |raw| rest_of(raw, &full))
            .await?;
        self.end_item().await;
        Ok(())
    }

    async fn end_reasoning(&mut self, item: &Value) {
        let has_block = matches!(
            self.current,
            Some(Item::Reasoning {
                has_block: true,
                ..
            })
        );
        if has_block {
            self.out.thinking_signature(item.to_string());
        } else {
            // No summary text: an empty thinking block keeps the item for replay.
            self.out
                .thinking_start_with(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: Some(item.to_string()),
                    redacted: None,
                })
                .await;
        }
        self.end_item().await;
    }

    /// Ends the current item: releases held-back arguments and closes the open block.
    async fn end_item(&mut self) {
        if let Some(Item::FunctionCall {
            raw,
            strict_schema: Some(schema),
            ..
        }) = self.current.take()
        {
            let text = match serde_json::from_str::<Value>(&raw) {
                Ok(mut arguments) => {
                    remove_added_nulls(&mut arguments, &schema);
                    arguments.to_string()
                }
                Err(_) => raw,
            };
            self.out.tool_call_delta(&text).await;
        }
        self.out.close_open().await;
    }

    fn usage(&self) -> Usage {
        let Some(raw) = self.usage else {
            return Usage::default();
        };
        let cached = raw
            .input_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0);
        let reasoning = raw
            .output_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0);
        let (input_tokens, output_tokens) = (
            raw.input_tokens.unwrap_or(0),
            raw.output_tokens.unwrap_or(0),
        );
        if reasoning > 0 {
            tracing::debug!(reasoning_tokens = reasoning, "reasoning tokens (in output)");
        }
        let input = input_tokens.saturating_sub(cached);
        let mut usage = Usage {
            input,
            output: output_tokens,
            cache_read: cached,
            cache_write: 0,
            total_tokens: raw
                .total_tokens
                .unwrap_or(input_tokens.saturating_add(output_tokens)),
            ..Usage::default()
        };
        self.model.calculate_cost(&mut usage);
        if let Some(tier) = self.service_tier {
            usage.cost.scale(tier.price_multiplier(&self.model.id));
        }
        usage
    }

    /// Ends the reply after a terminal event or the end of the body (then: error).
    pub async fn finish(mut self) {
        self.end_item().await;
        let usage = self.usage();
        self.out.set_usage(usage);
        let stop = match self.terminal.take() {
            None => {
                return self
                    .out
                    .fail_sending(Failure::incomplete(
                        "The stream ended without a response.completed event: the response is incomplete",
                    ))
                    .await
            }
            Some(Terminal::Incomplete(Some(reason))) if reason == "content_filter" => {
                return self
                    .out
                    .fail_sending(Failure::provider(
                        "The provider stopped the reply: content_filter",
                    ))
                    .await
            }
            Some(Terminal::Incomplete(_)) => StopReason::Length,
            Some(Terminal::Completed) if self.out.message().tool_calls().next().is_some() => {
                StopReason::ToolUse
            }
            Some(Terminal::Completed) => StopReason::Stop,
        };
        self.out.finish_sending(stop).await
    }

    /// Ends the reply with an error (or abort), keeping what arrived.
    pub async fn fail(mut self, failure: Failure) {
        self.end_item().await;
        let usage = self.usage();
        self.out.set_usage(usage);
        self.out.fail_sending(failure).await
    }
}

fn item_type(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or("")
}

/// What `full` adds to `raw` (the arguments streamed so far): the rest when `full` extends it,
/// nothing otherwise (the streamed text stands; a differing final text is only logged).
fn rest_of(raw: &str, full: &str) -> Option<String> {
    match full.strip_prefix(raw) {
        Some(rest) => Some(rest.to_string()),
        None => {
            tracing::warn!("final function call arguments differ from the streamed ones; keeping the streamed text");
            None
        }
    }
}

/// Whether a Responses error code says the failure is transient.
fn is_transient_code(code: Option<&Value>) -> bool {
    matches!(
        code.and_then(Value::as_str),
        Some("server_error" | "rate_limit_exceeded" | "server_is_overloaded")
    )
}

fn failed_text(response: Option<&ResponseObject>) -> String {
    let error = response.and_then(|r| r.error.as_ref());
    let message = error.and_then(|e| e.message.as_deref());
    let code = error
        .and_then(|e| e.code.as_ref())
        .filter(|c| !c.is_null())
        .map(|c| {
            c.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| c.to_string())
        });
    let code = code.as_deref();
    let reason = response
        .and_then(|r| r.incomplete_details.as_ref())
        .and_then(|d| d.reason.as_deref());
    match (code, message, reason) {
        (Some(code), Some(message), _) => format!("The response failed: {code}: {message}"),
        (None, Some(message), _) => format!("The response failed: {message}"),
        (Some(code), None, _) => format!("The response failed: {code}"),
        (None, None, Some(reason)) => format!("The response failed: incomplete: {reason}"),
        (None, None, None) => "The response failed (no error details in the response)".to_string(),
    }
}

fn error_event_text(event: &StreamEvent) -> String {
    let nested = event.error.as_ref();
    let message = event
        .message
        .clone()
        .or_else(|| {
            nested
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| nested.and_then(Value::as_str).map(str::to_string));
    let code = event
        .code
        .clone()
        .or_else(|| nested.and_then(|e| e.get("code")).cloned())
        .filter(|c| !c.is_null())
        .map(|c| {
            c.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| c.to_string())
        });
    match (code, message) {
        (Some(code), Some(message)) => format!("The server sent an error: {code}: {message}"),
        (None, Some(message)) => format!("The server sent an error: {message}"),
        (Some(code), None) => format!("The server sent an error: {code}"),
        (None, None) => "The server sent an error event without a message".to_string(),
    }
}
