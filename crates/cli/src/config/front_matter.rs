//! Front matter as pi reads it (`utils/frontmatter.js`): a file starting with `---` up to the
//! next line starting with `---` is YAML, parsed as the `yaml` package parses it by default
//! (YAML 1.2, core schema: `true`/`false` are booleans, `yes` and `"true"` are strings,
//! duplicate keys and several documents are errors), with `yaml-rust2`; the rest, trimmed, is
//! the body. Quoted, folded (`>`), literal (`|`) and multi-line plain strings, lists and maps
//! all parse; a field counts only with the type pi checks for (`typeof x === "string"`,
//! `=== true`), and front matter that is not a map has no fields.

use yaml_rust2::{Yaml, YamlLoader};

/// The fields of one file's front matter.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FrontMatter {
    map: Option<yaml_rust2::yaml::Hash>,
}

impl FrontMatter {
    fn get(&self, key: &str) -> Option<&Yaml> {
        self.map.as_ref()?.get(&Yaml::String(key.to_string()))
    }

    /// The field `key` when it is a string.
    pub(crate) fn string(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Yaml::String(s) => Some(s.clone()),
            _ => None,
        }
    }

    /// Whether the field `key` is the boolean `true`.
    pub(crate) fn is_true(&self, key: &str) -> bool {
        matches!(self.get(key), Some(Yaml::Boolean(true)))
    }
}

/// Deepest block nesting front matter may have: `yaml-rust2` limits flow nesting (`[`, `{`)
/// itself but follows block nesting down the stack, so deeper text is refused before parsing.
const MAX_BLOCK_DEPTH: usize = 200;

/// An upper bound of the block nesting of `yaml`: each level needs one more column of
/// indentation or one more compact `- ` / `? ` on its line.
fn block_depth_bound(yaml: &str) -> usize {
    yaml.lines()
        .map(|line| {
            let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
            let mut rest = &line[indent..];
            let mut compact = 0;
            while let Some(next) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("? ")) {
                compact += 1;
                rest = next.trim_start_matches(' ');
            }
            indent + compact
        })
        .max()
        .unwrap_or(0)
}

/// Why front matter could not be parsed (pi skips the file with a warning).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid YAML front matter: {0}")]
pub(crate) struct FrontMatterError(String);

/// The front matter of `text` and its body (the whole text, newlines normalized, when there is
/// no front matter).
pub(crate) fn parse(text: &str) -> Result<(FrontMatter, String), FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
    if !normalized.starts_with("---") {
        return Ok((FrontMatter::default(), normalized));
    }
    let Some(end) = normalized[3..].find("\n---").map(|i| i + 3) else {
        return Ok((FrontMatter::default(), normalized));
    };
    let yaml = normalized.get(4..end).unwrap_or("");
    let body = normalized[end + 4..].trim().to_string();
    if yaml.is_empty() {
        return Ok((FrontMatter::default(), body));
    }
    if block_depth_bound(yaml) > MAX_BLOCK_DEPTH {
        return Err(FrontMatterError(format!(
            "nested deeper than {MAX_BLOCK_DEPTH} levels"
        )));
    }
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| FrontMatterError(e.to_string()))?;
    if docs.len() > 1 {
        return Err(FrontMatterError(
            "the front matter holds several YAML documents".into(),
        ));
    }
    let map = match docs.into_iter().next() {
        Some(Yaml::Hash(map)) => Some(map),
        _ => None,
    };
    Ok((FrontMatter { map }, body))
}

/// The expected values are what pi 1.6's `yaml` (2.9.0) `parse` gives for the same text.
#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> FrontMatter {
        parse(text).unwrap().0
    }

    #[test]
    fn pi_s_yaml_values() {
        let text =
            "---\r\ndescription: >\r\n  Folded over\r\n  two lines\r\nname: \"quoted: yes\"\r\n\
                    disable-model-invocation: true\r\nlist:\r\n  - a\r\n---\r\nBody\r\n";
        let (front, body) = parse(text).unwrap();
        assert_eq!(
            front.string("description").unwrap(),
            "Folded over two lines\n"
        );
        assert_eq!(front.string("name").unwrap(), "quoted: yes");
        assert!(front.is_true("disable-model-invocation"));
        assert_eq!(front.string("list"), None, "a list is no string");
        assert_eq!(body, "Body");
        let plain = fields("---\ndescription: a plain\n  string over lines\nflag: yes\n---\n");
        assert_eq!(
            plain.string("description").unwrap(),
            "a plain string over lines"
        );
        assert!(!plain.is_true("flag"), "YAML 1.2: yes is a string");
        assert_eq!(plain.string("flag").unwrap(), "yes");
        let literal = fields("---\ndescription: |\n  one\n  two\nn: 42\nq: 'true'\n---\n");
        assert_eq!(literal.string("description").unwrap(), "one\ntwo\n");
        assert_eq!(literal.string("n"), None, "a number is no string");
        assert!(!literal.is_true("q"), "a quoted true is a string");
    }

    #[test]
    fn no_front_matter_and_errors() {
        assert_eq!(
            parse("\u{feff}# Title\r\ntext").unwrap(),
            (FrontMatter::default(), "# Title\ntext".to_string())
        );
        assert_eq!(
            parse("---\nno end").unwrap().1,
            "---\nno end",
            "unclosed: all body"
        );
        assert_eq!(parse("---\n---\n body ").unwrap().1, "body");
        assert_eq!(fields("---\n- a\n- b\n---\n"), FrontMatter::default());
        assert!(parse("---\na: 1\na: 2\n---\n").is_err(), "duplicate keys");
        assert!(parse("---\ndescription: [unclosed\n---\n").is_err());
        assert!(parse("---\na: b: c\n---\n").is_err());
        // Deep nesting is refused, never followed down the stack.
        let deep = format!("---\na:\n{}x\n---\n", "- ".repeat(100_000));
        assert!(parse(&deep)
            .unwrap_err()
            .to_string()
            .contains("nested deeper"));
        let flow = format!(
            "---\na: {}{}\n---\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(parse(&flow).is_err());
        let indented: String = (0..300).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
        assert!(parse(&format!("---\n{indented}---\n")).is_err());
    }
}
