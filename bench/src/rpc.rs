//! The RPC round-trip row: `n` sequential `get_state` commands written to a child's stdin
//! (`--mode rpc` of oxpi or pi), each answered with one line on stdout before the next is sent;
//! and the echo process that is its floor (the same pipes and client, a fixed reply per line,
//! no work in between).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::measure::Figures;
use crate::process::children_usage;

/// The command sent each round trip.
pub const GET_STATE: &[u8] = b"{\"id\":\"b\",\"type\":\"get_state\"}\n";

/// The echo process's reply to every line.
pub const ECHO_REPLY: &[u8] =
    b"{\"id\":\"b\",\"type\":\"response\",\"command\":\"get_state\",\"success\":true,\"data\":{}}\n";

/// Round trips sent, unmeasured, before the measured ones (start-up and first-use costs).
pub const WARMUP: usize = 20;

/// Starts `program args…`, sends [`WARMUP`] then `n` measured `get_state` round trips, closes
/// its stdin and waits for it. `wall_ms` is the measured round trips' wall time; `cpu_ms` and
/// `peak_rss_kib` are the child's whole life (`getrusage(RUSAGE_CHILDREN)`). A reply that is
/// not a successful `get_state` response fails the run.
pub fn round_trips(program: &str, args: &[String], n: usize) -> Result<Figures, String> {
    let before = children_usage();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start {program}: {e}"))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("the child's pipes are missing".into());
    };
    let mut stdout = BufReader::new(stdout);
    let mut line = String::new();
    let wall = {
        let mut one = |line: &mut String| -> Result<(), String> {
            stdin
                .write_all(GET_STATE)
                .and_then(|()| stdin.flush())
                .map_err(|e| format!("could not write the command: {e}"))?;
            line.clear();
            let read = stdout
                .read_line(line)
                .map_err(|e| format!("could not read the reply: {e}"))?;
            if read == 0 {
                return Err("the child closed stdout".into());
            }
            if !(line.contains("\"success\":true") && line.contains("\"command\":\"get_state\"")) {
                return Err(format!("not a get_state response: {}", line.trim_end()));
            }
            Ok(())
        };
        for _ in 0..WARMUP {
            one(&mut line)?;
        }
        let started = Instant::now();
        for _ in 0..n {
            one(&mut line)?;
        }
        started.elapsed()
    };
    drop(stdin);
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    if !status.success() {
        return Err(format!("{program} exited with {status}"));
    }
    let after = children_usage();
    Ok(Figures {
        wall_ms: wall.as_secs_f64() * 1000.0,
        cpu_ms: after.0.saturating_sub(before.0) as f64 / 1000.0,
        peak_rss_kib: after.1,
        rss_before_kib: 0,
        minor_faults: 0,
    })
}

/// Answers every line of stdin with [`ECHO_REPLY`], one locked, flushed write each.
pub fn echo() -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        out.write_all(ECHO_REPLY)?;
        out.flush()?;
    }
}
