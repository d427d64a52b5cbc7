//! The machine-readable part of docs/differences-from-pi.md that `pi-reqdiff` reads: tables
//! between `<!-- pi-reqdiff:<status>:start -->` and `<!-- pi-reqdiff:<status>:end -->`, where
//! `<status>` is `deliberate` (oxpi differs on purpose, with the provider's documentation as the
//! reason) or `open` (not yet matched, issue 28 open). Each row is
//! `| scope | path | reason |`:
//!
//! - scope: `provider/api` or `provider/api/model`, each segment a glob (`*` matches any run of
//!   characters); a missing segment matches anything. `*/anthropic-messages`, `openrouter/*`.
//! - path: a glob over a difference's class (`body.messages[*].reasoning_content`,
//!   `header.anthropic-beta`, `request` for a request only one side sent).
//! - reason: free text (backquotes allowed).

/// Whether a row is a deliberate difference or a known open one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Status {
    /// oxpi differs on purpose.
    Deliberate,
    /// Not yet matched (issue 28 open).
    Open,
}

impl Status {
    /// The marker word.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Deliberate => "deliberate",
            Self::Open => "open",
        }
    }
}

/// One row of the tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    /// `provider/api[/model]` globs.
    pub(crate) scope: String,
    /// Glob over the path pattern.
    pub(crate) path: String,
    /// Why.
    pub(crate) reason: String,
    /// Deliberate or open.
    pub(crate) status: Status,
}

fn unquote(cell: &str) -> String {
    cell.trim().trim_matches('`').trim().to_string()
}

/// Reads every rule of `markdown`. `Err` names the line of a malformed row or a table that is not
/// closed.
pub(crate) fn parse(markdown: &str) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    let mut current: Option<Status> = None;
    for (number, line) in markdown.lines().enumerate() {
        let line = line.trim();
        let marker =
            |status: Status, end: &str| format!("<!-- pi-reqdiff:{}:{end} -->", status.as_str());
        if let Some(status) = [Status::Deliberate, Status::Open]
            .into_iter()
            .find(|s| line == marker(*s, "start"))
        {
            if current.is_some() {
                return Err(format!(
                    "line {}: a pi-reqdiff table starts inside another",
                    number + 1
                ));
            }
            current = Some(status);
            continue;
        }
        if [Status::Deliberate, Status::Open]
            .into_iter()
            .any(|s| line == marker(s, "end"))
        {
            current = None;
            continue;
        }
        let Some(status) = current else { continue };
        if !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
        if cells
            .iter()
            .all(|c| c.trim().chars().all(|ch| ch == '-' || ch == ':'))
        {
            continue; // the separator row
        }
        if cells.len() < 3 {
            return Err(format!(
                "line {}: a pi-reqdiff row needs `| scope | path | reason |`",
                number + 1
            ));
        }
        let scope = unquote(cells[0]);
        let path = unquote(cells[1]);
        if scope == "scope" && path == "path" {
            continue; // the header row
        }
        let reason = cells[2..].join("|").trim().to_string();
        if scope.is_empty() || path.is_empty() || reason.is_empty() {
            return Err(format!("line {}: empty scope, path or reason", number + 1));
        }
        rules.push(Rule {
            scope,
            path,
            reason,
            status,
        });
    }
    if current.is_some() {
        return Err("a pi-reqdiff table is not closed (missing its end marker)".into());
    }
    Ok(rules)
}

/// `*` matches any run of characters; everything else matches itself.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && p[pi] != '*' && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

impl Rule {
    /// True when this rule covers a difference at `pattern` of a case of `provider`/`api`/`model`.
    pub(crate) fn covers(&self, provider: &str, api: &str, model: &str, pattern: &str) -> bool {
        self.in_scope(provider, api, model) && glob(&self.path, pattern)
    }

    /// True when the rule's scope takes a case of `provider`/`api`/`model`.
    pub(crate) fn in_scope(&self, provider: &str, api: &str, model: &str) -> bool {
        let mut segments = self.scope.splitn(3, '/');
        let matches = |segment: Option<&str>, text: &str| segment.is_none_or(|s| glob(s, text));
        matches(segments.next(), provider)
            && matches(segments.next(), api)
            && matches(segments.next(), model)
    }
}

/// The first rule covering the difference (deliberate rules first).
pub(crate) fn find<'a>(
    rules: &'a [Rule],
    provider: &str,
    api: &str,
    model: &str,
    pattern: &str,
) -> Option<&'a Rule> {
    rules
        .iter()
        .filter(|r| r.status == Status::Deliberate)
        .chain(rules.iter().filter(|r| r.status == Status::Open))
        .find(|r| r.covers(provider, api, model, pattern))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
# Differences

Some prose | with a pipe.

<!-- pi-reqdiff:deliberate:start -->
| scope | path | reason |
|---|---|---|
| `google/*/gemini-3*` | `body.contents[*].parts[*].thoughtSignature` | Gemini's docs: `skip_thought_signature_validator` | really |
<!-- pi-reqdiff:deliberate:end -->

<!-- pi-reqdiff:open:start -->
| scope | path | reason |
|---|---|---|
| `*/openai-completions` | `body.messages[*].reasoning_content` | not yet replayed |
<!-- pi-reqdiff:open:end -->
";

    #[test]
    fn reads_both_tables() {
        let rules = parse(DOC).unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].status, Status::Deliberate);
        assert_eq!(rules[0].scope, "google/*/gemini-3*");
        assert!(rules[0].reason.contains("| really"));
        assert_eq!(rules[1].status, Status::Open);
        assert_eq!(rules[1].path, "body.messages[*].reasoning_content");
    }

    #[test]
    fn rejects_malformed_tables() {
        assert!(
            parse("<!-- pi-reqdiff:open:start -->\n| a | b |\n<!-- pi-reqdiff:open:end -->")
                .unwrap_err()
                .contains("line 2")
        );
        assert!(parse("<!-- pi-reqdiff:open:start -->\n| a | b | c |")
            .unwrap_err()
            .contains("not closed"));
    }

    #[test]
    fn scopes_and_paths_match_as_globs() {
        let rules = parse(DOC).unwrap();
        let pattern = "body.messages[*].reasoning_content";
        let hit = find(
            &rules,
            "deepseek",
            "openai-completions",
            "deepseek-v4",
            pattern,
        )
        .unwrap();
        assert_eq!(hit.status, Status::Open);
        assert!(find(&rules, "deepseek", "anthropic-messages", "x", pattern).is_none());
        let sig = "body.contents[*].parts[*].thoughtSignature";
        assert!(find(
            &rules,
            "google",
            "google-generative-ai",
            "gemini-3-pro",
            sig
        )
        .is_some());
        assert!(find(
            &rules,
            "google",
            "google-generative-ai",
            "gemini-2.5-pro",
            sig
        )
        .is_none());
        assert!(glob("a*c", "abbbc") && glob("*", "") && !glob("a*c", "abd"));
        assert!(glob("header.*", "header.x-api-key"));
    }
}
