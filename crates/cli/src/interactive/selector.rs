//! A fuzzy-filtered list (the model, thinking and session pickers): a query, the items that
//! match it best first (nucleo's matcher), and the selected one.

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// One choice: the key returned when chosen, the text searched and shown, a detail shown dim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    /// Returned when chosen.
    pub key: String,
    /// Shown and searched.
    pub label: String,
    /// Shown after the label, also searched.
    pub detail: String,
}

/// The picker's state.
#[derive(Debug, Clone)]
pub(crate) struct Selector {
    /// The title line.
    pub title: String,
    choices: Vec<Choice>,
    /// The query typed.
    pub query: String,
    /// Indexes into the choices that match, best first.
    pub visible: Vec<usize>,
    /// Index into `visible`.
    pub selected: usize,
}

impl Selector {
    /// A selector over `choices` (in their order while the query is empty), `current` selected.
    pub(crate) fn new(title: &str, choices: Vec<Choice>, current: Option<&str>) -> Self {
        let selected = current
            .and_then(|c| choices.iter().position(|x| x.key == c))
            .unwrap_or(0);
        Self {
            title: title.to_string(),
            visible: (0..choices.len()).collect(),
            choices,
            query: String::new(),
            selected,
        }
    }

    /// The choice at `visible[i]`.
    pub(crate) fn choice(&self, i: usize) -> Option<&Choice> {
        self.visible.get(i).and_then(|&c| self.choices.get(c))
    }

    /// The key of the selected choice.
    pub(crate) fn chosen(&self) -> Option<&str> {
        self.choice(self.selected).map(|c| c.key.as_str())
    }

    /// Moves the selection up (wrapping).
    pub(crate) fn up(&mut self) {
        let n = self.visible.len();
        if n > 0 {
            self.selected = (self.selected + n - 1) % n;
        }
    }

    /// Moves the selection down (wrapping).
    pub(crate) fn down(&mut self) {
        let n = self.visible.len();
        if n > 0 {
            self.selected = (self.selected + 1) % n;
        }
    }

    /// Types a character into the query.
    pub(crate) fn push(&mut self, c: char) {
        self.query.push(c);
        self.refilter();
    }

    /// Deletes the query's last character.
    pub(crate) fn backspace(&mut self) {
        self.query.pop();
        self.refilter();
    }

    fn refilter(&mut self) {
        self.selected = 0;
        if self.query.trim().is_empty() {
            self.visible = (0..self.choices.len()).collect();
            return;
        }
        let mut matcher = Matcher::new(Config::DEFAULT);
        let pattern = Pattern::parse(&self.query, CaseMatching::Ignore, Normalization::Smart);
        let mut buf = Vec::new();
        let mut scored: Vec<(u32, usize)> = self
            .choices
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let hay = format!("{} {}", c.label, c.detail);
                pattern
                    .score(Utf32Str::new(&hay, &mut buf), &mut matcher)
                    .map(|s| (s, i))
            })
            .collect();
        // Best first; equal scores keep the list's order.
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        self.visible = scored.into_iter().map(|(_, i)| i).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(key: &str) -> Choice {
        Choice {
            key: key.into(),
            label: key.into(),
            detail: String::new(),
        }
    }

    #[test]
    fn fuzzy_query_filters_and_ranks() {
        let mut s = Selector::new(
            "Model",
            vec![
                choice("openai/gpt-4o"),
                choice("anthropic/claude-sonnet-4"),
                choice("openai/gpt-4o-mini"),
            ],
            Some("openai/gpt-4o-mini"),
        );
        assert_eq!(s.chosen(), Some("openai/gpt-4o-mini"));
        for c in "cld".chars() {
            s.push(c);
        }
        assert_eq!(s.visible, [1]);
        assert_eq!(s.chosen(), Some("anthropic/claude-sonnet-4"));
        s.backspace();
        s.backspace();
        s.backspace();
        for c in "gpt4o".chars() {
            s.push(c);
        }
        assert_eq!(s.visible.len(), 2);
        s.down();
        s.down();
        assert_eq!(s.selected, 0);
        s.up();
        assert_eq!(s.selected, 1);
        s.push('z');
        s.push('z');
        assert_eq!(s.chosen(), None);
    }
}
