//! Why reading a window of lines failed: the one error of the line cursor (`cursor`) and of the
//! window reader (`text`), which the `read` tool turns into its messages.

use std::io;

/// Why a window failed.
#[derive(Debug)]
pub(crate) enum WindowError {
    /// The requested first line is past the end; the data has `total` lines.
    BeyondEnd { total: u64 },
    /// The cancellation token fired.
    Cancelled,
    /// Reading failed.
    Io(io::Error),
}

impl From<io::Error> for WindowError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}
