//! Transcript items as lines: prompts, replies (Markdown, thinking dim and italic), tool calls
//! with their arguments and a collapsed or whole result, notices and errors.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::{Map, Value};

use crate::interactive::markdown;
use crate::interactive::state::{Item, ToolView};
use crate::interactive::wrap::wrap_lines;

/// Lines of a collapsed tool result.
pub(crate) const COLLAPSED_LINES: usize = 5;

const USER: Style = Style::new().fg(Color::Black).bg(Color::Gray);
const THINKING: Style = Style::new()
    .fg(Color::DarkGray)
    .add_modifier(Modifier::ITALIC);
const ERROR: Style = Style::new().fg(Color::Red);
const TOOL: Style = Style::new().fg(Color::Green).add_modifier(Modifier::BOLD);
const OUTPUT: Style = Style::new().fg(Color::Gray);

/// How a tool call is named: `$ command` for bash, `read path` for file tools, else the
/// arguments as JSON.
pub(crate) fn tool_title(name: &str, args: &Map<String, Value>) -> String {
    let s = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match name {
        "bash" => format!("$ {}", s("command")),
        "read" => {
            let mut t = format!("read {}", s("path"));
            if let Some(o) = args.get("offset").and_then(Value::as_u64) {
                t.push_str(&format!(":{o}"));
                if let Some(l) = args.get("limit").and_then(Value::as_u64) {
                    t.push_str(&format!("-{}", o + l.saturating_sub(1)));
                }
            }
            t
        }
        "write" | "edit" | "ls" => format!("{name} {}", s("path")),
        "grep" | "find" => format!("{name} {} {}", s("pattern"), s("path"))
            .trim_end()
            .into(),
        _ => format!("{name} {}", Value::Object(args.clone())),
    }
}

fn tool_lines(tool: &ToolView, expand: bool) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(
        tool_title(&tool.name, &tool.args),
        TOOL,
    ))];
    let (text, is_error, done) = match (&tool.result, &tool.partial) {
        (Some((t, e)), _) => (t.as_str(), *e, true),
        (None, Some(p)) => (p.as_str(), false, false),
        (None, None) => ("", false, false),
    };
    let style = if is_error { ERROR } else { OUTPUT };
    let all: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    let shown: Vec<&str> = if expand {
        all.clone()
    } else if done {
        all.iter().take(COLLAPSED_LINES).copied().collect()
    } else {
        // While it runs, the newest lines.
        all[all.len().saturating_sub(COLLAPSED_LINES)..].to_vec()
    };
    for l in &shown {
        let style = match (tool.name.as_str(), l.chars().next()) {
            ("edit", Some('+')) if !is_error => Style::new().fg(Color::Green),
            ("edit", Some('-')) if !is_error => Style::new().fg(Color::Red),
            _ => style,
        };
        lines.push(Line::from(Span::styled(format!("  {l}"), style)));
    }
    if done && shown.len() < all.len() {
        lines.push(Line::from(Span::styled(
            format!(
                "  … {} more lines (Ctrl+O to expand)",
                all.len() - shown.len()
            ),
            Style::new().fg(Color::DarkGray),
        )));
    }
    lines
}

/// The lines of `item`, fitted to `width`, with a blank line after.
pub(crate) fn item_lines(
    item: &Item,
    width: u16,
    expand: bool,
    thinking: bool,
) -> Vec<Line<'static>> {
    let width = width as usize;
    let mut lines = match item {
        Item::User(text) => {
            let raw: Vec<Line<'static>> = text
                .lines()
                .map(|l| Line::from(Span::styled(format!(" {l}"), USER)))
                .collect();
            let mut out = wrap_lines(&raw, width);
            for l in &mut out {
                let w = l.width();
                if w < width {
                    l.spans.push(Span::styled(" ".repeat(width - w), USER));
                }
            }
            out
        }
        Item::Assistant { blocks, error } => {
            let mut raw = Vec::new();
            for (is_thinking, text) in blocks {
                if !raw.is_empty() {
                    raw.push(Line::default());
                }
                if *is_thinking {
                    if thinking {
                        raw.extend(text.lines().map(|l| Line::styled(l.to_string(), THINKING)));
                    } else {
                        raw.push(Line::styled("Thinking…", THINKING));
                    }
                } else {
                    raw.extend(markdown::render(text));
                }
            }
            if let Some(e) = error {
                if !raw.is_empty() {
                    raw.push(Line::default());
                }
                raw.push(Line::styled(format!("Error: {e}"), ERROR));
            }
            wrap_lines(&raw, width)
        }
        Item::Tool(tool) => wrap_lines(&tool_lines(tool, expand), width),
        Item::Info(text) => wrap_lines(
            &text
                .lines()
                .map(|l| Line::styled(l.to_string(), Style::new().fg(Color::DarkGray)))
                .collect::<Vec<_>>(),
            width,
        ),
        Item::Startup(startup) => wrap_lines(&crate::interactive::header::lines(startup), width),
        Item::Error(text) => wrap_lines(
            &text
                .lines()
                .map(|l| Line::styled(l.to_string(), ERROR))
                .collect::<Vec<_>>(),
            width,
        ),
    };
    lines.push(Line::default());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn tool_titles_name_what_the_call_does() {
        assert_eq!(
            tool_title("bash", &args(json!({"command": "ls -la"}))),
            "$ ls -la"
        );
        assert_eq!(
            tool_title(
                "read",
                &args(json!({"path": "a.rs", "offset": 10, "limit": 5}))
            ),
            "read a.rs:10-14"
        );
        assert_eq!(tool_title("x", &args(json!({"k": 1}))), "x {\"k\":1}");
    }

    #[test]
    fn a_long_tool_result_is_collapsed_unless_expanded() {
        let tool = ToolView {
            id: "1".into(),
            name: "bash".into(),
            args: args(json!({"command": "seq 7"})),
            partial: None,
            result: Some(("1\n2\n3\n4\n5\n6\n7\n".into(), false)),
        };
        let item = Item::Tool(tool);
        assert_eq!(
            plain(&item_lines(&item, 40, false, true)),
            [
                "$ seq 7",
                "  1",
                "  2",
                "  3",
                "  4",
                "  5",
                "  … 2 more lines (Ctrl+O to expand)",
                ""
            ]
        );
        assert_eq!(item_lines(&item, 40, true, true).len(), 9);
    }

    #[test]
    fn an_edit_shows_its_diff_coloured() {
        let tool = ToolView {
            id: "1".into(),
            name: "edit".into(),
            args: args(json!({"path": "a.rs"})),
            partial: None,
            result: Some(("-1 old\n+1 new\n 2 same".into(), false)),
        };
        let lines = item_lines(&Item::Tool(tool), 40, false, true);
        assert_eq!(
            plain(&lines),
            ["edit a.rs", "  -1 old", "  +1 new", "   2 same", ""]
        );
        assert_eq!(lines[1].spans[0].style.fg, Some(Color::Red));
        assert_eq!(lines[2].spans[0].style.fg, Some(Color::Green));
        assert_eq!(lines[3].spans[0].style, OUTPUT);
    }

    #[test]
    fn replies_show_markdown_thinking_and_errors() {
        let item = Item::Assistant {
            blocks: vec![(true, "hmm".into()), (false, "# Hi\n\n- a".into())],
            error: Some("boom".into()),
        };
        assert_eq!(
            plain(&item_lines(&item, 40, false, true)),
            ["hmm", "", "# Hi", "", "- a", "", "Error: boom", ""]
        );
        assert_eq!(plain(&item_lines(&item, 40, false, false))[0], "Thinking…");
    }
}
