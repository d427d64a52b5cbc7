//! How `edit` finds and applies its replacements: exact matching on the text with `\r\n` read as
//! `\n`, then pi's fuzzy matching (trailing whitespace, Unicode quotes, dashes and spaces), each
//! `oldText` unique, no two overlapping, all against the original text; the result keeps every
//! byte outside the replaced ranges and each file's line endings.

/// One replacement found in the text, in the byte offsets of the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Index of the edit in the call.
    pub(crate) edit: usize,
    /// Range in the LF-normalized text.
    pub(crate) norm: (usize, usize),
    /// Range in the original text.
    pub(crate) original: (usize, usize),
    /// The replacement with `\n` line breaks.
    pub(crate) new_lf: String,
}

/// Text with its `\r\n` read as `\n`, and where each byte came from.
#[derive(Debug)]
pub(crate) struct Normalized {
    /// The text with `\r\n` replaced by `\n`.
    pub(crate) text: String,
    /// The offsets in `text` of the `\n`s that were `\r\n` (sorted): a byte's offset in the
    /// original is its offset here plus the number of them before it.
    crlf: Vec<usize>,
}

impl Normalized {
    pub(crate) fn new(original: &str) -> Self {
        let mut text = String::with_capacity(original.len());
        let mut crlf = Vec::new();
        let mut rest = original;
        while let Some(at) = rest.find("\r\n") {
            text.push_str(&rest[..at]);
            crlf.push(text.len());
            text.push('\n');
            rest = &rest[at + 2..];
        }
        text.push_str(rest);
        Self { text, crlf }
    }

    /// The offset in the original text of offset `at` of [`text`](Self::text) (its end
    /// included).
    fn to_original(&self, at: usize) -> usize {
        at + self.crlf.partition_point(|&n| n < at)
    }
}

/// `\r\n` → `\n`.
pub(crate) fn to_lf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// Whitespace as JavaScript's `trimEnd` removes it (pi trims lines with it).
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{feff}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

/// pi's fuzzy folding of one character: typographic quotes, dashes and spaces to ASCII.
fn fold(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' => '\'',
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{a0}' | '\u{2002}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// Text folded for fuzzy matching (each line's trailing whitespace dropped, quotes, dashes and
/// spaces folded), and for each byte the offset in the unfolded text of the character it came
/// from.
#[derive(Debug)]
pub(crate) struct Folded {
    pub(crate) text: String,
    from: Vec<usize>,
}

impl Folded {
    pub(crate) fn new(text: &str) -> Self {
        let mut out = String::with_capacity(text.len());
        let mut from = Vec::with_capacity(text.len());
        let mut offset = 0;
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                out.push('\n');
                from.push(offset - 1);
            }
            let kept = line.trim_end_matches(is_js_space);
            for (at, c) in kept.char_indices() {
                let folded = fold(c);
                out.push(folded);
                from.extend(std::iter::repeat_n(offset + at, folded.len_utf8()));
            }
            offset += line.len() + 1;
        }
        Self { text: out, from }
    }

    /// The range in the unfolded `text` that the folded range `start..end` came from.
    fn unfold(&self, text: &str, start: usize, end: usize) -> (usize, usize) {
        let begin = self.from.get(start).copied().unwrap_or(text.len());
        let finish = match end.checked_sub(1).and_then(|last| self.from.get(last)) {
            Some(&at) => at + text[at..].chars().next().map_or(0, char::len_utf8),
            None => begin,
        };
        (begin, finish)
    }
}

/// Why the edits cannot be applied; `Display` is pi's text (the path as given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MatchError {
    Empty {
        edit: usize,
        single: bool,
    },
    NotFound {
        edit: usize,
        single: bool,
    },
    Several {
        edit: usize,
        single: bool,
        count: usize,
    },
    Overlap {
        first: usize,
        second: usize,
    },
    NoChange {
        single: bool,
    },
}

impl MatchError {
    pub(crate) fn message(&self, path: &str) -> String {
        match *self {
            MatchError::Empty { single: true, .. } => format!("oldText must not be empty in {path}."),
            MatchError::Empty { edit, .. } => {
                format!("edits[{edit}].oldText must not be empty in {path}.")
            }
            MatchError::NotFound { single: true, .. } => format!(
                "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
            ),
            MatchError::NotFound { edit, .. } => format!(
                "Could not find edits[{edit}] in {path}. The oldText must match exactly including all whitespace and newlines."
            ),
            MatchError::Several { single: true, count, .. } => format!(
                "Found {count} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
            ),
            MatchError::Several { edit, count, .. } => format!(
                "Found {count} occurrences of edits[{edit}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
            ),
            MatchError::Overlap { first, second } => format!(
                "edits[{first}] and edits[{second}] overlap in {path}. Merge them into one edit or target disjoint regions."
            ),
            MatchError::NoChange { single: true } => format!(
                "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
            ),
            MatchError::NoChange { single: false } => format!(
                "No changes made to {path}. The replacements produced identical content."
            ),
        }
    }
}

/// Finds every `(oldText, newText)` in `norm`: exactly first, else folded; each must occur once
/// (occurrences that overlap each other count, see [`occurrences`]), and no two may overlap.
/// Sorted by position.
pub(crate) fn find_all(
    norm: &Normalized,
    edits: &[(String, String)],
) -> Result<Vec<Found>, MatchError> {
    let single = edits.len() == 1;
    let mut folded: Option<Folded> = None;
    let mut found = Vec::with_capacity(edits.len());
    for (edit, (old, new)) in edits.iter().enumerate() {
        let old = to_lf(old);
        if old.is_empty() {
            return Err(MatchError::Empty { edit, single });
        }
        let exact: Vec<usize> = occurrences(&norm.text, &old).take(2).collect();
        let range = match exact.as_slice() {
            [at] => (*at, at + old.len()),
            [_, _, ..] => {
                let count = count_occurrences(&norm.text, &old);
                return Err(MatchError::Several {
                    edit,
                    single,
                    count,
                });
            }
            [] => {
                let haystack = folded.get_or_insert_with(|| Folded::new(&norm.text));
                let needle = Folded::new(&old).text;
                if needle.is_empty() {
                    return Err(MatchError::NotFound { edit, single });
                }
                let hits: Vec<usize> = occurrences(&haystack.text, &needle).take(2).collect();
                match hits.as_slice() {
                    [] => return Err(MatchError::NotFound { edit, single }),
                    [at] => haystack.unfold(&norm.text, *at, at + needle.len()),
                    _ => {
                        return Err(MatchError::Several {
                            edit,
                            single,
                            count: count_occurrences(&haystack.text, &needle),
                        })
                    }
                }
            }
        };
        found.push(Found {
            edit,
            norm: range,
            original: (norm.to_original(range.0), norm.to_original(range.1)),
            new_lf: to_lf(new),
        });
    }
    found.sort_by_key(|f| f.norm.0);
    for pair in found.windows(2) {
        if let [a, b] = pair {
            if a.norm.1 > b.norm.0 {
                return Err(MatchError::Overlap {
                    first: a.edit,
                    second: b.edit,
                });
            }
        }
    }
    Ok(found)
}

/// Where `needle` (not empty) occurs in `haystack`, overlapping occurrences included: the
/// search goes on from the character after each match's start, not from its end, so `aa` is
/// twice in `aaa` (`str::match_indices` would count it once). Take only the first few: each
/// step is a search of the rest; [`count_occurrences`] counts them all in linear time.
fn occurrences<'a>(haystack: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let mut from = 0;
    std::iter::from_fn(move || {
        let at = from + haystack.get(from..)?.find(needle)?;
        from = at + step;
        Some(at)
    })
}

/// How many times `needle` (not empty) occurs in `haystack`, overlapping occurrences included,
/// in time linear in both (Knuth–Morris–Pratt over the bytes: in UTF-8 a match of a whole
/// character sequence can only start at a character boundary).
fn count_occurrences(haystack: &str, needle: &str) -> usize {
    let (text, pattern) = (haystack.as_bytes(), needle.as_bytes());
    if pattern.is_empty() || pattern.len() > text.len() {
        return 0;
    }
    // border[i]: length of the longest proper prefix of pattern[..=i] that is also its suffix.
    let mut border = vec![0usize; pattern.len()];
    let mut k = 0;
    for i in 1..pattern.len() {
        while k > 0 && pattern[i] != pattern[k] {
            k = border[k - 1];
        }
        if pattern[i] == pattern[k] {
            k += 1;
        }
        border[i] = k;
    }
    let (mut count, mut k) = (0, 0);
    for &byte in text {
        while k > 0 && byte != pattern[k] {
            k = border[k - 1];
        }
        if byte == pattern[k] {
            k += 1;
        }
        if k == pattern.len() {
            count += 1;
            k = border[k - 1];
        }
    }
    count
}

/// `text` with the `found` ranges (`pick` chooses which range) replaced by `replace(found)`.
pub(crate) fn splice(
    text: &str,
    found: &[Found],
    pick: impl Fn(&Found) -> (usize, usize),
    replace: impl Fn(&Found) -> String,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        let (start, end) = pick(f);
        out.push_str(&text[at..start]);
        out.push_str(&replace(f));
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The line ending a replacement at `start` of `original` takes: that of the line it starts
/// in (or, on a last line without one, the line before), `\n` when there is none.
pub(crate) fn line_ending_at(original: &str, start: usize) -> &'static str {
    let bytes = original.as_bytes();
    let next = bytes[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map(|p| start + p);
    let newline = next.or_else(|| bytes[..start].iter().rposition(|&b| b == b'\n'));
    match newline {
        Some(at) if at > 0 && bytes[at - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edits(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn normalized_maps_back_to_crlf_offsets() {
        let norm = Normalized::new("a\r\nbé\r\nc");
        assert_eq!(norm.text, "a\nbé\nc");
        let map: Vec<usize> = (0..=norm.text.len()).map(|i| norm.to_original(i)).collect();
        assert_eq!(map, [0, 1, 3, 4, 5, 6, 8, 9]);
    }

    #[test]
    fn folding_drops_trailing_space_and_typography() {
        let folded = Folded::new("say “hi” \u{a0}\nx – y\t");
        assert_eq!(folded.text, "say \"hi\"\nx - y");
        let text = "say “hi” \u{a0}\nx – y\t";
        // "hi" in folded space (5..7) is "hi" in the original.
        assert_eq!(folded.unfold(text, 5, 7), (7, 9));
        // The closing quote (1 byte folded) is 3 bytes unfolded.
        assert_eq!(folded.unfold(text, 7, 8), (9, 12));
    }

    #[test]
    fn errors_in_pi_words() {
        let norm = Normalized::new("one\ntwo\ntwo\n");
        let err =
            |pairs: &[(&str, &str)]| find_all(&norm, &edits(pairs)).unwrap_err().message("f.txt");
        assert_eq!(err(&[("", "x")]), "oldText must not be empty in f.txt.");
        assert_eq!(
            err(&[("one", "1"), ("", "x")]),
            "edits[1].oldText must not be empty in f.txt."
        );
        assert_eq!(
            err(&[("three", "3")]),
            "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."
        );
        assert_eq!(
            err(&[("one", "1"), ("three", "3")]),
            "Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines."
        );
        assert_eq!(
            err(&[("two", "2")]),
            "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
        );
        assert_eq!(
            err(&[("one", "1"), ("two", "2")]),
            "Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique."
        );
        assert_eq!(
            err(&[("two\ntwo", "x"), ("one\ntwo", "y")]),
            "edits[1] and edits[0] overlap in f.txt. Merge them into one edit or target disjoint regions."
        );
    }

    #[test]
    fn fuzzy_matches_map_to_the_original_bytes() {
        let norm = Normalized::new("let s = “a”;  \r\nnext\r\n");
        let found = find_all(&norm, &edits(&[("let s = \"a\";\nnext", "X")])).unwrap();
        assert_eq!(found.len(), 1);
        let (start, end) = found[0].original;
        assert_eq!(
            &"let s = “a”;  \r\nnext\r\n"[start..end],
            "let s = “a”;  \r\nnext"
        );
    }

    #[test]
    fn overlapping_occurrences_all_count() {
        let all = |haystack: &str, needle: &str| occurrences(haystack, needle).collect::<Vec<_>>();
        assert_eq!(all("aaa", "aa"), [0, 1]);
        assert_eq!(all("}\n}\n}\n", "}\n}"), [0, 2]);
        assert_eq!(all("ééé", "éé"), [0, 2]);
        assert_eq!(all("abc", "abc"), [0]);
        assert_eq!(all("abc", "x"), Vec::<usize>::new());
        for (haystack, needle) in [
            ("aaa", "aa"),
            ("abababa", "aba"),
            ("aabaabaaab", "aab"),
            ("ééé", "éé"),
            ("abc", "abcd"),
            ("xyz", "q"),
        ] {
            assert_eq!(
                count_occurrences(haystack, needle),
                all(haystack, needle).len(),
                "{needle:?} in {haystack:?}"
            );
        }
        // Linear: a periodic needle in a long run (quadratic by repeated searches).
        let run = "a".repeat(1 << 20);
        assert_eq!(count_occurrences(&run, &run[..1 << 19]), (1 << 19) + 1);
        let norm = Normalized::new("aaa");
        assert_eq!(
            find_all(&norm, &edits(&[("aa", "b")])),
            Err(MatchError::Several {
                edit: 0,
                single: true,
                count: 2
            })
        );
    }

    #[test]
    fn touching_edits_are_not_overlapping() {
        let norm = Normalized::new("abcdef");
        let found = find_all(&norm, &edits(&[("def", "D"), ("abc", "A")])).unwrap();
        let result = splice("abcdef", &found, |f| f.original, |f| f.new_lf.clone());
        assert_eq!(result, "AD");
    }

    #[test]
    fn line_endings_follow_the_line() {
        let text = "a\r\nb\nc";
        assert_eq!(line_ending_at(text, 0), "\r\n");
        assert_eq!(line_ending_at(text, 3), "\n");
        assert_eq!(line_ending_at(text, 5), "\n");
        assert_eq!(line_ending_at("x\r\ny", 3), "\r\n");
        assert_eq!(line_ending_at("xy", 1), "\n");
    }
}
