//! Streaming selection of a window of lines from any [`BufRead`], in bounded memory.
//!
//! A line ends at `\n` (kept in the output as in the file) or at the end of the data; a final
//! `\n` does not start another line, so `"a\nb\n"` and `"a\nb"` both have 2 lines and an empty
//! file has none. The window holds whole lines, as many as fit in the line and byte limits, each
//! counted with its `\n`, so the text returned never exceeds the byte limit; only a first line
//! longer than the byte limit is cut (at a character boundary). The reader reads the lines it
//! skips and returns, then at most `max_scan_bytes` more to count the rest.

use std::io::BufRead;

use crate::cursor::{LineCursor, LineRead};
use crate::window_error::WindowError;

/// What a window asks for.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// 0-based index of the first line.
    pub start: u64,
    /// The caller's own maximum number of lines.
    pub limit: Option<u64>,
    /// Maximum number of lines returned.
    pub max_lines: u64,
    /// Maximum number of bytes of text returned.
    pub max_bytes: usize,
    /// Maximum number of bytes read past the window to count the remaining lines.
    pub max_scan_bytes: u64,
    /// Total size of the data, if known; counting is skipped when the rest exceeds the scan
    /// budget.
    pub size_hint: Option<u64>,
}

/// Why the window ends where it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// At the end of the data.
    End,
    /// The caller's `limit`, with more lines after.
    Limit,
    /// The line limit, with more lines after.
    Lines,
    /// The next line does not fit in the byte limit.
    Bytes,
}

/// The first line alone was longer than the byte limit and is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LongLine {
    /// Bytes of the line shown.
    pub shown_bytes: usize,
    /// Length of the whole line in bytes (without its `\n`), if it was scanned to its end.
    pub line_bytes: Option<u64>,
}

/// A window of lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    /// The text, as in the data (invalid UTF-8 replaced by U+FFFD).
    pub text: String,
    /// Whole lines in `text`.
    pub lines: u64,
    /// Set when `text` is the beginning of a single over-long line.
    pub long_line: Option<LongLine>,
    /// Why the window ends.
    pub stop: Stop,
    /// Lines in the whole data, unless counting them would exceed the scan budget.
    pub total_lines: Option<u64>,
    /// Whether invalid UTF-8 was replaced in `text`.
    pub invalid_utf8: bool,
}

/// Drops an incomplete UTF-8 sequence at the end of `bytes` (left by cutting a line).
fn trim_incomplete_tail(bytes: &[u8]) -> &[u8] {
    let len = bytes.len();
    for back in 1..=len.min(4) {
        let b = bytes[len - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let need = match b {
            0xF8.. => 1, // never valid: nothing to wait for
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if need > back {
            &bytes[..len - back]
        } else {
            bytes
        };
    }
    bytes
}

/// The longest prefix of `text` of at most `max` bytes that ends at a character boundary.
fn truncate_at_char(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

/// Reads the window `req` asks for.
pub(crate) fn read_window<R: BufRead>(
    cursor: &mut LineCursor<R>,
    req: &Request,
) -> Result<Window, WindowError> {
    for skipped in 0..req.start {
        if !cursor.skip_line()? {
            return Err(WindowError::BeyondEnd { total: skipped });
        }
    }
    let max_lines = req.max_lines.max(1);
    let max_bytes = req.max_bytes.max(1);
    let mut text = String::new();
    let mut raw = Vec::new();
    let mut lines = 0u64;
    let mut invalid_utf8 = false;
    let mut long_line = None;
    let mut cut = false;
    let mut stop = loop {
        if req.limit.is_some_and(|limit| lines >= limit) {
            break Stop::Limit;
        }
        if lines >= max_lines {
            break Stop::Lines;
        }
        let room = max_bytes.saturating_sub(text.len());
        let read = cursor.read_line(room, &mut raw)?;
        let newline = match read {
            LineRead::Eof => break Stop::End,
            LineRead::Complete { newline } => newline,
            LineRead::Cut => {
                cut = true;
                false
            }
        };
        let decoded = String::from_utf8_lossy(if cut {
            trim_incomplete_tail(&raw)
        } else {
            &raw
        });
        let replaced = matches!(decoded, std::borrow::Cow::Owned(_));
        if !cut && text.len() + decoded.len() + usize::from(newline) <= max_bytes {
            text.push_str(&decoded);
            if newline {
                text.push('\n');
            }
            invalid_utf8 |= replaced;
            lines += 1;
            if !newline {
                break Stop::End;
            }
            continue;
        }
        if lines == 0 && !cut && decoded.len() <= max_bytes {
            // Only its `\n` does not fit: show the line, which is the whole window.
            text.push_str(&decoded);
            invalid_utf8 |= replaced;
            lines = 1;
            break if cursor.has_more()? {
                Stop::Bytes
            } else {
                Stop::End
            };
        }
        if lines == 0 {
            let mut shown = decoded.into_owned();
            truncate_at_char(&mut shown, max_bytes);
            long_line = Some(LongLine {
                shown_bytes: shown.len(),
                line_bytes: (!cut).then_some(raw.len() as u64),
            });
            text = shown;
            invalid_utf8 |= replaced;
        }
        break Stop::Bytes;
    };
    if lines == 0 && stop == Stop::End && req.start > 0 {
        return Err(WindowError::BeyondEnd { total: req.start });
    }
    if matches!(stop, Stop::Limit | Stop::Lines) && !cursor.has_more()? {
        stop = Stop::End;
    }
    let total_lines = if stop == Stop::End {
        Some(cursor.total_at_end())
    } else {
        let rest = req
            .size_hint
            .map(|size| size.saturating_sub(cursor.consumed()));
        if rest.is_some_and(|rest| rest > req.max_scan_bytes) {
            None
        } else {
            let (total, line_rest) = cursor.count_rest(req.max_scan_bytes)?;
            if let (Some(long), true) = (long_line.as_mut(), cut) {
                long.line_bytes = line_rest.map(|rest| raw.len() as u64 + rest);
            }
            total
        }
    };
    Ok(Window {
        text,
        lines,
        long_line,
        stop,
        total_lines,
        invalid_utf8,
    })
}

#[cfg(test)]
mod tests {
    use tokio_util::sync::CancellationToken;

    use super::*;

    fn window(data: &[u8], req: Request) -> Result<Window, WindowError> {
        let mut cursor = LineCursor::new(data, CancellationToken::new());
        read_window(&mut cursor, &req)
    }

    fn req(start: u64, limit: Option<u64>, max_lines: u64, max_bytes: usize) -> Request {
        Request {
            start,
            limit,
            max_lines,
            max_bytes,
            max_scan_bytes: u64::MAX,
            size_hint: None,
        }
    }

    #[test]
    fn whole_data_is_returned_as_is() {
        let w = window(b"a\nb\n", req(0, None, 10, 100)).unwrap();
        assert_eq!(
            w,
            Window {
                text: "a\nb\n".into(),
                lines: 2,
                long_line: None,
                stop: Stop::End,
                total_lines: Some(2),
                invalid_utf8: false,
            }
        );
        let w = window(b"a\nb", req(0, None, 10, 100)).unwrap();
        assert_eq!((w.text.as_str(), w.total_lines), ("a\nb", Some(2)));
        let w = window(b"", req(0, None, 10, 100)).unwrap();
        assert_eq!((w.text.as_str(), w.total_lines), ("", Some(0)));
    }

    #[test]
    fn byte_limit_counts_newlines() {
        // "abc\n" is 4 bytes: it fits exactly in 4, then "de" does not.
        let w = window(b"abc\nde\n", req(0, None, 10, 4)).unwrap();
        assert_eq!(
            (w.text.as_str(), w.lines, w.stop, w.total_lines),
            ("abc\n", 1, Stop::Bytes, Some(2))
        );
    }

    #[test]
    fn long_first_line_is_cut_at_a_char_boundary() {
        let w = window("ééééé\nx".as_bytes(), req(0, None, 10, 5)).unwrap();
        assert_eq!(w.text, "éé");
        assert_eq!(
            w.long_line,
            Some(LongLine {
                shown_bytes: 4,
                line_bytes: Some(10)
            })
        );
        assert_eq!(
            (w.stop, w.total_lines, w.invalid_utf8),
            (Stop::Bytes, Some(2), false)
        );
    }

    #[test]
    fn beyond_end_reports_total() {
        let err = window(b"a\nb\n", req(5, None, 10, 100)).unwrap_err();
        assert!(
            matches!(err, WindowError::BeyondEnd { total: 2 }),
            "{err:?}"
        );
        let err = window(b"a\nb\n", req(2, None, 10, 100)).unwrap_err();
        assert!(
            matches!(err, WindowError::BeyondEnd { total: 2 }),
            "{err:?}"
        );
    }

    #[test]
    fn scan_budget_leaves_total_unknown() {
        let data = "x\n".repeat(100);
        let mut r = req(0, None, 10, 1000);
        r.max_scan_bytes = 50;
        let w = window(data.as_bytes(), r.clone()).unwrap();
        assert_eq!((w.lines, w.stop, w.total_lines), (10, Stop::Lines, None));
        r.size_hint = Some(200);
        let mut cursor = LineCursor::new(data.as_bytes(), CancellationToken::new());
        let w = read_window(&mut cursor, &r).unwrap();
        assert_eq!(w.total_lines, None);
        // Skipped counting entirely: only the 10 lines were consumed.
        assert_eq!(cursor.consumed(), 20);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_flagged() {
        let w = window(b"ok\n\xff\xfe\n", req(0, None, 10, 100)).unwrap();
        assert_eq!(
            (w.text.as_str(), w.invalid_utf8),
            ("ok\n\u{fffd}\u{fffd}\n", true)
        );
    }

    #[test]
    fn cancelled_token_stops_reading() {
        let token = CancellationToken::new();
        token.cancel();
        let mut cursor = LineCursor::new(&b"a\n"[..], token);
        let err = read_window(&mut cursor, &req(0, None, 10, 100)).unwrap_err();
        assert!(matches!(err, WindowError::Cancelled));
    }

    #[test]
    fn incomplete_tail_is_trimmed() {
        assert_eq!(trim_incomplete_tail("aé".as_bytes()), "aé".as_bytes());
        assert_eq!(trim_incomplete_tail(&"aé".as_bytes()[..2]), b"a");
        assert_eq!(trim_incomplete_tail(&"a😀".as_bytes()[..4]), b"a");
        assert_eq!(trim_incomplete_tail(b"\xff"), b"\xff");
    }
}
