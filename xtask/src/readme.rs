//! `cargo xtask readme`: writes the facts of README.md that the code knows — the provider
//! table (every catalogue provider, its model count, wire APIs and key variables), the crate
//! table (each workspace package's `description`), and the counts in the prose (models,
//! providers, wire APIs, recorded streams, tasks, tests) — so they cannot drift. `--check` (and
//! the unit test `the_readme_is_what_the_code_says`) fails when README.md differs.

mod facts;

use std::path::Path;

use regex::{Captures, Regex};

pub(crate) use facts::Facts;

const USAGE: &str = "\
cargo xtask readme [--check]

Rewrites the generated parts of README.md from the code: the provider table (between
`<!-- generated: providers -->` markers; models and APIs from crates/ai/data/models.json, key
variables from crates/ai/data/providers.json), the crate table (`<!-- generated: crates -->`,
each package's Cargo.toml description), and the numbers in the prose (chat models and
providers, wire APIs, recorded streams, tasks, test counts). Also checks that the wire-API table
lists exactly the APIs oxpi-ai registers.

Options:
  --check     Fail if README.md differs from what the code says (writes nothing)
  -h, --help  Show this help";

/// Options of `readme`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    help: bool,
    check: bool,
}

impl Options {
    /// Parses the arguments after `readme`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self::default();
        for arg in argv {
            match arg.as_str() {
                "-h" | "--help" => options.help = true,
                "--check" => options.check = true,
                other => return Err(format!("readme: unexpected argument `{other}`\n\n{USAGE}")),
            }
        }
        Ok(options)
    }
}

/// Runs `readme`; `Ok(true)` when README.md was written (or, with `--check`, is current).
pub(crate) fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    let path = root.join("README.md");
    let current = std::fs::read_to_string(&path)
        .map_err(|e| format!("could not read {}: {e}", path.display()))?;
    let facts = Facts::gather(root)?;
    let generated = render(&current, &facts)?;
    if generated == current {
        println!("{}: current ({})", path.display(), facts.summary());
        return Ok(true);
    }
    if options.check {
        println!(
            "{}: OUT OF DATE ({}): run `cargo xtask readme`\n{}",
            path.display(),
            facts.summary(),
            first_difference(&current, &generated)
        );
        return Ok(false);
    }
    std::fs::write(&path, &generated)
        .map_err(|e| format!("could not write {}: {e}", path.display()))?;
    println!("wrote {}: {}", path.display(), facts.summary());
    Ok(true)
}

/// The first line that differs, for the `--check` message.
pub(crate) fn first_difference(a: &str, b: &str) -> String {
    let (mut left, mut right) = (a.lines(), b.lines());
    let mut line = 1;
    loop {
        match (left.next(), right.next()) {
            (None, None) => return "no difference".into(),
            (l, r) if l == r => line += 1,
            (l, r) => {
                return format!(
                    "line {line}:\n  README:   {}\n  the code: {}",
                    l.unwrap_or("(end)"),
                    r.unwrap_or("(end)")
                )
            }
        }
    }
}

/// README.md as the code says it should be.
pub(crate) fn render(readme: &str, facts: &Facts) -> Result<String, String> {
    check_wire_api_table(readme, facts)?;
    let text = replace_block(readme, "providers", &facts.provider_table())?;
    let mut text = replace_block(&text, "crates", &facts.crate_table())?;
    for rule in rules(facts) {
        let regex = Regex::new(&rule.pattern).map_err(|e| format!("rule {}: {e}", rule.name))?;
        if !regex.is_match(&text) {
            return Err(format!(
                "README.md no longer says what rule `{}` keeps current (/{}/): update \
                 xtask/src/readme.rs with the new wording",
                rule.name, rule.pattern
            ));
        }
        text = regex
            .replace_all(&text, |c: &Captures| (rule.replace)(c))
            .into_owned();
    }
    Ok(text)
}

/// Replaces what lies between `<!-- generated: NAME ... -->` and `<!-- end of generated: NAME -->`.
fn replace_block(text: &str, name: &str, body: &str) -> Result<String, String> {
    let open = format!("<!-- generated: {name} (cargo xtask readme) -->\n");
    let close = format!("<!-- end of generated: {name} -->");
    let start = text
        .find(&open)
        .ok_or_else(|| format!("README.md has no `{}` marker", open.trim()))?
        + open.len();
    let end = text[start..]
        .find(&close)
        .ok_or_else(|| format!("README.md has no `{close}` marker"))?
        + start;
    Ok(format!("{}{body}{}", &text[..start], &text[end..]))
}

/// The wire-API table (after "oxpi-ai speaks") has one row per API oxpi-ai registers.
fn check_wire_api_table(readme: &str, facts: &Facts) -> Result<(), String> {
    let section = readme
        .split_once("oxpi-ai speaks ")
        .ok_or("README.md has no \"oxpi-ai speaks …\" wire-API table")?
        .1;
    let mut listed: Vec<String> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cell = l.trim_start_matches('|').split('|').next()?.trim();
            Some(cell.strip_prefix('`')?.strip_suffix('`')?.to_string())
        })
        .collect();
    listed.sort();
    if listed != facts.wire_apis {
        return Err(format!(
            "README.md's wire-API table lists {listed:?}; oxpi-ai registers {:?}",
            facts.wire_apis
        ));
    }
    Ok(())
}

/// A number in the prose kept equal to the code's.
struct Rule<'a> {
    name: String,
    pattern: String,
    replace: Box<dyn Fn(&Captures) -> String + 'a>,
}

fn rules(facts: &Facts) -> Vec<Rule<'_>> {
    let programs = facts.programs.iter().map(|(example, lines)| Rule {
        name: format!("lines of {example}"),
        pattern: format!(r"(\| [^|\n]*\(`{}`\) \| )\d+ \|", regex::escape(example)),
        replace: Box::new(move |c| format!("{}{lines} |", &c[1])),
    });
    let mut rules = vec![
        Rule {
            name: "chat models of providers".into(),
            pattern: r"[\d,]+(\s+)chat models of(\s+)\d+(\s+)providers".into(),
            replace: Box::new(|c| {
                format!(
                    "{}{}chat models of{}{}{}providers",
                    thousands(facts.models),
                    &c[1],
                    &c[2],
                    facts.providers.len(),
                    &c[3]
                )
            }),
        },
        Rule {
            name: "wire APIs".into(),
            pattern: r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen)(\s+)wire APIs".into(),
            replace: Box::new(|c| format!("{}{}wire APIs", word(facts.wire_apis.len()), &c[1])),
        },
        Rule {
            name: "codex models".into(),
            pattern: r"The \d+(\s+)`openai-codex-responses` models".into(),
            replace: Box::new(|c| {
                format!(
                    "The {}{}`openai-codex-responses` models",
                    facts.codex_models, &c[1]
                )
            }),
        },
        Rule {
            name: "replayed streams".into(),
            pattern: r"replays all \d+(\s+)recorded provider streams".into(),
            replace: Box::new(|c| {
                format!(
                    "replays all {}{}recorded provider streams",
                    facts.streams_in_apis, &c[1]
                )
            }),
        },
        Rule {
            name: "recorded streams".into(),
            pattern: r"\(\d+ streams recorded by the rig project, MIT; \d+ of them in the(\s+)four wire formats".into(),
            replace: Box::new(|c| {
                format!(
                    "({} streams recorded by the rig project, MIT; {} of them in the{}four wire formats",
                    facts.streams, facts.streams_in_apis, &c[1]
                )
            }),
        },
        Rule {
            name: "tasks".into(),
            pattern: r"runs the \d+(\s+)coding tasks of `tasks/`".into(),
            replace: Box::new(|c| {
                format!("runs the {}{}coding tasks of `tasks/`", facts.tasks, &c[1])
            }),
        },
        Rule {
            name: "interactive tests".into(),
            pattern: r"drives it in tmux(\s+)\(\d+ tests".into(),
            replace: Box::new(|c| format!("drives it in tmux{}({} tests", &c[1], facts.tmux_tests)),
        },
        Rule {
            name: "pi_config tests".into(),
            pattern: r"the file's [a-z]+ tests".into(),
            replace: Box::new(|_| format!("the file's {} tests", word(facts.pi_config_tests))),
        },
    ];
    rules.extend(programs);
    rules
}

/// `1698` as `1,698`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A count in words, as the prose writes small numbers.
fn word(n: usize) -> String {
    const WORDS: [&str; 16] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen",
    ];
    WORDS
        .get(n)
        .map_or_else(|| n.to_string(), |w| (*w).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_its_options() {
        assert_eq!(Options::parse(vec![]), Ok(Options::default()));
        assert!(Options::parse(vec!["--check".into()]).unwrap().check);
        assert!(Options::parse(vec!["--x".into()]).is_err());
    }

    #[test]
    fn numbers_are_written_as_the_prose_writes_them() {
        assert_eq!(thousands(1698), "1,698");
        assert_eq!(thousands(42), "42");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(word(10), "ten");
        assert_eq!(word(16), "16");
    }

    /// The README's facts are the code's: this fails when a provider, a model, a wire API, a
    /// crate description or a counted file changes and README.md was not regenerated.
    #[test]
    fn the_readme_is_what_the_code_says() {
        let root = crate::workspace_root();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let facts = Facts::gather(&root).unwrap();
        let generated = render(&readme, &facts).unwrap();
        assert!(
            generated == readme,
            "README.md differs from the code: run `cargo xtask readme`\n{}",
            first_difference(&readme, &generated)
        );
    }

    #[test]
    fn a_stale_number_or_table_is_rewritten() {
        let root = crate::workspace_root();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let facts = Facts::gather(&root).unwrap();
        let stale = readme
            .replacen("chat models of 4", "chat models of 9", 1)
            .replacen("| anthropic |", "| anthropic-old |", 1)
            .replacen(
                "(`ai/examples/streamed_reply.rs`) | 1",
                "(`ai/examples/streamed_reply.rs`) | 9",
                1,
            );
        assert_ne!(stale, readme);
        assert_eq!(
            render(&stale, &facts).unwrap(),
            render(&readme, &facts).unwrap()
        );
        let gone = readme.replace("wire APIs", "wire formats");
        assert!(
            render(&gone, &facts).is_err(),
            "a table or rule that lost its text fails"
        );
    }
}
