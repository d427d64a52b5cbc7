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

/// `text` padded with spaces to `width` columns.
fn pad(text: &str, width: usize) -> String {
    let w = unicode_width::UnicodeWidthStr::width(text);
    format!("{text}{}", " ".repeat(width.saturating_sub(w)))
}

#[test]
fn the_settings_list_is_drawn_as_pi_draws_it() {
    use crate::interactive::keys::Key;
    use crate::interactive::settings::{SettingsList, Values};
    let mut app = App::new(footer());
    let mut list = SettingsList::new(&Values {
        auto_compact: true,
        steering: oxpi_agent_core::QueueMode::OneAtATime,
        follow_up: oxpi_agent_core::QueueMode::All,
        quiet_startup: "false".into(),
        project_trust: "ask".into(),
        skill_commands: true,
    });
    list.on_key(&Key::Down);
    app.settings = Some(list);
    let (lines, terminal) = screen(&app, Instant::now(), 60, 17);
    let rule = "─".repeat(60);
    let footer_line = format!("{}m/x", pad("↑0 ↓0 $0.000 0.0%/128k", 57));
    let rows = [
        "  Auto-compact           true",
        "→ Steering mode          one-at-a-time",
        "  Follow-up mode         all",
        "  Quiet startup          false",
        "  Default project trust  Ask",
        "  Skill commands         true",
    ];
    let description = [
        "  Messages sent with Enter while the agent works: one per",
        "  turn, or all together",
    ];
    let hint = "  Type to search · Enter/Space to change · Esc to cancel";
    // In place of the editor, with room for all of it.
    let mut whole = vec![rule.as_str(), ">", ""];
    whole.extend(rows);
    whole.push("");
    whole.extend(description);
    whole.extend(["", hint, &rule, "~/p", &footer_line]);
    let expected: Vec<String> = whole.iter().map(|l| pad(l, 60)).collect();
    assert_eq!(lines, expected);
    // The selected row is in the accent colour, the others' values dim.
    assert_eq!(terminal.backend().buffer()[(2, 4)].fg, Color::Cyan);
    assert_eq!(terminal.backend().buffer()[(25, 3)].fg, Color::DarkGray);

    // In a short viewport the blank lines, the rules, then the description give way.
    let (lines, _) = screen(&app, Instant::now(), 60, 15);
    let mut short = vec![rule.as_str(), ">"];
    short.extend(rows);
    short.push("");
    short.extend(description);
    short.extend([hint, &rule, "~/p", &footer_line]);
    let expected: Vec<String> = short.iter().map(|l| pad(l, 60)).collect();
    assert_eq!(lines, expected);
    let (lines, _) = screen(&app, Instant::now(), 60, 10);
    let mut shortest = vec![">"];
    shortest.extend(rows);
    shortest.extend([hint, "~/p", &footer_line]);
    let expected: Vec<String> = shortest.iter().map(|l| pad(l, 60)).collect();
    assert_eq!(lines, expected);
}

#[test]
fn the_startup_header_lists_the_loaded_resources() {
    use crate::interactive::header::{Startup, HINTS};
    use crate::interactive::state::Item;
    let startup = Startup {
        title: "oxpi v0.1.0".into(),
        header: true,
        sections: vec![
            ("Context".into(), "~/.pi/agent/AGENTS.md, AGENTS.md".into()),
            ("Skills".into(), "lint, tidy".into()),
        ],
    };
    let lines = super::transcript::item_lines(&Item::Startup(startup), 90, false, false);
    let mut terminal = Terminal::new(TestBackend::new(90, 10)).unwrap();
    terminal
        .draw(|f| f.render_widget(ratatui::widgets::Paragraph::new(lines), f.area()))
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    let shown: Vec<String> = (0..10)
        .map(|y| {
            (0..90)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect()
        })
        .collect();
    let expected: Vec<String> = [
        "oxpi v0.1.0",
        HINTS,
        "",
        "[Context]",
        "  ~/.pi/agent/AGENTS.md, AGENTS.md",
        "",
        "[Skills]",
        "  lint, tidy",
        "",
        "",
    ]
    .iter()
    .map(|l| pad(l, 90))
    .collect();
    assert_eq!(shown, expected);
    assert_eq!(buffer[(0, 3)].fg, Color::Cyan);
    assert_eq!(buffer[(2, 4)].fg, Color::DarkGray);
}
