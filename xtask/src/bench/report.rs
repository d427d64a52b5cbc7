//! The table, the targets, and BENCHMARKS.md.

use std::fmt::Write as _;

use serde_json::Value;

use super::env::{Machine, Versions};
use super::{Cell, Subject, Workload, PI_RS_VERSION, PI_TS_VERSION, SNAPSHOT_EVERY};

/// Peak RSS growth allowed per byte of content beyond the 10 KB row (the "small multiple").
pub(crate) const RSS_MULTIPLE: f64 = 8.0;

/// `10 KB`, `1 MB`, `1 GB` (1 KB = 1024 bytes).
pub(crate) fn size_text(bytes: u64) -> String {
    const K: u64 = 1024;
    if bytes >= K * K * K && bytes % (K * K * K) == 0 {
        format!("{} GB", bytes / (K * K * K))
    } else if bytes >= K * K && bytes % (K * K) == 0 {
        format!("{} MB", bytes / (K * K))
    } else if bytes >= K && bytes % K == 0 {
        format!("{} KB", bytes / K)
    } else {
        format!("{bytes} B")
    }
}

/// The median (0 for none).
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn field(cell: &Cell, pick: impl Fn(&Value) -> Option<f64>) -> Vec<f64> {
    cell.samples.iter().filter_map(pick).collect()
}

/// Wall times (ms) of a cell's runs.
pub(crate) fn walls(cell: &Cell) -> Vec<f64> {
    field(cell, |s| s["wall_ms"].as_f64())
}

/// CPU times (ms) of a cell's runs.
pub(super) fn cpus(cell: &Cell) -> Vec<f64> {
    field(cell, |s| s["cpu_ms"].as_f64())
}

/// The `extra.<key>` figures of a cell's runs.
pub(super) fn extra(cell: &Cell, key: &str) -> Vec<f64> {
    field(cell, |s| s["extra"][key].as_f64())
}

/// Median peak RSS and median RSS before the measured span, KiB.
fn rss(cell: &Cell) -> (f64, f64) {
    (
        median(&field(cell, |s| s["peak_rss_kib"].as_f64())),
        median(&field(cell, |s| s["rss_before_kib"].as_f64())),
    )
}

fn measured(cell: &Cell) -> bool {
    cell.skipped.is_none() && cell.failed.is_none() && !cell.samples.is_empty()
}

/// Everything the report is made from.
pub(crate) struct Context<'a> {
    pub(crate) cells: &'a [Cell],
    pub(crate) machine: &'a Machine,
    pub(crate) versions: &'a Versions,
    pub(crate) command: &'a str,
    pub(crate) runs: usize,
    pub(crate) node_budget_s: f64,
    pub(crate) quick: bool,
    pub(crate) notes: &'a [String],
    pub(crate) elapsed_s: f64,
    /// The load average when the run ended.
    pub(crate) load_after: String,
}

/// True when a load average (`"1.00 0.90 0.80"`: its 1-minute figure) is over half the cores:
/// other work then competed with the bench, and its wall times are not reference figures.
pub(crate) fn loaded(load: &str, cores: usize) -> bool {
    let one_minute = load
        .split_whitespace()
        .next()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    one_minute > cores.max(1) as f64 / 2.0
}

/// The measured cell of `subject` on `workload`.
pub(super) fn find<'a>(
    cells: &'a [Cell],
    workload: &Workload,
    subject: Subject,
) -> Option<&'a Cell> {
    cells
        .iter()
        .find(|c| &c.workload == workload && c.subject == subject)
        .filter(|c| measured(c))
}

fn wall(cells: &[Cell], workload: &Workload, subject: Subject) -> Option<f64> {
    find(cells, workload, subject).map(|c| median(&walls(c)))
}

/// A duration in ms with sensible digits.
pub(super) fn ms(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// A ratio with sensible digits and `×`.
pub(crate) fn ratio(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}×")
    } else if value >= 10.0 {
        format!("{value:.1}×")
    } else {
        format!("{value:.2}×")
    }
}

/// The results table (markdown).
fn table(cells: &[Cell], runs: usize) -> String {
    let mut out = String::new();
    out.push_str("| workload | subject | wall ms, median | wall min–max | CPU ms, median | peak RSS MiB | wall vs oxpi | notes |\n");
    out.push_str("|---|---|--:|--:|--:|--:|--:|---|\n");
    for cell in cells {
        let label = cell.workload.label();
        let name = cell.subject.name();
        if let Some(why) = cell.skipped.as_ref().or(cell.failed.as_ref()) {
            let state = if cell.failed.is_some() {
                "FAILED: "
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "| {label} | {name} | — | — | — | — | — | {state}{} |",
                why.replace('|', "/")
            );
            continue;
        }
        let w = walls(cell);
        if w.is_empty() {
            continue;
        }
        let (lo, hi) = w
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
        let (peak, before) = rss(cell);
        let versus = match wall(cells, &cell.workload, Subject::Oxpi) {
            Some(base) if base > 0.0 => ratio(median(&w) / base),
            _ => "—".into(),
        };
        let mut notes = Vec::new();
        if cell.samples.len() != runs {
            let why = if cell.subject.is_node() {
                " (Node time budget)"
            } else if cell.samples.len() > runs {
                " (short runs are repeated more)"
            } else {
                ""
            };
            let n = cell.samples.len();
            notes.push(format!("{n} run{}{why}", if n == 1 { "" } else { "s" }));
        }
        if let Some(r) = super::rows::over_floor(cells, cell) {
            notes.push(format!("{} the floor", ratio(r)));
        }
        match &cell.workload {
            Workload::Startup | Workload::Print { .. } | Workload::Rpc { .. } => {}
            Workload::Agents { count } => {
                let per = median(&extra(cell, "rss_per_agent_kib"));
                notes.push(format!(
                    "{per:.0} KiB of peak RSS per agent ({} agents)",
                    super::search::thousands(*count)
                ));
            }
            Workload::Stream { size, .. } => {
                let growth = (peak - before).max(0.0) * 1024.0;
                notes.push(format!(
                    "RSS +{:.1} MiB over idle ({:.1}× content)",
                    growth / 1048576.0,
                    growth / *size as f64
                ));
                // (Fresh memory is paid page by page as it is first written: a fault each.)
                let faults = field(cell, |s| s["minor_faults"].as_f64());
                if !faults.is_empty() {
                    notes.push(format!("{:.0} page faults", median(&faults)));
                }
                if cell.subject == Subject::OxpiPartial {
                    let snaps = median(&extra(cell, "snapshots"));
                    notes.push(format!("{snaps:.0} snapshots"));
                }
            }
            Workload::AgentLoop { .. } => {
                let early = median(&extra(cell, "turn10_us"));
                let late = median(&extra(cell, "turn_last_us"));
                notes.push(format!(
                    "per turn: {early:.0} µs at turn 10, {late:.0} µs at turn 500 ({})",
                    ratio(if early > 0.0 { late / early } else { 0.0 })
                ));
            }
            Workload::Search { .. } => {
                notes.push(format!("{:.0} lines", median(&extra(cell, "lines"))));
            }
            Workload::SessionLoad { .. } => {
                let file = median(&extra(cell, "file_bytes"));
                notes.push(format!(
                    "CPU: open {} ms, context {} ms; peak RSS {:.1}× the {:.1} MiB file",
                    ms(median(&extra(cell, "open_cpu_ms"))),
                    ms(median(&extra(cell, "context_cpu_ms"))),
                    if file > 0.0 {
                        peak * 1024.0 / file
                    } else {
                        0.0
                    },
                    file / 1048576.0
                ));
            }
            Workload::Durable { .. } => {
                notes.push(format!(
                    "{:.2} ms per journaled step, {:.0} runs/s",
                    median(&extra(cell, "ms_per_step")),
                    median(&extra(cell, "runs_per_s"))
                ));
            }
            Workload::Tui(super::tui::TuiWork::Start) => {
                notes.push("wall: start to the footer on screen; CPU: until then".into());
            }
            Workload::Tui(super::tui::TuiWork::Stream { .. }) => {
                notes.push(format!(
                    "CPU {:.1} µs per delta; wall includes 50 ms screen polling",
                    median(&extra(cell, "cpu_us_per_delta"))
                ));
            }
            Workload::Read { bytes } => {
                let read = median(&extra(cell, "bytes_read"));
                notes.push(format!(
                    "{:.0} KiB read of {} ({:.4}% of the file)",
                    read / 1024.0,
                    size_text(*bytes),
                    read / *bytes as f64 * 100.0
                ));
            }
        }
        let (cpu, rss_mib) = if matches!(
            cell.workload,
            Workload::Search { .. } | Workload::Durable { .. }
        ) {
            ("—".to_string(), "—".to_string())
        } else {
            (ms(median(&cpus(cell))), format!("{:.1}", peak / 1024.0))
        };
        let _ = writeln!(
            out,
            "| {label} | {name} | {} | {}–{} | {cpu} | {rss_mib} | {versus} | {} |",
            ms(median(&w)),
            ms(lo),
            ms(hi),
            notes.join("; ")
        );
    }
    out
}

/// One target line: what, measured, result.
pub(crate) struct Check {
    pub(crate) target: String,
    pub(crate) measured: String,
    pub(crate) pass: Option<bool>,
}

fn checks(cells: &[Cell]) -> Vec<Check> {
    let mut out = Vec::new();
    let streams: Vec<Workload> = {
        let mut seen = Vec::new();
        for c in cells {
            if matches!(c.workload, Workload::Stream { .. }) && !seen.contains(&c.workload) {
                seen.push(c.workload.clone());
            }
        }
        seen
    };
    // 1. At least 5× faster than the Rust port on every row, both oxpi consumers.
    for w in &streams {
        let Some(port) = wall(cells, w, Subject::PiAiRs) else {
            continue;
        };
        let mut parts = Vec::new();
        let mut pass = None;
        for subject in [Subject::Oxpi, Subject::OxpiPartial] {
            if let Some(ours) = wall(cells, w, subject) {
                let r = port / ours;
                parts.push(format!("{} {}", subject.name(), ratio(r)));
                pass = Some(pass.unwrap_or(true) && r >= 5.0);
            }
        }
        if parts.is_empty() {
            let why = cells
                .iter()
                .find(|c| &c.workload == w && c.subject == Subject::Oxpi)
                .and_then(|c| c.skipped.clone().or(c.failed.clone()))
                .unwrap_or_else(|| "oxpi not measured".into());
            parts.push(why);
        }
        out.push(Check {
            target: format!(
                "≥ 5× faster than pi-ai Rust port {PI_RS_VERSION}: {}",
                w.label()
            ),
            measured: parts.join(", "),
            pass,
        });
    }
    // 2. At least 100× faster than pi-ai TS on the 100 KB tool call.
    for w in &streams {
        let Workload::Stream { kind, size } = w else {
            continue;
        };
        if *kind == "openai-text" || *size != 100 * 1024 {
            continue;
        }
        let ts = wall(cells, w, Subject::PiAiTs);
        let mut parts = Vec::new();
        let mut pass = None;
        if let Some(ts) = ts {
            for subject in [Subject::Oxpi, Subject::OxpiPartial] {
                if let Some(ours) = wall(cells, w, subject) {
                    let r = ts / ours;
                    parts.push(format!("{} {}", subject.name(), ratio(r)));
                    pass = Some(pass.unwrap_or(true) && r >= 100.0);
                }
            }
        }
        if parts.is_empty() {
            parts.push("not measured (see the table)".into());
        }
        out.push(Check {
            target: format!("≥ 100× faster than pi-ai TS {PI_TS_VERSION}: {}", w.label()),
            measured: parts.join(", "),
            pass,
        });
    }
    // 3. Linear: 300 KB ≤ 3.5× 100 KB, 1 MB ≤ 12× 100 KB.
    for kind in ["openai-tool", "anthropic-tool"] {
        let at = |size: usize, subject| wall(cells, &Workload::Stream { kind, size }, subject);
        let format = if kind == "openai-tool" {
            "OpenAI"
        } else {
            "Anthropic"
        };
        for (size, limit) in [(300 * 1024, 3.5), (1024 * 1024, 12.0)] {
            let mut parts = Vec::new();
            let mut pass = None;
            for subject in [Subject::Oxpi, Subject::OxpiPartial] {
                if let (Some(base), Some(big)) = (at(100 * 1024, subject), at(size, subject)) {
                    let r = big / base;
                    parts.push(format!("{} {}", subject.name(), ratio(r)));
                    pass = Some(pass.unwrap_or(true) && r <= limit);
                }
            }
            if parts.is_empty() {
                parts.push("not measured".into());
            }
            out.push(Check {
                target: format!(
                    "linear ({format}): {} costs ≤ {limit}× 100 KB",
                    size_text(size as u64)
                ),
                measured: parts.join(", "),
                pass,
            });
        }
    }
    // 4. Agent loop: per-turn overhead at turn 500 ≤ 1.5× turn 10 (pi-agent-core for reference).
    if let Some(cell) = cells
        .iter()
        .find(|c| matches!(c.workload, Workload::AgentLoop { .. }) && c.subject == Subject::Oxpi)
    {
        let growth = |subject| {
            find(cells, &cell.workload, subject).and_then(|c| {
                let early = median(&extra(c, "turn10_us"));
                let late = median(&extra(c, "turn_last_us"));
                (early > 0.0).then_some((late / early, early, late))
            })
        };
        let reference = growth(Subject::PiAgentCoreTs).map_or(String::new(), |(r, e, l)| {
            format!(
                "; {}: {} ({e:.0} → {l:.0} µs)",
                Subject::PiAgentCoreTs.name(),
                ratio(r)
            )
        });
        for subject in [Subject::Oxpi, Subject::OxpiCurrentThread] {
            let Some((r, early, late)) = growth(subject) else {
                continue;
            };
            out.push(Check {
                target: format!(
                    "agent loop: per-turn overhead at turn 500 ≤ 1.5× turn 10 ({})",
                    subject.name()
                ),
                measured: format!("{} ({early:.0} → {late:.0} µs){reference}", ratio(r)),
                pass: Some(r <= 1.5),
            });
        }
    }
    // 5. Peak RSS within a small multiple of the payload: what each extra content byte costs in
    // peak RSS growth (over the idle process), from the 10 KB row to the largest row (300 KB or
    // more: below that, buffers that grow with the body up to a fixed size, such as HTTP read
    // buffers, dominate). The fixed part (runtime threads, buffers) is what the 10 KB row shows.
    for kind in ["openai-tool", "anthropic-tool"] {
        for subject in [Subject::Oxpi, Subject::OxpiPartial] {
            let growth = |size: usize| {
                find(cells, &Workload::Stream { kind, size }, subject).map(|c| {
                    let (peak, before) = rss(c);
                    (peak - before).max(0.0) * 1024.0
                })
            };
            let largest = cells
                .iter()
                .filter(|c| measured(c) && c.subject == subject)
                .filter_map(|c| match c.workload {
                    Workload::Stream { kind: k, size } if k == kind && size >= 300 * 1024 => {
                        Some(size)
                    }
                    _ => None,
                })
                .max();
            let (Some(large), Some(small)) = (largest, growth(10 * 1024)) else {
                continue;
            };
            let Some(big) = growth(large) else {
                continue;
            };
            let slope = (big - small) / (large - 10 * 1024) as f64;
            out.push(Check {
                target: format!(
                    "peak RSS per content byte ≤ {RSS_MULTIPLE} ({} / {})",
                    Workload::Stream { kind, size: large }.label(),
                    subject.name()
                ),
                measured: format!(
                    "{slope:.1} bytes/byte (+{:.1} MiB at 10 KB, +{:.1} MiB at {})",
                    small / 1048576.0,
                    big / 1048576.0,
                    size_text(large as u64)
                ),
                pass: Some(slope <= RSS_MULTIPLE),
            });
        }
    }
    // 6. Session load: faster than pi on open and on context (CPU time, which load from other
    // processes on the machine does not inflate as it does wall time), peak RSS ≤ 3× the file.
    for w in cells
        .iter()
        .filter(|c| {
            matches!(c.workload, Workload::SessionLoad { .. }) && c.subject == Subject::Oxpi
        })
        .map(|c| &c.workload)
    {
        let cpu = |subject, key| find(cells, w, subject).map(|c| median(&extra(c, key)));
        let mut parts = Vec::new();
        let mut pass = None;
        if let Some(ours) = find(cells, w, Subject::Oxpi) {
            let file = median(&extra(ours, "file_bytes"));
            let peak = rss(ours).0 * 1024.0;
            if file > 0.0 {
                parts.push(format!("peak RSS {:.2}× the file", peak / file));
                pass = Some(peak <= 3.0 * file);
            }
        }
        for (step, key) in [("open", "open_cpu_ms"), ("context", "context_cpu_ms")] {
            if let (Some(ours), Some(pi)) =
                (cpu(Subject::Oxpi, key), cpu(Subject::PiSessionTs, key))
            {
                parts.push(format!("{step} {} vs {} ms CPU", ms(ours), ms(pi)));
                pass = Some(pass.unwrap_or(true) && ours < pi);
            }
        }
        if parts.is_empty() {
            parts.push("not measured (see the table)".into());
        }
        out.push(Check {
            target: format!(
                "{}: less CPU than {} on open and on context; peak RSS ≤ 3× the file",
                w.label(),
                Subject::PiSessionTs.name()
            ),
            measured: parts.join(", "),
            pass,
        });
    }
    // 7. RPC round trips and every stream within 1.5× their floors.
    out.extend(super::rows::checks(cells));
    // 8. grep within 1.5× rg, find within 1.5× fd (whole processes, same tree and limit).
    let mut searches: Vec<&Workload> = Vec::new();
    for c in cells {
        if matches!(c.workload, Workload::Search { .. }) && !searches.contains(&&c.workload) {
            searches.push(&c.workload);
        }
    }
    for w in searches {
        let peer = if w.label().starts_with("find") {
            Subject::Fd
        } else {
            Subject::Rg
        };
        let (measured, pass) = match (wall(cells, w, Subject::Oxpi), wall(cells, w, peer)) {
            (Some(ours), Some(theirs)) => {
                let r = ours / theirs;
                (
                    format!("{} ({} vs {})", ratio(r), ms(ours), ms(theirs)),
                    Some(r <= 1.5),
                )
            }
            _ => ("not measured (see the table)".to_string(), None),
        };
        out.push(Check {
            target: format!("≤ 1.5× the wall time of {}: {}", peer.name(), w.label()),
            measured,
            pass,
        });
    }
    for (target, measured, pass) in super::tui::checks(cells) {
        out.push(Check {
            target,
            measured,
            pass,
        });
    }
    out
}

fn targets(cells: &[Cell]) -> String {
    let mut out = String::new();
    out.push_str("| target | measured (wall-time medians) | result |\n|---|---|---|\n");
    for check in checks(cells) {
        let result = match check.pass {
            Some(true) => "met",
            Some(false) => "**MISSED**",
            None => "n/a",
        };
        let _ = writeln!(out, "| {} | {} | {result} |", check.target, check.measured);
    }
    out
}

fn date() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "date unknown".into())
}

/// The whole report (markdown): what was run where, the table, the targets, the notes.
pub(crate) fn render(cx: &Context<'_>) -> String {
    let mut out = String::new();
    let m = cx.machine;
    let v = cx.versions;
    out.push_str("# Benchmarks\n\n");
    if loaded(&m.load, m.cores) || loaded(&cx.load_after, m.cores) {
        let _ = writeln!(
            out,
            "**Run on a loaded machine (load average {} at the start, {} at the end, {} cores): other work competed with every subject; read the ratios measured in this run, not the absolute times.**\n",
            m.load, cx.load_after, m.cores
        );
    }
    if cx.quick {
        out.push_str(
            "**Smoke run (`--quick`): one run, small sizes. Not the reference figures.**\n\n",
        );
    }
    let _ = writeln!(
        out,
        "Command: `{}` ({}; {:.0} s in all; {} run(s) per subject and workload, three times as many for runs under 50 ms and nine times as many under 10 ms (a workload's floor and oxpi's subjects all by oxpi's first run), interleaved round by round, the subjects of a workload in an order that changes each round so that each runs right after every other equally often).\n",
        cx.command,
        date(),
        cx.elapsed_s,
        cx.runs
    );
    let _ = writeln!(
        out,
        "Machine: {} cores ({}), {:.1} GiB memory (MemTotal {} kB), {}; load average {} when the run started, {} when it ended.\n",
        m.cores,
        if m.cpu.is_empty() { "CPU unknown" } else { &m.cpu },
        m.memory_kib as f64 / 1048576.0,
        m.memory_kib,
        m.os,
        m.load,
        cx.load_after
    );
    let _ = writeln!(
        out,
        "Versions: oxpi {}; {}; Node {}; pi-ai, pi-agent-core and pi-coding-agent {PI_TS_VERSION} (npm, pinned); pi-ai {PI_RS_VERSION} (crates.io, pinned, a dependency of `bench/` only).\n",
        v.oxpi_commit,
        v.rustc,
        v.node.as_deref().unwrap_or("not available"),
    );
    let _ = writeln!(out, "## What is measured\n");
    let _ = writeln!(out, "- **Commands.** `oxpi` (release build) and `pi` (pi-coding-agent's `dist/bundle/cli.js` under Node) run as whole processes by `oxpi-bench run`, start to exit: start-up is `--version`; one `-p` answer is `-p --no-session` with a prompt, against the stream server's 2 KB text reply (provider `bench` in a `models.json` of the agent directory both read through `PI_CODING_AGENT_DIR`; the printed text is checked). CPU and peak RSS are the child's (`getrusage(RUSAGE_CHILDREN)`).");
    let _ = writeln!(out, "- **RPC.** `oxpi-bench rpc` starts `--mode rpc --no-session` on the same model and sends 1,000 `get_state` commands one at a time, each answered before the next (20 unmeasured first); wall covers the 1,000, CPU and peak RSS the child's whole life. The floor is `oxpi-bench rpc-echo`, a process answering each line with a fixed reply, on the same pipes and client. Where the two processes run decides the time more than either does (a round trip within one CPU is a few microseconds; between two, it waits for the other CPU to wake, 30-50 µs each way on a VM), and unpinned runs fall in either mode from one run to the next; so the row is measured twice, every subject in the same placement: *one CPU* (`oxpi-bench rpc --cpus one`: the client and the child, all its threads, pinned to the first allowed CPU; what it measures is mostly each side's own work) and *two CPUs* (`--cpus two`: the client on the first, the child on the second; mostly the wake-ups).");
    let _ = writeln!(out, "- **1,000 agents.** 1,000 agents on one faux provider (16-character deltas), each answering one prompt with a short text, all started at once and kept until every one has answered (`oxpi-bench agents`, `driver.mjs agents`); RSS per agent is the peak's growth over the span divided by 1,000.");
    let _ = writeln!(out, "- **Floors.** A floor is what the transport alone costs, measured in the same run: the echo process for RPC, and for each stream `oxpi-bench stream-floor` (the same request to the same server with the client every provider builds, the body's bytes and lines counted, nothing parsed). \"× the floor\" is a subject's median wall time over the floor's.");
    let _ = writeln!(out, "- **Streams.** A local HTTP server (`oxpi-bench serve`, Rust) serves pre-rendered event streams with `Content-Length`, written in one go: a text reply of 100 KB, and one `write` tool call whose JSON arguments are 10 KB, 100 KB, 300 KB and 1 MB (1 KB = 1024 bytes; a `content` string with `\\n` and `\\\"` escapes), in 10-byte deltas, as OpenAI Chat Completions chunks and as Anthropic Messages events. Each run is its own process; the clock starts at the call that starts the request (`oxpi_ai::stream`, `pi_ai::stream_simple`, pi-ai's `stream`) and stops after the last event, so it covers connecting, the request, reading and parsing every event, and building the final message; process start-up and module loading are outside it. The final message is checked against what was sent (text, or the parsed arguments), so a fast wrong answer counts as a failure.");
    let _ = writeln!(out, "- **oxpi** iterates every event (`AssistantMessageEventStream`, consumed in the `#[tokio::main]` task, as the README's example does). **oxpi + partial args** also calls `partial_arguments` (the incremental parser's snapshot of the arguments so far) every {} KB of argument text, as a UI showing progress would; pi-ai TS re-parses the whole argument text on every delta, and the Rust port never parses until the end (malformed arguments become `{{}}` silently).", SNAPSHOT_EVERY / 1024);
    let _ = writeln!(out, "- **pi-ai TS** runs `bench/node/driver.mjs` under Node on the same server and model settings; **pi-ai Rust port** runs the same loop as oxpi's over its own event stream. pi-ai TS rows whose estimated time (previous size × the square of the size ratio) exceeds {:.0} s for one run are skipped and the estimate shown; rows that fit fewer runs than planned get fewer.", cx.node_budget_s);
    let _ = writeln!(out, "- **Agent loop.** 500 turns on each library's faux provider (16-character deltas), each turn one call to a no-op tool, then a final text reply. Per-turn overhead is the time from one `turn_start` event to the next, median of turns 6–15 (\"turn 10\") and of turns 491–500 (\"turn 500\"); wall is the whole `prompt`. oxpi runs twice: on the default multi-thread runtime and on a current-thread runtime (one thread, like Node's event loop).");
    let _ = writeln!(out, "- **Read tool.** oxpi's `read` on a file of 20-byte lines with default limits (first 2,000 lines, 50 KB), through `AgentTool::execute`; bytes read come from the result's details.");
    let _ = writeln!(out, "- **grep and find.** oxpi's `grep` and `find` tools (`oxpi-bench grep|find`, one call through the tool handle) against the `rg` and `fd` binaries (Debian's `ripgrep` and `fd-find`, installed with apt-get when missing) on the same generated tree (`oxpi-bench tree`: text files in nested directories, a `.gitignore` hiding 2% of them; the same bytes every time), page cache warm. grep looks for a literal and for a regex planted 40 times (under the 100-match limit, so the whole tree is read: `rg --line-number --color=never --hidden`, pi's flags with text output); find lists `**/*.rs` up to 1,000 results (`fd --glob --hidden --max-results 1000 '*.rs'`). oxpi, `rg` and `fd` are timed as whole processes, start to exit; pi's `grep` and `find` (pi-coding-agent {PI_TS_VERSION} under Node, `bench/node/driver.mjs tool`, spawning those same binaries; `fd` through a wrapper that drops `--no-require-git`, which Debian's fd 8.6 lacks) are timed around `execute()`, Node's start-up outside. CPU and RSS are not read for these rows.");
    let _ = writeln!(out, "- **Session load.** A session of turns (a user prompt, an assistant reply with text and a tool call, the tool's result; about 400 bytes an entry) written once by pi-coding-agent {}'s own `SessionManager` (`bench/node/session_load.mjs write`), then opened read-only and its context built, each run its own process: oxpi's `SessionManager::open_read_only` and `build_session_context` (`oxpi-bench session-load`) against pi's `SessionManager.open` and `buildSessionContext` under Node 22 (`session_load.mjs load`). The notes give each step's CPU time; the target compares CPU time (wall time on a loaded machine varies far more) and oxpi's peak RSS with the file's size.", super::env::PI16_VERSION);
    let _ = writeln!(out, "- **Durable runs.** The same scripted runs (five tool calls to a tool appending a line to a file, six model turns from a local scripted model: 11 journaled steps) through `Agent::prompt` in the xtask process and through oxpi-durable (a Restate server from npm, two service processes behind a TCP balancer, each run a virtual object), one after another and all at once (`cargo xtask chaos --scale N --bench in-process|durable`). Wall time covers the runs only, after one warm-up run; \"wall vs oxpi\" is durable over in process; the notes give wall time per journaled step and runs per second. CPU and RSS are not read (several processes).");
    let _ = writeln!(out, "- **Columns.** Wall and CPU (user + system, all threads: `getrusage`, `process.cpuUsage`) cover the measured span; peak RSS is the process's (`ru_maxrss`, `resourceUsage().maxRSS`); \"wall vs oxpi\" is the subject's median wall time over oxpi's on the same workload; \"RSS over idle\" is peak RSS minus RSS just before the span, against the content size; \"page faults\" (the Rust programs' streams) are the span's minor page faults (`ru_minflt`), each the first write to a page of fresh memory.\n");
    let _ = writeln!(out, "## Results\n");
    out.push_str(&table(cx.cells, cx.runs));
    let _ = writeln!(out, "\n## Targets\n");
    out.push_str(&targets(cx.cells));
    let mut notes: Vec<String> = cx.notes.to_vec();
    for c in cx.cells {
        if let Some(why) = &c.failed {
            notes.push(format!(
                "{} / {} failed: {why}",
                c.workload.label(),
                c.subject.name()
            ));
        }
    }
    if !notes.is_empty() {
        let _ = writeln!(out, "\n## Notes\n");
        for note in notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_medians() {
        assert_eq!(size_text(10 * 1024), "10 KB");
        assert_eq!(size_text(1 << 20), "1 MB");
        assert_eq!(size_text(1 << 30), "1 GB");
        assert_eq!(size_text(64 << 20), "64 MB");
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    fn cell(workload: Workload, subject: Subject, wall_ms: f64) -> Cell {
        Cell {
            workload,
            subject,
            samples: vec![serde_json::json!({
                "wall_ms": wall_ms, "cpu_ms": wall_ms, "peak_rss_kib": 10240, "rss_before_kib": 8192,
                "extra": {"turn10_us": 50.0, "turn_last_us": 60.0, "snapshots": 3}
            })],
            skipped: None,
            failed: None,
            runs: 1,
        }
    }

    #[test]
    fn the_session_load_target_compares_cpu_per_step_and_peak_rss_with_the_file() {
        let w = Workload::SessionLoad { entries: 50_000 };
        let sample = |open: f64, context: f64, peak_mib: u64| Cell {
            workload: w.clone(),
            subject: Subject::Oxpi,
            samples: vec![serde_json::json!({
                "wall_ms": 200.0, "cpu_ms": open + context, "peak_rss_kib": peak_mib * 1024,
                "rss_before_kib": 0,
                "extra": {"open_cpu_ms": open, "context_cpu_ms": context, "file_bytes": 20 << 20}
            })],
            skipped: None,
            failed: None,
            runs: 1,
        };
        let pi = Cell {
            subject: Subject::PiSessionTs,
            ..sample(330.0, 85.0, 133)
        };
        let check = |ours: Cell| {
            let cells = vec![ours, pi.clone()];
            let checks = checks(&cells);
            let found = checks.iter().find(|c| c.target.starts_with("session open"));
            (
                found.and_then(|c| c.pass),
                found.map(|c| c.measured.clone()),
            )
        };
        let (pass, measured) = check(sample(100.0, 20.0, 40));
        assert_eq!(pass, Some(true), "{measured:?}");
        assert_eq!(
            measured.as_deref(),
            Some("peak RSS 2.00× the file, open 100 vs 330 ms CPU, context 20.0 vs 85.0 ms CPU")
        );
        assert_eq!(check(sample(100.0, 20.0, 61)).0, Some(false));
        assert_eq!(check(sample(100.0, 90.0, 40)).0, Some(false));
        let text = table(&[sample(100.0, 20.0, 40)], 1);
        assert!(
            text.contains("CPU: open 100 ms, context 20.0 ms; peak RSS 2.0× the 20.0 MiB file"),
            "{text}"
        );
    }

    #[test]
    fn targets_are_checked_from_the_medians() {
        let w = |size| Workload::Stream {
            kind: "openai-tool",
            size,
        };
        let cells = vec![
            cell(w(100 * 1024), Subject::Oxpi, 10.0),
            cell(w(100 * 1024), Subject::OxpiPartial, 11.0),
            cell(w(100 * 1024), Subject::PiAiRs, 60.0),
            cell(w(100 * 1024), Subject::StreamFloor, 8.0),
            cell(w(100 * 1024), Subject::PiAiTs, 9000.0),
            cell(w(300 * 1024), Subject::Oxpi, 40.0),
            cell(w(300 * 1024), Subject::OxpiPartial, 33.0),
            cell(Workload::AgentLoop { turns: 500 }, Subject::Oxpi, 100.0),
            cell(
                Workload::Rpc {
                    round_trips: 1000,
                    cpus: crate::bench::RpcCpus::One,
                },
                Subject::Oxpi,
                300.0,
            ),
            cell(
                Workload::Rpc {
                    round_trips: 1000,
                    cpus: crate::bench::RpcCpus::One,
                },
                Subject::EchoFloor,
                100.0,
            ),
            cell(
                Workload::Rpc {
                    round_trips: 1000,
                    cpus: crate::bench::RpcCpus::One,
                },
                Subject::PiCli,
                500.0,
            ),
        ];
        let checks = checks(&cells);
        let by = |text: &str| checks.iter().find(|c| c.target.contains(text)).unwrap();
        assert_eq!(by("Rust port").pass, Some(true));
        assert_eq!(by("100×").pass, Some(true));
        // 40 / 10 = 4 > 3.5.
        assert_eq!(by("(OpenAI): 300 KB").pass, Some(false));
        assert_eq!(by("(OpenAI): 1 MB").pass, None);
        assert_eq!(by("agent loop").pass, Some(true));
        // 10 / 8 and 11 / 8 are within 1.5× the floor; 300 / 100 is not (pi's 5× is shown, not
        // judged).
        let stream_floor = by("floor: tool call 100 KB (OpenAI)");
        assert_eq!(stream_floor.pass, Some(true));
        assert!(
            stream_floor.measured.contains("oxpi 1.25×"),
            "{}",
            stream_floor.measured
        );
        let rpc = by("floor: RPC");
        assert_eq!(rpc.pass, Some(false));
        assert!(rpc.measured.contains("oxpi 3.00×") && rpc.measured.contains("pi 1.6.0 5.00×"));
        // No 10 KB row: no slope.
        assert!(!checks.iter().any(|c| c.target.contains("peak RSS")));
        let text = table(&cells, 1);
        assert!(
            text.contains("| tool call 100 KB (OpenAI) | pi-ai Rust port 1.0.0 | 60.0 |"),
            "{text}"
        );
    }
}
