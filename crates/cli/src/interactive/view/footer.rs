//! The footer: working directory and session name, then tokens, cost and context use on the
//! left and the model with its thinking level on the right.

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use crate::interactive::state::Footer;

const DIM: Style = Style::new().fg(Color::DarkGray);

/// `n` as pi shows token counts: `950`, `1.2k`, `34k`, `1.5M`.
pub(crate) fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=9_999 => format!("{:.1}k", n as f64 / 1000.0),
        10_000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// The footer's two lines for `width` columns.
pub(crate) fn lines(footer: &Footer, width: u16) -> Vec<Line<'static>> {
    let width = width as usize;
    let mut first = footer.cwd.clone();
    if let Some(name) = &footer.session_name {
        first.push_str(&format!(" • {name}"));
    }
    let percent = if footer.context_window > 0 {
        footer.context_tokens as f64 * 100.0 / footer.context_window as f64
    } else {
        0.0
    };
    let mut left = format!("↑{} ↓{}", tokens(footer.input), tokens(footer.output));
    if footer.cache > 0 {
        left.push_str(&format!(" R/W{}", tokens(footer.cache)));
    }
    left.push_str(&format!(
        " ${:.3} {percent:.1}%/{}",
        footer.cost,
        tokens(footer.context_window)
    ));
    let right = if footer.thinking == "off" {
        footer.model.clone()
    } else {
        format!("{} • {}", footer.model, footer.thinking)
    };
    let used = left.chars().count() + right.chars().count();
    let second = if used + 2 <= width {
        format!("{left}{}{right}", " ".repeat(width - used))
    } else {
        format!("{left}  {right}")
    };
    let cut = |s: String| s.chars().take(width).collect::<String>();
    vec![
        Line::from(Span::styled(cut(first), DIM)),
        Line::from(Span::styled(cut(second), DIM)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::buffer::Buffer;
    use ratatui::widgets::Paragraph;
    use ratatui::Terminal;

    #[test]
    fn token_counts_as_pi_writes_them() {
        assert_eq!(
            [tokens(950), tokens(1234), tokens(34_567), tokens(1_500_000)],
            ["950", "1.2k", "34k", "1.5M"]
        );
    }

    #[test]
    fn footer_buffer() {
        let footer = Footer {
            cwd: "~/proj".into(),
            session_name: Some("fix".into()),
            model: "openai/gpt-4o".into(),
            thinking: "high".into(),
            context_window: 128_000,
            context_tokens: 12_800,
            input: 1234,
            output: 56,
            cache: 0,
            cost: 0.0123,
        };
        let mut terminal = Terminal::new(TestBackend::new(60, 2)).unwrap();
        terminal
            .draw(|f| f.render_widget(Paragraph::new(lines(&footer, 60)), f.area()))
            .unwrap();
        let mut expected = Buffer::with_lines([
            "~/proj • fix                                                ",
            "↑1.2k ↓56 $0.012 10.0%/128k             openai/gpt-4o • high",
        ]);
        // Styled as far as the text goes.
        expected.set_style(ratatui::layout::Rect::new(0, 0, 12, 1), DIM);
        expected.set_style(ratatui::layout::Rect::new(0, 1, 60, 1), DIM);
        terminal.backend().assert_buffer(&expected);
    }
}
