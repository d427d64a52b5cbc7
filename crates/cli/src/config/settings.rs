//! pi's `settings.json`: the agent directory's (`<agent dir>/settings.json`) and the project's
//! (`<cwd>/.pi/settings.json`, read only when the project is trusted), merged as pi 1.6 merges
//! them (objects deeply, the project winning; `defaultTools` of only `+name`/`-name` entries
//! changing the inherited list), and read into the values oxpi uses.
//!
//! A file that is not JSON is skipped with a warning naming it, its line and column (pi: a
//! warning and that file's settings empty). A value of the wrong type is skipped with a warning
//! naming the file and field, and the default applies. Unknown keys are ignored, as pi ignores
//! them. oxpi's own keys live under `oxpi` (pi ignores that key).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use oxpi_ai::ThinkingLevel;
use serde_json::{Map, Value};

use super::json_file::{self, kind};
use super::trust::{self, ProjectTrust};

/// pi's tools at startup when `defaultTools` does not change them.
const DEFAULT_TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];

/// One settings file as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Layer {
    /// The file.
    pub path: PathBuf,
    /// Its object (empty when missing or invalid).
    pub values: Map<String, Value>,
}

/// How `bash` (and the file tools) are confined (`--sandbox`, setting `oxpi.sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SandboxMode {
    /// Tools confined to the working directory; `bash` writes only there, refused when the
    /// kernel cannot enforce it (oxpi's default).
    Workspace,
    /// As `workspace`, but `bash` runs with what the kernel can enforce.
    BestEffort,
    /// pi's tools: any path, `bash` unconfined.
    None,
}

impl SandboxMode {
    /// The mode named `text` (`workspace`, `best-effort`, `none`).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "workspace" => Some(Self::Workspace),
            "best-effort" => Some(Self::BestEffort),
            "none" => Some(Self::None),
            _ => None,
        }
    }
}

/// The compaction settings before a model is known (pi's `compaction.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Compaction {
    /// `compaction.enabled` (default true).
    pub enabled: bool,
    /// `compaction.reserveTokens` (default 16384).
    pub reserve_tokens: u64,
    /// `compaction.keepRecentTokens` (default 20000).
    pub keep_recent_tokens: u64,
    /// `compaction.modelOverrides`: `provider/id` → (reserve, keep recent), each optional.
    pub model_overrides: BTreeMap<String, (Option<u64>, Option<u64>)>,
}

impl Compaction {
    /// (reserve, keep recent) for `provider/id`: the model's override, else the setting.
    pub(crate) fn tokens_for(&self, provider: &str, id: &str) -> (u64, u64) {
        let o = self
            .model_overrides
            .get(&format!("{provider}/{id}"))
            .copied()
            .unwrap_or_default();
        (
            o.0.unwrap_or(self.reserve_tokens),
            o.1.unwrap_or(self.keep_recent_tokens),
        )
    }
}

/// pi's agent-level retry settings (`retry.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retry {
    /// `retry.enabled` (default true).
    pub enabled: bool,
    /// `retry.maxRetries` (default 3).
    pub max_retries: u32,
    /// `retry.baseDelayMs` (default 2000).
    pub base_delay_ms: u64,
    /// `retry.maxAgentDelayMs` (default 60000).
    pub max_agent_delay_ms: u64,
}

/// The settings oxpi uses, read from the merged files, with the warnings reading them gave.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    /// The agent directory's file.
    pub global: Layer,
    /// The project's file (`None` when the project is not trusted).
    pub project: Option<Layer>,
    /// Whether the project is trusted (project resources load).
    pub project_trusted: bool,
    /// The two merged.
    pub merged: Map<String, Value>,
    /// Problems found, each naming its file (shown on stderr).
    pub warnings: Vec<String>,
}

impl Settings {
    /// Reads `<agent_dir>/settings.json`, decides the project's trust (`approve`: `--approve`
    /// / `--no-approve`), then reads `<cwd>/.pi/settings.json` when trusted.
    pub(crate) fn load(agent_dir: Option<&Path>, cwd: &Path, approve: Option<bool>) -> Self {
        let mut warnings = Vec::new();
        let mut read = |path: PathBuf| -> Layer {
            let values = match json_file::read_object(&path) {
                Ok(values) => values.unwrap_or_default(),
                Err(e) => {
                    warnings.push(format!(
                        "Invalid settings file {e}; its settings are ignored"
                    ));
                    Map::new()
                }
            };
            Layer { path, values }
        };
        let global = match agent_dir {
            Some(dir) => read(dir.join("settings.json")),
            None => Layer::default(),
        };
        let default_trust = match global.values.get("defaultProjectTrust") {
            Some(Value::String(s)) if s == "always" => ProjectTrust::Always,
            Some(Value::String(s)) if s == "never" => ProjectTrust::Never,
            _ => ProjectTrust::Ask,
        };
        let (project_trusted, trust_warning) =
            trust::project_trusted(agent_dir, cwd, default_trust, approve);
        let project = project_trusted.then(|| read(cwd.join(".pi").join("settings.json")));
        warnings.extend(trust_warning);
        Self::from_layers(global, project, project_trusted, warnings)
    }

    /// The settings of two layers already read (`project` `None`: untrusted or absent).
    pub(crate) fn from_layers(
        global: Layer,
        project: Option<Layer>,
        project_trusted: bool,
        warnings: Vec<String>,
    ) -> Self {
        let mut merged = global.values.clone();
        if let Some(project) = &project {
            merge_into(&mut merged, &project.values);
            if let (Some(Value::Array(base)), Some(Value::Array(over))) = (
                global.values.get("defaultTools"),
                project.values.get("defaultTools"),
            ) {
                if over.iter().all(is_tool_modifier) {
                    let joined = base.iter().chain(over).cloned().collect();
                    merged.insert("defaultTools".into(), Value::Array(joined));
                }
            }
        }
        Self {
            global,
            project,
            project_trusted,
            merged,
            warnings,
        }
    }

    /// The file a merged value at `path` came from (the project's when it sets it).
    fn origin(&self, path: &[&str]) -> &Path {
        if let Some(project) = &self.project {
            if lookup(&project.values, path).is_some() {
                return &project.path;
            }
        }
        &self.global.path
    }

    fn warn(&mut self, path: &[&str], expected: &str, found: &Value) {
        let file = self.origin(path).display().to_string();
        self.warnings.push(format!(
            "Invalid settings file {file}: {} must be {expected}, found {} ({}); the default is used",
            path.join("."),
            kind(found),
            json_file::quote(found),
        ));
    }

    fn typed<T>(
        &mut self,
        path: &[&str],
        expected: &str,
        convert: impl FnOnce(&Value) -> Option<T>,
    ) -> Option<T> {
        let value = lookup(&self.merged, path)?.clone();
        if value.is_null() {
            return None;
        }
        let out = convert(&value);
        if out.is_none() {
            self.warn(path, expected, &value);
        }
        out
    }

    /// A string setting.
    pub(crate) fn string(&mut self, path: &[&str]) -> Option<String> {
        self.typed(path, "a string", |v| v.as_str().map(str::to_string))
    }

    /// A boolean setting.
    pub(crate) fn boolean(&mut self, path: &[&str]) -> Option<bool> {
        self.typed(path, "a boolean", Value::as_bool)
    }

    /// A non-negative integer setting.
    pub(crate) fn count(&mut self, path: &[&str]) -> Option<u64> {
        self.typed(path, "a non-negative integer", Value::as_u64)
    }

    /// A list of strings.
    pub(crate) fn strings(&mut self, path: &[&str]) -> Option<Vec<String>> {
        self.typed(path, "an array of strings", |v| {
            v.as_array()?
                .iter()
                .map(|e| e.as_str().map(str::to_string))
                .collect()
        })
    }

    /// `steeringMode` or `followUpMode` (`key`): `"all"` or `"one-at-a-time"`.
    pub(crate) fn queue_mode(&mut self, key: &str) -> Option<oxpi_agent_core::QueueMode> {
        self.typed(&[key], "\"all\" or \"one-at-a-time\"", |v| {
            match v.as_str()? {
                "all" => Some(oxpi_agent_core::QueueMode::All),
                "one-at-a-time" => Some(oxpi_agent_core::QueueMode::OneAtATime),
                _ => None,
            }
        })
    }

    /// `defaultProvider`.
    pub(crate) fn default_provider(&mut self) -> Option<String> {
        self.string(&["defaultProvider"])
    }

    /// `defaultModel`.
    pub(crate) fn default_model(&mut self) -> Option<String> {
        self.string(&["defaultModel"])
    }

    /// `defaultThinkingLevel`.
    pub(crate) fn default_thinking_level(&mut self) -> Option<ThinkingLevel> {
        self.typed(
            &["defaultThinkingLevel"],
            "one of off, minimal, low, medium, high, xhigh, max",
            |v| ThinkingLevel::parse(v.as_str()?),
        )
    }

    /// `modelThinkingLevels["provider/id"]`.
    pub(crate) fn model_thinking_level(
        &mut self,
        provider: &str,
        id: &str,
    ) -> Option<ThinkingLevel> {
        let key = format!("{provider}/{id}");
        self.typed(
            &["modelThinkingLevels", &key],
            "one of off, minimal, low, medium, high, xhigh, max",
            |v| ThinkingLevel::parse(v.as_str()?),
        )
    }

    /// `enabledModels`.
    pub(crate) fn enabled_models(&mut self) -> Option<Vec<String>> {
        self.strings(&["enabledModels"])
    }

    /// `defaultTools` resolved as pi resolves it: plain names replace pi's defaults, then
    /// `+name` adds and `-name` removes, in order. `None` when no file sets it.
    pub(crate) fn default_tools(&mut self) -> Option<Vec<String>> {
        let entries = self.strings(&["defaultTools"])?;
        let plain: Vec<String> = entries
            .iter()
            .filter(|e| !e.starts_with('+') && !e.starts_with('-'))
            .cloned()
            .collect();
        let mut tools = if plain.is_empty() && !entries.is_empty() {
            DEFAULT_TOOL_NAMES.iter().map(|s| s.to_string()).collect()
        } else {
            plain
        };
        for entry in &entries {
            if let Some(name) = entry.strip_prefix('+') {
                if !name.is_empty() && !tools.iter().any(|t| t == name) {
                    tools.push(name.to_string());
                }
            } else if let Some(name) = entry.strip_prefix('-') {
                tools.retain(|t| t != name);
            }
        }
        Some(tools)
    }

    /// `compaction.*`.
    pub(crate) fn compaction(&mut self) -> Compaction {
        let mut model_overrides = BTreeMap::new();
        let keys: Vec<String> = match lookup(&self.merged, &["compaction", "modelOverrides"]) {
            Some(Value::Object(map)) => map.keys().cloned().collect(),
            Some(other) => {
                let other = other.clone();
                self.warn(&["compaction", "modelOverrides"], "an object", &other);
                Vec::new()
            }
            None => Vec::new(),
        };
        for key in keys {
            let path = ["compaction", "modelOverrides", key.as_str()];
            let reserve = self.count(&[path[0], path[1], path[2], "reserveTokens"]);
            let keep = self.count(&[path[0], path[1], path[2], "keepRecentTokens"]);
            model_overrides.insert(key.clone(), (reserve, keep));
        }
        Compaction {
            enabled: self.boolean(&["compaction", "enabled"]).unwrap_or(true),
            reserve_tokens: self
                .count(&["compaction", "reserveTokens"])
                .unwrap_or(16384),
            keep_recent_tokens: self
                .count(&["compaction", "keepRecentTokens"])
                .unwrap_or(20000),
            model_overrides,
        }
    }

    /// `retry.*`.
    pub(crate) fn retry(&mut self) -> Retry {
        Retry {
            enabled: self.boolean(&["retry", "enabled"]).unwrap_or(true),
            max_retries: self
                .count(&["retry", "maxRetries"])
                .map_or(3, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            base_delay_ms: self.count(&["retry", "baseDelayMs"]).unwrap_or(2000),
            max_agent_delay_ms: self.count(&["retry", "maxAgentDelayMs"]).unwrap_or(60_000),
        }
    }

    /// `shellPath`, a leading `~` expanded.
    pub(crate) fn shell_path(&mut self) -> Option<PathBuf> {
        self.string(&["shellPath"])
            .filter(|s| !s.is_empty())
            .map(|s| expand_home(&s))
    }

    /// `shellCommandPrefix`.
    pub(crate) fn shell_command_prefix(&mut self) -> Option<String> {
        self.string(&["shellCommandPrefix"])
            .filter(|s| !s.is_empty())
    }

    /// `sessionDir`, `~` expanded, relative to `cwd`.
    pub(crate) fn session_dir(&mut self, cwd: &Path) -> Option<PathBuf> {
        let dir = self.string(&["sessionDir"]).filter(|s| !s.is_empty())?;
        Some(cwd.join(expand_home(&dir)))
    }

    /// A resource list (`prompts`, `skills`) of both files, each path resolved from its file's
    /// base (the agent directory, or the project's `.pi`); `~` expanded. pi's `!glob`, `+path`
    /// and `-path` entries are not read (left out).
    pub(crate) fn resource_paths(&mut self, key: &str, agent_dir: Option<&Path>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let layers: Vec<(Value, PathBuf, Option<PathBuf>)> =
            [Some(&self.global), self.project.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(|l| {
                    let base = if Some(l) == self.project.as_ref() {
                        l.path.parent().map(Path::to_path_buf)
                    } else {
                        agent_dir.map(Path::to_path_buf)
                    };
                    Some((l.values.get(key)?.clone(), l.path.clone(), base))
                })
                .collect();
        for (value, file, base) in layers {
            let Some(list) = value.as_array() else {
                self.warnings.push(format!(
                    "Invalid settings file {}: {key} must be an array of strings, found {};                      ignored",
                    file.display(),
                    kind(&value)
                ));
                continue;
            };
            for entry in list.iter().filter_map(Value::as_str) {
                if entry.starts_with(['!', '+', '-']) {
                    continue;
                }
                let path = expand_home(entry);
                out.push(match &base {
                    Some(b) if path.is_relative() => b.join(path),
                    _ => path,
                });
            }
        }
        out
    }

    /// oxpi's `oxpi.promptProfile` (`small`, `default`): what the command tells the model (see
    /// `crate::profile`).
    pub(crate) fn prompt_profile(&mut self) -> Option<crate::profile::PromptProfile> {
        self.typed(
            &["oxpi", "promptProfile"],
            "one of \"small\", \"default\"",
            |v| match v.as_str()? {
                "small" => Some(crate::profile::PromptProfile::Small),
                "default" => Some(crate::profile::PromptProfile::Default),
                _ => None,
            },
        )
    }

    /// oxpi's `oxpi.sandbox` (`workspace`, `best-effort`, `none`).
    pub(crate) fn sandbox(&mut self) -> Option<SandboxMode> {
        self.typed(
            &["oxpi", "sandbox"],
            "one of \"workspace\", \"best-effort\", \"none\"",
            |v| SandboxMode::parse(v.as_str()?),
        )
    }
}

/// `~` or `~/…` with the home directory.
pub(crate) fn expand_home(path: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").filter(|h| !h.is_empty());
    if path == "~" {
        if let Some(h) = home() {
            return PathBuf::from(h);
        }
    }
    if let Some(rest) = path.strip_prefix("~/") {
        if let Some(h) = home() {
            return PathBuf::from(h).join(rest);
        }
    }
    PathBuf::from(path)
}

fn is_tool_modifier(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.starts_with('+') || s.starts_with('-'))
}

/// pi's deep merge: objects merge key by key, anything else from `over` replaces.
fn merge_into(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (key, value) in over {
        match (base.get_mut(key), value) {
            (Some(Value::Object(b)), Value::Object(o)) => merge_into(b, o),
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The value at `path` in `map`.
fn lookup<'a>(map: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut value = map.get(*first)?;
    for key in rest {
        value = value.as_object()?.get(*key)?;
    }
    Some(value)
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
