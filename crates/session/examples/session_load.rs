//! The oxpi half of the session-load side-by-side (issue 46.14): opens a session file read-only,
//! builds its context, and prints one JSON line with the times and the process's peak resident
//! memory, as `bench/node/session_load.mjs load` prints them for pi's own `SessionManager`.
//!
//! ```text
//! cargo run --release -p oxpi-session --example session_load -- <file>
//! ```

use std::path::PathBuf;
use std::time::Instant;

use oxpi_session::SessionManager;

/// The peak resident set size in MiB (`VmHWM` of `/proc/self/status`; `None` off Linux).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() {
    let Some(file) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: session_load <session file>");
        std::process::exit(2);
    };
    let t0 = Instant::now();
    let session = match SessionManager::open_read_only(&file) {
        Ok(session) => session,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let t1 = Instant::now();
    let context = session.build_session_context();
    let t2 = Instant::now();
    let line = serde_json::json!({
        "open_ms": (t1 - t0).as_secs_f64() * 1000.0,
        "context_ms": (t2 - t1).as_secs_f64() * 1000.0,
        "entries": session.entries().count(),
        "messages": context.messages.len(),
        "peak_rss_mib": peak_rss_mib(),
    });
    println!("{line}");
}
