//! The `/settings` list drawn as pi draws its settings selector: a rule, the search line, the
//! rows (`→ ` on the selected one, labels padded to the longest, the value after two spaces),
//! the selected row's description, the key hint, a rule.

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use crate::interactive::settings::SettingsList;
use crate::interactive::wrap::wrap_lines;

const DIM: Style = Style::new().fg(Color::DarkGray);
const ACCENT: Style = Style::new().fg(Color::Cyan);

/// The hint under the list (pi's keys).
pub(crate) const HINT: &str = "  Type to search · Enter/Space to change · Esc to cancel";

/// The lines of `list` at `width`.
pub(crate) fn lines(list: &SettingsList, width: u16) -> Vec<Line<'static>> {
    let w = width as usize;
    let rule = Line::styled("─".repeat(w), DIM);
    let mut out = vec![
        rule.clone(),
        Line::from(vec![Span::raw("> "), Span::raw(list.query.clone())]),
        Line::default(),
    ];
    let label_width = list
        .items
        .iter()
        .map(|i| unicode_width::UnicodeWidthStr::width(i.label))
        .max()
        .unwrap_or(0)
        .min(36);
    let visible = list.visible();
    if visible.is_empty() {
        out.push(Line::styled("  No matching settings", DIM));
    }
    for (row, &index) in visible.iter().enumerate() {
        let item = &list.items[index];
        let selected = row == list.selected;
        let label = format!("{:<label_width$}", item.label);
        let room = w.saturating_sub(2 + label_width + 2 + 2);
        let value: String = item.current.chars().take(room).collect();
        let mut spans = vec![Span::styled(
            if selected { "→ " } else { "  " },
            ACCENT,
        )];
        if selected {
            spans.push(Span::styled(label, ACCENT));
            spans.push(Span::raw("  "));
            spans.push(Span::styled(value, ACCENT));
        } else {
            spans.push(Span::raw(label));
            spans.push(Span::raw("  "));
            spans.push(Span::styled(value, DIM));
        }
        out.push(Line::from(spans));
    }
    if let Some(item) = list.selected_item() {
        out.push(Line::default());
        let description = [Line::styled(item.description, DIM)];
        for line in wrap_lines(&description, w.saturating_sub(4).max(1)) {
            let mut spans = vec![Span::raw("  ")];
            spans.extend(line.spans);
            out.push(Line::from(spans));
        }
    }
    out.push(Line::default());
    out.push(Line::styled(HINT, DIM));
    out.push(rule);
    out
}
