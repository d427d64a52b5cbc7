//! The live part drawn on ratatui's `TestBackend`, compared cell by cell with the whole
//! expected screen.

use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;
use serde_json::json;

use super::draw;
use crate::interactive::selector::{Choice, Selector};
use crate::interactive::state::{App, Footer, QueueKind, SelectorKind, ToolView};

fn footer() -> Footer {
    Footer {
        cwd: "~/p".into(),
        model: "m/x".into(),
        thinking: "off".into(),
        context_window: 128_000,
        ..Footer::default()
    }
}

fn screen(
    app: &App,
    now: Instant,
    width: u16,
    height: u16,
) -> (Vec<String>, Terminal<TestBackend>) {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| draw(f, app, now)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let lines = (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect();
    (lines, terminal)
}

#[test]
fn idle_screen_is_the_editor_then_the_footer() {
    let mut app = App::new(footer());
    app.editor.insert_str("hello\nworld");
    let (lines, mut terminal) = screen(&app, Instant::now(), 30, 8);
    assert_eq!(
        lines,
        [
            "──────────────────────────────",
            "hello                         ",
            "world                         ",
            "──────────────────────────────",
            "~/p                           ",
            "↑0 ↓0 $0.000 0.0%/128k     m/x",
            "                              ",
            "                              ",
        ]
    );
    terminal.backend_mut().assert_cursor_position((5, 2));
}

#[test]
fn working_screen_shows_the_running_tool_spinner_and_queue() {
    let start = Instant::now();
    let mut app = App::new(footer());
    app.working = Some(start);
    app.tools.push(ToolView {
        id: "1".into(),
        name: "bash".into(),
        args: json!({"command": "make"}).as_object().cloned().unwrap(),
        partial: Some("a\nb\n".into()),
        result: None,
    });
    app.queue.push((QueueKind::Steer, "go left".into()));
    app.queue.push((QueueKind::FollowUp, "then tests".into()));
    let (lines, terminal) = screen(&app, start + Duration::from_millis(3_050), 40, 12);
    assert_eq!(
        lines,
        [
            "$ make                                  ",
            "  a                                     ",
            "  b                                     ",
            "                                        ",
            "⠋ Working… (3s) · Esc to interrupt      ",
            "Steering: go left                       ",
            "Follow-up: then tests                   ",
            "────────────────────────────────────────",
            "                                        ",
            "────────────────────────────────────────",
            "~/p                                     ",
            "↑0 ↓0 $0.000 0.0%/128k               m/x",
        ]
    );
    assert_eq!(terminal.backend().buffer()[(0, 0)].fg, Color::Green);
}

#[test]
fn a_long_live_part_shows_its_newest_lines() {
    let start = Instant::now();
    let mut app = App::new(footer());
    app.working = Some(start);
    let text: String = (1..=20).map(|i| format!("line {i}\n\n")).collect();
    let mut reply: oxpi_ai::AssistantMessage = serde_json::from_value(json!({
        "role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "openai-completions", "provider": "p", "model": "m",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": 0
    }))
    .unwrap();
    reply.stop_reason = oxpi_ai::StopReason::Stop;
    app.live = Some(reply);
    let (lines, _) = screen(&app, start, 24, 9);
    assert_eq!(
        lines,
        [
            "                        ",
            "line 20                 ",
            "                        ",
            "⠋ Working… (0s) · Esc to",
            "────────────────────────",
            "                        ",
            "────────────────────────",
            "~/p                     ",
            "↑0 ↓0 $0.000 0.0%/128k  ",
        ]
    );
}

#[test]
fn selector_replaces_the_live_part() {
    let mut app = App::new(footer());
    let choices = ["a/one", "b/two", "c/three"]
        .iter()
        .map(|k| Choice {
            key: k.to_string(),
            label: k.to_string(),
            detail: String::new(),
        })
        .collect();
    app.selector = Some((
        SelectorKind::Model,
        Selector::new("Select a model", choices, Some("b/two")),
    ));
    let (lines, _) = screen(&app, Instant::now(), 40, 12);
    assert_eq!(
        lines,
        [
            "Select a model                          ",
            ">                                       ",
            "  a/one                                 ",
            "→ b/two                                 ",
            "  c/three                               ",
            "↑↓ select · Enter choose · Esc cancel   ",
            "────────────────────────────────────────",
            "                                        ",
            "────────────────────────────────────────",
            "~/p                                     ",
            "↑0 ↓0 $0.000 0.0%/128k               m/x",
            "                                        ",
        ]
    );
}
