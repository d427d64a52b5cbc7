//! Drawing the live part of the screen (the inline viewport): the reply being streamed (its
//! newest lines), running tool calls, the spinner, the queue, a notice, the editor and the
//! footer, top-aligned; or an open selector in place of the live lines (the `/settings` list in
//! place of them and of the editor). Finished items are not drawn here: they go to the
//! scrollback once ([`transcript::item_lines`]).

pub(crate) mod footer;
pub(crate) mod settings;
pub(crate) mod transcript;

use std::time::Instant;

use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::selector::Selector;
use super::state::{assistant_item, App, Item, QueueKind};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const DIM: Style = Style::new().fg(Color::DarkGray);

/// The border colour of the editor for a thinking level (pi shows the level on the border).
fn border_style(thinking: &str) -> Style {
    Style::new().fg(match thinking {
        "off" => Color::DarkGray,
        "minimal" | "low" => Color::Blue,
        "medium" => Color::Cyan,
        _ => Color::Magenta,
    })
}

/// The editor's lines (with a rule above and below) and where its cursor is within them.
fn editor_lines(app: &App, width: u16) -> (Vec<Line<'static>>, (u16, u16)) {
    let rule = Line::styled(
        "─".repeat(width as usize),
        border_style(&app.footer.thinking),
    );
    let mut lines = vec![rule.clone()];
    let (row, col) = app.editor.cursor();
    let mut cursor = (0, 1);
    for (y, (i, text)) in (1u16..).zip(app.editor.lines().iter().enumerate()) {
        // Long lines scroll horizontally around the cursor.
        let chars: Vec<char> = text.chars().collect();
        let room = width.saturating_sub(1) as usize;
        let start = if i == row && col > room {
            col - room
        } else {
            0
        };
        let shown: String = chars.iter().skip(start).take(room.max(1)).collect();
        if i == row {
            let before: String = chars[start..col.min(chars.len())].iter().collect();
            cursor = (
                unicode_width::UnicodeWidthStr::width(before.as_str()) as u16,
                y,
            );
        }
        lines.push(Line::raw(shown));
    }
    lines.push(rule);
    (lines, cursor)
}

fn selector_lines(selector: &Selector, rows: usize, width: u16) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::styled(
            selector.title.clone(),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Line::from(vec![
            Span::styled("> ", DIM),
            Span::raw(selector.query.clone()),
        ]),
    ];
    let rows = rows.saturating_sub(3).max(1);
    let first = selector.selected.saturating_sub(rows - 1);
    for i in first..(first + rows).min(selector.visible.len()) {
        let Some(choice) = selector.choice(i) else {
            break;
        };
        let selected = i == selector.selected;
        let marker = if selected { "→ " } else { "  " };
        let style = if selected {
            Style::new().fg(Color::Cyan)
        } else {
            Style::default()
        };
        let text: String = format!("{marker}{}", choice.label)
            .chars()
            .take(width as usize)
            .collect();
        let mut spans = vec![Span::styled(text, style)];
        if !choice.detail.is_empty() {
            spans.push(Span::styled(format!("  {}", choice.detail), DIM));
        }
        lines.push(Line::from(spans));
    }
    if selector.visible.is_empty() {
        lines.push(Line::styled("  No matches", DIM));
    }
    lines.push(Line::styled("↑↓ select · Enter choose · Esc cancel", DIM));
    lines
}

/// The status line while the agent works: spinner, elapsed seconds, how to stop.
pub(crate) fn working_line(since: Instant, now: Instant) -> Line<'static> {
    let elapsed = now.saturating_duration_since(since);
    let frame = SPINNER[(elapsed.as_millis() / 100) as usize % SPINNER.len()];
    Line::from(vec![
        Span::styled(format!("{frame} "), Style::new().fg(Color::Cyan)),
        Span::raw(format!("Working… ({}s)", elapsed.as_secs())),
        Span::styled(" · Esc to interrupt", DIM),
    ])
}

/// Draws the live part of `app` into `frame`, at `now`.
pub(crate) fn draw(frame: &mut Frame<'_>, app: &App, now: Instant) {
    let area = frame.area();
    let width = area.width;
    // The settings list takes the editor's place, as pi's selectors do.
    let (editor, cursor) = match app.settings {
        Some(_) => (Vec::new(), (0, 0)),
        None => editor_lines(app, width),
    };
    let footer = footer::lines(&app.footer, width);
    let mut status: Vec<Line<'static>> = Vec::new();
    if let Some(since) = app.working {
        status.push(working_line(since, now));
    }
    for (kind, text) in &app.queue {
        let label = match kind {
            QueueKind::Steer => "Steering: ",
            QueueKind::FollowUp => "Follow-up: ",
        };
        let first = text.lines().next().unwrap_or("");
        status.push(Line::from(vec![
            Span::styled(label, DIM),
            Span::raw(first.to_string()),
        ]));
    }
    if let Some(notice) = &app.notice {
        status.push(Line::styled(notice.clone(), Style::new().fg(Color::Yellow)));
    }
    let fixed = (editor.len() + footer.len() + status.len()) as u16;
    let room = area.height.saturating_sub(fixed) as usize;

    let body: Vec<Line<'static>> = if let Some(list) = &app.settings {
        settings::lines(list, width, room)
    } else if let Some((kind, selector)) = &app.selector {
        let mut lines = selector_lines(selector, room.max(4), width);
        if let (super::state::SelectorKind::Tree, Some((_, text))) = (kind, &app.tree.label_edit) {
            // The label being typed replaces the hint line.
            lines.pop();
            lines.push(Line::from(vec![
                Span::styled("Label (empty removes it): ", Style::new().fg(Color::Yellow)),
                Span::raw(text.clone()),
            ]));
        }
        lines
    } else {
        let mut lines = Vec::new();
        if let Some(reply) = &app.live {
            let mut item = assistant_item(reply);
            if let Item::Assistant { error, .. } = &mut item {
                *error = None;
            }
            lines.extend(transcript::item_lines(
                &item,
                width,
                app.expand_tools,
                app.show_thinking,
            ));
        }
        for tool in &app.tools {
            lines.extend(transcript::item_lines(
                &Item::Tool(tool.clone()),
                width,
                app.expand_tools,
                app.show_thinking,
            ));
        }
        lines
    };
    // The newest lines of the live part when it does not fit.
    let body = &body[body.len().saturating_sub(room)..];

    let mut all: Vec<Line<'static>> = body.to_vec();
    all.extend(status);
    let editor_top = all.len() as u16;
    all.extend(editor);
    all.extend(footer);
    let height = (all.len() as u16).min(area.height);
    frame.render_widget(Paragraph::new(all), Rect { height, ..area });
    if app.selector.is_none() && app.settings.is_none() {
        frame.set_cursor_position(Position::new(
            area.x + cursor.0.min(width.saturating_sub(1)),
            area.y + editor_top + cursor.1,
        ));
    }
}

#[cfg(test)]
mod tests;
