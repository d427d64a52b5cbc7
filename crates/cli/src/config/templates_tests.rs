//! Tests of `templates.rs`: pi's argument syntax, quoting, front matter and places.

use super::*;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn arguments_split_with_pi_s_quoting() {
    assert_eq!(parse_args(r#"a "b c"  'd'"#), args(&["a", "b c", "d"]));
    assert_eq!(parse_args("doesn't stop"), args(&["doesn't", "stop"]));
    assert_eq!(
        parse_args(r#""the \"fast\" path" x\y"#),
        args(&[r#"the "fast" path"#, r"x\y"])
    );
    assert_eq!(parse_args(r#""" x"#), args(&["", "x"]));
    assert_eq!(parse_args(r#""open quote"#), args(&["\"open", "quote"]));
    assert_eq!(parse_args("   "), Vec::<String>::new());
}

#[test]
fn placeholders_are_pi_s() {
    let a = args(&["one", "two", "three"]);
    let s = |t: &str| substitute(t, &a);
    assert_eq!(s("$1-$2-$4."), "one-two-.");
    assert_eq!(s("[$@] [$ARGUMENTS]"), "[one two three] [one two three]");
    assert_eq!(s("${2:-x} ${5:-five} ${@:-all}"), "two five one two three");
    assert_eq!(
        s("${@:2} | ${@:2:1} | ${@:0:1} | ${@:9}"),
        "two three | two | one | "
    );
    assert_eq!(s("cost $ and ${x} and $$1"), "cost $ and ${x} and $one");
    assert_eq!(substitute("${1:-none} ${@:-none}", &[]), "none none");
    assert_eq!(
        substitute("$1", &args(&["$2"])),
        "$2",
        "arguments are not expanded again"
    );
}

#[test]
fn front_matter_places_and_expansion() {
    let agent = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(agent.path().join("prompts/nested")).unwrap();
    std::fs::write(
        agent.path().join("prompts/review.md"),
        "---\ndescription: Review staged changes\nargument-hint: \"[focus]\"\n---\n\nFocus on ${1:-correctness}.\n",
    )
    .unwrap();
    std::fs::write(agent.path().join("prompts/nested/deep.md"), "not loaded").unwrap();
    std::fs::write(agent.path().join("prompts/notes.txt"), "not a template").unwrap();
    std::fs::create_dir_all(cwd.path().join(".pi/prompts")).unwrap();
    let long = "x".repeat(70);
    std::fs::write(
        cwd.path().join(".pi/prompts/fix.md"),
        format!("\n{long}\nmore"),
    )
    .unwrap();
    let (found, warnings) = load(Some(agent.path()), cwd.path(), true, true, &[]);
    assert_eq!(warnings, Vec::<String>::new());
    let names: Vec<(&str, &str, &str)> = found
        .iter()
        .map(|t| (t.name.as_str(), t.description.as_str(), t.scope))
        .collect();
    let short = format!("{}...", "x".repeat(60));
    assert_eq!(
        names,
        [
            ("review", "Review staged changes", "user"),
            ("fix", short.as_str(), "project")
        ]
    );
    assert_eq!(found[0].argument_hint.as_deref(), Some("[focus]"));
    assert_eq!(expand("/review", &found), "Focus on correctness.");
    assert_eq!(expand("/review \"API use\" x", &found), "Focus on API use.");
    assert_eq!(expand("/unknown a", &found), "/unknown a");
    assert_eq!(expand("review", &found), "review");
    // Untrusted: no project templates; -np: none but the explicit ones.
    let (found, _) = load(Some(agent.path()), cwd.path(), false, true, &[]);
    assert_eq!(found.len(), 1);
    let explicit = [cwd.path().join(".pi/prompts/fix.md")];
    let (found, _) = load(Some(agent.path()), cwd.path(), true, false, &explicit);
    assert_eq!((found.len(), found[0].scope), (1, "temporary"));
}
