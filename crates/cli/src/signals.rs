//! `SIGTERM` and `SIGHUP` in print, JSON and RPC mode, as pi 1.6 handles them there: the running
//! `bash` command trees are killed and the tools' temporary directories removed
//! ([`oxpi_tools::RunningCommands::kill_all`]), the run is shut down, and the command exits with
//! 143 (`SIGTERM`) or 129 (`SIGHUP`); a second signal during the shutdown ends it at once.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// The signals that end a run.
pub(crate) struct Signals {
    term: Signal,
    hup: Signal,
}

impl Signals {
    /// Catches `SIGTERM` and `SIGHUP` from now on.
    pub(crate) fn install() -> std::io::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next signal; returns the exit code it asks for (128 + its number).
    pub(crate) async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.term.recv() => 143,
            _ = self.hup.recv() => 129,
        }
    }
}
