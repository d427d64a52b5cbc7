//! Tests of `settings.rs`: pi's merge, the typed reads and their warnings.

use super::*;
use serde_json::json;

fn layer(path: &str, value: Value) -> Layer {
    Layer {
        path: PathBuf::from(path),
        values: value.as_object().cloned().unwrap(),
    }
}

fn settings(global: Value, project: Value) -> Settings {
    Settings::from_layers(
        layer("/a/settings.json", global),
        Some(layer("/p/.pi/settings.json", project)),
        true,
        Vec::new(),
    )
}

#[test]
fn project_wins_and_objects_merge_deeply() {
    let mut s = settings(
        json!({"defaultProvider": "openai", "defaultModel": "gpt-4o",
               "compaction": {"enabled": false, "reserveTokens": 1000},
               "retry": {"maxRetries": 5}}),
        json!({"defaultModel": "gpt-4o-mini", "compaction": {"keepRecentTokens": 7},
               "unknownKey": {"x": 1}}),
    );
    assert_eq!(s.default_provider().as_deref(), Some("openai"));
    assert_eq!(s.default_model().as_deref(), Some("gpt-4o-mini"));
    assert_eq!(
        s.compaction(),
        Compaction {
            enabled: false,
            reserve_tokens: 1000,
            keep_recent_tokens: 7,
            model_overrides: BTreeMap::new()
        }
    );
    assert_eq!(
        s.retry(),
        Retry {
            enabled: true,
            max_retries: 5,
            base_delay_ms: 2000,
            max_agent_delay_ms: 60_000
        }
    );
    assert_eq!(s.warnings, Vec::<String>::new(), "unknown keys are ignored");
}

#[test]
fn default_tools_merge_and_resolve_as_pi() {
    let tools = |g: Value, p: Value| settings(g, p).default_tools();
    assert_eq!(tools(json!({}), json!({})), None);
    assert_eq!(
        tools(
            json!({"defaultTools": ["+grep"]}),
            json!({"defaultTools": ["-bash"]})
        ),
        Some(vec![
            "read".into(),
            "edit".into(),
            "write".into(),
            "grep".into()
        ])
    );
    assert_eq!(
        tools(
            json!({"defaultTools": ["+grep"]}),
            json!({"defaultTools": ["ls", "-ls", "+read"]})
        ),
        Some(vec!["read".into()]),
        "a plain name replaces the inherited list"
    );
    assert_eq!(tools(json!({"defaultTools": []}), json!({})), Some(vec![]));
}

#[test]
fn wrong_types_warn_with_file_and_field_and_use_defaults() {
    let mut s = settings(
        json!({"compaction": {"enabled": "yes"}, "defaultThinkingLevel": "huge"}),
        json!({"retry": {"maxRetries": -1}, "oxpi": {"sandbox": "off", "promptProfile": "tiny"}}),
    );
    assert!(s.compaction().enabled);
    assert_eq!(s.retry().max_retries, 3);
    assert_eq!(s.default_thinking_level(), None);
    assert_eq!(s.sandbox(), None);
    assert_eq!(s.prompt_profile(), None);
    assert_eq!(
        s.warnings,
        [
            "Invalid settings file /a/settings.json: compaction.enabled must be a boolean, \
             found a string (\"yes\"); the default is used",
            "Invalid settings file /p/.pi/settings.json: retry.maxRetries must be a non-negative \
             integer, found a number (-1); the default is used",
            "Invalid settings file /a/settings.json: defaultThinkingLevel must be one of off, \
             minimal, low, medium, high, xhigh, max, found a string (\"huge\"); the default is used",
            "Invalid settings file /p/.pi/settings.json: oxpi.sandbox must be one of \
             \"workspace\", \"best-effort\", \"none\", found a string (\"off\"); the default is used",
            "Invalid settings file /p/.pi/settings.json: oxpi.promptProfile must be one of \
             \"small\", \"default\", found a string (\"tiny\"); the default is used",
        ]
    );
}

#[test]
fn model_overrides_and_global_only_settings() {
    let mut s = settings(
        json!({"compaction": {"reserveTokens": 100,
               "modelOverrides": {"openai/gpt-4o": {"keepRecentTokens": 5}}},
               "defaultProjectTrust": "always"}),
        json!({}),
    );
    let c = s.compaction();
    assert_eq!(c.tokens_for("openai", "gpt-4o"), (100, 5));
    assert_eq!(c.tokens_for("openai", "gpt-4.1"), (100, 20000));
}

#[test]
fn invalid_json_is_a_warning_and_the_other_file_still_counts() {
    let agent = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        agent.path().join("settings.json"),
        "{\"defaultModel\": \"m\",}",
    )
    .unwrap();
    std::fs::create_dir_all(project.path().join(".pi")).unwrap();
    std::fs::write(
        project.path().join(".pi/settings.json"),
        "{\"defaultProvider\": \"openai\"}",
    )
    .unwrap();
    let mut s = Settings::load(Some(agent.path()), project.path(), Some(true));
    assert_eq!(s.default_model(), None);
    assert_eq!(s.default_provider().as_deref(), Some("openai"));
    assert_eq!(
        s.warnings,
        [format!(
            "Invalid settings file {}:1:22: invalid JSON: trailing comma; its settings are ignored",
            agent.path().join("settings.json").display()
        )]
    );
    // Untrusted: the project's file is not read.
    let mut s = Settings::load(Some(agent.path()), project.path(), None);
    assert!(!s.project_trusted);
    assert_eq!(s.default_provider(), None);
}

#[test]
fn queue_modes_are_read_as_pi_names_them() {
    use oxpi_agent_core::QueueMode;
    let mut s = settings(
        json!({"steeringMode": "all", "followUpMode": "one-at-a-time"}),
        json!({"followUpMode": "some"}),
    );
    assert_eq!(s.queue_mode("steeringMode"), Some(QueueMode::All));
    assert_eq!(s.queue_mode("followUpMode"), None);
    assert_eq!(
        s.warnings,
        [
            "Invalid settings file /p/.pi/settings.json: followUpMode must be \"all\" or \
          \"one-at-a-time\", found a string (\"some\"); the default is used"
        ]
    );
}
