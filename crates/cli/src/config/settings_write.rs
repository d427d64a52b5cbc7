//! Saving a setting changed in the running session to the agent directory's `settings.json`,
//! as pi's `SettingsManager` saves one: the file is read again, only the changed key (or the
//! changed key of a nested object, as `compaction.enabled`) is set, every other key stays as
//! the file has it (in its order), and the result is written as two-space indented JSON. The
//! write is atomic: a temporary file beside it (given the file's permissions), then a rename.

use std::fmt;
use std::path::Path;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// JSON whose objects keep their keys in the file's order (serde_json's map sorts them).
#[derive(Debug, Clone, PartialEq)]
enum Ordered {
    /// Any value but an object or an array.
    Scalar(Value),
    /// An array.
    Array(Vec<Ordered>),
    /// An object, its keys in order.
    Object(Vec<(String, Ordered)>),
}

impl Ordered {
    fn from_value(value: Value) -> Self {
        match value {
            Value::Array(items) => Self::Array(items.into_iter().map(Self::from_value).collect()),
            Value::Object(map) => Self::Object(
                map.into_iter()
                    .map(|(k, v)| (k, Self::from_value(v)))
                    .collect(),
            ),
            other => Self::Scalar(other),
        }
    }

    /// Sets `key` of this object to `value` (appended when new).
    fn set(entries: &mut Vec<(String, Ordered)>, key: &str, value: Ordered) {
        match entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => entries.push((key.to_string(), value)),
        }
    }
}

struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = Ordered;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Ordered::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
        let mut entries: Vec<(String, Ordered)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Ordered>()? {
            // A repeated key: the last one wins, as in JSON.parse.
            Ordered::set(&mut entries, &key, value);
        }
        Ok(Ordered::Object(entries))
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(OrderedVisitor)
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Scalar(v) => v.serialize(s),
            Self::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Self::Object(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// Sets `path` (one key, or an object's key and its nested key) to `value` in
/// `<agent_dir>/settings.json`, keeping everything else in the file (created when missing).
/// A file that is not a JSON object is left alone and the error says so (pi does not save
/// over a file it could not read).
pub(crate) fn save_setting(agent_dir: &Path, path: &[&str], value: Value) -> Result<(), String> {
    let file = agent_dir.join("settings.json");
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let mut root = match text
        .as_deref()
        .map(|t| t.strip_prefix('\u{feff}').unwrap_or(t))
    {
        None => Vec::new(),
        Some(t) if t.trim().is_empty() => Vec::new(),
        Some(t) => match serde_json::from_str::<Ordered>(t) {
            Ok(Ordered::Object(entries)) => entries,
            Ok(_) => return Err(format!("{} is not a JSON object", file.display())),
            Err(e) => return Err(format!("{}: {e}", file.display())),
        },
    };
    let value = Ordered::from_value(value);
    match path {
        [key] => Ordered::set(&mut root, key, value),
        [key, nested] => {
            let mut inner = match root.iter().find(|(k, _)| k == key) {
                Some((_, Ordered::Object(entries))) => entries.clone(),
                _ => Vec::new(),
            };
            Ordered::set(&mut inner, nested, value);
            Ordered::set(&mut root, key, Ordered::Object(inner));
        }
        _ => return Err("a setting is one key or one nested key".into()),
    }
    let out = serde_json::to_string_pretty(&Ordered::Object(root)).map_err(|e| e.to_string())?;
    write_atomic(&file, out.as_bytes())
}

/// Writes `bytes` to `file` through a temporary file in the same directory and a rename.
fn write_atomic(file: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = file.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = dir.join(format!(
        ".settings.json.{}.{}.tmp",
        std::process::id(),
        oxpi_ai::now_millis()
    ));
    // The file keeps its permissions (a settings file may be private).
    let written = std::fs::write(&tmp, bytes)
        .and_then(|_| match std::fs::metadata(file) {
            Ok(meta) => std::fs::set_permissions(&tmp, meta.permissions()),
            Err(_) => Ok(()),
        })
        .and_then(|_| std::fs::rename(&tmp, file));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{}: {e}", file.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_key_changes_and_the_others_stay_in_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(
            &file,
            "\u{feff}{\"zeta\": 1, \"compaction\": {\"reserveTokens\": 9, \"enabled\": true},\n \"alpha\": [1, {\"b\": 2, \"a\": 1}]}",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        save_setting(dir.path(), &["compaction", "enabled"], json!(false)).unwrap();
        save_setting(dir.path(), &["steeringMode"], json!("all")).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "{\n  \"zeta\": 1,\n  \"compaction\": {\n    \"reserveTokens\": 9,\n    \"enabled\": false\n  },\n  \"alpha\": [\n    1,\n    {\n      \"b\": 2,\n      \"a\": 1\n    }\n  ],\n  \"steeringMode\": \"all\"\n}"
        );
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["settings.json"]);
    }

    #[test]
    fn a_missing_file_is_created_and_a_broken_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent");
        save_setting(&agent, &["quietStartup"], json!("header")).unwrap();
        assert_eq!(
            std::fs::read_to_string(agent.join("settings.json")).unwrap(),
            "{\n  \"quietStartup\": \"header\"\n}"
        );
        std::fs::write(agent.join("settings.json"), "{ not json").unwrap();
        let err = save_setting(&agent, &["quietStartup"], json!(true)).unwrap_err();
        assert!(err.contains("settings.json"), "{err}");
        assert_eq!(
            std::fs::read_to_string(agent.join("settings.json")).unwrap(),
            "{ not json"
        );
        std::fs::write(agent.join("settings.json"), "[1]").unwrap();
        let err = save_setting(&agent, &["quietStartup"], json!(true)).unwrap_err();
        assert!(err.ends_with("is not a JSON object"), "{err}");
    }
}
