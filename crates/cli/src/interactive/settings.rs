//! `/settings`: pi's settings list (pi-tui's `SettingsList` in pi's `SettingsSelectorComponent`)
//! for the settings oxpi honours, with pi's ids, labels and values in pi's order. `Up`/`Down`
//! move (wrapping), `Enter` or `Space` sets the item to its next value, typed letters search the
//! labels, `Esc` closes. A change takes effect in the running session where pi's does
//! ([`apply`]) and is saved to the agent directory's `settings.json` as pi saves it.
//!
//! The list is pure state; [`apply`] is where it meets the runtime and the file.

use std::path::Path;
use std::sync::atomic::Ordering;

use oxpi_agent_core::QueueMode;
use serde_json::{json, Value};

use super::keys::Key;
use crate::runtime::Runtime;

/// One row of the list.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SettingItem {
    /// pi's id (`autocompact`, `steering-mode`, …).
    pub id: &'static str,
    /// pi's label.
    pub label: &'static str,
    /// What it does (shown under the list for the selected row).
    pub description: &'static str,
    /// The values `Enter` cycles through, in pi's order.
    pub values: &'static [&'static str],
    /// The value now.
    pub current: String,
}

/// The values the list starts from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Values {
    /// `compaction.enabled`.
    pub auto_compact: bool,
    /// `steeringMode`.
    pub steering: QueueMode,
    /// `followUpMode`.
    pub follow_up: QueueMode,
    /// `quietStartup`: `true`, `header` or `false`.
    pub quiet_startup: String,
    /// `defaultProjectTrust`: `ask`, `always` or `never`.
    pub project_trust: String,
    /// `enableSkillCommands`.
    pub skill_commands: bool,
}

/// What a key did to the list.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// Nothing for the loop to do.
    Stay,
    /// The list is closed.
    Close,
    /// The item `id` now has the value.
    Changed(&'static str, String),
}

const TRUST_LABELS: [(&str, &str); 3] = [
    ("ask", "Ask"),
    ("always", "Always trust"),
    ("never", "Never trust"),
];

fn mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::All => "all",
        QueueMode::OneAtATime => "one-at-a-time",
    }
}

/// The open list: its rows, the selected one among those the search keeps, the search.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SettingsList {
    /// Every row.
    pub items: Vec<SettingItem>,
    /// The selected row among [`SettingsList::visible`].
    pub selected: usize,
    /// The search typed so far.
    pub query: String,
}

impl SettingsList {
    /// The list for `v`.
    pub(crate) fn new(v: &Values) -> Self {
        let bool_name = |b: bool| if b { "true" } else { "false" }.to_string();
        let trust = TRUST_LABELS
            .iter()
            .find(|(k, _)| *k == v.project_trust)
            .map_or("Ask", |(_, label)| label);
        let item = |id, label, description, values, current| SettingItem {
            id,
            label,
            description,
            values,
            current,
        };
        let modes: &'static [&'static str] = &["one-at-a-time", "all"];
        let booleans: &'static [&'static str] = &["true", "false"];
        Self {
            items: vec![
                item(
                    "autocompact",
                    "Auto-compact",
                    "Compact the conversation automatically when the context is nearly full",
                    booleans,
                    bool_name(v.auto_compact),
                ),
                item(
                    "steering-mode",
                    "Steering mode",
                    "Messages sent with Enter while the agent works: one per turn, or all together",
                    modes,
                    mode_name(v.steering).into(),
                ),
                item(
                    "follow-up-mode",
                    "Follow-up mode",
                    "Messages queued with Alt+Enter: one per turn, or all together",
                    modes,
                    mode_name(v.follow_up).into(),
                ),
                item(
                    "quiet-startup",
                    "Quiet startup",
                    "At start: true shows nothing, header only the header, false also the loaded resources (next start)",
                    &["true", "header", "false"],
                    v.quiet_startup.clone(),
                ),
                item(
                    "default-project-trust",
                    "Default project trust",
                    "Whether a project's own settings and resources load when no decision is saved (next start)",
                    &["Ask", "Always trust", "Never trust"],
                    trust.into(),
                ),
                item(
                    "skill-commands",
                    "Skill commands",
                    "Offer each skill as a /skill:name command",
                    booleans,
                    bool_name(v.skill_commands),
                ),
            ],
            selected: 0,
            query: String::new(),
        }
    }

    /// The rows the search keeps (their letters in order in the label, any case), as indices.
    pub(crate) fn visible(&self) -> Vec<usize> {
        let query: Vec<char> = self.query.to_lowercase().chars().collect();
        (0..self.items.len())
            .filter(|&i| {
                let label = self.items[i].label.to_lowercase();
                let mut wanted = query.iter().filter(|c| !c.is_whitespace()).peekable();
                for c in label.chars() {
                    if wanted.peek() == Some(&&c) {
                        wanted.next();
                    }
                }
                wanted.peek().is_none()
            })
            .collect()
    }

    /// The selected row, if the search keeps any.
    pub(crate) fn selected_item(&self) -> Option<&SettingItem> {
        self.visible()
            .get(self.selected)
            .and_then(|&i| self.items.get(i))
    }

    /// Handles a key.
    pub(crate) fn on_key(&mut self, key: &Key) -> Outcome {
        let count = self.visible().len();
        match key {
            Key::Esc | Key::CtrlC => return Outcome::Close,
            Key::Up if count > 0 => {
                self.selected = if self.selected == 0 {
                    count - 1
                } else {
                    self.selected - 1
                };
            }
            Key::Down if count > 0 => self.selected = (self.selected + 1) % count,
            Key::Enter => return self.activate(),
            Key::Char(' ') if self.query.is_empty() => return self.activate(),
            Key::Char(c) => {
                self.query.push(*c);
                self.selected = 0;
            }
            Key::Backspace => {
                self.query.pop();
                self.selected = 0;
            }
            _ => {}
        }
        Outcome::Stay
    }

    /// The selected row to its next value.
    fn activate(&mut self) -> Outcome {
        let Some(&index) = self.visible().get(self.selected) else {
            return Outcome::Stay;
        };
        let item = &mut self.items[index];
        let next = item
            .values
            .iter()
            .position(|v| *v == item.current)
            .map_or(0, |i| (i + 1) % item.values.len());
        item.current = item.values[next].to_string();
        Outcome::Changed(item.id, item.current.clone())
    }
}

/// The setting's key in `settings.json` and its value there for the list's `value`
/// (`None`: not a value of that item).
pub(crate) fn file_value(id: &str, value: &str) -> Option<(&'static [&'static str], Value)> {
    let boolean = || match value {
        "true" => Some(json!(true)),
        "false" => Some(json!(false)),
        _ => None,
    };
    let mode = || matches!(value, "all" | "one-at-a-time").then(|| json!(value));
    Some(match id {
        "autocompact" => (&["compaction", "enabled"], boolean()?),
        "steering-mode" => (&["steeringMode"], mode()?),
        "follow-up-mode" => (&["followUpMode"], mode()?),
        "quiet-startup" => (
            &["quietStartup"],
            if value == "header" {
                json!("header")
            } else {
                boolean()?
            },
        ),
        "default-project-trust" => {
            let key = TRUST_LABELS.iter().find(|(_, l)| *l == value)?.0;
            (&["defaultProjectTrust"], json!(key))
        }
        "skill-commands" => (&["enableSkillCommands"], boolean()?),
        _ => return None,
    })
}

/// The list's values for `runtime`: what the session uses now, and for the settings that
/// apply at the next start, what the files say now (`agent_dir`'s file read again).
pub(crate) fn values(runtime: &Runtime, agent_dir: Option<&Path>) -> Values {
    let global = agent_dir
        .and_then(|d| crate::config::json_file::read_object(&d.join("settings.json")).ok())
        .flatten()
        .unwrap_or_default();
    let project = runtime.config.settings.project.as_ref();
    let quiet = project
        .and_then(|p| p.values.get("quietStartup"))
        .or_else(|| global.get("quietStartup"));
    let trust = global.get("defaultProjectTrust").and_then(Value::as_str);
    Values {
        auto_compact: runtime.auto_compaction.load(Ordering::SeqCst),
        steering: runtime.agent.steering_mode(),
        follow_up: runtime.agent.follow_up_mode(),
        quiet_startup: match quiet {
            Some(Value::Bool(true)) => "true".into(),
            Some(Value::String(s)) if s == "header" => "header".into(),
            _ => "false".into(),
        },
        project_trust: match trust {
            Some(t @ ("always" | "never")) => t.into(),
            _ => "ask".into(),
        },
        skill_commands: runtime.skill_commands.load(Ordering::SeqCst),
    }
}

/// Carries out a change: the running session first (where pi's takes effect at once), then
/// the agent directory's `settings.json`. Returns the notice to show, or the error.
pub(crate) fn apply(
    runtime: &Runtime,
    agent_dir: Option<&Path>,
    id: &str,
    value: &str,
) -> Result<String, String> {
    let (path, saved) = file_value(id, value).ok_or_else(|| format!("No setting {id}"))?;
    let mode = if value == "all" {
        QueueMode::All
    } else {
        QueueMode::OneAtATime
    };
    match id {
        "autocompact" => runtime
            .auto_compaction
            .store(value == "true", Ordering::SeqCst),
        "steering-mode" => runtime.agent.set_steering_mode(mode),
        "follow-up-mode" => runtime.agent.set_follow_up_mode(mode),
        "skill-commands" => runtime
            .skill_commands
            .store(value == "true", Ordering::SeqCst),
        _ => {}
    }
    let dir = agent_dir.ok_or("No agent directory (HOME is not set): the setting is not saved")?;
    crate::config::settings_write::save_setting(dir, path, saved)
        .map_err(|e| format!("The setting could not be saved: {e}"))?;
    Ok(format!("Saved {}: {value}", path.join(".")))
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
