//! Which pi version each entry of `docs/differences-from-pi.md` concerns, as its `Concerns:` line
//! says, so `pi-replay` lets an entry explain only the differences of the versions it names.
//!
//! An entry is a `##` or `###` heading; its tag is the first line of its body that starts with
//! `Concerns:`, before the next heading:
//!
//! ```text
//! ### Truncated tool-call arguments
//!
//! Concerns: pi 0.73.1 only (pi 1.6 salvages nothing either).
//! ```
//!
//! After `Concerns:` come versions joined by `,` or `and`: `pi 0.73.1`, `pi 1.6` (each may be
//! followed by `only`), or `all` (every version oxpi is measured against). A parenthesised note
//! and a final `.` are ignored.

use std::collections::BTreeMap;
use std::fmt;

/// A pi release the replays run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PiVersion {
    /// `@mariozechner/pi-ai` 0.73.1, the last release under that name.
    V0_73,
    /// `@earendil-works/pi-ai` 1.6.0.
    V1_6,
}

impl PiVersion {
    /// Every version, oldest first.
    pub const ALL: [PiVersion; 2] = [PiVersion::V0_73, PiVersion::V1_6];

    /// The npm version installed (`0.73.1`, `1.6.0`).
    pub fn npm_version(self) -> &'static str {
        match self {
            PiVersion::V0_73 => "0.73.1",
            PiVersion::V1_6 => "1.6.0",
        }
    }

    /// The name `bench/node/replay.mjs` takes for it (`0.73`, `1.6`).
    pub fn script_name(self) -> &'static str {
        match self {
            PiVersion::V0_73 => "0.73",
            PiVersion::V1_6 => "1.6",
        }
    }

    /// Reads `0.73`, `0.73.1`, `1.6` or `1.6.0`, with or without a leading `pi `.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.strip_prefix("pi ").unwrap_or(text).trim();
        match text {
            "0.73" | "0.73.1" => Some(PiVersion::V0_73),
            "1.6" | "1.6.0" => Some(PiVersion::V1_6),
            _ => None,
        }
    }
}

impl fmt::Display for PiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PiVersion::V0_73 => f.write_str("pi 0.73.1"),
            PiVersion::V1_6 => f.write_str("pi 1.6"),
        }
    }
}

/// The versions an entry concerns (sorted, no repeats).
pub type Versions = Vec<PiVersion>;

/// Parses the text after `Concerns:`; `Err` names the part that is not a version.
pub fn parse_concerns(text: &str) -> Result<Versions, String> {
    // Drop parenthesised notes, then the final full stop.
    let mut plain = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let plain = plain.trim().trim_end_matches('.').trim();
    if plain.is_empty() {
        return Err("`Concerns:` names no version".into());
    }
    let mut out = Vec::new();
    for part in plain.split(',').flat_map(|p| p.split(" and ")) {
        let part = part.trim();
        let part = part.strip_suffix(" only").unwrap_or(part).trim();
        if part.is_empty() {
            continue;
        }
        if part == "all" {
            out.extend(PiVersion::ALL);
        } else {
            let version = PiVersion::parse(part)
                .filter(|_| part.starts_with("pi "))
                .ok_or_else(|| {
                    format!("`{part}` is not a pi version (`pi 0.73.1`, `pi 1.6` or `all`)")
                })?;
            out.push(version);
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// GitHub's anchor of a heading's text: lower case, spaces to `-`, punctuation other than `-`
/// and `_` dropped (`Responses \`response.incomplete\`` → `responses-responseincomplete`).
pub fn anchor(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| {
            if c == ' ' {
                Some('-')
            } else if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else {
                None
            }
        })
        .collect()
}

/// One entry of the page: its heading, anchor, line and tag.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The heading's text.
    pub heading: String,
    /// Its anchor ([`anchor`]).
    pub anchor: String,
    /// Its 1-based line.
    pub line: usize,
    /// 2 for `##`, 3 for `###`.
    pub level: u8,
    /// What its `Concerns:` line says; `None` when it has none.
    pub concerns: Option<Result<Versions, String>>,
}

/// Every `##` and `###` entry of `page` (the title `#` is not an entry), in page order.
pub fn entries(page: &str) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut fenced = false;
    for (n, line) in page.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let heading = line
            .strip_prefix("### ")
            .map(|h| (h, 3))
            .or_else(|| line.strip_prefix("## ").map(|h| (h, 2)));
        if let Some((heading, level)) = heading {
            out.push(Entry {
                heading: heading.trim().to_string(),
                anchor: anchor(heading),
                line: n + 1,
                level,
                concerns: None,
            });
        } else if let (Some(tag), Some(entry)) = (line.strip_prefix("Concerns:"), out.last_mut()) {
            if entry.concerns.is_none() {
                entry.concerns = Some(parse_concerns(tag));
            }
        }
    }
    out
}

/// The entries that must say which versions they concern and do not: every `###` entry, and every
/// `##` section without `###` entries of its own (`Sessions`, `The command`).
pub fn untagged(page: &str) -> Vec<Entry> {
    let all = entries(page);
    all.iter()
        .enumerate()
        .filter(|(i, e)| {
            e.concerns.is_none()
                && (e.level == 3 || all.get(i + 1).is_none_or(|next| next.level != 3))
        })
        .map(|(_, e)| e.clone())
        .collect()
}

/// The versions of each tagged entry, by anchor; `Err` lists every tag that does not parse.
pub fn concerns_by_anchor(page: &str) -> Result<BTreeMap<String, Versions>, String> {
    let mut out = BTreeMap::new();
    let mut errors = Vec::new();
    for entry in entries(page) {
        match entry.concerns {
            Some(Ok(versions)) => {
                out.insert(entry.anchor, versions);
            }
            Some(Err(e)) => errors.push(format!("line {} ({}): {e}", entry.line, entry.heading)),
            None => {}
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concerns_lines_parse_into_versions() {
        use PiVersion::*;
        assert_eq!(parse_concerns(" pi 0.73.1 only."), Ok(vec![V0_73]));
        assert_eq!(parse_concerns("pi 1.6"), Ok(vec![V1_6]));
        assert_eq!(parse_concerns("all."), Ok(vec![V0_73, V1_6]));
        assert_eq!(
            parse_concerns("pi 1.6 and pi 0.73.1 (both measured, see the replays)."),
            Ok(vec![V0_73, V1_6])
        );
        assert_eq!(parse_concerns("pi 0.73.1, pi 1.6"), Ok(vec![V0_73, V1_6]));
        assert!(parse_concerns("pi 2.0").unwrap_err().contains("`pi 2.0`"));
        // A bare number is not taken: the tag says `pi`.
        assert!(parse_concerns("0.73.1").is_err());
        assert!(parse_concerns(" (a note only)").is_err());
    }

    #[test]
    fn anchors_are_githubs() {
        assert_eq!(
            anchor("Responses `response.incomplete`"),
            "responses-responseincomplete"
        );
        assert_eq!(
            anchor("OpenRouter `native_finish_reason`"),
            "openrouter-native_finish_reason"
        );
        assert_eq!(
            anchor("Tool-call arguments `null`"),
            "tool-call-arguments-null"
        );
    }

    #[test]
    fn entries_take_the_first_concerns_line_below_their_heading() {
        let page = "# Title\n\nConcerns: pi 2\n\n## Streams\n\nConcerns: all.\n\n\
                    ### Cut\n\ntext\nConcerns: pi 0.73.1 only.\nConcerns: pi 1.6\n\n\
                    ```text\n### Not a heading\n```\n### Untagged\n\n### Bad\nConcerns: pi 9\n";
        let got = entries(page);
        type Row<'a> = (&'a str, usize, Option<Result<Versions, String>>);
        let summary: Vec<Row> = got
            .iter()
            .map(|e| (e.anchor.as_str(), e.line, e.concerns.clone()))
            .collect();
        assert_eq!(summary.len(), 4);
        assert_eq!(
            summary[0],
            ("streams", 5, Some(Ok(PiVersion::ALL.to_vec())))
        );
        assert_eq!(summary[1], ("cut", 9, Some(Ok(vec![PiVersion::V0_73]))));
        assert_eq!(summary[2], ("untagged", 18, None));
        assert!(matches!(summary[3].2, Some(Err(_))));
        let err = concerns_by_anchor(page).unwrap_err();
        assert!(err.contains("line 20 (Bad)"), "{err}");
        // `## Streams` has a `###` entry, so only `Untagged` lacks a tag.
        let missing: Vec<String> = untagged(page).into_iter().map(|e| e.anchor).collect();
        assert_eq!(missing, ["untagged"]);
        let flat = "## Sessions\n\n- a bullet\n## The command\nConcerns: pi 1.6\n";
        let missing: Vec<String> = untagged(flat).into_iter().map(|e| e.anchor).collect();
        assert_eq!(missing, ["sessions"]);
    }

    #[test]
    fn every_entry_of_the_differences_page_says_which_pi_it_concerns() {
        let page = include_str!("../../docs/differences-from-pi.md");
        let tags = concerns_by_anchor(page);
        assert!(tags.is_ok(), "Concerns: lines that do not parse: {tags:?}");
        let missing: Vec<String> = untagged(page)
            .into_iter()
            .map(|e| format!("line {}: {}", e.line, e.heading))
            .collect();
        assert!(
            missing.is_empty(),
            "entries of docs/differences-from-pi.md without a `Concerns:` line (pi 0.73.1, \
             pi 1.6 or all):\n{}",
            missing.join("\n")
        );
    }
}
