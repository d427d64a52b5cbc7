//! The view's state: agent events into items, keys into actions.

use std::time::{Duration, Instant};

use oxpi_agent_core::{AgentEvent, AgentToolResult};
use oxpi_ai::Message;
use serde_json::json;

use super::*;
use crate::interactive::keys::Key;

fn reply(content: serde_json::Value, stop: &str) -> Message {
    serde_json::from_value(json!({
        "role": "assistant", "content": content,
        "api": "openai-completions", "provider": "p", "model": "m",
        "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
                  "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003}},
        "stopReason": stop, "timestamp": 0
    }))
    .unwrap()
}

fn typed(app: &mut App, text: &str, now: Instant) {
    for c in text.chars() {
        assert_eq!(app.on_key(Key::Char(c), now), None);
    }
}

#[test]
fn a_run_s_events_become_items_in_order() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    app.queue.push((QueueKind::Steer, "also this".into()));
    app.on_event(&AgentEvent::AgentStart, now);
    assert_eq!(app.working, Some(now));
    app.on_event(
        &AgentEvent::MessageStart {
            message: crate::runtime::user_message("also this"),
        },
        now,
    );
    assert!(
        app.queue.is_empty(),
        "a delivered steering message leaves the queue"
    );
    let call = reply(
        json!([{"type": "text", "text": "Reading."},
               {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}]),
        "toolUse",
    );
    app.on_event(&AgentEvent::MessageEnd { message: call }, now);
    assert_eq!(app.tools.len(), 1);
    app.on_event(
        &AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            result: AgentToolResult::text("42"),
            is_error: false,
            duration_ms: Some(1),
        },
        now,
    );
    app.on_event(
        &AgentEvent::AgentEnd {
            messages: Vec::new(),
            error_message: Some("stopped".into()),
        },
        now,
    );
    assert_eq!(app.working, None);
    assert!(app.tools.is_empty());
    assert_eq!(
        app.pending,
        [
            Item::User("also this".into()),
            Item::Assistant {
                blocks: vec![(false, "Reading.".into())],
                error: None
            },
            Item::Tool(ToolView {
                id: "c1".into(),
                name: "read".into(),
                args: json!({"path": "a"}).as_object().cloned().unwrap(),
                partial: None,
                result: Some(("42".into(), false)),
            }),
            Item::Error("stopped".into()),
        ]
    );
    assert_eq!(
        (
            app.footer.input,
            app.footer.output,
            app.footer.context_tokens
        ),
        (100, 20, 120)
    );
    assert!((app.footer.cost - 0.003).abs() < 1e-12);
}

#[test]
fn an_aborted_reply_says_so() {
    let mut app = App::new(Footer::default());
    app.on_event(
        &AgentEvent::MessageEnd {
            message: reply(json!([{"type": "text", "text": "half"}]), "aborted"),
        },
        Instant::now(),
    );
    assert_eq!(
        app.pending,
        [Item::Assistant {
            blocks: vec![(false, "half".into())],
            error: Some("Operation aborted".into())
        }]
    );
}

#[test]
fn enter_sends_when_idle_and_queues_while_working() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    assert_eq!(app.on_key(Key::Enter, now), None, "nothing to send");
    typed(&mut app, "hi", now);
    assert_eq!(
        app.on_key(Key::Enter, now),
        Some(Action::Submit("hi".into()))
    );
    assert!(app.editor.is_empty());
    app.working = Some(now);
    typed(&mut app, "left", now);
    assert_eq!(
        app.on_key(Key::Enter, now),
        Some(Action::Queue(QueueKind::Steer, "left".into()))
    );
    typed(&mut app, "later", now);
    assert_eq!(
        app.on_key(Key::AltEnter, now),
        Some(Action::Queue(QueueKind::FollowUp, "later".into()))
    );
    assert_eq!(
        app.queue,
        [
            (QueueKind::Steer, "left".to_string()),
            (QueueKind::FollowUp, "later".to_string())
        ]
    );
    // Slash commands are not queued.
    typed(&mut app, "/session", now);
    assert_eq!(
        app.on_key(Key::Enter, now),
        Some(Action::Submit("/session".into()))
    );
    assert_eq!(app.on_key(Key::Esc, now), Some(Action::Abort));
    typed(&mut app, "draft", now);
    app.dequeue_to_editor();
    assert_eq!(app.editor.text(), "left\nlater\ndraft");
    assert!(app.queue.is_empty());
}

#[test]
fn backslash_enter_and_shift_enter_add_lines() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    typed(&mut app, "one\\", now);
    assert_eq!(app.on_key(Key::Enter, now), None);
    typed(&mut app, "two", now);
    app.on_key(Key::NewLine, now);
    typed(&mut app, "three", now);
    assert_eq!(
        app.on_key(Key::Enter, now),
        Some(Action::Submit("one\ntwo\nthree".into()))
    );
}

#[test]
fn ctrl_c_clears_then_quits_within_the_window() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    typed(&mut app, "text", now);
    assert_eq!(app.on_key(Key::CtrlC, now), None);
    assert!(app.editor.is_empty());
    assert_eq!(app.notice.as_deref(), Some(CTRL_C_NOTICE));
    // Too late: the second press only arms again.
    let late = now + CTRL_C_WINDOW + Duration::from_secs(1);
    assert_eq!(app.on_key(Key::CtrlC, late), None);
    assert_eq!(app.on_key(Key::CtrlC, late), Some(Action::Quit));
    assert!(app.quit);
}

#[test]
fn ctrl_d_quits_only_on_an_empty_editor() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    typed(&mut app, "ab", now);
    app.on_key(Key::Home, now);
    assert_eq!(app.on_key(Key::CtrlD, now), None);
    assert_eq!(app.editor.text(), "b");
    app.on_key(Key::CtrlD, now);
    assert_eq!(app.on_key(Key::CtrlD, now), Some(Action::Quit));
}

#[test]
fn toggles_and_model_keys() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    app.on_key(Key::CtrlO, now);
    app.on_key(Key::CtrlT, now);
    assert_eq!((app.expand_tools, app.show_thinking), (true, true));
    assert_eq!(app.on_key(Key::CtrlL, now), Some(Action::SelectModel));
    assert_eq!(app.on_key(Key::CtrlP, now), Some(Action::CycleModel(true)));
    assert_eq!(
        app.on_key(Key::CtrlShiftP, now),
        Some(Action::CycleModel(false))
    );
    assert_eq!(app.on_key(Key::ShiftTab, now), Some(Action::CycleThinking));
    assert_eq!(app.on_key(Key::CtrlX, now), Some(Action::Copy));
}

#[test]
fn esc_cancels_a_waiting_login_even_when_idle() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    assert_eq!(app.on_key(Key::Esc, now), None, "idle: nothing to abort");
    app.login = true;
    assert_eq!(app.on_key(Key::Esc, now), Some(Action::Abort));
}

#[test]
fn a_login_s_answer_may_be_blank_and_stays_out_of_the_history() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    app.login = true;
    assert_eq!(
        app.on_key(Key::Enter, now),
        Some(Action::Submit(String::new())),
        "blank takes the default"
    );
    typed(&mut app, "code#state", now);
    assert_eq!(
        app.on_key(Key::Enter, now),
        Some(Action::Submit("code#state".into()))
    );
    app.login = false;
    app.on_key(Key::Up, now);
    assert_eq!(app.editor.text(), "", "the answer is not in the history");
}

#[test]
fn at_a_word_start_opens_the_file_search_and_tab_asks_for_completion() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    typed(&mut app, "see", now);
    assert_eq!(
        app.on_key(Key::Char('@'), now),
        None,
        "inside a word: an address"
    );
    app.on_key(Key::Char(' '), now);
    assert_eq!(app.on_key(Key::Char('@'), now), Some(Action::FileSearch));
    assert_eq!(app.editor.text(), "see@ @");
    typed(&mut app, " src/ma", now);
    assert_eq!(
        app.on_key(Key::Tab, now),
        Some(Action::Complete("src/ma".into()))
    );
    app.editor.replace_word_before_cursor("src/main.rs ");
    assert_eq!(app.editor.text(), "see@ @ src/main.rs ");
}

#[test]
fn an_edit_result_is_shown_as_its_diff() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    let call = reply(
        json!([{"type": "toolCall", "id": "e1", "name": "edit", "arguments": {"path": "a"}}]),
        "toolUse",
    );
    app.on_event(&AgentEvent::MessageEnd { message: call }, now);
    let mut result = AgentToolResult::text("Successfully replaced text in a.");
    result.details = Some(json!({"diff": "-1 old\n+1 new"}));
    app.on_event(
        &AgentEvent::ToolExecutionEnd {
            tool_call_id: "e1".into(),
            tool_name: "edit".into(),
            result,
            is_error: false,
            duration_ms: Some(1),
        },
        now,
    );
    let Some(Item::Tool(tool)) = app.pending.last() else {
        panic!("a tool item: {:?}", app.pending);
    };
    assert_eq!(tool.result, Some(("-1 old\n+1 new".to_string(), false)));
}

#[test]
fn a_long_paste_is_a_marker_until_sent() {
    let now = Instant::now();
    let mut app = App::new(Footer::default());
    let long: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    typed(&mut app, "look: ", now);
    app.on_key(Key::Paste(long.clone()), now);
    app.on_key(Key::Paste("short".into()), now);
    assert_eq!(app.editor.text(), "look: [paste #1 +12 lines]short");
    assert_eq!(
        app.on_key(Key::Enter, now),
        Some(Action::Submit(format!("look: {long}short")))
    );
    assert!(app.pastes.is_empty());
}
