//! Fitting styled lines to a width: breaks at spaces where it can, inside a word where it must,
//! counting display columns (wide characters take two).

use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// `line` broken into lines of at most `width` columns (at least one line).
pub(crate) fn wrap_line(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    // Characters with their styles.
    let chars: Vec<(char, ratatui::style::Style)> = line
        .spans
        .iter()
        .flat_map(|s| {
            let style = line.style.patch(s.style);
            s.content.chars().map(move |c| (c, style))
        })
        .map(|(c, st)| (if c == '\t' { ' ' } else { c }, st))
        .collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let mut cols = 0;
        let mut end = start;
        let mut last_space = None;
        while end < chars.len() {
            let w = chars[end].0.width().unwrap_or(0);
            if cols + w > width {
                break;
            }
            if chars[end].0 == ' ' {
                last_space = Some(end);
            }
            cols += w;
            end += 1;
        }
        if end == start {
            // A character wider than the width: take it alone.
            end = start + 1;
        } else if end < chars.len() {
            if let Some(space) = last_space.filter(|s| *s > start) {
                end = space + 1;
            }
        }
        out.push(to_line(&chars[start..end]));
        start = end;
    }
    if out.is_empty() {
        out.push(Line::default());
    }
    out
}

fn to_line(chars: &[(char, ratatui::style::Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for (c, st) in chars {
        if style != Some(*st) {
            if let Some(prev) = style {
                spans.push(Span::styled(std::mem::take(&mut text), prev));
            }
            style = Some(*st);
        }
        text.push(*c);
    }
    if let Some(prev) = style {
        spans.push(Span::styled(text, prev));
    }
    Line::from(spans)
}

/// Every line of `lines` wrapped to `width`.
pub(crate) fn wrap_lines(lines: &[Line<'static>], width: usize) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap_line(l, width)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Style};

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn breaks_at_spaces_then_inside_long_words() {
        let line = Line::from("the quick brown fox jumpsoverthelazydog");
        assert_eq!(
            plain(&wrap_line(&line, 10)),
            ["the quick ", "brown fox ", "jumpsovert", "helazydog"]
        );
        assert_eq!(plain(&wrap_line(&Line::default(), 10)), [""]);
    }

    #[test]
    fn keeps_styles_and_counts_wide_characters() {
        let red = Style::new().fg(Color::Red);
        let line = Line::from(vec![Span::raw("ab"), Span::styled("日本語", red)]);
        let wrapped = wrap_line(&line, 4);
        assert_eq!(plain(&wrapped), ["ab日", "本語"]);
        assert_eq!(wrapped[0].spans[1], Span::styled("日", red));
        assert_eq!(wrapped[1].spans, [Span::styled("本語", red)]);
    }
}
