//! The bytes of a session file, read once and shared: every entry read from the file keeps a
//! slice of them (no copy per line), and every context message read from an entry keeps a
//! slice of its entry's (no copy per context).

use std::ops::Range;
use std::sync::Arc;

/// A range of a shared buffer (a session file's bytes, at most
/// [`MAX_SESSION_FILE_BYTES`](crate::MAX_SESSION_FILE_BYTES), or one line's own bytes).
#[derive(Clone)]
pub(crate) struct Text {
    buf: Arc<Vec<u8>>,
    start: u32,
    end: u32,
}

/// An offset as stored (a session file is at most 1 GiB).
fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

impl Text {
    /// `range` of `buf` (clamped to the buffer).
    pub(crate) fn new(buf: &Arc<Vec<u8>>, range: Range<usize>) -> Self {
        let end = range.end.min(buf.len());
        Self {
            buf: Arc::clone(buf),
            start: offset(range.start.min(end)),
            end: offset(end),
        }
    }

    /// A buffer of its own.
    pub(crate) fn owned(bytes: Vec<u8>) -> Self {
        let end = offset(bytes.len());
        Self {
            buf: Arc::new(bytes),
            start: 0,
            end,
        }
    }

    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.buf
            .get(self.start as usize..self.end as usize)
            .unwrap_or_default()
    }

    /// The bytes as text (empty when they are not UTF-8, which a parsed line always is).
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(self.bytes()).unwrap_or("")
    }

    /// The part of this text at `range` (relative to its start).
    pub(crate) fn slice(&self, range: Range<usize>) -> Self {
        let end = self.end.min(self.start.saturating_add(offset(range.end)));
        Self {
            buf: Arc::clone(&self.buf),
            start: end.min(self.start.saturating_add(offset(range.start))),
            end,
        }
    }

    /// The part of this text at `span` (relative to its start) as text; `None` for no span.
    pub(crate) fn field(&self, span: Option<Span>) -> Option<&str> {
        let span = span?;
        let bytes = self.bytes().get(span.start as usize..span.end as usize)?;
        std::str::from_utf8(bytes).ok()
    }
}

/// Where a string field's text lies in its line (a string without escapes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    end: u32,
}

impl Span {
    /// The span of `part`, a slice of `whole`; `None` when it is not one.
    pub(crate) fn of(whole: &str, part: &str) -> Option<Self> {
        let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
        let end = start.checked_add(part.len())?;
        (end <= whole.len()).then(|| Self {
            start: offset(start),
            end: offset(end),
        })
    }

    /// As a range of `usize`.
    pub(crate) fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}
