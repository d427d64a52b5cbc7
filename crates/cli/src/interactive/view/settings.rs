//! The `/settings` list drawn as pi draws its settings selector, in the editor's place: a rule,
//! the search line, the rows (`→ ` on the selected one, labels padded to the longest, the value
//! after two spaces), the selected row's description, the key hint, a rule.

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use crate::interactive::settings::SettingsList;
use crate::interactive::wrap::wrap_lines;

const DIM: Style = Style::new().fg(Color::DarkGray);
const ACCENT: Style = Style::new().fg(Color::Cyan);

/// The hint under the list (pi's keys).
pub(crate) const HINT: &str = "  Type to search · Enter/Space to change · Esc to cancel";

/// The lines of `list` at `width`, in at most `rows` lines (at least the search line, the rows
/// and the hint): the description, the rules and the blank lines are left out, in that order
/// from the last, when they do not fit.
pub(crate) fn lines(list: &SettingsList, width: u16, rows: usize) -> Vec<Line<'static>> {
    let w = width as usize;
    let rule = Line::styled("─".repeat(w), DIM);
    let visible = list.visible();
    let mut items: Vec<Line<'static>> = Vec::new();
    if visible.is_empty() {
        items.push(Line::styled("  No matching settings", DIM));
    }
    let label_width = list
        .items
        .iter()
        .map(|i| unicode_width::UnicodeWidthStr::width(i.label))
        .max()
        .unwrap_or(0)
        .min(36);
    for (row, &index) in visible.iter().enumerate() {
        let item = &list.items[index];
        let selected = row == list.selected;
        let label = format!("{:<label_width$}", item.label);
        let room = w.saturating_sub(2 + label_width + 2 + 2);
        let value: String = item.current.chars().take(room).collect();
        let mut spans = vec![Span::styled(if selected { "→ " } else { "  " }, ACCENT)];
        if selected {
            spans.push(Span::styled(label, ACCENT));
            spans.push(Span::raw("  "));
            spans.push(Span::styled(value, ACCENT));
        } else {
            spans.push(Span::raw(label));
            spans.push(Span::raw("  "));
            spans.push(Span::styled(value, DIM));
        }
        items.push(Line::from(spans));
    }
    let mut description = Vec::new();
    if let Some(item) = list.selected_item() {
        description.push(Line::default());
        let text = [Line::styled(item.description, DIM)];
        for line in wrap_lines(&text, w.saturating_sub(4).max(1)) {
            let mut spans = vec![Span::raw("  ")];
            spans.extend(line.spans);
            description.push(Line::from(spans));
        }
    }
    // What fits, beyond the search line, the rows and the hint.
    let mut spare = rows.saturating_sub(items.len() + 2);
    let mut take = |n: usize| {
        let fits = n <= spare;
        if fits {
            spare -= n;
        }
        fits
    };
    let with_description = take(description.len());
    let top_rule = take(1);
    let bottom_rule = take(1);
    let blank_after_search = take(1);
    let blank_before_hint = take(1);

    let mut out = Vec::new();
    if top_rule {
        out.push(rule.clone());
    }
    out.push(Line::from(vec![
        Span::raw("> "),
        Span::raw(list.query.clone()),
    ]));
    if blank_after_search {
        out.push(Line::default());
    }
    out.extend(items);
    if with_description {
        out.extend(description);
    }
    if blank_before_hint {
        out.push(Line::default());
    }
    out.push(Line::styled(HINT, DIM));
    if bottom_rule {
        out.push(rule);
    }
    out
}
