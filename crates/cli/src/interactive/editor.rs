//! The prompt editor's text and cursor: multi-line input, cursor moves, word deletion and the
//! history of sent prompts (pi's `Up`/`Down` at the first/last line). Pure: no terminal.

/// The editor: lines of text, a cursor (line, char column) and the prompt history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Editor {
    lines: Vec<String>,
    row: usize,
    col: usize,
    history: Vec<String>,
    /// The history entry shown (`None`: the text being written), and the draft kept meanwhile.
    browsing: Option<(usize, String)>,
}

fn byte_at(line: &str, col: usize) -> usize {
    line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
}

impl Editor {
    /// An empty editor.
    pub(crate) fn new() -> Self {
        Self {
            lines: vec![String::new()],
            ..Self::default()
        }
    }

    /// The whole text, lines joined with `\n`.
    pub(crate) fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The lines.
    pub(crate) fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The cursor: (line, column in chars).
    pub(crate) fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// True when nothing is written.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Replaces the text, cursor at its end.
    pub(crate) fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_string).collect();
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].chars().count();
        self.browsing = None;
    }

    /// Empties the editor.
    pub(crate) fn clear(&mut self) {
        self.set_text("");
    }

    /// The text, the editor cleared, nothing added to the history (a login's answer: a code or
    /// a redirect URL must not come back with `Up`).
    pub(crate) fn take_unrecorded(&mut self) -> String {
        let text = self.text();
        self.clear();
        text
    }

    /// Takes the text out (the editor is then empty) and records it in the history.
    pub(crate) fn take(&mut self) -> String {
        let text = self.text();
        self.clear();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    /// Inserts `s` at the cursor (newlines split lines).
    pub(crate) fn insert_str(&mut self, s: &str) {
        for (i, part) in s.split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            for c in part.chars().filter(|c| *c != '\r') {
                self.insert_char(c);
            }
        }
    }

    /// Inserts one character.
    pub(crate) fn insert_char(&mut self, c: char) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.insert(at, c);
        self.col += 1;
    }

    /// Splits the line at the cursor.
    pub(crate) fn newline(&mut self) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        let rest = line.split_off(at);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    /// True when the character before the cursor is `\` (pi's `\`+`Enter` for a new line).
    pub(crate) fn ends_with_backslash(&self) -> bool {
        self.col > 0 && self.lines[self.row].chars().nth(self.col - 1) == Some('\\')
    }

    /// The text from the last space before the cursor to the cursor.
    pub(crate) fn word_before_cursor(&self) -> String {
        let chars: Vec<char> = self.lines[self.row].chars().take(self.col).collect();
        let start = chars
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |i| i + 1);
        chars[start..].iter().collect()
    }

    /// Replaces [`Editor::word_before_cursor`] with `word`.
    pub(crate) fn replace_word_before_cursor(&mut self, word: &str) {
        let n = self.word_before_cursor().chars().count();
        for _ in 0..n {
            self.backspace();
        }
        self.insert_str(word);
    }

    /// Deletes the character before the cursor (joining lines at a line start).
    pub(crate) fn backspace(&mut self) {
        if self.col > 0 {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col - 1);
            line.remove(at);
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
            self.lines[self.row].push_str(&line);
        }
    }

    /// Deletes the character at the cursor (joining the next line at a line end).
    pub(crate) fn delete(&mut self) {
        let len = self.lines[self.row].chars().count();
        if self.col < len {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col);
            line.remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    /// Deletes the word before the cursor (`Ctrl+W`).
    pub(crate) fn delete_word_backward(&mut self) {
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut start = self.col;
        while start > 0 && chars[start - 1].is_whitespace() {
            start -= 1;
        }
        while start > 0 && !chars[start - 1].is_whitespace() {
            start -= 1;
        }
        if start == self.col {
            self.backspace();
            return;
        }
        let line: String = chars[..start].iter().chain(&chars[self.col..]).collect();
        self.lines[self.row] = line;
        self.col = start;
    }

    /// Deletes from the line start to the cursor (`Ctrl+U`).
    pub(crate) fn delete_to_line_start(&mut self) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.replace_range(..at, "");
        self.col = 0;
    }

    /// Deletes from the cursor to the line end (`Ctrl+K`).
    pub(crate) fn delete_to_line_end(&mut self) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.truncate(at);
    }

    /// Moves left one character (to the previous line's end at a line start).
    pub(crate) fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
        }
    }

    /// Moves right one character.
    pub(crate) fn right(&mut self) {
        if self.col < self.lines[self.row].chars().count() {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// To the line start.
    pub(crate) fn home(&mut self) {
        self.col = 0;
    }

    /// To the line end.
    pub(crate) fn end(&mut self) {
        self.col = self.lines[self.row].chars().count();
    }

    /// `Up`: the line above, or at the first line the previous history entry.
    pub(crate) fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let index = match &self.browsing {
            Some((i, _)) if *i == 0 => return,
            Some((i, _)) => *i - 1,
            None if self.history.is_empty() => return,
            None => self.history.len() - 1,
        };
        let draft = match self.browsing.take() {
            Some((_, draft)) => draft,
            None => self.text(),
        };
        let entry = self.history[index].clone();
        self.set_text(&entry);
        self.browsing = Some((index, draft));
    }

    /// `Down`: the line below, or at the last line the next history entry (then the draft).
    pub(crate) fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let Some((index, draft)) = self.browsing.take() else {
            return;
        };
        if index + 1 < self.history.len() {
            let entry = self.history[index + 1].clone();
            self.set_text(&entry);
            self.browsing = Some((index + 1, draft));
        } else {
            self.set_text(&draft);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_newlines_and_backspace_edit_lines() {
        let mut e = Editor::new();
        e.insert_str("héllo\nworld");
        assert_eq!(e.lines(), ["héllo", "world"]);
        assert_eq!(e.cursor(), (1, 5));
        e.home();
        e.backspace();
        assert_eq!(e.lines(), ["hélloworld"]);
        assert_eq!(e.cursor(), (0, 5));
        e.left();
        e.newline();
        assert_eq!(e.text(), "héll\noworld");
        e.delete_to_line_end();
        assert_eq!(e.text(), "héll\n");
        e.up();
        e.end();
        e.delete();
        assert_eq!(e.text(), "héll");
    }

    #[test]
    fn word_and_line_deletion() {
        let mut e = Editor::new();
        e.insert_str("one two  three");
        e.delete_word_backward();
        assert_eq!(e.text(), "one two  ");
        e.delete_word_backward();
        assert_eq!(e.text(), "one ");
        e.delete_to_line_start();
        assert_eq!(e.text(), "");
        assert!(e.is_empty());
    }

    #[test]
    fn history_walks_back_and_returns_to_the_draft() {
        let mut e = Editor::new();
        e.insert_str("first");
        assert_eq!(e.take(), "first");
        e.insert_str("second\nline");
        assert_eq!(e.take(), "second\nline");
        e.insert_str("draft");
        e.up();
        assert_eq!(e.text(), "second\nline");
        // The cursor is on the last line: Up moves within the entry first.
        e.up();
        assert_eq!(e.cursor().0, 0);
        e.up();
        assert_eq!(e.text(), "first");
        e.up();
        assert_eq!(e.text(), "first");
        e.down();
        assert_eq!(e.text(), "second\nline");
        e.down();
        assert_eq!(e.text(), "draft");
    }

    #[test]
    fn backslash_before_the_cursor_is_seen() {
        let mut e = Editor::new();
        e.insert_str("a\\");
        assert!(e.ends_with_backslash());
        e.backspace();
        assert!(!e.ends_with_backslash());
    }
}
