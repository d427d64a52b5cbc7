//! Bounded step payloads. A tool result is journaled in its `tool <call id>` step; a large one
//! is not journaled again: the `transcript` step journals the message without its content and
//! details (resolved from the tool step's journaled result, which the loop holds), the result is
//! stored once in its own state key ([`result_key`]), and the transcript in state
//! ([`crate::MESSAGES_KEY`]) holds a reference to it. `get_messages` and the next prompt resolve
//! the references. A result above [`MAX_RESULT_BYTES`] is truncated before it is journaled, so no
//! step comes near Restate's limit on one message.

use oxpi_agent_core::oxpi_ai::{Message, UserContent};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};

use crate::bridge::ToolStep;

/// A tool result whose JSON is larger than this many bytes (16 KiB) is stored in a state key of
/// its own and referenced from the transcript, instead of being repeated in the `transcript`
/// step and in the transcript's state value.
pub const INLINE_RESULT_BYTES: usize = 16 * 1024;

/// The most a tool result may take in the journal (4 MiB of JSON). A larger result is
/// truncated to fit: its text kept from the start up to the bound, its images and details
/// dropped, and a notice ([`truncation_notice`]) appended. Restate's server refuses a message
/// from a service above `worker.invoker.message-size-limit` (32 MiB by default in
/// restate-server 1.7, with a warning from 10 MiB): a step that large would fail on every retry
/// and hold its run forever; 4 MiB leaves room for a transcript and several results in one
/// message.
pub const MAX_RESULT_BYTES: usize = 4 * 1024 * 1024;

/// The state key that prefixes a large tool result's key (`result/<transcript index>`).
pub const RESULT_KEY_PREFIX: &str = "result/";

/// The state key of the large tool result at `index` in the transcript.
pub fn result_key(index: usize) -> String {
    format!("{RESULT_KEY_PREFIX}{index}")
}

/// The notice appended to a truncated result: how large it was, and what was kept.
pub fn truncation_notice(original: usize, kept: usize, dropped_more: bool) -> String {
    let more = if dropped_more {
        "; its images and details were dropped"
    } else {
        ""
    };
    format!(
        "\n\n[Tool result truncated: it was {original} bytes, more than a durable run keeps \
         ({MAX_RESULT_BYTES} bytes); the first {kept} bytes of its text are shown{more}.]"
    )
}

/// A transcript entry as stored in state: a message, or a reference to a large tool result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Stored {
    /// `{"resultRef": "result/<index>"}`: the message is in that state key.
    Ref(ResultRef),
    /// A message, as it is.
    Message(Box<Message>),
}

/// A reference to a tool result stored under its own state key.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ResultRef {
    /// The state key.
    pub(crate) result_ref: String,
}

/// What the `transcript` step journals: the run's new messages, the large tool results among
/// them without content and details (`stripped` gives their positions).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct TranscriptStep {
    pub(crate) messages: Vec<Message>,
    #[serde(default)]
    pub(crate) stripped: Vec<usize>,
}

fn json_len<T: Serialize>(value: &T) -> usize {
    serde_json::to_vec(value)
        .map(|v| v.len())
        .unwrap_or(usize::MAX)
}

/// Whether `message` is a tool result too large to keep inline.
pub(crate) fn is_large(message: &Message) -> bool {
    matches!(message, Message::ToolResult(_)) && json_len(message) > INLINE_RESULT_BYTES
}

/// The `transcript` step's payload for `added`: large tool results without content and details.
pub(crate) fn strip(added: &[Message]) -> TranscriptStep {
    let mut step = TranscriptStep::default();
    for (i, message) in added.iter().enumerate() {
        match message {
            Message::ToolResult(result) if is_large(message) => {
                let mut skeleton = result.clone();
                skeleton.content = Vec::new();
                skeleton.details = None;
                step.messages.push(Message::ToolResult(skeleton));
                step.stripped.push(i);
            }
            other => step.messages.push(other.clone()),
        }
    }
    step
}

/// The run's new messages from the journaled `step`, the stripped results' content and details
/// taken from `live` (the loop's messages: their results came from the journaled tool steps).
pub(crate) fn restore(step: TranscriptStep, live: &[Message]) -> Vec<Message> {
    let mut messages = step.messages;
    for i in step.stripped {
        if let (Some(Message::ToolResult(slot)), Some(Message::ToolResult(full))) =
            (messages.get_mut(i), live.get(i))
        {
            slot.content = full.content.clone();
            slot.details = full.details.clone();
        }
    }
    messages
}

/// A tool step within [`MAX_RESULT_BYTES`]: as it is when it fits, else truncated.
pub(crate) fn bound(step: ToolStep) -> ToolStep {
    let original = json_len(&step);
    if original <= MAX_RESULT_BYTES {
        return step;
    }
    match step {
        ToolStep::Done { mut result } => {
            let text: String = result
                .content
                .iter()
                .filter_map(|c| c.as_text())
                .collect::<Vec<_>>()
                .join("\n");
            let dropped_more = result.details.is_some()
                || result.structured_content.is_some()
                || result.content.iter().any(|c| c.as_text().is_none());
            result.details = None;
            result.structured_content = None;
            // The text's JSON may be longer than the text (escapes): halve until it fits.
            let mut budget = MAX_RESULT_BYTES - 1024;
            loop {
                let kept = cut(&text, budget);
                let notice = truncation_notice(original, kept.len(), dropped_more);
                result.content = vec![UserContent::text(format!("{kept}{notice}"))];
                if budget == 0 || json_len(&result) <= MAX_RESULT_BYTES - 64 {
                    break;
                }
                budget /= 2;
            }
            ToolStep::Done { result }
        }
        ToolStep::Failed { message, .. } => {
            let mut budget = MAX_RESULT_BYTES - 1024;
            loop {
                let kept = cut(&message, budget);
                let step = ToolStep::Failed {
                    message: format!("{kept}{}", truncation_notice(original, kept.len(), false)),
                    details: None,
                };
                if budget == 0 || json_len(&step) <= MAX_RESULT_BYTES {
                    return step;
                }
                budget /= 2;
            }
        }
    }
}

/// The longest prefix of `text` of at most `max` bytes, cut at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The stored transcript, empty when there is none.
pub(crate) fn read_stored(value: Option<Json<Vec<Stored>>>) -> Vec<Stored> {
    value.map(Json::into_inner).unwrap_or_default()
}

/// The transcript with its references to large tool results resolved from their state keys.
pub(crate) async fn resolve(
    ctx: &ObjectContext<'_>,
    stored: &[Stored],
) -> Result<Vec<Message>, TerminalError> {
    let mut messages = Vec::with_capacity(stored.len());
    for entry in stored {
        match entry {
            Stored::Message(message) => messages.push(Message::clone(message)),
            Stored::Ref(reference) => {
                let c: &ObjectContext<'_> = ctx;
                messages.push(stored_result(
                    c.get(&reference.result_ref).await?,
                    reference,
                )?);
            }
        }
    }
    Ok(messages)
}

/// The message a reference points to; an error when its state key is missing.
pub(crate) fn stored_result(
    value: Option<Json<Message>>,
    reference: &ResultRef,
) -> Result<Message, TerminalError> {
    value.map(Json::into_inner).ok_or_else(|| {
        TerminalError::new(format!(
            "the transcript refers to state key {} which holds nothing",
            reference.result_ref
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxpi_agent_core::oxpi_ai::ToolResultMessage;
    use oxpi_agent_core::AgentToolResult;

    fn text_of(step: &ToolStep) -> String {
        match step {
            ToolStep::Done { result } => {
                result.content.iter().filter_map(|c| c.as_text()).collect()
            }
            ToolStep::Failed { message, .. } => message.clone(),
        }
    }

    fn result_message(index: usize, text: &str) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: format!("call_{index}"),
            tool_name: "t".into(),
            content: vec![UserContent::text(text)],
            details: Some(serde_json::json!({"n": index})),
            usage: None,
            nested_calls: None,
            is_error: false,
            timestamp: 1_000 + index as i64,
            duration_ms: Some(7),
        })
    }

    #[test]
    fn a_result_within_the_bound_is_kept_as_it_is() {
        let step = ToolStep::Done {
            result: AgentToolResult::new(vec![UserContent::text("x".repeat(MAX_RESULT_BYTES / 2))]),
        };
        let kept = bound(step.clone());
        assert_eq!(json_len(&kept), json_len(&step));
        assert_eq!(text_of(&kept), text_of(&step));
    }

    #[test]
    fn a_result_above_the_bound_is_truncated_with_a_notice() {
        let text = "0123456789".repeat(MAX_RESULT_BYTES / 10 + 100_000);
        let mut result = AgentToolResult::new(vec![UserContent::text(text.clone())]);
        result.details = Some(serde_json::json!({"big": true}));
        let original = json_len(&ToolStep::Done {
            result: result.clone(),
        });
        let step = bound(ToolStep::Done { result });
        assert!(json_len(&step) <= MAX_RESULT_BYTES, "{}", json_len(&step));
        let got = text_of(&step);
        let (kept, notice) = got
            .split_once("\n\n[Tool result truncated")
            .expect("a notice");
        assert!(text.starts_with(kept) && kept.len() > MAX_RESULT_BYTES / 2);
        assert!(
            notice.contains(&format!("it was {original} bytes")),
            "{notice}"
        );
        assert!(notice.contains("details were dropped"), "{notice}");
        let ToolStep::Done { result } = step else {
            panic!("still a result")
        };
        assert_eq!(result.details, None);
    }

    #[test]
    fn text_that_grows_when_escaped_and_errors_fit_too() {
        // Each control character is six bytes of JSON.
        let escaped = "\u{1}".repeat(MAX_RESULT_BYTES);
        let step = bound(ToolStep::Done {
            result: AgentToolResult::new(vec![UserContent::text(escaped)]),
        });
        assert!(json_len(&step) <= MAX_RESULT_BYTES);
        assert!(text_of(&step).contains("[Tool result truncated"));
        let failed = bound(ToolStep::Failed {
            message: "é".repeat(MAX_RESULT_BYTES),
            details: Some(serde_json::json!("x")),
        });
        assert!(json_len(&failed) <= MAX_RESULT_BYTES);
        assert!(text_of(&failed).starts_with("éé"));
        assert!(matches!(failed, ToolStep::Failed { details: None, .. }));
    }

    #[test]
    fn the_transcript_step_carries_large_results_once_stripped_and_restores_them() {
        let big = "y".repeat(INLINE_RESULT_BYTES + 1);
        let live = vec![
            Message::user("hi"),
            result_message(1, "small"),
            result_message(2, &big),
        ];
        let step = strip(&live);
        assert_eq!(step.stripped, [2]);
        assert!(json_len(&step) < 2 * 1024, "{}", json_len(&step));
        // What a replay's loop holds: the same content, another clock.
        let mut replayed = live.clone();
        if let Some(Message::ToolResult(r)) = replayed.get_mut(2) {
            r.timestamp = 99;
        }
        let restored = restore(step, &replayed);
        assert_eq!(
            serde_json::to_value(&restored).unwrap(),
            serde_json::to_value(&live).unwrap(),
            "the journaled clock, the loop's content"
        );
        assert!(!is_large(&live[1]) && is_large(&live[2]) && !is_large(&Message::user(big)));
    }

    #[test]
    fn stored_transcripts_read_old_and_new_forms() {
        let old = serde_json::to_string(&vec![Message::user("a"), result_message(1, "r")]).unwrap();
        let parsed: Vec<Stored> = serde_json::from_str(&old).unwrap();
        assert!(matches!(
            parsed.as_slice(),
            [Stored::Message(_), Stored::Message(_)]
        ));
        let new = format!(
            r#"[{{"role":"user","content":"a","timestamp":1}},{{"resultRef":"{}"}}]"#,
            result_key(1)
        );
        let parsed: Vec<Stored> = serde_json::from_str(&new).unwrap();
        match parsed.as_slice() {
            [Stored::Message(_), Stored::Ref(r)] => assert_eq!(r.result_ref, "result/1"),
            other => panic!("{other:?}"),
        }
    }
}
