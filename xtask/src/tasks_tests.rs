//! Tests of `cargo xtask tasks`: the options, and every task's check against its project
//! untouched (must fail) and after its reference solution (must pass).

use super::*;

fn argv(text: &str) -> Vec<String> {
    text.split_whitespace().map(String::from).collect()
}

#[test]
fn parses_the_options() {
    assert_eq!(Options::parse(argv("")), Ok(Options::default()));
    let quick = Options::parse(argv("--quick --repeat 5 --pi")).unwrap();
    assert_eq!(
        (quick.quick, quick.repeat, quick.pi),
        (true, 1, true),
        "--quick is one run"
    );
    assert_eq!(Options::parse(argv("--quick")), Ok(Options::quick()));
    let only = Options::parse(argv("--only 01 --only=05 --timeout 60")).unwrap();
    assert_eq!(only.only, ["01", "05"]);
    assert_eq!(only.timeout, Duration::from_secs(60));
    assert!(Options::parse(argv("--repeat 0")).is_err());
    assert!(Options::parse(argv("--frob")).is_err());
}

#[test]
fn median_of_odd_and_even_counts() {
    assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    assert_eq!(median(&mut []), 0.0);
}

#[test]
fn each_check_fails_untouched_and_passes_after_the_solution() {
    let tasks = load(&crate::workspace_root()).unwrap();
    assert!(tasks.len() >= 12, "{} tasks", tasks.len());
    for name in QUICK {
        assert!(tasks.iter().any(|t| t.name == name), "quick task {name}");
    }
    for task in &tasks {
        assert!(!task.prompt.is_empty(), "{}: empty prompt", task.name);
        let dir = workdir(task).unwrap();
        let answer = dir.with_extension("answer");
        std::fs::write(&answer, "I don't know.").unwrap();
        assert!(
            !run_script(task, "check.sh", &dir, &answer),
            "{}: the check passes before any work",
            task.name
        );
        assert!(
            run_script(task, "solution.sh", &dir, &answer),
            "{}",
            task.name
        );
        assert!(
            run_script(task, "check.sh", &dir, &answer),
            "{}: the check fails after the reference solution",
            task.name
        );
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }
}

#[test]
fn pi_gets_the_server_as_a_custom_provider() {
    let mut model = oxpi_ai::Model::openai_compatible("http://127.0.0.1:4321/v1", "qwen");
    model.context_window = 8192;
    model.max_tokens = 1024;
    assert_eq!(
        pi::models_json(&model),
        serde_json::json!({"providers": {"local": {
            "baseUrl": "http://127.0.0.1:4321/v1",
            "api": "openai-completions",
            "apiKey": "none",
            "models": [{"id": "qwen", "name": "qwen", "contextWindow": 8192, "maxTokens": 1024}]
        }}})
    );
}

/// `tasks/lib/answer.sh`, which the value-asking tasks' checks use: a short reply holding the
/// value passes; a pasted file or a list of guesses does not.
#[test]
fn a_value_answer_passes_only_when_short_and_unambiguous() {
    let lib = crate::workspace_root().join("tasks/lib/answer.sh");
    let dir = tempfile::tempdir().unwrap();
    let answer = dir.path().join("answer");
    let check = |value: &str, reply: &str| {
        std::fs::write(&answer, reply).unwrap();
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(". '{}'; answer_is \"$1\"", lib.display()))
            .arg("check")
            .arg(value)
            .env("ANSWER", &answer)
            .status()
            .unwrap()
            .success()
    };
    let pasted = std::fs::read_to_string(
        crate::workspace_root().join("tasks/01-cargo-version/project/Cargo.toml"),
    )
    .unwrap();
    for (value, reply, passes) in [
        ("0.7.3", "0.7.3", true),
        ("0.7.3", "v0.7.3\n", true),
        (
            "0.7.3",
            "The version declared in Cargo.toml is 0.7.3.",
            true,
        ),
        ("0.7.3", pasted.as_str(), false),
        ("0.7.3", "0.7.3 or 0.8.0", false),
        ("0.7.3", "0.7", false),
        ("7", "7", true),
        ("7", "The project runs 7 tests.", true),
        ("7", "Ran 7 tests in 0.001s", true),
        ("7", "Ran 7 tests in 0.001 s", false),
        ("7", "17", false),
        ("7", "seven", false),
        ("7", "7 tests in test_v2.py", true),
        ("4181", "python3 compute.py prints 4181", true),
        ("4181", "python3 compute.py prints 4180", false),
        ("0.7.3", "v0.7.2", false),
        ("tally-web", "`tally-web`", true),
        ("tally-web", "tally-webapp", false),
        ("headers.py", "net/headers.py", true),
        ("headers.py", "", false),
    ] {
        assert_eq!(check(value, reply), passes, "{value}: {reply:?}");
    }
}
