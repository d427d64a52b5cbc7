//! Stream event grammar through `ProviderRegistry` and the faux provider: event order, content indices, one terminal event, partial message tracking, malformed tool-call arguments, cancellation, unknown APIs and streams started outside a runtime.

use std::time::Duration;

use futures::StreamExt;
use oxpi_ai::faux::{FauxProvider, FauxReply, FauxRequest};
use oxpi_ai::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream,
    Context, FailureKind, Message, PartialMessage, ProviderRegistry, StopReason, StreamOptions,
    TextContent, ThinkingContent, ToolCall, Usage,
};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

fn registry_with(faux: &FauxProvider) -> ProviderRegistry {
    let mut registry = ProviderRegistry::new();
    registry.register(faux.clone());
    registry
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().expect("a JSON object").clone()
}

fn text_block(text: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: text.into(),
        text_signature: None,
    })
}

fn thinking_block(text: &str) -> AssistantContent {
    AssistantContent::Thinking(ThinkingContent {
        thinking: text.into(),
        ..ThinkingContent::default()
    })
}

fn kind(event: &AssistantMessageEvent) -> &'static str {
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

fn kinds(events: &[AssistantMessageEvent]) -> Vec<&'static str> {
    events.iter().map(kind).collect()
}

/// `start`, then `blocks` as (start kind, number of deltas), then the terminal kind.
fn expected_kinds(blocks: &[(&str, usize)], terminal: &'static str) -> Vec<&'static str> {
    let mut out = vec!["start"];
    for (block, deltas) in blocks {
        let (start, delta, end) = match *block {
            "text" => ("text_start", "text_delta", "text_end"),
            "thinking" => ("thinking_start", "thinking_delta", "thinking_end"),
            "toolcall" => ("toolcall_start", "toolcall_delta", "toolcall_end"),
            other => panic!("unknown block kind {other}"),
        };
        out.push(start);
        out.extend(std::iter::repeat_n(delta, *deltas));
        out.push(end);
    }
    out.push(terminal);
    out
}

/// The content of `stream.partial()` built from the events so far (`None` before `start`).
fn built(stream: &AssistantMessageEventStream) -> Option<Vec<AssistantContent>> {
    stream.partial().message().map(|m| m.content.clone())
}

/// Drains the stream, returning its events, the stream (for `partial()`) and the content the
/// stream had built from the deltas just before the terminal event.
async fn collect(
    mut stream: AssistantMessageEventStream,
) -> (
    Vec<AssistantMessageEvent>,
    AssistantMessageEventStream,
    Option<Vec<AssistantContent>>,
) {
    let mut events = Vec::new();
    let mut before_terminal = None;
    while let Some(event) = stream.next().await {
        if !event.is_terminal() {
            before_terminal = built(&stream);
        }
        events.push(event);
    }
    (events, stream, before_terminal)
}

/// Checks the event grammar and returns the final message:
/// - exactly one terminal event, and it is last;
/// - `start` (when present) comes first;
/// - blocks open at indices 0, 1, 2, … in order; each block's deltas and end come after its
///   start and before the next block starts; the `*_end` content equals the joined deltas;
/// - the final message has one block per opened block, matching the ends.
fn check_grammar(events: &[AssistantMessageEvent]) -> AssistantMessage {
    use AssistantMessageEvent as E;
    let terminal_count = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminal_count, 1, "exactly one terminal event: {events:?}");
    let last = events.last().expect("at least one event");
    assert!(last.is_terminal(), "terminal event is last: {events:?}");
    for (i, event) in events.iter().enumerate() {
        if matches!(event, E::Start { .. }) {
            assert_eq!(i, 0, "start comes first");
        }
    }
    // (kind, index, accumulated deltas, closed)
    let mut blocks: Vec<(&str, String, bool)> = Vec::new();
    let mut ends: Vec<Option<E>> = Vec::new();
    for event in events {
        let (block_kind, index) = match event {
            E::TextStart { content_index }
            | E::TextDelta { content_index, .. }
            | E::TextEnd { content_index, .. } => ("text", *content_index),
            E::ThinkingStart { content_index }
            | E::ThinkingDelta { content_index, .. }
            | E::ThinkingEnd { content_index, .. } => ("thinking", *content_index),
            E::ToolcallStart { content_index, .. }
            | E::ToolcallDelta { content_index, .. }
            | E::ToolcallEnd { content_index, .. } => ("toolcall", *content_index),
            E::Start { .. } | E::Done { .. } | E::Error { .. } => continue,
            other => panic!("an event kind this check does not know: {other:?}"),
        };
        match event {
            E::TextStart { .. } | E::ThinkingStart { .. } | E::ToolcallStart { .. } => {
                assert_eq!(index, blocks.len(), "blocks open at consecutive indices");
                if let Some(previous) = blocks.last() {
                    assert!(
                        previous.2,
                        "previous block closed before block {index} opens"
                    );
                }
                blocks.push((block_kind, String::new(), false));
                ends.push(None);
            }
            E::TextDelta { delta, .. }
            | E::ThinkingDelta { delta, .. }
            | E::ToolcallDelta { delta, .. } => {
                assert_eq!(index + 1, blocks.len(), "deltas go to the newest block");
                let block = blocks.get_mut(index).expect("delta for an opened block");
                assert_eq!(block.0, block_kind, "delta kind matches block {index}");
                assert!(!block.2, "no delta after the end of block {index}");
                block.1.push_str(delta);
            }
            _ => {
                let block = blocks.get_mut(index).expect("end for an opened block");
                assert_eq!(block.0, block_kind, "end kind matches block {index}");
                assert!(!block.2, "block {index} ends once");
                block.2 = true;
                match event {
                    E::TextEnd { content, .. } | E::ThinkingEnd { content, .. } => {
                        assert_eq!(content, &block.1, "end content of block {index}");
                    }
                    _ => {}
                }
                ends[index] = Some(event.clone());
            }
        }
    }
    for (i, block) in blocks.iter().enumerate() {
        assert!(block.2, "block {i} closed before the terminal event");
    }
    let message = last.final_message().expect("a terminal event").clone();
    assert_eq!(
        message.content.len(),
        blocks.len(),
        "one final block per block"
    );
    for (i, (block, end)) in blocks.iter().zip(&ends).enumerate() {
        match (&message.content[i], end) {
            (AssistantContent::Text(t), Some(E::TextEnd { .. })) => assert_eq!(t.text, block.1),
            (AssistantContent::Thinking(t), Some(E::ThinkingEnd { .. })) => {
                assert_eq!(t.thinking, block.1)
            }
            (AssistantContent::ToolCall(tc), Some(E::ToolcallEnd { tool_call, .. })) => {
                assert_eq!(tc, &**tool_call)
            }
            (content, end) => panic!("block {i}: final {content:?} does not match end {end:?}"),
        }
    }
    match last {
        E::Done { reason, message } => {
            assert_eq!(*reason, message.stop_reason);
            assert!(matches!(
                reason,
                StopReason::Stop | StopReason::Length | StopReason::ToolUse
            ));
            assert_eq!(message.error_message, None);
        }
        E::Error { reason, error } => {
            assert_eq!(*reason, error.stop_reason);
            assert!(matches!(reason, StopReason::Error | StopReason::Aborted));
            assert!(error.error_message.is_some());
        }
        _ => unreachable!(),
    }
    message
}

/// The deltas of block `index`, in order.
fn deltas(events: &[AssistantMessageEvent], index: usize) -> Vec<String> {
    use AssistantMessageEvent as E;
    events
        .iter()
        .filter_map(|e| match e {
            E::TextDelta {
                content_index,
                delta,
            }
            | E::ThinkingDelta {
                content_index,
                delta,
            }
            | E::ToolcallDelta {
                content_index,
                delta,
            } if *content_index == index => Some(delta.to_string()),
            _ => None,
        })
        .collect()
}

fn start_partial(events: &[AssistantMessageEvent]) -> AssistantMessage {
    match &events[0] {
        AssistantMessageEvent::Start { partial } => (**partial).clone(),
        other => panic!("first event is not start: {other:?}"),
    }
}

/// An empty faux message with the given timestamp (the provider stamps messages with now).
fn faux_message(faux: &FauxProvider, timestamp: i64) -> AssistantMessage {
    let model = faux.model();
    AssistantMessage {
        timestamp,
        ..AssistantMessage::empty(&model.api, &model.provider, &model.id)
    }
}

#[tokio::test]
async fn text_reply_streams_the_exact_event_sequence() {
    let faux = FauxProvider::new();
    faux.push(FauxReply::text("hello world"));
    let registry = registry_with(&faux);
    let stream = registry.stream(
        &faux.model(),
        &Context::new("sys").with_message(Message::user("hi")),
        StreamOptions::default(),
    );
    let (events, stream, before_terminal) = collect(stream).await;

    let timestamp = start_partial(&events).timestamp;
    let empty = faux_message(&faux, timestamp);
    let final_message = AssistantMessage {
        content: vec![text_block("hello world")],
        ..empty.clone()
    };
    use AssistantMessageEvent as E;
    assert_eq!(
        events,
        vec![
            E::Start {
                // A partial's stop reason is `pending` (pi 1.6).
                partial: Box::new(AssistantMessage {
                    stop_reason: StopReason::Pending,
                    ..empty
                })
            },
            E::TextStart { content_index: 0 },
            E::TextDelta {
                content_index: 0,
                delta: "hell".into()
            },
            E::TextDelta {
                content_index: 0,
                delta: "o wo".into()
            },
            E::TextDelta {
                content_index: 0,
                delta: "rld".into()
            },
            E::TextEnd {
                content_index: 0,
                content: "hello world".into()
            },
            E::Done {
                reason: StopReason::Stop,
                message: Box::new(final_message.clone())
            },
        ]
    );
    assert_eq!(check_grammar(&events), final_message);
    assert_eq!(stream.partial().message(), Some(&final_message));
    assert_eq!(before_terminal, Some(final_message.content.clone()));
    assert_eq!(faux.call_count(), 1);
    assert_eq!(faux.pending(), 0);
}

#[tokio::test]
async fn start_partial_names_the_model() {
    let faux = FauxProvider::new();
    faux.push(FauxReply::text("x"));
    let registry = registry_with(&faux);
    let (events, _, _) =
        collect(registry.stream(&faux.model(), &Context::default(), StreamOptions::default()))
            .await;
    let partial = start_partial(&events);
    assert_eq!(
        (
            partial.api.as_str(),
            partial.provider.as_str(),
            partial.model.as_str()
        ),
        ("faux", "faux", "faux-model")
    );
    assert_eq!(partial.content, vec![]);
    assert_eq!(partial.usage, Usage::default());
}

#[tokio::test]
async fn thinking_text_and_tool_call() {
    let faux = FauxProvider::new().with_chunk_chars(5);
    faux.push(
        FauxReply::new()
            .with_thinking("Need the file.")
            .with_text("Reading it.")
            .with_tool_call("read", json!({"path": "a.txt"})),
    );
    let registry = registry_with(&faux);
    let (events, stream, before_terminal) =
        collect(registry.stream(&faux.model(), &Context::default(), StreamOptions::default()))
            .await;

    // 14 thinking chars → 3 deltas; 11 text chars → 3; `{"path":"a.txt"}` (16) → 4.
    assert_eq!(
        kinds(&events),
        expected_kinds(&[("thinking", 3), ("text", 3), ("toolcall", 4)], "done")
    );
    assert_eq!(deltas(&events, 0), vec!["Need ", "the f", "ile."]);
    assert_eq!(deltas(&events, 1), vec!["Readi", "ng it", "."]);
    assert_eq!(deltas(&events, 2), vec!["{\"pat", "h\":\"a", ".txt\"", "}"]);
    assert_eq!(
        events[11],
        AssistantMessageEvent::ToolcallStart {
            content_index: 2,
            id: "faux_call_1".into(),
            name: "read".into()
        }
    );
    let message = check_grammar(&events);
    let call = ToolCall::new("faux_call_1", "read", args(json!({"path": "a.txt"})));
    assert_eq!(
        message.content,
        vec![
            thinking_block("Need the file."),
            text_block("Reading it."),
            AssistantContent::ToolCall(call.clone()),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.tool_calls().cloned().collect::<Vec<_>>(),
        vec![call]
    );
    assert_eq!(stream.partial().message(), Some(&message));
    assert_eq!(before_terminal, Some(message.content.clone()));
}

#[tokio::test]
async fn two_tool_calls_get_distinct_ids_and_indices() {
    let faux = FauxProvider::new().with_chunk_chars(8);
    faux.push(
        FauxReply::new()
            .with_tool_call("read", json!({"path": "a.txt"}))
            .with_tool_call("ls", json!({"dir": "."})),
    );
    let registry = registry_with(&faux);
    let (events, stream, before_terminal) =
        collect(registry.stream(&faux.model(), &Context::default(), StreamOptions::default()))
            .await;

    // `{"path":"a.txt"}` (16 chars) → 2 deltas; `{"dir":"."}` (11) → 2.
    assert_eq!(
        kinds(&events),
        expected_kinds(&[("toolcall", 2), ("toolcall", 2)], "done")
    );
    use AssistantMessageEvent as E;
    let starts: Vec<&AssistantMessageEvent> = events
        .iter()
        .filter(|e| matches!(e, E::ToolcallStart { .. }))
        .collect();
    assert_eq!(
        starts,
        vec![
            &E::ToolcallStart {
                content_index: 0,
                id: "faux_call_1".into(),
                name: "read".into()
            },
            &E::ToolcallStart {
                content_index: 1,
                id: "faux_call_2".into(),
                name: "ls".into()
            },
        ]
    );
    let message = check_grammar(&events);
    assert_eq!(
        message.tool_calls().cloned().collect::<Vec<_>>(),
        vec![
            ToolCall::new("faux_call_1", "read", args(json!({"path": "a.txt"}))),
            ToolCall::new("faux_call_2", "ls", args(json!({"dir": "."}))),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(stream.partial().message(), Some(&message));
    assert_eq!(before_terminal, Some(message.content.clone()));
}

#[tokio::test]
async fn closure_reply_sees_the_request_context() {
    let faux = FauxProvider::new();
    faux.push_fn(|context| {
        let last = match context.messages.last() {
            Some(Message::User(m)) => m.text_content(),
            other => format!("unexpected {other:?}"),
        };
        FauxReply::text(format!(
            "{} / {} / {}",
            context.system_prompt.as_deref().unwrap_or("-"),
            context.messages.len(),
            last
        ))
    });
    let registry = registry_with(&faux);
    let context = Context::new("be brief")
        .with_message(Message::user("first"))
        .with_message(Message::user("ping"));
    let (events, stream, before_terminal) =
        collect(registry.stream(&faux.model(), &context, StreamOptions::default())).await;
    let message = check_grammar(&events);
    assert_eq!(message.content, vec![text_block("be brief / 2 / ping")]);
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(stream.partial().message(), Some(&message));
    assert_eq!(before_terminal, Some(message.content.clone()));
    assert_eq!(
        faux.requests(),
        vec![FauxRequest {
            system_prompt: Some("be brief".into()),
            roles: vec!["user", "user"],
            tools: vec![],
        }]
    );
}

#[tokio::test]
async fn empty_queue_ends_in_one_error_event() {
    let faux = FauxProvider::new();
    let registry = registry_with(&faux);
    let (events, stream, before_terminal) =
        collect(registry.stream(&faux.model(), &Context::default(), StreamOptions::default()))
            .await;
    // oxpi sends `start` before the error (pi's faux sends the error alone).
    assert_eq!(kinds(&events), vec!["start", "error"]);
    let message = check_grammar(&events);
    let expected = AssistantMessage {
        stop_reason: StopReason::Error,
        error_message: Some("No more faux responses queued".into()),
        failure_kind: Some(FailureKind::Config),
        ..faux_message(&faux, message.timestamp)
    };
    assert_eq!(
        events[1],
        AssistantMessageEvent::Error {
            reason: StopReason::Error,
            error: Box::new(expected)
        }
    );
    assert_eq!(stream.partial().message(), Some(&message));
    assert_eq!(before_terminal, Some(message.content.clone()));
    assert_eq!(faux.call_count(), 1);
}

#[tokio::test]
async fn malformed_tool_call_arguments_are_reported_not_replaced_by_an_empty_object() {
    let faux = FauxProvider::new().with_chunk_chars(3);
    faux.push(FauxReply::new().with_raw_tool_call(
        Some("call_bad".into()),
        "read",
        r#"{"path": "a.t"#,
    ));
    let registry = registry_with(&faux);
    let (events, stream, before_terminal) =
        collect(registry.stream(&faux.model(), &Context::default(), StreamOptions::default()))
            .await;
    assert_eq!(kinds(&events), expected_kinds(&[("toolcall", 5)], "done"));
    let bad = ToolCall {
        arguments_error: Some(
            "Tool call arguments are not valid JSON (EOF while parsing a string at line 1 column 13): {\"path\": \"a.t"
                .into(),
        ),
        ..ToolCall::new("call_bad", "read", Map::new())
    };
    assert_eq!(
        events[7],
        AssistantMessageEvent::ToolcallEnd {
            content_index: 0,
            tool_call: Box::new(bad.clone())
        }
    );
    let message = check_grammar(&events);
    assert_eq!(message.content, vec![AssistantContent::ToolCall(bad)]);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(stream.partial().message(), Some(&message));
    assert_eq!(before_terminal, Some(message.content.clone()));
}

#[tokio::test]
async fn non_object_tool_call_arguments_are_reported() {
    let faux = FauxProvider::new().with_chunk_chars(100);
    faux.push(
        FauxReply::new()
            .with_raw_tool_call(Some("c1".into()), "read", "[1, 2]")
            .with_raw_tool_call(Some("c2".into()), "ls", "")
            .with_raw_tool_call(Some("c3".into()), "ls", "  ")
            .with_raw_tool_call(Some("c4".into()), "ls", "null"),
    );
    let registry = registry_with(&faux);
    let (events, _, _) =
        collect(registry.stream(&faux.model(), &Context::default(), StreamOptions::default()))
            .await;
    // Empty argument text streams no delta and means "no arguments"; so does JSON `null`.
    assert_eq!(
        kinds(&events),
        expected_kinds(
            &[
                ("toolcall", 1),
                ("toolcall", 0),
                ("toolcall", 1),
                ("toolcall", 1)
            ],
            "done"
        )
    );
    let message = check_grammar(&events);
    assert_eq!(
        message.tool_calls().cloned().collect::<Vec<_>>(),
        vec![
            ToolCall {
                arguments_error: Some(
                    "Tool call arguments must be a JSON object, got: [1,2]".into()
                ),
                ..ToolCall::new("c1", "read", Map::new())
            },
            ToolCall::new("c2", "ls", Map::new()),
            ToolCall::new("c3", "ls", Map::new()),
            ToolCall::new("c4", "ls", Map::new()),
        ]
    );
}

#[tokio::test]
async fn cancelling_mid_stream_ends_aborted_with_the_partial_text() {
    let faux = FauxProvider::new().with_chunk_delay(Duration::from_millis(20));
    faux.push(FauxReply::text("hello world, this is long"));
    let registry = registry_with(&faux);
    let cancel = CancellationToken::new();
    let options = StreamOptions::default().with_cancel(cancel.clone());
    let mut stream = registry.stream(&faux.model(), &Context::default(), options);
    let mut events = Vec::new();
    let mut before_terminal = None;
    while let Some(event) = stream.next().await {
        let first_delta = matches!(event, AssistantMessageEvent::TextDelta { .. });
        if !event.is_terminal() {
            before_terminal = built(&stream);
        }
        events.push(event);
        if first_delta {
            cancel.cancel();
        }
    }
    assert_eq!(
        kinds(&events),
        vec!["start", "text_start", "text_delta", "text_end", "error"]
    );
    let message = check_grammar(&events);
    let expected = AssistantMessage {
        content: vec![text_block("hell")],
        stop_reason: StopReason::Aborted,
        error_message: Some("Request was aborted".into()),
        failure_kind: Some(FailureKind::Aborted),
        ..faux_message(&faux, message.timestamp)
    };
    assert_eq!(
        events.last().unwrap(),
        &AssistantMessageEvent::Error {
            reason: StopReason::Aborted,
            error: Box::new(expected)
        }
    );
    assert_eq!(stream.partial().message(), Some(&message));
    assert_eq!(before_terminal, Some(message.content.clone()));
}

#[tokio::test]
async fn scripted_error_keeps_content_and_scripted_length_is_done() {
    let faux = FauxProvider::new();
    let mut failing = FauxReply::text("so far");
    failing.error = Some("upstream exploded".into());
    faux.push(failing);
    faux.push(FauxReply::text("cut").with_stop_reason(StopReason::Length));
    let registry = registry_with(&faux);

    let (events, _, _) =
        collect(registry.stream(&faux.model(), &Context::default(), StreamOptions::default()))
            .await;
    assert_eq!(kinds(&events), expected_kinds(&[("text", 2)], "error"));
    let message = check_grammar(&events);
    assert_eq!(message.content, vec![text_block("so far")]);
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error_message.as_deref(), Some("upstream exploded"));

    let (events, _, _) =
        collect(registry.stream(&faux.model(), &Context::default(), StreamOptions::default()))
            .await;
    assert_eq!(kinds(&events), expected_kinds(&[("text", 1)], "done"));
    assert_eq!(check_grammar(&events).stop_reason, StopReason::Length);
}

#[tokio::test]
async fn unknown_api_gives_a_single_error_event() {
    let faux = FauxProvider::new();
    faux.push(FauxReply::text("never sent"));
    let registry = registry_with(&faux);
    let mut model = faux.model();
    model.api = "no-such-api".into();
    let (events, stream, before_terminal) =
        collect(registry.stream(&model, &Context::default(), StreamOptions::default())).await;
    assert_eq!(kinds(&events), vec!["error"]);
    let message = check_grammar(&events);
    let expected = AssistantMessage {
        stop_reason: StopReason::Error,
        error_message: Some("No provider registered for api \"no-such-api\"".into()),
        failure_kind: Some(FailureKind::Config),
        timestamp: message.timestamp,
        ..AssistantMessage::empty("no-such-api", &model.provider, &model.id)
    };
    assert_eq!(message, expected);
    // No `start`; the terminal event still sets the partial message.
    assert_eq!(stream.partial().message(), Some(&message));
    assert_eq!(before_terminal, None);
    assert_eq!(faux.call_count(), 0);
    assert_eq!(faux.pending(), 1);
}

#[test]
fn stream_started_outside_a_runtime_yields_one_error_event() {
    let faux = FauxProvider::new();
    faux.push(FauxReply::text("never sent"));
    let registry = registry_with(&faux);
    let stream = registry.stream(&faux.model(), &Context::default(), StreamOptions::default());
    let (events, stream, before_terminal) = futures::executor::block_on(collect(stream));
    assert_eq!(kinds(&events), vec!["error"]);
    let message = check_grammar(&events);
    let expected = AssistantMessage {
        stop_reason: StopReason::Error,
        error_message: Some("oxpi-ai streams must be started inside a Tokio runtime".into()),
        failure_kind: Some(FailureKind::Config),
        ..faux_message(&faux, message.timestamp)
    };
    assert_eq!(message, expected);
    assert_eq!(stream.partial().message(), Some(&message));
    assert_eq!(before_terminal, None);
    assert_eq!(faux.call_count(), 0);
}

#[tokio::test]
async fn partial_arguments_returns_the_parsed_prefix_while_streaming() {
    let faux = FauxProvider::new().with_chunk_chars(10);
    faux.push(FauxReply::new().with_text("ok").with_raw_tool_call(
        Some("c1".into()),
        "read",
        r#"{"path":"notes.txt","limit":20}"#,
    ));
    let registry = registry_with(&faux);
    let mut stream = registry.stream(&faux.model(), &Context::default(), StreamOptions::default());
    let mut snapshots = Vec::new();
    let mut events = Vec::new();
    let mut before_terminal = None;
    while let Some(event) = stream.next().await {
        if !event.is_terminal() {
            before_terminal = built(&stream);
        }
        let after = match &event {
            AssistantMessageEvent::ToolcallStart { content_index, .. }
            | AssistantMessageEvent::ToolcallDelta { content_index, .. }
            | AssistantMessageEvent::ToolcallEnd { content_index, .. } => Some(*content_index),
            _ => None,
        };
        events.push(event);
        if let Some(index) = after {
            snapshots.push((
                kind(events.last().unwrap()),
                stream.partial().partial_arguments(index).cloned(),
            ));
            // Not a streaming tool call: the text block.
            assert_eq!(stream.partial().partial_arguments(0), None);
        }
    }
    // Chunks: `{"path":"n`, `otes.txt",`, `"limit":20`, `}`.
    assert_eq!(
        snapshots,
        vec![
            ("toolcall_start", None),
            ("toolcall_delta", Some(json!({"path": "n"}))),
            ("toolcall_delta", Some(json!({"path": "notes.txt"}))),
            (
                "toolcall_delta",
                Some(json!({"path": "notes.txt", "limit": 20}))
            ),
            (
                "toolcall_delta",
                Some(json!({"path": "notes.txt", "limit": 20}))
            ),
            // Finished calls are in `partial()`, no longer parsed incrementally.
            ("toolcall_end", None),
        ]
    );
    let message = check_grammar(&events);
    assert_eq!(
        message.tool_calls().cloned().collect::<Vec<_>>(),
        vec![ToolCall::new(
            "c1",
            "read",
            args(json!({"path": "notes.txt", "limit": 20}))
        )]
    );
    assert_eq!(stream.partial().message(), Some(&message));
    assert_eq!(before_terminal, Some(message.content.clone()));
}

#[tokio::test]
async fn partial_tracks_a_streaming_tool_call_with_empty_arguments_until_its_end() {
    let faux = FauxProvider::new().with_chunk_chars(4);
    faux.push(FauxReply::new().with_raw_tool_call(Some("c9".into()), "grep", r#"{"q":"x"}"#));
    let registry = registry_with(&faux);
    let mut stream = registry.stream(&faux.model(), &Context::default(), StreamOptions::default());
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        if matches!(
            event,
            AssistantMessageEvent::ToolcallDelta { .. } | AssistantMessageEvent::ToolcallEnd { .. }
        ) {
            seen.push((
                kind(&event),
                stream.partial().message().unwrap().content.clone(),
            ));
        }
    }
    let streaming = vec![AssistantContent::ToolCall(ToolCall::new(
        "c9",
        "grep",
        Map::new(),
    ))];
    let done = vec![AssistantContent::ToolCall(ToolCall::new(
        "c9",
        "grep",
        args(json!({"q": "x"})),
    ))];
    assert_eq!(
        seen,
        vec![
            ("toolcall_delta", streaming.clone()),
            ("toolcall_delta", streaming.clone()),
            ("toolcall_delta", streaming),
            ("toolcall_end", done),
        ]
    );
}

#[tokio::test]
async fn result_returns_the_final_message() {
    let faux = FauxProvider::new();
    faux.push(FauxReply::tool_call("read", json!({"path": "b"})));
    let registry = registry_with(&faux);
    let message = registry
        .stream(&faux.model(), &Context::default(), StreamOptions::default())
        .result()
        .await;
    assert_eq!(
        message.content,
        vec![AssistantContent::ToolCall(ToolCall::new(
            "faux_call_1",
            "read",
            args(json!({"path": "b"}))
        ))]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
}

/// A handle from `shared_partial` (what the agent's `streaming_message` reads, from any
/// thread) sees each event as the stream yields it: the same fold as `partial()`, not a copy
/// built again.
#[tokio::test]
async fn a_shared_partial_sees_every_event_the_stream_yields() {
    let faux = FauxProvider::new().with_chunk_chars(4);
    faux.push(FauxReply::text("hello world"));
    let registry = registry_with(&faux);
    let mut stream = registry.stream(&faux.model(), &Context::default(), StreamOptions::default());
    let shared = stream.shared_partial();
    // An independent fold of the same events, to compare the shared one with.
    let mut own = PartialMessage::new();
    let mut late: Option<oxpi_ai::SharedPartial> = None;
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        own.apply(&event);
        let text = shared.message().map(|m| m.text());
        assert_eq!(text, own.message().map(|m| m.text()));
        if let AssistantMessageEvent::TextDelta { .. } = event {
            seen.push(text.clone().unwrap_or_default());
            // A handle taken mid-stream sees what was folded before it existed.
            let handle = late.get_or_insert_with(|| stream.shared_partial());
            assert_eq!(handle.message().map(|m| m.text()), text);
        }
    }
    assert_eq!(seen, vec!["hell", "hello wo", "hello world"]);
    drop(stream);
    assert_eq!(
        shared.message().map(|m| m.text()),
        Some("hello world".into())
    );
}
