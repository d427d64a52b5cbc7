//! The oxpi half of the session-load side-by-side (issue 46.14): opens a session file read-only,
//! builds its context, turns it into the messages a request is made of, and prints one JSON line
//! with the CPU time (user + system) and wall time of each step and the process's peak resident
//! memory, as `bench/node/session_load.mjs load` prints them for pi's own `SessionManager`.
//! `cargo xtask bench` runs the same steps (`oxpi-bench session-load`).
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

/// The process's CPU time so far, in milliseconds (0 off Unix).
fn cpu_ms() -> f64 {
    #[cfg(unix)]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        t.tv_sec as f64 * 1000.0 + t.tv_nsec as f64 / 1e6
    }
    #[cfg(not(unix))]
    {
        0.0
    }
}

fn main() {
    let Some(file) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: session_load <session file>");
        std::process::exit(2);
    };
    let (t0, c0) = (Instant::now(), cpu_ms());
    let session = match SessionManager::open_read_only(&file) {
        Ok(session) => session,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let (t1, c1) = (Instant::now(), cpu_ms());
    let context = session.build_session_context();
    let (t2, c2) = (Instant::now(), cpu_ms());
    let peak = peak_rss_mib();
    let llm = oxpi_session::to_llm_messages(&context.messages);
    let (t3, c3) = (Instant::now(), cpu_ms());
    let line = serde_json::json!({
        "open_ms": (t1 - t0).as_secs_f64() * 1000.0,
        "context_ms": (t2 - t1).as_secs_f64() * 1000.0,
        "llm_ms": (t3 - t2).as_secs_f64() * 1000.0,
        "open_cpu_ms": c1 - c0,
        "context_cpu_ms": c2 - c1,
        "llm_cpu_ms": c3 - c2,
        "entries": session.entries().count(),
        "messages": context.messages.len(),
        "llm_messages": llm.map_or(0, |m| m.len()),
        "peak_rss_mib": peak,
        "peak_rss_with_llm_mib": peak_rss_mib(),
    });
    println!("{line}");
}
