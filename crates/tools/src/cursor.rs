//! A line-aware cursor over a [`BufRead`]: skips, reads and counts lines in bounded memory,
//! checking a cancellation token before every buffer fill.

use std::io::BufRead;

use tokio_util::sync::CancellationToken;

use crate::window_error::WindowError;

/// How `LineCursor::read_line` ended.
pub(crate) enum LineRead {
    /// No more lines.
    Eof,
    /// The whole line was read; `newline` tells whether it ended with `\n`.
    Complete { newline: bool },
    /// The line is longer than `keep`; the cursor stays inside it.
    Cut,
}

/// A [`BufRead`] that knows how many `\n` it has consumed and whether it stands at a line start.
pub(crate) struct LineCursor<R> {
    inner: R,
    newlines: u64,
    at_line_start: bool,
    consumed: u64,
    cancel: CancellationToken,
}

impl<R: BufRead> LineCursor<R> {
    /// A cursor at the start of `inner`; `cancel` is checked before every buffer fill.
    pub(crate) fn new(inner: R, cancel: CancellationToken) -> Self {
        Self {
            inner,
            newlines: 0,
            at_line_start: true,
            consumed: 0,
            cancel,
        }
    }

    /// The wrapped reader.
    pub(crate) fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Bytes consumed so far.
    pub(crate) fn consumed(&self) -> u64 {
        self.consumed
    }

    fn fill(&mut self) -> Result<&[u8], WindowError> {
        if self.cancel.is_cancelled() {
            return Err(WindowError::Cancelled);
        }
        Ok(self.inner.fill_buf()?)
    }

    /// Consumes `n` bytes of the buffer, of which `newlines` are `\n`, the last being `last`.
    fn advance(&mut self, n: usize, newlines: u64, last: u8) {
        self.inner.consume(n);
        self.consumed += n as u64;
        self.newlines += newlines;
        self.at_line_start = last == b'\n';
    }

    /// Total lines, once the end has been reached.
    pub(crate) fn total_at_end(&self) -> u64 {
        self.newlines + u64::from(!self.at_line_start)
    }

    /// Skips one line; `false` if there was none.
    pub(crate) fn skip_line(&mut self) -> Result<bool, WindowError> {
        let mut any = false;
        loop {
            let buf = self.fill()?;
            let Some(&last) = buf.last() else {
                return Ok(any);
            };
            any = true;
            match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.advance(i + 1, 1, b'\n');
                    return Ok(true);
                }
                None => {
                    let n = buf.len();
                    self.advance(n, 0, last);
                }
            }
        }
    }

    /// Reads the current line into `out` (without its `\n`), keeping at most `keep` bytes.
    pub(crate) fn read_line(
        &mut self,
        keep: usize,
        out: &mut Vec<u8>,
    ) -> Result<LineRead, WindowError> {
        out.clear();
        let mut started = false;
        loop {
            let room = keep.saturating_sub(out.len());
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok(if started {
                    LineRead::Complete { newline: false }
                } else {
                    LineRead::Eof
                });
            }
            started = true;
            if room == 0 {
                if buf[0] == b'\n' {
                    self.advance(1, 1, b'\n');
                    return Ok(LineRead::Complete { newline: true });
                }
                return Ok(LineRead::Cut);
            }
            let part = &buf[..room.min(buf.len())];
            match part.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    out.extend_from_slice(&part[..i]);
                    self.advance(i + 1, 1, b'\n');
                    return Ok(LineRead::Complete { newline: true });
                }
                None => {
                    out.extend_from_slice(part);
                    let (n, last) = (part.len(), part.last().copied().unwrap_or(0));
                    self.advance(n, 0, last);
                }
            }
        }
    }

    /// Whether any data is left.
    pub(crate) fn has_more(&mut self) -> Result<bool, WindowError> {
        Ok(!self.fill()?.is_empty())
    }

    /// Reads on, at most `budget` bytes, counting lines. Returns the total number of lines if
    /// the end was reached, and the bytes left in the current line if its end was reached.
    pub(crate) fn count_rest(
        &mut self,
        budget: u64,
    ) -> Result<(Option<u64>, Option<u64>), WindowError> {
        let mut line_rest: Option<u64> = None;
        let mut run = 0u64;
        let mut scanned = 0u64;
        loop {
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok((Some(self.total_at_end()), Some(line_rest.unwrap_or(run))));
            }
            if scanned >= budget {
                return Ok((None, line_rest));
            }
            let n = buf
                .len()
                .min(usize::try_from(budget - scanned).unwrap_or(usize::MAX));
            let chunk = &buf[..n];
            let newlines = chunk.iter().filter(|&&b| b == b'\n').count() as u64;
            if line_rest.is_none() {
                match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => line_rest = Some(run + i as u64),
                    None => run += n as u64,
                }
            }
            let last = chunk.last().copied().unwrap_or(0);
            self.advance(n, newlines, last);
            scanned += n as u64;
        }
    }
}
