//! Migration of v1 and v2 session files to v3 on load, as pi does it: v1 entries get ids and
//! are chained in file order (a compaction's `firstKeptEntryIndex` becomes `firstKeptEntryId`);
//! v2's `hookMessage` role becomes `custom`.

use std::collections::HashMap;

use serde_json::Value;

use crate::entry::{Entry, SessionHeader, CURRENT_SESSION_VERSION};
use crate::ids;

/// Brings `entries` (the objects after `header`) to the current version; returns whether
/// anything was migrated. An entry's line is changed only where the migration changes it (v1's
/// `id` and `parentId` are added at its end; the rest of the line stays as it was read).
pub(crate) fn migrate(header: &mut SessionHeader, entries: &mut [Entry]) -> bool {
    let version = header.version();
    if version >= CURRENT_SESSION_VERSION {
        return false;
    }
    if version < 2 {
        v1_to_v2(entries);
    }
    if version < 3 {
        v2_to_v3(entries);
    }
    header
        .json_mut()
        .insert("version".into(), CURRENT_SESSION_VERSION.into());
    true
}

fn v1_to_v2(entries: &mut [Entry]) {
    let mut taken: HashMap<String, ()> = HashMap::new();
    let mut previous: Option<String> = None;
    // pi's `firstKeptEntryIndex` counts the header as index 0.
    let mut ids_by_index: Vec<String> = Vec::with_capacity(entries.len());
    for entry in entries.iter_mut() {
        let id = ids::entry_id(&taken);
        taken.insert(id.clone(), ());
        entry.add_fields(&[
            ("id", id.clone().into()),
            (
                "parentId",
                previous.clone().map_or(Value::Null, Value::from),
            ),
        ]);
        previous = Some(id.clone());
        ids_by_index.push(id);
    }
    for entry in entries.iter_mut() {
        if entry.type_name() != "compaction" {
            continue;
        }
        let Some(index) = entry.get("firstKeptEntryIndex").map(Value::as_u64) else {
            continue;
        };
        let entry = entry.json_mut();
        if let Some(index) = index {
            let target = usize::try_from(index)
                .ok()
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| ids_by_index.get(i));
            if let Some(target) = target {
                entry.insert("firstKeptEntryId".into(), target.clone().into());
            }
            entry.remove("firstKeptEntryIndex");
        }
    }
}

fn v2_to_v3(entries: &mut [Entry]) {
    for entry in entries.iter_mut() {
        if entry.message_role() != Some("hookMessage") {
            continue;
        }
        if let Some(Value::Object(message)) = entry.json_mut().get_mut("message") {
            message.insert("role".into(), "custom".into());
        }
    }
}
