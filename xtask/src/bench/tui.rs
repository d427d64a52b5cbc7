//! The interactive-mode rows: `oxpi` and pi-coding-agent 1.6 (Node 22, `--tui-mode regular`,
//! the mode oxpi's inline view matches) each in a tmux window of 120×40, same directory, same
//! model served by the bench's stream server:
//!
//! - **start**: wall time from starting the program to its editor being ready (the footer
//!   naming the model is on screen), and the CPU time spent until then;
//! - **stream**: CPU time of the process from `Enter` to the end of a reply of N bytes in
//!   10-byte deltas (the reply's last line on screen and the working indicator gone), with no
//!   history, and after a session of 5,000 earlier transcript lines (`--session`): the per-delta
//!   cost must stay flat.
//!
//! CPU time is the process's `utime + stime` from `/proc/<pid>/stat` (the pane runs the program
//! itself, by `exec`), peak RSS its `VmHWM`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::report::{cpus, extra, find, median, ms, ratio};
use super::{Cell, Subject, Workload};

/// The last line of the `tui-text` reply (bench/src/payload.rs).
const END_MARKER: &str = "oxpi-bench: reply complete";
/// How long one step may take before the run is a failure.
const STEP_DEADLINE: Duration = Duration::from_secs(180);

/// What an interactive row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TuiWork {
    /// Start to editor ready.
    Start,
    /// A reply of `size` bytes streamed after `history_lines` earlier transcript lines.
    Stream { size: usize, history_lines: usize },
}

impl TuiWork {
    /// The label in the table.
    pub(crate) fn label(self) -> String {
        match self {
            TuiWork::Start => "interactive: start to editor ready".into(),
            TuiWork::Stream {
                size,
                history_lines: 0,
            } => format!(
                "interactive: {} reply streamed",
                super::report::size_text(size as u64)
            ),
            TuiWork::Stream {
                size,
                history_lines,
            } => format!(
                "interactive: {} reply after {} lines",
                super::report::size_text(size as u64),
                super::search::thousands(history_lines)
            ),
        }
    }
}

/// Who runs in the terminal.
#[derive(Debug, Clone)]
pub(crate) enum Program {
    /// The `oxpi` binary.
    Oxpi(PathBuf),
    /// pi's `cli.js` under Node 22 (`node`, `cli`).
    Pi { node: PathBuf, cli: PathBuf },
}

/// What the rows need: tmux, the programs, the stream server, a scratch directory.
#[derive(Debug)]
pub(crate) struct Setup {
    /// The tmux server's socket name (`-L`).
    socket: String,
    pub(crate) oxpi: PathBuf,
    /// `release`, or `debug` under `--quick` (its CPU figures are not the reference).
    build: &'static str,
    /// pi 1.6 under Node 22, when installed.
    pub(crate) pi: Option<Program>,
    /// Why pi is not measured.
    pub(crate) no_pi: String,
    origin: String,
    scratch: PathBuf,
    clock_ticks: f64,
    /// Numbers the runs (their directories and tmux sessions).
    count: AtomicUsize,
}

/// True when `tmux -V` runs.
pub(crate) fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// pi-coding-agent 1.6.0 and Node 22 from npm, in the cache the tests use
/// (`$OXPI_HOME/pi-session/pi-1.6.0-node22`, else `~/.cache/oxpi/…`), a marker written last.
pub(crate) fn prepare_pi() -> Result<Program, String> {
    let prefix = std::env::var_os("OXPI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/oxpi")))
        .unwrap_or_else(|| std::env::temp_dir().join("oxpi"))
        .join("pi-session")
        .join("pi-1.6.0-node22");
    let marker = prefix.join(".oxpi-installed");
    if !marker.is_file() {
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::create_dir_all(&prefix)
            .map_err(|e| format!("could not create {}: {e}", prefix.display()))?;
        println!(
            "==> npm install --prefix {} node@22 @earendil-works/pi-coding-agent@1.6.0",
            prefix.display()
        );
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&prefix)
            .args(["node@22", "@earendil-works/pi-coding-agent@1.6.0"])
            .status()
            .map_err(|e| format!("npm not found: pi 1.6 is not measured ({e})"))?;
        if !status.success() {
            return Err(format!("npm install of pi 1.6 failed ({status})"));
        }
        std::fs::write(&marker, b"").map_err(|e| format!("{}: {e}", marker.display()))?;
    }
    Ok(Program::Pi {
        node: prefix.join("node_modules/.bin/node"),
        cli: prefix.join("node_modules/@earendil-works/pi-coding-agent/dist/cli.js"),
    })
}

/// The interactive rows' setup: the release `oxpi` the bench built, tmux's
/// server started, pi 1.6 installed unless `--no-node`.
pub(crate) fn prepare(
    target: &Path,
    options: &super::Options,
    origin: &str,
) -> Result<Setup, String> {
    if !tmux_available() {
        return Err("tmux not found (apt-get install -y tmux)".into());
    }
    // The release `oxpi` the bench built first (`-p oxpi-bench -p oxpi-cli`): building it again
    // alone would unify other features and rebuild its dependencies.
    let profile = "release";
    let pi = if options.no_node {
        Err("not measured (--no-node)".to_string())
    } else {
        prepare_pi()
    };
    Setup::start(
        target.join(profile).join("oxpi"),
        profile,
        pi,
        origin,
        &target.join("oxpi-bench").join("tui"),
    )
}

impl Setup {
    /// Starts a tmux server of its own (a placeholder session keeps it up).
    pub(crate) fn start(
        oxpi: PathBuf,
        build: &'static str,
        pi: Result<Program, String>,
        origin: &str,
        scratch: &Path,
    ) -> Result<Self, String> {
        let socket = format!("oxpi-bench-{}", std::process::id());
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "keep",
            ])
            .args(["sleep", "100000"])
            .status()
            .map_err(|e| format!("could not run tmux: {e}"))?;
        if !status.success() {
            return Err(format!("tmux did not start ({status})"));
        }
        let ticks = Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0);
        let (pi, no_pi) = match pi {
            Ok(p) => (Some(p), String::new()),
            Err(why) => (None, why),
        };
        Ok(Self {
            socket,
            oxpi,
            build,
            pi,
            no_pi,
            origin: origin.to_string(),
            scratch: scratch.to_path_buf(),
            clock_ticks: ticks,
            count: AtomicUsize::new(0),
        })
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    fn capture(&self, window: &str) -> String {
        self.tmux()
            .args(["capture-pane", "-p", "-t", window])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Polls the screen every `every` until `ok`; the screen, or an error with it.
    fn wait(
        &self,
        window: &str,
        what: &str,
        every: Duration,
        ok: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let start = Instant::now();
        loop {
            let screen = self.capture(window);
            if ok(&screen) {
                return Ok(screen);
            }
            if start.elapsed() > STEP_DEADLINE {
                let tail: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
                let tail = tail[tail.len().saturating_sub(6)..].join(" / ");
                return Err(format!(
                    "no {what} within {STEP_DEADLINE:?}; screen: {tail}"
                ));
            }
            std::thread::sleep(every);
        }
    }

    /// `(cpu ms, VmRSS KiB, VmHWM KiB)` of `pid`.
    fn usage(&self, pid: u32) -> Result<(f64, f64, f64), String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_err(|e| format!("the process is gone ({e})"))?;
        // Fields after the command name, which is in parentheses.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        // utime and stime are fields 14 and 15 of stat: 11 and 12 after the name and state.
        let cpu_ms = (ticks(11) + ticks(12)) / self.clock_ticks * 1000.0;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        Ok((cpu_ms, kib("VmRSS:"), kib("VmHWM:")))
    }

    /// One run of `work` by `program`: the JSON sample the report reads.
    pub(crate) fn run(&self, work: TuiWork, program: &Program) -> Result<Value, String> {
        let n = self.count.fetch_add(1, Ordering::Relaxed);
        let dir = self.scratch.join(format!("run-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        let home = dir.join("home");
        let project = dir.join("project");
        for d in [&home, &project] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let size = match work {
            TuiWork::Start => 1024,
            TuiWork::Stream { size, .. } => size,
        };
        let base_url = format!("{}/tui-text/{size}", self.origin);
        let mut args: Vec<String> = Vec::new();
        match program {
            Program::Oxpi(_) => {
                args.extend(["--base-url", &base_url, "--model", "bench-model"].map(String::from))
            }
            Program::Pi { .. } => {
                let agent = home.join(".pi/agent");
                std::fs::create_dir_all(&agent).map_err(|e| e.to_string())?;
                let models = json!({"providers": {"bench": {
                    "baseUrl": base_url, "api": "openai-completions", "apiKey": "bench-key",
                    "models": [{"id": "bench-model", "contextWindow": 1_000_000}],
                }}});
                std::fs::write(agent.join("models.json"), models.to_string())
                    .map_err(|e| e.to_string())?;
                args.extend(
                    [
                        "--tui-mode",
                        "regular",
                        "--provider",
                        "bench",
                        "--model",
                        "bench-model",
                    ]
                    .map(String::from),
                );
            }
        }
        if let TuiWork::Stream { history_lines, .. } = work {
            if history_lines > 0 {
                let file = dir.join("history.jsonl");
                super::tui_history::write_history(&file, &project, history_lines)?;
                args.push("--session".into());
                args.push(file.display().to_string());
            }
        }
        let program_words: Vec<String> = match program {
            Program::Oxpi(bin) => vec![bin.display().to_string()],
            Program::Pi { node, cli } => {
                vec![node.display().to_string(), cli.display().to_string()]
            }
        };
        let quoted: Vec<String> = program_words
            .iter()
            .chain(&args)
            .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
            .collect();
        let script = format!(
            "cd '{}' && exec env -u PI_CODING_AGENT_DIR -u OPENAI_API_KEY HOME='{}' PI_OFFLINE=1 {}",
            project.display(),
            home.display(),
            quoted.join(" ")
        );
        let window = format!("run{n}");
        let started = Instant::now();
        let status = self
            .tmux()
            .args(["new-session", "-d", "-s", &window, "-x", "120", "-y", "40"])
            .args(["sh", "-c", &script])
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("tmux new-session failed ({status})"));
        }
        let result = self.measure(work, &window, started).map(|mut sample| {
            if matches!(program, Program::Oxpi(_)) {
                sample["build"] = json!(self.build);
            }
            sample
        });
        let _ = self.tmux().args(["kill-session", "-t", &window]).status();
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    fn measure(&self, work: TuiWork, window: &str, started: Instant) -> Result<Value, String> {
        self.wait(window, "editor", Duration::from_millis(10), |s| {
            s.contains("bench-model")
        })?;
        let ready_ms = started.elapsed().as_secs_f64() * 1000.0;
        let pid: u32 = self
            .tmux()
            .args(["display", "-p", "-t", window, "#{pane_pid}"])
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .ok_or("no pane pid")?;
        let (cpu_ready, _, _) = self.usage(pid)?;
        let TuiWork::Stream { size, .. } = work else {
            let (_, _, peak) = self.usage(pid)?;
            return Ok(json!({
                "status": "ok", "wall_ms": ready_ms, "cpu_ms": cpu_ready,
                "peak_rss_kib": peak, "rss_before_kib": 0.0,
            }));
        };
        // Let the start settle (a history is drawn), then measure from Enter to the end.
        self.settle(pid)?;
        let (cpu0, rss0, _) = self.usage(pid)?;
        let t0 = Instant::now();
        for keys in [&["-l", "go"][..], &["Enter"][..]] {
            self.tmux()
                .args(["send-keys", "-t", window])
                .args(keys)
                .status()
                .map_err(|e| e.to_string())?;
        }
        self.wait(window, "end of the reply", Duration::from_millis(50), |s| {
            s.contains(END_MARKER) && !s.contains("Working")
        })?;
        let wall_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let (cpu1, _, peak) = self.usage(pid)?;
        let deltas = size.div_ceil(10) as f64;
        Ok(json!({
            "status": "ok", "wall_ms": wall_ms, "cpu_ms": cpu1 - cpu0,
            "peak_rss_kib": peak, "rss_before_kib": rss0,
            "extra": {"cpu_us_per_delta": (cpu1 - cpu0) * 1000.0 / deltas, "start_ms": ready_ms},
        }))
    }

    /// Waits until `pid` has used no CPU for half a second (at most the step deadline).
    fn settle(&self, pid: u32) -> Result<(), String> {
        let start = Instant::now();
        let mut last = self.usage(pid)?.0;
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let now = self.usage(pid)?.0;
            if now == last || start.elapsed() > STEP_DEADLINE {
                return Ok(());
            }
            last = now;
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}

fn cpu(cells: &[Cell], workload: &Workload, subject: Subject) -> Option<f64> {
    find(cells, workload, subject).map(|c| median(&cpus(c)))
}

/// The targets of the interactive rows, as `(target, measured, met)`: oxpi's CPU time under a
/// tenth of pi's while a reply streams; the per-delta cost flat (after 5,000 lines of transcript
/// at most 1.5× the cost without).
///
/// The interactive mode: oxpi's CPU time under a tenth of pi's while a reply streams; and
/// the per-delta cost flat: after 5,000 lines of transcript at most 1.5× the cost without.
pub(crate) fn checks(cells: &[Cell]) -> Vec<(String, String, Option<bool>)> {
    let mut out = Vec::new();
    let mut streams: Vec<Workload> = Vec::new();
    for c in cells {
        if matches!(c.workload, Workload::Tui(TuiWork::Stream { .. }))
            && !streams.contains(&c.workload)
        {
            streams.push(c.workload.clone());
        }
    }
    for w in &streams {
        let debug = find(cells, w, Subject::Oxpi)
            .is_some_and(|c| c.samples.iter().any(|s| s["build"] == "debug"));
        let (measured, pass) = match (cpu(cells, w, Subject::Oxpi), cpu(cells, w, Subject::Pi16)) {
            (Some(ours), Some(pi)) if pi > 0.0 => (
                format!(
                    "{} of pi's CPU ({} vs {} ms){}",
                    ratio(ours / pi),
                    ms(ours),
                    ms(pi),
                    if debug {
                        "; oxpi's debug build (--quick)"
                    } else {
                        ""
                    }
                ),
                (!debug).then_some(ours * 10.0 < pi),
            ),
            _ => ("not measured (see the table)".to_string(), None),
        };
        out.push((
            format!("CPU < 1/10 of {}: {}", Subject::Pi16.name(), w.label()),
            measured,
            pass,
        ));
    }
    let (Some(flat), Some(long)) = (
        streams.iter().find(|w| matches!(w, Workload::Tui(TuiWork::Stream { history_lines: 0, .. }))),
        streams.iter().find(|w| matches!(w, Workload::Tui(TuiWork::Stream { history_lines, .. }) if *history_lines > 0)),
    ) else {
        return out;
    };
    for subject in [Subject::Oxpi, Subject::Pi16] {
        let per_delta =
            |w: &Workload| find(cells, w, subject).map(|c| median(&extra(c, "cpu_us_per_delta")));
        let (Some(a), Some(b)) = (per_delta(flat), per_delta(long)) else {
            continue;
        };
        out.push((
            format!(
                "per-delta CPU flat ({}): {} ≤ 1.5× without history",
                subject.name(),
                long.label()
            ),
            format!(
                "{} ({a:.1} → {b:.1} µs)",
                ratio(if a > 0.0 { b / a } else { 0.0 })
            ),
            (subject == Subject::Oxpi).then_some(b <= 1.5 * a),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(
            TuiWork::Stream {
                size: 100 * 1024,
                history_lines: 5000
            }
            .label(),
            "interactive: 100 KB reply after 5,000 lines"
        );
        assert_eq!(
            TuiWork::Stream {
                size: 100 * 1024,
                history_lines: 0
            }
            .label(),
            "interactive: 100 KB reply streamed"
        );
    }
}
