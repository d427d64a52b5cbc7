//! The output of one `bash` command: a bounded tail in memory, the full output in a file once it
//! is over the limits, and pi's tail truncation.
//!
//! Bytes that are not UTF-8 are shown as U+FFFD, so the limits, the totals and the cut all count
//! the decoded text, as pi's do: 30,000 bytes 0xFF are 90,000 bytes of text, over the 50 KB
//! limit, and are cut with the notice and the full-output file (which keeps the raw bytes).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::workspace::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES};

/// How much of the output [`BashDetails::output`](crate::BashDetails::output) carries (pi's
/// `STRUCTURED_OUTPUT_MAX_BYTES`): longer output keeps its first and last half.
pub(crate) const STRUCTURED_OUTPUT_MAX_BYTES: u64 = 1024 * 1024;

/// What was cut from the output shown to the model (pi's `TruncationResult`, without its
/// `content`, which is the result's text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashTruncation {
    /// Whether anything was left out.
    pub truncated: bool,
    /// Which limit cut it: `"lines"` or `"bytes"` (`None` when nothing was cut).
    pub truncated_by: Option<String>,
    /// Lines of the whole output (a last line without a line break counts).
    pub total_lines: u64,
    /// Bytes of the whole output.
    pub total_bytes: u64,
    /// Lines shown.
    pub output_lines: u64,
    /// Bytes shown.
    pub output_bytes: u64,
    /// Whether the text shown is the end of one line longer than the byte limit.
    pub last_line_partial: bool,
    /// Always `false` for a tail (pi's field of head truncation).
    pub first_line_exceeds_limit: bool,
    /// The line limit.
    pub max_lines: u64,
    /// The byte limit.
    pub max_bytes: u64,
}

/// The end of `content` within the limits (pi's `truncateTail`): whole lines, or the end of the
/// last line when it alone is over the byte limit.
pub(crate) fn truncate_tail(content: &str, max_lines: usize, max_bytes: usize) -> (String, Tail) {
    let mut lines: Vec<&str> = if content.is_empty() {
        Vec::new()
    } else {
        content.split('\n').collect()
    };
    if content.ends_with('\n') {
        lines.pop();
    }
    if lines.len() <= max_lines && content.len() <= max_bytes {
        let tail = Tail {
            truncated_by: None,
            output_lines: lines.len() as u64,
            output_bytes: content.len() as u64,
            last_line_partial: false,
        };
        return (content.to_string(), tail);
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0usize;
    let mut by = "lines";
    let mut partial = false;
    for line in lines.iter().rev() {
        if kept.len() >= max_lines {
            break;
        }
        let cost = line.len() + usize::from(!kept.is_empty());
        if bytes + cost > max_bytes {
            by = "bytes";
            if kept.is_empty() {
                let end = end_within(line, max_bytes);
                bytes = end.len();
                kept.push(end);
                partial = true;
            }
            break;
        }
        kept.push(line);
        bytes += cost;
    }
    if kept.len() >= max_lines && bytes <= max_bytes {
        by = "lines";
    }
    kept.reverse();
    let text = kept.join("\n");
    let tail = Tail {
        truncated_by: Some(by),
        output_lines: kept.len() as u64,
        output_bytes: text.len() as u64,
        last_line_partial: partial,
    };
    (text, tail)
}

/// The last at most `max` bytes of `line`, starting at a character boundary.
fn end_within(line: &str, max: usize) -> &str {
    let mut start = line.len().saturating_sub(max);
    while !line.is_char_boundary(start) {
        start += 1;
    }
    &line[start..]
}

/// What [`truncate_tail`] kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tail {
    pub truncated_by: Option<&'static str>,
    pub output_lines: u64,
    pub output_bytes: u64,
    pub last_line_partial: bool,
}

/// A view of the output so far: the text for the model and what was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub text: String,
    pub truncation: BashTruncation,
    pub full_output_path: Option<PathBuf>,
}

/// Collects a command's output with bounded memory (pi's `OutputAccumulator`): the last
/// 2–4 × `max_bytes` bytes stay in memory for snapshots; once the output is over a limit,
/// everything (from the first byte) goes to a file in `dir` and nothing more is kept in memory.
#[derive(Debug)]
pub(crate) struct OutputAccumulator {
    max_lines: usize,
    max_bytes: usize,
    max_rolling: usize,
    dir: PathBuf,
    /// The output while it is small enough to need no file.
    head: Vec<u8>,
    tail: Vec<u8>,
    tail_starts_at_line: bool,
    /// Bytes received.
    raw_bytes: u64,
    /// Bytes of the text they decode to (pi's `totalDecodedBytes`).
    total_bytes: u64,
    /// The start of a character the next chunk may complete (at most 3 bytes).
    pending: Vec<u8>,
    completed_lines: u64,
    /// Decoded bytes of the line still open.
    current_line_bytes: u64,
    file: Option<(PathBuf, BufWriter<File>)>,
    file_error: Option<String>,
    finished: bool,
}

impl OutputAccumulator {
    /// An empty output, with pi's limits; a full-output file would go to `dir`.
    pub(crate) fn new(dir: &Path) -> Self {
        Self::with_limits(dir, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES)
    }

    pub(crate) fn with_limits(dir: &Path, max_lines: usize, max_bytes: usize) -> Self {
        Self {
            max_lines,
            max_bytes,
            max_rolling: (max_bytes * 2).max(1),
            dir: dir.to_path_buf(),
            head: Vec::new(),
            tail: Vec::new(),
            tail_starts_at_line: true,
            raw_bytes: 0,
            total_bytes: 0,
            pending: Vec::new(),
            completed_lines: 0,
            current_line_bytes: 0,
            file: None,
            file_error: None,
            finished: false,
        }
    }

    /// Adds a chunk of output.
    pub(crate) fn append(&mut self, data: &[u8]) {
        if data.is_empty() || self.finished {
            return;
        }
        self.raw_bytes += data.len() as u64;
        let newlines = memchr::memchr_iter(b'\n', data).count() as u64;
        match memchr::memrchr(b'\n', data) {
            Some(last) => {
                // A line break ends any character that was pending.
                let lines = decoded_len(&mut self.pending, &data[..=last]);
                let open = decoded_len(&mut self.pending, &data[last + 1..]);
                self.total_bytes += lines + open;
                self.completed_lines += newlines;
                self.current_line_bytes = open;
            }
            None => {
                let open = decoded_len(&mut self.pending, data);
                self.total_bytes += open;
                self.current_line_bytes += open;
            }
        }
        self.tail.extend_from_slice(data);
        if self.tail.len() > self.max_rolling * 2 {
            self.trim_tail();
        }
        if self.file.is_some() || self.needs_file() {
            self.ensure_file();
            self.write_file(data);
        } else {
            self.head.extend_from_slice(data);
        }
    }

    /// Lines so far (a last line without a line break counts).
    fn total_lines(&self) -> u64 {
        self.completed_lines + u64::from(self.current_line_bytes > 0)
    }

    /// Whether the output is cut (pi: by decoded bytes or lines).
    fn over_limits(&self) -> bool {
        self.total_bytes > self.max_bytes as u64 || self.total_lines() > self.max_lines as u64
    }

    /// Whether the full output goes to a file (pi: raw or decoded bytes, or lines, over).
    fn needs_file(&self) -> bool {
        self.raw_bytes > self.max_bytes as u64 || self.over_limits()
    }

    /// Bytes held in memory (the tail and, while there is no file, the output so far).
    #[cfg(test)]
    pub(crate) fn retained_bytes(&self) -> usize {
        self.tail.capacity() + self.head.capacity()
    }

    /// Bytes of the line still open at the end of the output.
    pub(crate) fn last_line_bytes(&self) -> u64 {
        self.current_line_bytes
    }

    fn trim_tail(&mut self) {
        let mut start = self.tail.len() - self.max_rolling;
        while start < self.tail.len() && (self.tail[start] & 0xc0) == 0x80 {
            start += 1;
        }
        if start > 0 {
            self.tail_starts_at_line = self.tail[start - 1] == b'\n';
        }
        self.tail.drain(..start);
    }

    fn ensure_file(&mut self) {
        if self.file.is_some() || self.file_error.is_some() {
            return;
        }
        match create_output_file(&self.dir) {
            Ok((path, file)) => {
                let mut writer = BufWriter::with_capacity(64 * 1024, file);
                let head = std::mem::take(&mut self.head);
                if let Err(e) = writer.write_all(&head) {
                    self.file_error = Some(e.to_string());
                    return;
                }
                self.file = Some((path, writer));
            }
            Err(e) => {
                self.file_error = Some(format!(
                    "could not create a file in {}: {e}",
                    self.dir.display()
                ))
            }
        }
        self.head = Vec::new();
    }

    fn write_file(&mut self, data: &[u8]) {
        if let Some((_, writer)) = &mut self.file {
            if let Err(e) = writer.write_all(data) {
                self.file_error = Some(e.to_string());
                self.file = None;
            }
        }
    }

    /// Ends the output: flushes the file.
    pub(crate) fn finish(&mut self) {
        self.finished = true;
        if !self.pending.is_empty() {
            // A character never completed: one U+FFFD.
            self.pending.clear();
            self.total_bytes += REPLACEMENT_LEN;
            self.current_line_bytes += REPLACEMENT_LEN;
        }
        if self.needs_file() {
            self.ensure_file();
        }
        if let Some((_, writer)) = &mut self.file {
            if let Err(e) = writer.flush() {
                self.file_error = Some(e.to_string());
            }
        }
    }

    /// Why the full output could not be kept, if it could not.
    pub(crate) fn file_error(&self) -> Option<&str> {
        self.file_error.as_deref()
    }

    /// The text to show now and what was cut.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut bytes: &[u8] = &self.tail;
        if !self.tail_starts_at_line {
            // The first, partial line is dropped, unless it is all there is (one long line
            // that ends in a newline keeps its end, as pi's does).
            if let Some(at) = memchr::memchr(b'\n', bytes) {
                if !bytes[at + 1..].is_empty() {
                    bytes = &bytes[at + 1..];
                }
            }
        }
        if !self.finished {
            bytes = complete_chars(bytes);
        }
        let decoded = String::from_utf8_lossy(bytes);
        let (text, tail) = truncate_tail(&decoded, self.max_lines, self.max_bytes);
        let truncated = self.over_limits();
        let truncated_by = truncated.then(|| {
            tail.truncated_by
                .unwrap_or(if self.total_bytes > self.max_bytes as u64 {
                    "bytes"
                } else {
                    "lines"
                })
                .to_string()
        });
        let truncation = BashTruncation {
            truncated,
            truncated_by,
            total_lines: self.total_lines(),
            total_bytes: self.total_bytes,
            output_lines: tail.output_lines,
            output_bytes: tail.output_bytes,
            last_line_partial: tail.last_line_partial,
            first_line_exceeds_limit: false,
            max_lines: self.max_lines as u64,
            max_bytes: self.max_bytes as u64,
        };
        Snapshot {
            text,
            truncation,
            full_output_path: self.file.as_ref().map(|(path, _)| path.clone()),
        }
    }

    /// The whole output up to `max` bytes; longer output keeps its first and last `max / 2`
    /// bytes around `[... N bytes omitted ...]` (pi's `readFullOutput`). Call after
    /// [`finish`](Self::finish). Returns the text and whether anything was omitted.
    pub(crate) fn full_output(&self, max: u64) -> (String, bool) {
        let Some((_, writer)) = &self.file else {
            return (String::from_utf8_lossy(&self.head).into_owned(), false);
        };
        let file = writer.get_ref();
        let size = self.raw_bytes;
        let read = |offset: u64, len: u64| -> io::Result<Vec<u8>> {
            let mut buf = vec![0u8; usize::try_from(len).unwrap_or(0)];
            file.read_exact_at(&mut buf, offset)?;
            Ok(buf)
        };
        if size <= max {
            return match read(0, size) {
                Ok(all) => (String::from_utf8_lossy(&all).into_owned(), false),
                Err(e) => (format!("[the full output could not be read: {e}]"), true),
            };
        }
        let head_len = max / 2;
        let tail_len = max - head_len;
        let (head, tail) = match (read(0, head_len), read(size - tail_len, tail_len)) {
            (Ok(h), Ok(t)) => (h, t),
            (Err(e), _) | (_, Err(e)) => {
                return (format!("[the full output could not be read: {e}]"), true)
            }
        };
        let head = complete_chars(&head);
        let skip = tail.iter().take_while(|b| (**b & 0xc0) == 0x80).count();
        let omitted = size - head_len - tail_len;
        let text = format!(
            "{}\n\n[... {omitted} bytes omitted ...]\n\n{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(&tail[skip..])
        );
        (text, true)
    }
}

/// Bytes of U+FFFD in UTF-8.
const REPLACEMENT_LEN: u64 = 3;

/// Bytes of the text `data` decodes to after `pending` (the start of a character left by the
/// previous chunk), each invalid sequence as one U+FFFD (as `String::from_utf8_lossy` and
/// pi's `TextDecoder`); leaves in `pending` a character `data` ends in the middle of.
fn decoded_len(pending: &mut Vec<u8>, data: &[u8]) -> u64 {
    let joined;
    let bytes: &[u8] = if pending.is_empty() {
        data
    } else {
        joined = [pending.as_slice(), data].concat();
        &joined
    };
    let mut carry: &[u8] = &[];
    let mut len = 0u64;
    let mut chunks = bytes.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        len += chunk.valid().len() as u64;
        let invalid = chunk.invalid();
        if invalid.is_empty() {
            continue;
        }
        let incomplete = chunks.peek().is_none()
            && matches!(std::str::from_utf8(invalid), Err(e) if e.error_len().is_none());
        if incomplete {
            carry = invalid;
        } else {
            len += REPLACEMENT_LEN;
        }
    }
    let carry = carry.to_vec();
    *pending = carry;
    len
}

/// `bytes` without an incomplete UTF-8 sequence at its end.
fn complete_chars(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes,
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        // Invalid bytes in the middle: keep them (they decode as U+FFFD), cut only a sequence
        // that the next chunk may complete.
        Err(_) => {
            let start = bytes.len().saturating_sub(3);
            let cut = (start..bytes.len())
                .rev()
                .find(|&i| bytes[i] & 0xc0 == 0xc0)
                .filter(|&i| {
                    let need = match bytes[i] {
                        b if b >= 0xf0 => 4,
                        b if b >= 0xe0 => 3,
                        _ => 2,
                    };
                    bytes.len() - i < need
                });
            &bytes[..cut.unwrap_or(bytes.len())]
        }
    }
}

/// A new file `<dir>/oxpi-bash-<16 hex digits>.log`, readable by the user only, never one that
/// already exists.
fn create_output_file(dir: &Path) -> io::Result<(PathBuf, File)> {
    let mut last = None;
    for _ in 0..8 {
        let path = dir.join(format!("oxpi-bash-{:016x}.log", random_u64()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free name")))
}

/// 64 random bits (from the standard library's randomly keyed hasher).
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole_without_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = OutputAccumulator::new(dir.path());
        out.append(b"hello\nwor");
        out.append(b"ld\n");
        out.finish();
        let snap = out.snapshot();
        assert_eq!(snap.text, "hello\nworld\n");
        assert!(!snap.truncation.truncated);
        assert_eq!(snap.truncation.total_lines, 2);
        assert_eq!(snap.full_output_path, None);
        assert_eq!(out.full_output(1024), ("hello\nworld\n".to_string(), false));
    }

    #[test]
    fn tail_keeps_the_last_lines_and_the_file_everything() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = OutputAccumulator::new(dir.path());
        let all: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        for chunk in all.as_bytes().chunks(7) {
            out.append(chunk);
        }
        out.finish();
        let snap = out.snapshot();
        let want: Vec<String> = (501..=2500).map(|i| i.to_string()).collect();
        assert_eq!(snap.text, want.join("\n"));
        assert_eq!(snap.truncation.truncated_by.as_deref(), Some("lines"));
        assert_eq!(snap.truncation.output_lines, 2000);
        let path = snap.full_output_path.unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), all);
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("oxpi-bash-"));
    }

    #[test]
    fn one_long_line_shows_its_end_at_a_char_boundary() {
        let (text, tail) = truncate_tail(&format!("a{}", "é".repeat(10)), 10, 5);
        assert_eq!(text, "éé");
        assert!(tail.last_line_partial);
        assert_eq!(tail.truncated_by, Some("bytes"));
    }

    #[test]
    fn a_gigabyte_keeps_memory_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = OutputAccumulator::new(dir.path());
        let chunk = "0123456789abcdef\n".repeat(4096); // 68 KiB
        let mut max_retained = 0;
        let mut total = 0u64;
        while total < 1 << 30 {
            out.append(chunk.as_bytes());
            total += chunk.len() as u64;
            max_retained = max_retained.max(out.retained_bytes());
        }
        out.finish();
        // The tail is trimmed past 4 × 50 KB; with the chunk appended before trimming and
        // Vec's growth, well under 1 MB ever stays in memory.
        assert!(max_retained < 1024 * 1024, "retained {max_retained} bytes");
        let snap = out.snapshot();
        assert_eq!(snap.truncation.total_bytes, total);
        assert_eq!(snap.truncation.total_lines, total / 17);
        let path = snap.full_output_path.unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), total);
        let (full, omitted) = out.full_output(STRUCTURED_OUTPUT_MAX_BYTES);
        assert!(omitted);
        assert!(full.len() < 1024 * 1024 + 100);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn bytes_that_are_not_utf8_count_as_the_text_they_decode_to() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = OutputAccumulator::new(dir.path());
        let raw = vec![0xffu8; 30_000];
        for chunk in raw.chunks(7) {
            out.append(chunk);
        }
        out.finish();
        let snap = out.snapshot();
        // Each byte decodes to U+FFFD (3 bytes): 90,000 bytes, over the 50 KB limit.
        let shown = (DEFAULT_MAX_BYTES / 3) as u64;
        assert_eq!(snap.text, "\u{fffd}".repeat(shown as usize));
        assert_eq!(
            snap.truncation,
            BashTruncation {
                truncated: true,
                truncated_by: Some("bytes".into()),
                total_lines: 1,
                total_bytes: 90_000,
                output_lines: 1,
                output_bytes: shown * 3,
                last_line_partial: true,
                first_line_exceeds_limit: false,
                max_lines: DEFAULT_MAX_LINES as u64,
                max_bytes: DEFAULT_MAX_BYTES as u64,
            }
        );
        assert_eq!(out.last_line_bytes(), 90_000);
        let path = snap.full_output_path.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), raw);
    }

    #[test]
    fn decoded_bytes_are_counted_across_chunk_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let mut all: Vec<u8> = Vec::new();
        for i in 0..200u32 {
            all.extend_from_slice("aé€😀\n".as_bytes());
            all.extend_from_slice(&[0xff, 0xe2, 0x82, b'x', 0xf0, 0x9f, (i % 256) as u8]);
        }
        all.extend_from_slice(&[0xe2, 0x82]);
        let want = String::from_utf8_lossy(&all).len() as u64;
        for size in [1, 2, 3, 5, 64, 100_000] {
            let mut out = OutputAccumulator::new(dir.path());
            for chunk in all.chunks(size) {
                out.append(chunk);
            }
            out.finish();
            assert_eq!(
                out.snapshot().truncation.total_bytes,
                want,
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn incomplete_chars_wait_for_the_next_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = OutputAccumulator::new(dir.path());
        out.append(&"é".as_bytes()[..1]);
        assert_eq!(out.snapshot().text, "");
        out.append(&"é".as_bytes()[1..]);
        assert_eq!(out.snapshot().text, "é");
    }
}
