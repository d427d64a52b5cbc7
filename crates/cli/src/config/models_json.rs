//! pi's `models.json` (`<agent dir>/models.json`, `docs/models-configuration.md`): custom
//! providers (Ollama, LM Studio, vLLM, proxies) with their models, and changes to built-in
//! providers (`baseUrl`, `headers`, `compat`, `modelOverrides`). `apiKey` and header values
//! are pi's config values: a literal, `$NAME` / `${NAME}` from the environment (`$$` and `$!`
//! for a literal `$` and `!`), or `!command` (its trimmed output).
//!
//! A provider or model entry that is wrong is left out with an error naming the file and the
//! field (`providers.ollama.models[0].id`); the rest of the file still loads. A file that is not
//! JSON is an error naming its line and column, and no custom model loads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use oxpi_ai::Model;
use serde_json::{Map, Value};

use super::json_file::{self, kind};

/// pi's defaults for a custom model.
const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
const DEFAULT_MAX_TOKENS: u64 = 16_384;

/// One provider's entry.
#[derive(Debug, Clone, Default, PartialEq)]
struct ProviderEntry {
    base_url: Option<String>,
    api: Option<String>,
    api_key: Option<String>,
    headers: BTreeMap<String, String>,
    compat: Option<Map<String, Value>>,
    model_overrides: Map<String, Value>,
}

/// What `models.json` adds and changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CustomModels {
    /// The file.
    pub path: PathBuf,
    /// Models the file defines, in file order.
    pub models: Vec<Model>,
    providers: BTreeMap<String, ProviderEntry>,
    /// Problems, each naming the file and field.
    pub errors: Vec<String>,
}

impl CustomModels {
    /// Reads `<agent_dir>/models.json` (none: nothing custom).
    pub(crate) fn load(agent_dir: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Self {
        let Some(dir) = agent_dir else {
            return Self::default();
        };
        let path = dir.join("models.json");
        match json_file::read_object(&path) {
            Ok(Some(map)) => Self::from_object(path, &map, env),
            Ok(None) => Self {
                path,
                ..Self::default()
            },
            Err(e) => Self {
                path,
                errors: vec![format!("{e}; no custom model loads")],
                ..Self::default()
            },
        }
    }

    /// The models and changes of a parsed file.
    pub(crate) fn from_object(
        path: PathBuf,
        root: &Map<String, Value>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Self {
        let mut out = Self {
            path,
            ..Self::default()
        };
        let providers = match root.get("providers") {
            None => return out,
            Some(Value::Object(p)) => p.clone(),
            Some(other) => {
                out.error("providers", "an object", other);
                return out;
            }
        };
        for (id, value) in &providers {
            let field = format!("providers.{id}");
            let Some(entry) = value.as_object() else {
                out.error(&field, "an object", value);
                continue;
            };
            if let Some(provider) = out.provider_entry(&field, entry, env) {
                out.add_models(id, &field, entry, &provider);
                out.providers.insert(id.clone(), provider);
            }
        }
        out
    }

    fn error(&mut self, field: &str, expected: &str, found: &Value) {
        self.errors.push(format!(
            "{}: {field} must be {expected}, found {} ({}); left out",
            self.path.display(),
            kind(found),
            json_file::quote(found)
        ));
    }

    fn string(&mut self, field: &str, entry: &Map<String, Value>, key: &str) -> Option<String> {
        match entry.get(key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                self.error(&format!("{field}.{key}"), "a string", other);
                None
            }
        }
    }

    fn provider_entry(
        &mut self,
        field: &str,
        entry: &Map<String, Value>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<ProviderEntry> {
        let mut provider = ProviderEntry {
            base_url: self.string(field, entry, "baseUrl"),
            api: self.string(field, entry, "api"),
            api_key: self.string(field, entry, "apiKey"),
            ..ProviderEntry::default()
        };
        provider.headers = self.headers(field, entry, env)?;
        match entry.get("compat") {
            None => {}
            Some(Value::Object(c)) => provider.compat = Some(c.clone()),
            Some(other) => {
                self.error(&format!("{field}.compat"), "an object", other);
                return None;
            }
        }
        match entry.get("modelOverrides") {
            None => {}
            Some(Value::Object(o)) => provider.model_overrides = o.clone(),
            Some(other) => {
                self.error(&format!("{field}.modelOverrides"), "an object", other);
                return None;
            }
        }
        Some(provider)
    }

    fn headers(
        &mut self,
        field: &str,
        entry: &Map<String, Value>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        let Some(value) = entry.get("headers") else {
            return Some(out);
        };
        let Some(map) = value.as_object() else {
            self.error(&format!("{field}.headers"), "an object", value);
            return None;
        };
        for (name, v) in map {
            let Some(text) = v.as_str() else {
                self.error(&format!("{field}.headers.{name}"), "a string", v);
                return None;
            };
            // An unresolved header is left out (pi sends only resolved headers).
            if let Some(resolved) = resolve_config_value(text, env) {
                out.insert(name.clone(), resolved);
            }
        }
        Some(out)
    }

    fn add_models(
        &mut self,
        provider_id: &str,
        field: &str,
        entry: &Map<String, Value>,
        provider: &ProviderEntry,
    ) {
        let list = match entry.get("models") {
            None => return,
            Some(Value::Array(list)) => list.clone(),
            Some(other) => {
                self.error(&format!("{field}.models"), "an array", other);
                return;
            }
        };
        let builtin_api = oxpi_ai::models::builtin_models()
            .iter()
            .find(|m| m.provider == provider_id)
            .and_then(|m| serde_json::to_value(&m.api).ok())
            .and_then(|v| v.as_str().map(str::to_string));
        for (i, value) in list.iter().enumerate() {
            let field = format!("{field}.models[{i}]");
            let Some(model) = value.as_object() else {
                self.error(&field, "an object", value);
                continue;
            };
            let Some(id) = self.string(&field, model, "id") else {
                if !model.contains_key("id") {
                    self.errors.push(format!(
                        "{}: {field}.id is required; left out",
                        self.path.display()
                    ));
                }
                continue;
            };
            let mut json = model.clone();
            json.insert("provider".into(), Value::String(provider_id.to_string()));
            json.entry("name")
                .or_insert_with(|| Value::String(id.clone()));
            let api = model
                .get("api")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| provider.api.clone())
                .or_else(|| builtin_api.clone());
            let base_url = model
                .get("baseUrl")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| provider.base_url.clone());
            let (Some(api), Some(base_url)) = (api, base_url) else {
                self.errors.push(format!(
                    "{}: {field} needs an `api` and a `baseUrl` (its own or the provider's); \
                     left out",
                    self.path.display()
                ));
                continue;
            };
            json.insert("api".into(), Value::String(api));
            json.insert("baseUrl".into(), Value::String(base_url));
            json.entry("contextWindow")
                .or_insert_with(|| DEFAULT_CONTEXT_WINDOW.into());
            json.entry("maxTokens")
                .or_insert_with(|| DEFAULT_MAX_TOKENS.into());
            json.remove("headers");
            json.remove("compat");
            match serde_json::from_value::<Model>(Value::Object(json)) {
                Ok(mut m) => {
                    apply_provider(&mut m, provider, Some(model));
                    self.models
                        .retain(|o| !(o.provider == m.provider && o.id == m.id));
                    self.models.push(m);
                }
                Err(e) => self
                    .errors
                    .push(format!("{}: {field}: {e}; left out", self.path.display())),
            }
        }
    }

    /// A model the file defines.
    pub(crate) fn get(&self, provider: &str, id: &str) -> Option<&Model> {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.id == id)
    }

    /// The provider's `apiKey`, resolved now (a `!command` runs each time, as pi).
    pub(crate) fn api_key(
        &self,
        provider: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<String> {
        let text = self.providers.get(provider)?.api_key.as_deref()?;
        resolve_config_value(text, env)
    }

    /// Whether the provider has an `apiKey` that resolves without running a command (pi counts
    /// a command as configured).
    pub(crate) fn has_key(&self, provider: &str, env: &dyn Fn(&str) -> Option<String>) -> bool {
        match self
            .providers
            .get(provider)
            .and_then(|p| p.api_key.as_deref())
        {
            Some(text) if text.starts_with('!') => true,
            Some(text) => resolve_config_value(text, env).is_some(),
            None => false,
        }
    }

    /// A built-in `model` with the file's changes to its provider: `baseUrl`, headers,
    /// compat, and its `modelOverrides` entry.
    pub(crate) fn adjust(&self, model: &mut Model) {
        let Some(provider) = self.providers.get(&model.provider) else {
            return;
        };
        if self.get(&model.provider, &model.id).is_some() {
            return;
        }
        if let Some(Value::Object(over)) = provider.model_overrides.get(&model.id) {
            if let Ok(Value::Object(mut json)) = serde_json::to_value(&*model) {
                merge_fields(&mut json, over);
                if let Ok(changed) = serde_json::from_value::<Model>(Value::Object(json)) {
                    *model = changed;
                }
            }
        }
        if let Some(url) = &provider.base_url {
            model.base_url = url.trim_end_matches('/').to_string();
        }
        apply_provider(model, provider, None);
    }
}

/// Provider-level headers and compat under the model's own (model values win per field).
fn apply_provider(model: &mut Model, provider: &ProviderEntry, entry: Option<&Map<String, Value>>) {
    for (k, v) in &provider.headers {
        model.headers.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut compat = match &model.compat {
        Some(Value::Object(c)) => c.clone(),
        _ => Map::new(),
    };
    if let Some(p) = &provider.compat {
        for (k, v) in p {
            compat.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    if let Some(Value::Object(own)) = entry.and_then(|e| e.get("compat")) {
        for (k, v) in own {
            compat.insert(k.clone(), v.clone());
        }
    }
    if !compat.is_empty() {
        model.compat = Some(Value::Object(compat));
    }
}

/// pi's override merge: object fields merge field by field, others replace.
fn merge_fields(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => {
                for (kk, vv) in o {
                    b.insert(kk.clone(), vv.clone());
                }
            }
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// pi's config value: `!command` (trimmed output; `None` when it fails or prints nothing),
/// else a template of literals and `$NAME` / `${NAME}` (`None` when a variable is unset).
pub(crate) fn resolve_config_value(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    if let Some(command) = text.strip_prefix('!') {
        return run_command(command);
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$').or_else(|| after.strip_prefix('!')) {
            out.push_str(&after[..1]);
            rest = tail;
            continue;
        }
        if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) if is_var_name(&inner[..end]) => {
                    out.push_str(&env(&inner[..end]).filter(|v| !v.is_empty())?);
                    rest = &inner[end + 1..];
                }
                Some(end) => {
                    out.push_str(&rest[at..at + end + 3]);
                    rest = &inner[end + 1..];
                }
                None => {
                    out.push('$');
                    rest = after;
                }
            }
            continue;
        }
        let len = var_prefix_len(after);
        if len == 0 {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&env(&after[..len]).filter(|v| !v.is_empty())?);
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    Some(out)
}

fn is_var_name(name: &str) -> bool {
    var_prefix_len(name) == name.len() && !name.is_empty()
}

fn var_prefix_len(text: &str) -> usize {
    let mut len = 0;
    for (i, c) in text.char_indices() {
        let ok = c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit());
        if !ok {
            break;
        }
        len = i + c.len_utf8();
    }
    len
}

/// Runs `command` with `sh -c`, stdin and stderr closed; its trimmed output.
fn run_command(command: &str) -> Option<String> {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
#[path = "models_json_tests.rs"]
mod tests;
