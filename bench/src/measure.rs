//! Process figures: CPU time from `getrusage(RUSAGE_SELF)` (all threads, microseconds), peak
//! RSS from the same call (`ru_maxrss`, KiB), current RSS from `/proc/self/status`.

use std::time::Instant;

/// CPU time and peak RSS of this process so far.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// User + system CPU time, microseconds.
    pub cpu_us: u64,
    /// Peak resident set size, KiB.
    pub max_rss_kib: u64,
    /// Minor page faults (first touches of memory the kernel then supplies), all threads.
    pub minor_faults: u64,
}

/// This process's usage now.
#[allow(unsafe_code)]
pub fn usage() -> Usage {
    // SAFETY: `getrusage` writes a `rusage` struct into the zeroed one we pass; RUSAGE_SELF is
    // always valid. Nothing else is touched.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    Usage {
        cpu_us: us(ru.ru_utime) + us(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss as u64,
        minor_faults: ru.ru_minflt as u64,
    }
}

/// Current resident set size in KiB (`VmRSS`), 0 when unknown.
pub fn current_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A measured span: started by [`Span::start`], read by [`Span::finish`].
#[derive(Debug)]
pub struct Span {
    wall: Instant,
    usage: Usage,
    rss_before_kib: u64,
}

/// What a span measured, printed as one JSON object by the bench programs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figures {
    /// Wall time of the span, milliseconds.
    pub wall_ms: f64,
    /// CPU time (user + system, all threads) of the span, milliseconds.
    pub cpu_ms: f64,
    /// Peak RSS of the whole process, KiB.
    pub peak_rss_kib: u64,
    /// RSS when the span started, KiB.
    pub rss_before_kib: u64,
    /// Minor page faults during the span (0 for a child process, whose faults are not read).
    pub minor_faults: u64,
}

impl Span {
    /// Starts measuring.
    pub fn start() -> Self {
        let rss_before_kib = current_rss_kib();
        Self {
            usage: usage(),
            rss_before_kib,
            wall: Instant::now(),
        }
    }

    /// Wall time so far, milliseconds.
    pub fn elapsed_ms(&self) -> f64 {
        self.wall.elapsed().as_secs_f64() * 1000.0
    }

    /// Stops measuring.
    pub fn finish(self) -> Figures {
        let wall = self.wall.elapsed();
        let now = usage();
        Figures {
            wall_ms: wall.as_secs_f64() * 1000.0,
            cpu_ms: now.cpu_us.saturating_sub(self.usage.cpu_us) as f64 / 1000.0,
            peak_rss_kib: now.max_rss_kib,
            rss_before_kib: self.rss_before_kib,
            minor_faults: now.minor_faults.saturating_sub(self.usage.minor_faults),
        }
    }
}
