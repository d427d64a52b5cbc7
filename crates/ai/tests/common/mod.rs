//! Helpers shared by the provider test binaries: run a stream to its end (or cancel it at its
//! first text), a one-message context, and the pi name of an event.

use futures::StreamExt;
use oxpi_ai::{AssistantMessage, AssistantMessageEvent, Context, Message, Model, StreamOptions};

/// A context of one user message (and a short system prompt).
pub fn user_context(text: &str) -> Context {
    Context::new("Be brief.").with_message(Message::user(text))
}

/// Streams to the end; returns every event and the final message, checking that exactly one
/// terminal event came.
pub async fn run(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let mut stream = oxpi_ai::stream(model, context, options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let last = events
        .last()
        .and_then(|e| e.final_message())
        .cloned()
        .expect("a terminal event");
    assert_eq!(
        events.iter().filter(|e| e.is_terminal()).count(),
        1,
        "exactly one terminal event"
    );
    (events, last)
}

/// Streams, cancels `options.cancel` at the first text delta, and reads on to the end; returns
/// the final message. (The server should stall after that text, so only the cancel ends it.)
pub async fn cancel_at_first_text(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessage {
    let cancel = options.cancel.clone();
    let mut stream = oxpi_ai::stream(model, context, options);
    let mut last = None;
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            cancel.cancel();
        }
        last = event.final_message().cloned();
    }
    last.expect("a terminal event")
}

/// The pi `type` of an event.
pub fn kind(event: &AssistantMessageEvent) -> &'static str {
    use AssistantMessageEvent as E;
    match event {
        E::Start { .. } => "start",
        E::TextStart { .. } => "text_start",
        E::TextDelta { .. } => "text_delta",
        E::TextEnd { .. } => "text_end",
        E::ThinkingStart { .. } => "thinking_start",
        E::ThinkingDelta { .. } => "thinking_delta",
        E::ThinkingEnd { .. } => "thinking_end",
        E::ToolcallStart { .. } => "toolcall_start",
        E::ToolcallDelta { .. } => "toolcall_delta",
        E::ToolcallEnd { .. } => "toolcall_end",
        E::Done { .. } => "done",
        E::Error { .. } => "error",
        other => panic!("an event kind this helper does not know: {other:?}"),
    }
}
