//! The settings list without a terminal: keys move, search and cycle values; each change
//! names pi's key and value for the file.

use super::*;

fn values() -> Values {
    Values {
        auto_compact: true,
        steering: QueueMode::OneAtATime,
        follow_up: QueueMode::All,
        quiet_startup: "header".into(),
        project_trust: "never".into(),
        skill_commands: true,
    }
}

fn rows(list: &SettingsList) -> Vec<(&'static str, String)> {
    list.visible()
        .iter()
        .map(|&i| (list.items[i].label, list.items[i].current.clone()))
        .collect()
}

#[test]
fn the_rows_are_pi_s_in_pi_s_order_with_the_values_now() {
    let list = SettingsList::new(&values());
    assert_eq!(
        rows(&list),
        [
            ("Auto-compact", "true".to_string()),
            ("Steering mode", "one-at-a-time".into()),
            ("Follow-up mode", "all".into()),
            ("Quiet startup", "header".into()),
            ("Default project trust", "Never trust".into()),
            ("Skill commands", "true".into()),
        ]
    );
}

#[test]
fn enter_and_space_cycle_the_selected_value_and_arrows_wrap() {
    let mut list = SettingsList::new(&values());
    assert_eq!(
        list.on_key(&Key::Enter),
        Outcome::Changed("autocompact", "false".into())
    );
    assert_eq!(
        list.on_key(&Key::Char(' ')),
        Outcome::Changed("autocompact", "true".into())
    );
    // Up from the first row is the last one.
    assert_eq!(list.on_key(&Key::Up), Outcome::Stay);
    assert_eq!(list.selected_item().unwrap().id, "skill-commands");
    assert_eq!(list.on_key(&Key::Down), Outcome::Stay);
    assert_eq!(list.selected_item().unwrap().id, "autocompact");
    list.on_key(&Key::Down);
    list.on_key(&Key::Down);
    list.on_key(&Key::Down);
    // Three values: header → false → true → header.
    let changes: Vec<Outcome> = (0..3).map(|_| list.on_key(&Key::Enter)).collect();
    assert_eq!(
        changes,
        [
            Outcome::Changed("quiet-startup", "false".into()),
            Outcome::Changed("quiet-startup", "true".into()),
            Outcome::Changed("quiet-startup", "header".into()),
        ]
    );
    assert_eq!(list.on_key(&Key::Esc), Outcome::Close);
}

#[test]
fn typing_searches_the_labels_and_space_then_is_a_letter() {
    let mut list = SettingsList::new(&values());
    for c in "mode".chars() {
        assert_eq!(list.on_key(&Key::Char(c)), Outcome::Stay);
    }
    assert_eq!(
        rows(&list),
        [
            ("Steering mode", "one-at-a-time".to_string()),
            ("Follow-up mode", "all".into()),
        ]
    );
    list.on_key(&Key::Down);
    assert_eq!(
        list.on_key(&Key::Enter),
        Outcome::Changed("follow-up-mode", "one-at-a-time".into())
    );
    // With a search typed, a space searches on.
    assert_eq!(list.on_key(&Key::Char(' ')), Outcome::Stay);
    assert_eq!(list.query, "mode ");
    for c in "zz".chars() {
        list.on_key(&Key::Char(c));
    }
    assert!(rows(&list).is_empty());
    assert_eq!(list.on_key(&Key::Enter), Outcome::Stay);
    for _ in 0..3 {
        list.on_key(&Key::Backspace);
    }
    assert_eq!(list.query, "mode");
    assert_eq!(list.selected_item().unwrap().id, "steering-mode");
}

#[test]
fn each_value_is_saved_under_pi_s_key() {
    assert_eq!(
        file_value("autocompact", "false"),
        Some((&["compaction", "enabled"][..], json!(false)))
    );
    assert_eq!(
        file_value("steering-mode", "all"),
        Some((&["steeringMode"][..], json!("all")))
    );
    assert_eq!(
        file_value("follow-up-mode", "one-at-a-time"),
        Some((&["followUpMode"][..], json!("one-at-a-time")))
    );
    assert_eq!(
        file_value("quiet-startup", "header"),
        Some((&["quietStartup"][..], json!("header")))
    );
    assert_eq!(
        file_value("quiet-startup", "true"),
        Some((&["quietStartup"][..], json!(true)))
    );
    assert_eq!(
        file_value("default-project-trust", "Always trust"),
        Some((&["defaultProjectTrust"][..], json!("always")))
    );
    assert_eq!(
        file_value("skill-commands", "false"),
        Some((&["enableSkillCommands"][..], json!(false)))
    );
    assert_eq!(file_value("steering-mode", "sometimes"), None);
    assert_eq!(file_value("theme", "dark"), None);
}
