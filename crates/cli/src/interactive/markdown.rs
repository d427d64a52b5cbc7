//! Markdown to terminal lines: headings, emphasis, inline code, lists (nested, numbered),
//! fenced and indented code blocks, block quotes, rules and tables, on pulldown-cmark.
//! Lines come out unwrapped; [`crate::interactive::wrap`] fits them to a width.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// The style of headings.
pub(crate) const HEADING: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
/// The style of code.
pub(crate) const CODE: Style = Style::new().fg(Color::Yellow);
/// The style of fences, rules and quote bars.
pub(crate) const DIM: Style = Style::new().fg(Color::DarkGray);

struct Renderer {
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// One entry per open list: the next number for an ordered list.
    lists: Vec<Option<u64>>,
    /// The prefix of continuation lines (list indentation, quote bars).
    indent: Vec<Span<'static>>,
    quote: usize,
    in_code: bool,
    row: Vec<String>,
    blank_before_next: bool,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_text(&mut self, text: &str, style: Style) {
        if self.current.is_empty() {
            self.current.extend(self.indent.iter().cloned());
        }
        self.current.push(Span::styled(text.to_string(), style));
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            self.lines
                .push(Line::from(std::mem::take(&mut self.current)));
        }
    }

    fn block_start(&mut self) {
        self.flush();
        if self.blank_before_next && !self.lines.is_empty() && self.lists.is_empty() {
            self.lines.push(Line::default());
        }
        self.blank_before_next = false;
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if self.in_code {
                    let mut parts = text.split('\n').peekable();
                    while let Some(part) = parts.next() {
                        if parts.peek().is_none() && part.is_empty() {
                            break;
                        }
                        self.push_text(part, CODE);
                        let line = std::mem::take(&mut self.current);
                        self.lines.push(Line::from(line));
                    }
                } else if !self.row.is_empty() {
                    if let Some(cell) = self.row.last_mut() {
                        cell.push_str(&text);
                    }
                } else {
                    let style = self.style();
                    self.push_text(&text, style);
                }
            }
            Event::Code(code) => {
                if let Some(cell) = self.row.last_mut() {
                    cell.push_str(&code);
                } else {
                    self.push_text(&code, CODE);
                }
            }
            Event::SoftBreak => {
                let style = self.style();
                self.push_text(" ", style);
            }
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.block_start();
                self.lines.push(Line::styled("─".repeat(40), DIM));
                self.blank_before_next = true;
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let style = self.style();
                self.push_text(html.trim_end_matches('\n'), style);
            }
            Event::TaskListMarker(done) => {
                let style = self.style();
                self.push_text(if done { "[x] " } else { "[ ] " }, style);
            }
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_start(),
            Tag::Heading { level, .. } => {
                self.block_start();
                let hashes = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    HeadingLevel::H3 => "### ",
                    _ => "#### ",
                };
                self.push_text(hashes, HEADING);
                self.styles.push(HEADING);
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.quote += 1;
                self.indent.push(Span::styled("│ ", DIM));
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                let lang = match kind {
                    pulldown_cmark::CodeBlockKind::Fenced(lang) => lang.to_string(),
                    pulldown_cmark::CodeBlockKind::Indented => String::new(),
                };
                self.push_text(&format!("```{lang}"), DIM);
                self.flush();
                self.in_code = true;
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.block_start();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "- ".to_string(),
                };
                let pad = "  ".repeat(depth);
                self.current.extend(self.indent.iter().cloned());
                self.current.push(Span::raw(pad.clone()));
                self.current.push(Span::styled(marker.clone(), HEADING));
                self.indent
                    .push(Span::raw(" ".repeat(pad.len() + marker.chars().count())));
            }
            Tag::Emphasis => self
                .styles
                .push(self.style().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(self.style().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(self.style().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { .. } => self
                .styles
                .push(self.style().add_modifier(Modifier::UNDERLINED)),
            Tag::Table(_) => self.block_start(),
            Tag::TableHead | Tag::TableRow => self.row = Vec::new(),
            Tag::TableCell => self.row.push(String::new()),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                self.blank_before_next = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.blank_before_next = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.indent.pop();
                self.blank_before_next = true;
            }
            TagEnd::CodeBlock => {
                self.in_code = false;
                self.push_text("```", DIM);
                self.flush();
                self.blank_before_next = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.blank_before_next = true;
            }
            TagEnd::Item => {
                self.flush();
                self.indent.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link => {
                self.styles.pop();
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                let cells = std::mem::take(&mut self.row);
                let head = matches!(tag, TagEnd::TableHead);
                let text = format!("| {} |", cells.join(" | "));
                let style = if head { HEADING } else { Style::default() };
                self.push_text(&text, style);
                self.flush();
                if head {
                    let rule: Vec<String> = cells
                        .iter()
                        .map(|c| "-".repeat(c.chars().count().max(3)))
                        .collect();
                    self.push_text(&format!("| {} |", rule.join(" | ")), DIM);
                    self.flush();
                }
            }
            TagEnd::Table => {
                self.flush();
                self.blank_before_next = true;
            }
            _ => {}
        }
    }
}

/// Renders `text` as Markdown.
pub(crate) fn render(text: &str) -> Vec<Line<'static>> {
    let mut r = Renderer {
        lines: Vec::new(),
        current: Vec::new(),
        styles: Vec::new(),
        lists: Vec::new(),
        indent: Vec::new(),
        quote: 0,
        in_code: false,
        row: Vec::new(),
        blank_before_next: false,
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    // A code block still open (while streaming) has no closing fence yet.
    r.flush();
    r.lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn headings_lists_and_code_blocks() {
        let md = "# Title\n\nSome *text* and `code`.\n\n- one\n- two\n  1. nested\n\n```rust\nfn main() {}\n\nlet x = 1;\n```\nafter";
        let lines = render(md);
        assert_eq!(
            plain(&lines),
            [
                "# Title",
                "",
                "Some text and code.",
                "",
                "- one",
                "- two",
                "    1. nested",
                "",
                "```rust",
                "fn main() {}",
                "",
                "let x = 1;",
                "```",
                "",
                "after",
            ]
        );
        assert_eq!(lines[0].spans[1].style, HEADING);
        assert_eq!(lines[2].spans[1].style.add_modifier, Modifier::ITALIC);
        assert_eq!(lines[2].spans[3].style, CODE);
        assert_eq!(lines[9].spans[0].style, CODE);
    }

    #[test]
    fn tables_and_quotes() {
        let md = "| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n> more";
        assert_eq!(
            plain(&render(md)),
            [
                "| a | b |",
                "| --- | --- |",
                "| 1 | 2 |",
                "",
                "│ quoted more"
            ]
        );
    }

    #[test]
    fn an_open_code_block_while_streaming_shows_its_lines() {
        // The parser closes it at the end of the text.
        assert_eq!(
            plain(&render("```\nfirst\nsec")),
            ["```", "first", "sec", "```"]
        );
    }
}
