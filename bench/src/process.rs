//! Whole-process rows (start-up, one `-p` answer): a child run from start to exit, its wall
//! time measured here and its CPU time and peak RSS read with `getrusage(RUSAGE_CHILDREN)`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::measure::Figures;

/// What one run printed.
#[derive(Debug)]
pub struct Ran {
    /// The figures of the child's whole life.
    pub figures: Figures,
    /// Its standard output.
    pub stdout: String,
}

/// Runs `program args…` with `stdin` written to its standard input (then closed), waits for
/// it and fails unless it exits successfully.
pub fn run(program: &str, args: &[String], stdin: &[u8]) -> Result<Ran, String> {
    let before = children_usage();
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start {program}: {e}"))?;
    if let Some(mut input) = child.stdin.take() {
        // A child that does not read its input may have exited already.
        let _ = input.write_all(stdin);
    }
    let output = child.wait_with_output().map_err(|e| format!("wait: {e}"))?;
    let wall = started.elapsed();
    let after = children_usage();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        return Err(format!(
            "{program} exited with {}: {}",
            output.status,
            tail.join(" | ")
        ));
    }
    Ok(Ran {
        figures: Figures {
            wall_ms: wall.as_secs_f64() * 1000.0,
            cpu_ms: after.0.saturating_sub(before.0) as f64 / 1000.0,
            peak_rss_kib: after.1,
            rss_before_kib: 0,
            minor_faults: 0,
        },
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
    })
}

/// The waited-for children's CPU time (µs) and largest peak RSS (KiB).
#[allow(unsafe_code)]
pub fn children_usage() -> (u64, u64) {
    // SAFETY: `getrusage` writes into the zeroed struct we pass; RUSAGE_CHILDREN is valid.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    (us(ru.ru_utime) + us(ru.ru_stime), ru.ru_maxrss as u64)
}
