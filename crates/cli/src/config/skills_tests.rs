//! Tests of `skills.rs`: pi's places and order, the listing, `/skill:name`.

use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn skills_are_found_in_pi_s_places_and_order_first_name_wins() {
    let root = tempfile::tempdir().unwrap();
    let (agent, home, cwd) = (
        root.path().join("agent"),
        root.path().join("home"),
        root.path().join("repo/sub"),
    );
    std::fs::create_dir_all(root.path().join("repo/.git")).unwrap();
    write(
        &cwd.join(".pi/skills/lint/SKILL.md"),
        "---\ndescription: Project lint\n---\nRun it.",
    );
    write(
        &root.path().join("repo/.agents/skills/deploy/SKILL.md"),
        "---\ndescription: Deploy\n---\n",
    );
    write(
        &agent.join("skills/lint/SKILL.md"),
        "---\ndescription: User lint\n---\n",
    );
    write(
        &agent.join("skills/notes.md"),
        "---\ndescription: A root file skill\nname: notes\n---\n",
    );
    write(
        &agent.join("skills/plain.md"),
        "no front matter: not a skill",
    );
    write(
        &agent.join("skills/hidden/SKILL.md"),
        "---\ndescription: \"Only by command\"\ndisable-model-invocation: true\n---\nSecret steps.",
    );
    write(
        &agent.join("skills/broken/SKILL.md"),
        "---\nname: broken\n---\n",
    );
    write(
        &home.join(".agents/skills/pdf/SKILL.md"),
        "---\ndescription: PDFs <fast> & safe\n---\n",
    );
    let places = |trusted| SkillPlaces {
        agent_dir: Some(&agent),
        home: Some(&home),
        cwd: &cwd,
        trusted,
        include_defaults: true,
        explicit: &[],
    };
    let (skills, warnings) = load(&places(true));
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["lint", "deploy", "hidden", "notes", "pdf"]);
    assert_eq!(skills[0].description, "Project lint");
    assert!(skills[2].disable_model_invocation);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].ends_with("broken/SKILL.md: a skill needs a description; skipped"));
    assert!(warnings[1].ends_with("lint/SKILL.md: skill name \"lint\" is taken; skipped"));
    let (skills, _) = load(&places(false));
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["hidden", "lint", "notes", "pdf"],
        "untrusted: no project skills"
    );

    let tools = vec!["read".to_string()];
    let section = prompt_section(&skills, &tools).unwrap();
    let pdf = home.join(".agents/skills/pdf/SKILL.md");
    assert!(section.starts_with(
        "The following skills provide specialized instructions for specific tasks.\nUse the read \
         tool to load a skill's file when the task matches its description.\n"
    ));
    assert!(section.ends_with(&format!(
        "  <skill>\n    <name>pdf</name>\n    <description>PDFs &lt;fast&gt; &amp; safe</description>\n    \
         <location>{}</location>\n  </skill>\n</available_skills>",
        pdf.display()
    )));
    assert!(!section.contains("hidden"));
    assert_eq!(prompt_section(&skills, &["ls".to_string()]), None);

    let hidden = &skills[0];
    assert_eq!(
        expand("/skill:hidden now please", &skills),
        format!(
            "<skill name=\"hidden\" location=\"{}\">\nReferences are relative to {}.\n\nSecret \
             steps.\n</skill>\n\nnow please",
            hidden.file_path.display(),
            hidden.base_dir.display()
        )
    );
    assert_eq!(expand("/skill:nope x", &skills), "/skill:nope x");
}
