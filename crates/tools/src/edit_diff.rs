//! The diffs `edit` reports: pi's numbered display diff (`-12 old`, `+12 new`, ` 13 same`, four
//! lines of context, `...` for what is skipped), the first changed line, and a unified patch.
//! Line diffs come from the `similar` crate.

use similar::{ChangeTag, TextDiff};

/// Lines of context around each change.
const CONTEXT: usize = 4;

/// The diffs of one edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diffs {
    /// pi's display diff.
    pub(crate) display: String,
    /// The first changed line of the new text (1-based).
    pub(crate) first_changed_line: usize,
    /// A unified diff with `--- path` / `+++ path` headers.
    pub(crate) patch: String,
}

/// One line of the line diff, with its numbers in the old and new text (1-based).
struct Line<'a> {
    tag: ChangeTag,
    old: usize,
    new: usize,
    text: &'a str,
}

/// The diffs from `old` to `new` (both with `\n` line breaks).
pub(crate) fn diffs(path: &str, old: &str, new: &str) -> Diffs {
    let diff = TextDiff::from_lines(old, new);
    let mut lines = Vec::new();
    let (mut old_no, mut new_no) = (0usize, 0usize);
    let mut first_changed_line = None;
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Equal => {
                old_no += 1;
                new_no += 1;
            }
            ChangeTag::Delete => {
                old_no += 1;
                first_changed_line.get_or_insert(new_no + 1);
            }
            ChangeTag::Insert => {
                new_no += 1;
                first_changed_line.get_or_insert(new_no);
            }
        }
        let text = change.value();
        lines.push(Line {
            tag: change.tag(),
            old: old_no,
            new: new_no,
            text: text.strip_suffix('\n').unwrap_or(text),
        });
    }
    // As pi counts lines (`split("\n").length`), for the width of the numbers.
    let count = |t: &str| t.split('\n').count();
    let width = count(old).max(count(new)).to_string().len();
    Diffs {
        display: display(&lines, width),
        first_changed_line: first_changed_line.unwrap_or(1),
        patch: diff
            .unified_diff()
            .context_radius(CONTEXT)
            .header(path, path)
            .to_string(),
    }
}

fn display(lines: &[Line<'_>], width: usize) -> String {
    let marker = format!(" {} ...", " ".repeat(width));
    let mut out: Vec<String> = Vec::new();
    let equal = |line: &Line<'_>| format!(" {:>width$} {}", line.old, line.text);
    let mut i = 0;
    while i < lines.len() {
        if lines[i].tag != ChangeTag::Equal {
            let line = &lines[i];
            out.push(match line.tag {
                ChangeTag::Delete => format!("-{:>width$} {}", line.old, line.text),
                _ => format!("+{:>width$} {}", line.new, line.text),
            });
            i += 1;
            continue;
        }
        let run_end = lines[i..]
            .iter()
            .position(|l| l.tag != ChangeTag::Equal)
            .map_or(lines.len(), |p| i + p);
        let run = &lines[i..run_end];
        let (leading, trailing) = (i == 0, run_end == lines.len());
        match (leading, trailing) {
            (true, true) => {} // no change at all
            (true, false) => {
                if run.len() > CONTEXT {
                    out.push(marker.clone());
                }
                out.extend(run[run.len().saturating_sub(CONTEXT)..].iter().map(equal));
            }
            (false, true) => {
                out.extend(run[..run.len().min(CONTEXT)].iter().map(equal));
                if run.len() > CONTEXT {
                    out.push(marker.clone());
                }
            }
            (false, false) if run.len() <= 2 * CONTEXT => out.extend(run.iter().map(equal)),
            (false, false) => {
                out.extend(run[..CONTEXT].iter().map(equal));
                out.push(marker.clone());
                out.extend(run[run.len() - CONTEXT..].iter().map(equal));
            }
        }
        i = run_end;
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_diff_as_pi_prints_it() {
        let old: String = (1..=13).map(|n| format!("line{n}\n")).collect();
        let new = old
            .replace("line2\n", "LINE2\n")
            .replace("line12\n", "LINE12\nextra\n");
        let diffs = diffs("f.txt", &old, &new);
        // Nine unchanged lines between the changes: four, `...`, four.
        assert_eq!(
            diffs.display,
            [
                "  1 line1",
                "- 2 line2",
                "+ 2 LINE2",
                "  3 line3",
                "  4 line4",
                "  5 line5",
                "  6 line6",
                "    ...",
                "  8 line8",
                "  9 line9",
                " 10 line10",
                " 11 line11",
                "-12 line12",
                "+12 LINE12",
                "+13 extra",
                " 13 line13",
            ]
            .join("\n")
        );
        assert_eq!(diffs.first_changed_line, 2);
        assert!(
            diffs.patch.starts_with("--- f.txt\n+++ f.txt\n@@ -1,"),
            "{}",
            diffs.patch
        );
        // Eight are shown whole.
        let new = old
            .replace("line11\n", "LINE11\n")
            .replace("line2\n", "LINE2\n");
        let display = super::diffs("f.txt", &old, &new).display;
        assert!(!display.contains("..."), "{display}");
        assert!(display.contains("  6 line6\n  7 line7\n"), "{display}");
    }

    #[test]
    fn long_runs_at_the_ends_are_cut_to_the_context() {
        let old: String = (1..=20).map(|n| format!("{n}\n")).collect();
        let new = old.replace("10\n", "ten\n");
        let diffs = diffs("f", &old, &new);
        assert_eq!(
            diffs.display,
            [
                "    ...", "  6 6", "  7 7", "  8 8", "  9 9", "-10 10", "+10 ten", " 11 11",
                " 12 12", " 13 13", " 14 14", "    ...",
            ]
            .join("\n")
        );
        assert_eq!(diffs.first_changed_line, 10);
        // A pure deletion: the first changed line is where the removed text was.
        let diffs = super::diffs("f", "a\nb\nc\n", "a\nc\n");
        assert_eq!(diffs.first_changed_line, 2);
    }
}
