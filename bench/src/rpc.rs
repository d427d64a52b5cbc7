//! The RPC round-trip row: `n` sequential `get_state` commands written to a child's stdin
//! (`--mode rpc` of oxpi or pi), each answered with one line on stdout before the next is sent;
//! and the echo process that is its floor (the same pipes and client, a fixed reply per line,
//! no work in between).
//!
//! Where the two processes run matters more than anything either does: a round trip between
//! processes on one CPU costs a few microseconds, and one between two CPUs costs the wake-up of
//! an idle one (30-50 us on a VM), so unpinned runs land in either mode from one run to the
//! next. [`Cpus`] pins them, so that every subject of a row is measured in the same placement.

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

/// Where the client and the child run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cpus {
    /// Wherever the scheduler puts them.
    AsScheduled,
    /// Both on the CPU the client started on: each round trip is two context switches.
    One,
    /// The client on one CPU, the child (and its threads) on another: each round trip wakes
    /// the other CPU twice.
    Two,
}

impl Cpus {
    /// Parses `one`, `two` or `as-scheduled`.
    pub fn parse(text: &str) -> Result<Cpus, String> {
        match text {
            "one" => Ok(Cpus::One),
            "two" => Ok(Cpus::Two),
            "as-scheduled" => Ok(Cpus::AsScheduled),
            other => Err(format!("--cpus is one, two or as-scheduled, not {other:?}")),
        }
    }
}

/// The CPUs this process may run on, in order.
#[allow(unsafe_code)]
fn allowed_cpus() -> Result<Vec<usize>, String> {
    // SAFETY: `sched_getaffinity` writes at most `size_of::<cpu_set_t>()` bytes into the zeroed
    // set we own; `CPU_ISSET` reads it within its bounds (the index is below CPU_SETSIZE).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(format!(
                "sched_getaffinity: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect())
    }
}

/// Pins this thread (and the processes it starts from now on) to `cpu`.
#[allow(unsafe_code)]
fn pin_to(cpu: usize) -> Result<(), String> {
    // SAFETY: the set is ours and zeroed; `CPU_SET` writes within it (`cpu` came from
    // `allowed_cpus`, below CPU_SETSIZE); `sched_setaffinity` only reads it.
    let failed = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
    };
    if failed {
        return Err(format!(
            "could not pin to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// The CPUs of the client and of the child for `cpus` (`None`: not pinned), or why the
/// placement cannot be had here.
pub fn placement(cpus: Cpus) -> Result<Option<(usize, usize)>, String> {
    if cpus == Cpus::AsScheduled {
        return Ok(None);
    }
    let allowed = allowed_cpus()?;
    let (Some(&first), second) = (allowed.first(), allowed.get(1)) else {
        return Err("no CPU is allowed".into());
    };
    match (cpus, second) {
        (Cpus::Two, Some(&second)) => Ok(Some((first, second))),
        (Cpus::Two, None) => Err(format!("two CPUs are needed, only CPU {first} is allowed")),
        _ => Ok(Some((first, first))),
    }
}

/// Round trips sent, unmeasured, before the measured ones (start-up and first-use costs).
pub const WARMUP: usize = 20;

/// Starts `program args…`, sends [`WARMUP`] then `n` measured `get_state` round trips, closes
/// its stdin and waits for it. `wall_ms` is the measured round trips' wall time; `cpu_ms` and
/// `peak_rss_kib` are the child's whole life (`getrusage(RUSAGE_CHILDREN)`). A reply that is
/// not a successful `get_state` response fails the run. With `cpus` other than
/// [`Cpus::AsScheduled`], this process and the child are pinned first (a child inherits the
/// CPUs of the thread that starts it).
pub fn round_trips(
    program: &str,
    args: &[String],
    n: usize,
    cpus: Cpus,
) -> Result<Figures, String> {
    let placement = placement(cpus)?;
    if let Some((_, child_cpu)) = placement {
        pin_to(child_cpu)?;
    }
    let before = children_usage();
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start {program}: {e}"));
    if let Some((client_cpu, _)) = placement {
        pin_to(client_cpu)?;
    }
    let mut child = child?;
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
