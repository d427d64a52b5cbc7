//! The `edit` tool: exact text replacements in a file inside the workspace, written atomically.

use std::io::{self, Read};

use oxpi_agent_core::{AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::atomic::{open_parent, write_atomic};
use crate::edit_diff::diffs;
use crate::edit_match::{find_all, line_ending_at, splice, MatchError, Normalized};
use crate::file_lock::lock_file;
use crate::fsutil::{cap_kind_name, format_size};
use crate::workspace::{PathError, Workspace};

/// One replacement of an `edit` call.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Replacement {
    /// Exact text for one targeted replacement. It must be unique in the original file and must
    /// not overlap with any other edits[].oldText in the same call.
    pub old_text: String,
    /// Replacement text for this targeted edit.
    pub new_text: String,
}

/// Arguments of the `edit` tool (pi 1.6's shape; the older single `oldText`/`newText` is
/// accepted too, see [`EditTool`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// Path to the file to edit (relative or absolute)
    pub path: String,
    /// One or more targeted replacements. Each edit is matched against the original file, not
    /// incrementally. Do not include overlapping or nested edits. If two changes touch the same
    /// block or nearby lines, merge them into one edit instead.
    pub edits: Vec<Replacement>,
}

/// What a successful `edit` did, in [`AgentToolResult::details`] (as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditDetails {
    /// The file, relative to the workspace root.
    pub path: String,
    /// pi's numbered diff: `-12 old`, `+12 new`, ` 13 context`, 4 lines of context.
    pub diff: String,
    /// The same change as a unified diff.
    pub patch: String,
    /// The first changed line of the new file (1-based).
    pub first_changed_line: usize,
}

/// The `edit` tool, bound to a [`Workspace`].
///
/// Each `oldText` is looked up in the original file (not after the other edits), first exactly,
/// then as pi's fuzzy match (trailing whitespace on each line, typographic quotes, dashes and
/// spaces ignored); it must occur exactly once (occurrences that overlap count: `aa` is twice in
/// `aaa`), and no two may overlap. `\r\n` in the file matches `\n` in the arguments. The file
/// keeps its byte-order mark and every byte outside the replaced text; a replacement's line
/// breaks take the line ending of the line it starts in, so a CRLF file stays CRLF. The result
/// is written atomically like `write`, keeping the file's permissions, owner and group. Errors
/// are pi's (`Could not find the exact text in a.txt. …`, `Found 2 occurrences …`, `edits[0]
/// and edits[1] overlap …`, `No changes made …`). `details` holds a numbered diff, a unified
/// patch and the first changed line. Edits and writes of one file run one at a time in the
/// process, whatever [`Workspace`] they come through, so none is lost.
///
/// pi 0.58's arguments `{path, oldText, newText}` are turned into one edit before validation,
/// as are `edits` given as one object or as a JSON string.
#[derive(Debug, Clone)]
pub struct EditTool {
    workspace: Workspace,
}

impl EditTool {
    /// An `edit` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

/// Whether `value` is a `{oldText, newText}` object with both strings.
fn is_replacement(value: &Value) -> bool {
    value.get("oldText").is_some_and(Value::is_string)
        && value.get("newText").is_some_and(Value::is_string)
}

impl AgentTool for EditTool {
    type Args = EditArgs;

    fn name(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        "Edit a single file using exact text replacement. Every edits[].oldText must match a \
         unique, non-overlapping region of the original file. If two changes affect the same \
         block or nearby lines, merge them into one edit instead of emitting overlapping edits. \
         Do not include large unchanged regions just to connect distant changes."
    }

    fn prepare_arguments(&self, mut args: Map<String, Value>) -> Map<String, Value> {
        // `edits` as a JSON string, or as one object.
        if let Some(Value::String(text)) = args.get("edits") {
            if let Ok(parsed) = serde_json::from_str::<Value>(text) {
                if parsed.is_array() || is_replacement(&parsed) {
                    args.insert("edits".into(), parsed);
                }
            }
        }
        if args.get("edits").is_some_and(is_replacement) {
            if let Some(one) = args.remove("edits") {
                args.insert("edits".into(), Value::Array(vec![one]));
            }
        }
        // pi 0.58: top-level oldText/newText.
        if args.get("oldText").is_some_and(Value::is_string)
            && args.get("newText").is_some_and(Value::is_string)
        {
            let old_text = args.remove("oldText").unwrap_or_default();
            let new_text = args.remove("newText").unwrap_or_default();
            let edit = serde_json::json!({"oldText": old_text, "newText": new_text});
            match args.get_mut("edits") {
                Some(Value::Array(edits)) => edits.push(edit),
                _ => {
                    args.insert("edits".into(), Value::Array(vec![edit]));
                }
            }
        }
        args
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: EditArgs,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        self.workspace
            .run_blocking(args, cancel, "Cannot edit: the edit task failed", edit_file)
            .await
    }
}

const BOM: &str = "\u{feff}";

/// Largest file `edit` changes (16 MiB): it reads the file whole and keeps a few copies.
pub const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

fn edit_file(
    workspace: &Workspace,
    args: &EditArgs,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let shown = args.path.as_str();
    if args.edits.is_empty() {
        return Err(ToolError::new(
            "Edit tool input is invalid. edits must contain at least one replacement.",
        ));
    }
    let resolved = workspace
        .resolve(shown)
        .map_err(|e| ToolError::new(e.to_string()))?;
    let Some((anchor, relative)) = workspace.anchor(&resolved) else {
        return Err(ToolError::new(
            PathError::Outside {
                path: shown.to_string(),
            }
            .to_string(),
        ));
    };
    let cannot = |e: io::Error| ToolError::new(format!("Cannot edit {shown}: {e}"));
    let not_found = || ToolError::new(format!("File not found: {shown}"));
    let (dir, name) = open_parent(anchor, relative, false).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            not_found()
        } else {
            cannot(e)
        }
    })?;
    // Changes of one file run one at a time in the process, whatever `Workspace` they come
    // through: a read-modify-write must not interleave with another.
    let _lock = lock_file(&dir, &name).map_err(cannot)?;
    // Opened without blocking (a FIFO swapped in is seen by fstat, never read); what the open
    // handle is decides, not what a path said a moment ago.
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = match dir.open_with(&name, &options) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_found()),
        Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
            return Err(ToolError::new(format!(
                "Cannot edit {shown}: it is a directory"
            )))
        }
        Err(e) => return Err(cannot(e)),
    };
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(ToolError::new(format!(
            "Cannot edit {shown}: it is {}",
            cap_kind_name(&meta.file_type())
        )));
    }
    if meta.permissions().readonly() {
        return Err(ToolError::new(format!(
            "Cannot edit {shown}: the file is read-only"
        )));
    }
    if meta.len() > MAX_EDIT_BYTES {
        return Err(ToolError::new(format!(
            "Cannot edit {shown}: the file is {}, more than the {} edit limit; use write to replace it",
            format_size(meta.len()),
            format_size(MAX_EDIT_BYTES)
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(ToolError::new(format!(
            "Cannot edit {shown}: the file is not valid UTF-8 text"
        )));
    };
    let (bom, original) = match text.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", text.as_str()),
    };
    let norm = Normalized::new(original);
    let pairs: Vec<(String, String)> = args
        .edits
        .iter()
        .map(|e| (e.old_text.clone(), e.new_text.clone()))
        .collect();
    let found = find_all(&norm, &pairs).map_err(|e| ToolError::new(e.message(shown)))?;
    let new_norm = splice(&norm.text, &found, |f| f.norm, |f| f.new_lf.clone());
    if new_norm == norm.text {
        let error = MatchError::NoChange {
            single: args.edits.len() == 1,
        };
        return Err(ToolError::new(error.message(shown)));
    }
    let new_original = splice(
        original,
        &found,
        |f| f.original,
        |f| match line_ending_at(original, f.original.0) {
            "\r\n" => f.new_lf.replace('\n', "\r\n"),
            _ => f.new_lf.clone(),
        },
    );
    if cancel.is_cancelled() {
        return Err(ToolError::new("Operation aborted"));
    }
    let content = format!("{bom}{new_original}");
    write_atomic(&dir, &name, &mut content.as_bytes(), Some(&meta)).map_err(cannot)?;
    let diffs = diffs(shown, &norm.text, &new_norm);
    let details = EditDetails {
        path: workspace.display_relative(&resolved),
        diff: diffs.display,
        patch: diffs.patch,
        first_changed_line: diffs.first_changed_line,
    };
    Ok(AgentToolResult::text(format!(
        "Successfully replaced {} block(s) in {shown}.",
        args.edits.len()
    ))
    .with_details(serde_json::to_value(&details).unwrap_or(Value::Null)))
}
