//! The `read` tool: returns a window of a text file, or an image, from inside the workspace.

use std::fs;
use std::io::{self, BufReader, Read};
use std::num::NonZeroU64;

use oxpi_agent_core::{AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::cursor::LineCursor;
use crate::fsutil::{format_size, is_symlink_refusal, kind_name, open_read_nofollow, opened_path};
use crate::image::{image_mime_type, read_image};
use crate::read_details::{to_json, ReadDetails, TextDetails, TruncatedBy};
use crate::text::{read_window, Request, Stop, Window};
use crate::window_error::WindowError;
use crate::workspace::{PathError, Workspace};

/// Bytes looked at to recognize images and binary data (as git does, a NUL byte means binary).
const SNIFF_BYTES: u64 = 8 * 1024;
/// Read buffer size.
const BUFFER_BYTES: usize = 64 * 1024;

/// Arguments of the `read` tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Path to the file to read, relative to the workspace root (an absolute path must lie
    /// inside it).
    pub path: String,
    /// Line number to start reading from (1-indexed).
    #[serde(default)]
    pub offset: Option<NonZeroU64>,
    /// Maximum number of lines to read.
    #[serde(default)]
    pub limit: Option<NonZeroU64>,
}

impl ReadArgs {
    /// Reads `path` from its first line, up to the workspace's limits.
    pub fn new(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            offset: None,
            limit: None,
        }
    }
}

/// The `read` tool, bound to a [`Workspace`].
///
/// Text comes back as it is in the file (no line numbers), at most
/// [`Limits::max_lines`](crate::Limits::max_lines) lines and
/// [`Limits::max_bytes`](crate::Limits::max_bytes) bytes, followed by a notice that says how to
/// continue, in pi's words:
///
/// - line limit: `[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]`
/// - byte limit: `[Showing lines 1-1200 of 2500 (50KB limit). Use offset=1201 to continue.]`
/// - the caller's `limit`: `[40 more lines in file. Use offset=61 to continue.]`
/// - a first line over the byte limit: `[Line 3 is 1.2MB, over the 50KB limit; showing only its
///   first 50KB. Use offset=4 for the next line.]`
///
/// The file is streamed: only the lines skipped and returned are read, plus at most
/// [`Limits::max_scan_bytes`](crate::Limits::max_scan_bytes) to count the remaining lines. When
/// the rest of the file is larger than that, the total is left out
/// (`[Showing lines 1-2000. Use offset=2001 to continue.]`, `[More lines in file. Use
/// offset=61 to continue.]`). An empty file reads as `[Empty file]`.
///
/// Images (png, jpeg, gif, webp, recognized by content) come back as an image block after the
/// text `Read image file [image/png]`. Other binary data (a NUL byte) is refused. Invalid UTF-8
/// is replaced with U+FFFD and a line saying so is added. Directories (unless
/// [`listing_directories`](Self::listing_directories), which lists them as `ls` does, with
/// `limit` as the entry limit and [`LsDetails`](crate::ls::LsDetails) as details), FIFOs,
/// sockets and devices are refused without being opened for reading.
#[derive(Debug, Clone)]
pub struct ReadTool {
    workspace: Workspace,
    description: String,
    lists_directories: bool,
}

impl ReadTool {
    /// A `read` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        let limits = workspace.limits();
        let description = format!(
            "Read the contents of a file in the workspace. Text output is truncated to {} lines \
             or {} (whichever is hit first); use offset/limit for large files, and continue with \
             offset until complete. Images (png, jpeg, gif, webp) are returned as attachments.",
            limits.max_lines.max(1),
            format_size(limits.max_bytes.max(1) as u64),
        );
        Self {
            workspace,
            description,
            lists_directories: false,
        }
    }

    /// A directory given to `read` is listed as `ls` lists it instead of refused (pi refuses
    /// it). Small models read a directory to see what is in it, and an error is where they
    /// stop: the embedded model echoed "Cannot read src: it is a directory" as its answer to
    /// "how many .py files are in src", and counted them from the listing. The `small` prompt
    /// profile turns this on.
    pub fn listing_directories(mut self) -> Self {
        self.lists_directories = true;
        self
    }

    /// The workspace it reads from.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }
}

impl AgentTool for ReadTool {
    type Args = ReadArgs;

    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: ReadArgs,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        let workspace = self.workspace.clone();
        let lists_directories = self.lists_directories;
        tokio::task::spawn_blocking(move || {
            if lists_directories && is_directory(&workspace, &args.path) {
                // The caller's `limit` is the entry limit, so the listing's own notice
                // ("Use limit=1000 for more") works when followed with `read`.
                let ls = crate::ls::LsArgs {
                    path: Some(args.path.clone()),
                    limit: args.limit.map(NonZeroU64::get),
                };
                return crate::ls::list(&workspace, &ls, &cancel);
            }
            read_file(&workspace, &args, cancel)
        })
        .await
        .map_err(|e| ToolError::new(format!("Cannot read: the read task failed: {e}")))?
    }
}

/// A reader that counts the bytes it returns.
struct Counting<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

fn refuse_non_file(shown: &str, file_type: &fs::FileType) -> Result<(), ToolError> {
    if file_type.is_file() {
        Ok(())
    } else if file_type.is_dir() {
        Err(ToolError::new(format!(
            "Cannot read {shown}: it is a directory"
        )))
    } else {
        Err(ToolError::new(format!(
            "Cannot read {shown}: it is {}, not a regular file",
            kind_name(file_type)
        )))
    }
}

fn is_not_found(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn outside(shown: &str) -> ToolError {
    ToolError::new(
        PathError::Outside {
            path: shown.to_string(),
        }
        .to_string(),
    )
}

/// Whether `shown` names a directory the workspace lets `read` see (links followed; `ls`
/// checks again, beneath its handle on the root).
fn is_directory(workspace: &Workspace, shown: &str) -> bool {
    workspace
        .resolve_readable(shown)
        .is_ok_and(|resolved| fs::metadata(resolved).is_ok_and(|meta| meta.is_dir()))
}

/// Reads as the tool does, on the calling thread.
fn read_file(
    workspace: &Workspace,
    args: &ReadArgs,
    cancel: CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let shown = args.path.as_str();
    let resolved = workspace
        .resolve_readable(shown)
        .map_err(|e| ToolError::new(e.to_string()))?;
    let cannot = |e: io::Error| ToolError::new(format!("Cannot read {shown}: {e}"));
    let not_found = || ToolError::new(format!("File not found: {shown}"));

    // Decide on the type before opening: a FIFO or device is never opened.
    match fs::symlink_metadata(&resolved) {
        Ok(meta) => refuse_non_file(shown, &meta.file_type())?,
        Err(e) if is_not_found(&e) => return Err(not_found()),
        Err(e) => return Err(cannot(e)),
    }
    let file = match open_read_nofollow(&resolved) {
        Ok(file) => file,
        Err(e) if is_not_found(&e) => return Err(not_found()),
        Err(e) if is_symlink_refusal(&e) => return Err(outside(shown)),
        Err(e) => return Err(cannot(e)),
    };
    // The path may have been swapped since the check: confirm on the handle itself.
    let meta = file.metadata().map_err(cannot)?;
    refuse_non_file(shown, &meta.file_type())?;
    if opened_path(&file).is_some_and(|real| !workspace.contains_readable(&real)) {
        return Err(outside(shown));
    }

    let mut head = Vec::new();
    (&file)
        .take(SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(cannot)?;
    let relative = workspace.display_relative(&resolved);
    if let Some(mime_type) = image_mime_type(&head) {
        return read_image(
            workspace,
            &file,
            head,
            meta.len(),
            mime_type,
            shown,
            relative,
        );
    }
    if head.contains(&0) {
        return Err(binary(shown));
    }

    let limits = workspace.limits();
    let start_line = args.offset.map_or(1, NonZeroU64::get);
    let request = Request {
        start: start_line - 1,
        limit: args.limit.map(NonZeroU64::get),
        max_lines: u64::try_from(limits.max_lines).unwrap_or(u64::MAX),
        max_bytes: limits.max_bytes,
        max_scan_bytes: limits.max_scan_bytes,
        size_hint: Some(meta.len()),
    };
    let counting = Counting {
        inner: &file,
        count: head.len() as u64,
    };
    let reader = BufReader::with_capacity(BUFFER_BYTES, io::Cursor::new(head).chain(counting));
    let mut cursor = LineCursor::new(reader, cancel);
    let window = read_window(&mut cursor, &request).map_err(|e| match e {
        WindowError::BeyondEnd { total } => ToolError::new(format!(
            "Offset {start_line} is beyond end of file ({total} lines total)"
        )),
        WindowError::Cancelled => ToolError::new("Operation aborted"),
        WindowError::Io(e) => cannot(e),
    })?;
    if window.text.contains('\0') {
        return Err(binary(shown));
    }
    let bytes_read = cursor.get_ref().get_ref().get_ref().1.count;
    let (text, details) = render(&window, start_line, limits.max_bytes.max(1));
    let details = ReadDetails::Text(TextDetails {
        path: relative,
        bytes_read,
        ..details
    });
    Ok(AgentToolResult::text(text).with_details(to_json(&details)))
}

fn binary(shown: &str) -> ToolError {
    ToolError::new(format!(
        "Cannot read {shown}: it is a binary file (only text and png, jpeg, gif or webp images \
         can be read)"
    ))
}

/// The text sent to the model for `window`, and the details (path and bytes read left blank).
fn render(window: &Window, start: u64, max_bytes: usize) -> (String, TextDetails) {
    let end = start.saturating_add(window.lines.saturating_sub(1));
    let next = end.saturating_add(1);
    let limit = format_size(max_bytes as u64);
    let total = window.total_lines;
    let (notice, truncated_by, next_offset) = match (window.long_line, window.stop) {
        (Some(long), _) => {
            let size = long.line_bytes.map_or_else(
                || format!("Line {start} is over"),
                |bytes| format!("Line {start} is {}, over", format_size(bytes)),
            );
            let next_offset = (total != Some(start)).then_some(start.saturating_add(1));
            let next_text = next_offset
                .map(|n| format!(" Use offset={n} for the next line."))
                .unwrap_or_default();
            let shown = format_size(long.shown_bytes as u64);
            let notice =
                format!("[{size} the {limit} limit; showing only its first {shown}.{next_text}]");
            (Some(notice), Some(TruncatedBy::LongLine), next_offset)
        }
        (None, Stop::End) => (None, None, None),
        (None, Stop::Lines) => {
            let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
            let notice =
                format!("[Showing lines {start}-{end}{of}. Use offset={next} to continue.]");
            (Some(notice), Some(TruncatedBy::Lines), Some(next))
        }
        (None, Stop::Bytes) => {
            let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
            let notice = format!(
                "[Showing lines {start}-{end}{of} ({limit} limit). Use offset={next} to continue.]"
            );
            (Some(notice), Some(TruncatedBy::Bytes), Some(next))
        }
        (None, Stop::Limit) => {
            let more = total.map_or_else(
                || "More lines".to_string(),
                |t| format!("{} more lines", t.saturating_sub(end)),
            );
            let notice = format!("[{more} in file. Use offset={next} to continue.]");
            (Some(notice), Some(TruncatedBy::Limit), Some(next))
        }
    };
    let mut notes: Vec<String> = notice.into_iter().collect();
    if window.invalid_utf8 {
        notes.push("[Invalid UTF-8 in the file was replaced with U+FFFD.]".to_string());
    }
    let text = if notes.is_empty() {
        if window.text.is_empty() {
            "[Empty file]".to_string()
        } else {
            window.text.clone()
        }
    } else {
        // As pi does, even when the body is a single empty line.
        let body = window.text.strip_suffix('\n').unwrap_or(&window.text);
        format!("{body}\n\n{}", notes.join("\n"))
    };
    let details = TextDetails {
        path: String::new(),
        start_line: start,
        lines: window.lines,
        total_lines: total,
        truncated_by,
        next_offset,
        bytes_read: 0,
        invalid_utf8: window.invalid_utf8,
    };
    (text, details)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_describes_the_arguments() {
        let tool = oxpi_ai::tool::tool_definition::<ReadArgs>("read", "d").unwrap();
        let props = &tool.parameters["properties"];
        assert_eq!(tool.parameters["required"], serde_json::json!(["path"]));
        assert_eq!(tool.parameters["additionalProperties"], false);
        assert_eq!(props["offset"]["minimum"], 1);
        assert_eq!(props["limit"]["minimum"], 1);
        assert_eq!(
            props["offset"]["description"],
            "Line number to start reading from (1-indexed)."
        );
    }
}
