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
