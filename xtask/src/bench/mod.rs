//! `cargo xtask bench`: oxpi against pi 1.6 (pi-ai, pi-agent-core and the `pi` command of
//! pi-coding-agent, TypeScript, under Node) and the crates.io Rust port `pi-ai` 1.0.0, in one
//! run: the rows users feel (start-up, one `-p` answer, RPC round trips, 1,000 agents) and the
//! same pre-rendered streams from a local server, each with its floor where one exists (an echo
//! process on the RPC pipes, the stream's bytes received and not parsed).
//!
//! The measured programs live in `bench/` (package `oxpi-bench`): each measurement is its own
//! process, which prints one JSON line (wall time, CPU time, peak RSS and its own figures).
//! This module builds them, starts the stream server, installs pi-ai with npm into a cache
//! directory when Node is present, runs every subject on every workload several times
//! (interleaved, so drift on a busy machine hits all subjects alike), and prints the table and
//! the targets, also written to BENCHMARKS.md.

pub(crate) mod env;
mod execute;
mod report;
use execute::{execute, Outcome};
mod rows;
mod search;
mod session;
mod tui;
mod tui_history;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use crate::args::{positive, split_flag, value};

const USAGE: &str = "\
cargo xtask bench [--quick] [--runs N] [--out PATH] [--no-node] [--node-budget SECS] [--only TEXT]

Measures oxpi against pi 1.6 (pi-ai, pi-agent-core and the `pi` command, TypeScript, under
Node) and the crates.io Rust port pi-ai 1.0.0: start-up (`--version`), one `-p` answer from a
local server, 1,000 RPC `get_state` round trips (with an echo process on the same pipes as the
floor), 1,000 agents answering at once, and the same pre-rendered streams served by a local HTTP
server (10-byte deltas; the floor receives the same bytes without parsing them): a 100 KB text
reply, and one tool call of 10 KB, 100 KB, 300 KB and 1 MB in OpenAI Chat Completions and in
Anthropic Messages format. Also a 500-turn agent loop on the faux provider, oxpi's read tool on
a 1 GB file, grep / find, opening a 50,000-entry session and building its context (oxpi and
pi-coding-agent 1.6.0 under Node 22, on a file pi wrote), and the interactive mode in tmux (oxpi,
release build, against pi 1.6 under Node 22: start to editor ready, and CPU time while a 100 KB
reply streams, without and after 5,000 lines of transcript). Prints one table with the ratios and the targets, and writes it
to BENCHMARKS.md; the load average before and after is in the report, and a run on a loaded
machine says so at the top.

pi 1.6 is installed with npm into $OXPI_HOME/bench (default ~/.cache/oxpi/bench) on first use,
with a Node 22 from npm when the system's is older. Without Node or npm its rows say so and
oxpi's figures are printed alone. pi-ai TS is quadratic
in the tool-call size: a row whose estimated time (from the previous size) exceeds the budget is
skipped and the estimate shown.

Options:
  --quick            Smoke run for CI: 1 run, sizes up to 100 KB, a 64 MB file, a 20 KB
                     interactive reply;
                     writes target/oxpi-bench/BENCHMARKS-quick.md unless --out is given
  --runs N           Runs per subject and workload (default 5, --quick 1; runs under 50 ms get
                     three times as many, runs under 10 ms nine times as many; a
                     workload's floor and oxpi's subjects all by oxpi's first run)
  --out PATH         Where to write the report (default BENCHMARKS.md at the workspace root)
  --no-node          Do not measure pi-ai TS / pi-agent-core even if Node is present
  --node-budget SECS Longest expected time for all runs of one pi-ai TS row; a row whose single
                     run is expected to take longer is skipped (default 240, --quick 10)
  --only TEXT        Only workloads whose label contains TEXT (for development)
  -h, --help         Show this help";

/// Options of `bench`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    help: bool,
    quick: bool,
    runs: Option<u64>,
    out: Option<PathBuf>,
    no_node: bool,
    node_budget: Option<u64>,
    only: Option<String>,
}

impl Options {
    /// Parses the arguments after `bench`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self::default();
        let mut rest = argv.into_iter();
        while let Some(arg) = rest.next() {
            let (flag, inline) = split_flag(&arg);
            match flag {
                "-h" | "--help" => options.help = true,
                "--quick" => options.quick = true,
                "--no-node" => options.no_node = true,
                "--runs" => {
                    let text = value(flag, inline, &mut rest)?;
                    options.runs = Some(positive(flag, &text)?);
                }
                "--node-budget" => {
                    let text = value(flag, inline, &mut rest)?;
                    options.node_budget = Some(positive(flag, &text)?);
                }
                "--out" => options.out = Some(PathBuf::from(value(flag, inline, &mut rest)?)),
                "--only" => options.only = Some(value(flag, inline, &mut rest)?),
                other => return Err(format!("bench: unexpected argument `{other}`\n\n{USAGE}")),
            }
        }
        Ok(options)
    }
}

/// The version of pi-ai and pi-agent-core measured under Node.
pub(crate) const PI_TS_VERSION: &str = "1.6.0";
/// The crates.io Rust port measured (pinned in bench/Cargo.toml).
pub(crate) const PI_RS_VERSION: &str = "1.0.0";

const KIB: usize = 1024;

/// What is measured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Workload {
    /// The command started and ended: `--version`.
    Startup,
    /// One `-p` answer: a text reply of `size` bytes from the stream server, printed.
    Print { size: usize },
    /// Sequential `get_state` round trips over `--mode rpc` pipes, the client and the child
    /// pinned to one CPU or to two (`oxpi-bench rpc --cpus`).
    Rpc { round_trips: usize, cpus: RpcCpus },
    /// `count` agents answering one prompt each on the faux provider, all at once.
    Agents { count: usize },
    /// One streamed reply: `kind` as the bench server names it, `size` content bytes.
    Stream { kind: &'static str, size: usize },
    /// The agent loop on the faux provider.
    AgentLoop { turns: usize },
    /// The read tool on a file of `bytes`.
    Read { bytes: u64 },
    /// A `grep` or `find` on the generated tree of `files` files and about `bytes` bytes.
    Search {
        search: search::Search,
        files: usize,
        bytes: u64,
    },
    /// Opening a session file of `entries` entries that pi wrote, and building its context.
    SessionLoad { entries: usize },
    /// The interactive mode in tmux (tui.rs).
    Tui(tui::TuiWork),
    /// `runs` scripted runs of five tool calls each (11 journaled steps), in process and on
    /// Restate (`cargo xtask chaos --scale N --bench …`), all at once or one after another.
    Durable { runs: usize, concurrent: bool },
}

/// Where the RPC row's client and child run: a round trip within one CPU costs a few
/// microseconds, one between two CPUs the other's wake-up, so each row measures every subject
/// in one placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RpcCpus {
    /// Both on one CPU.
    One,
    /// The client on one CPU, the child on another.
    Two,
}

impl RpcCpus {
    /// The value of `oxpi-bench rpc --cpus`.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            RpcCpus::One => "one",
            RpcCpus::Two => "two",
        }
    }
}

impl Workload {
    /// The label in the table.
    pub(crate) fn label(&self) -> String {
        match self {
            Workload::Stream { kind, size } => {
                let what = match *kind {
                    "openai-text" => "text",
                    _ => "tool call",
                };
                let format = if kind.starts_with("anthropic") {
                    "Anthropic"
                } else {
                    "OpenAI"
                };
                format!("{what} {} ({format})", report::size_text(*size as u64))
            }
            Workload::Startup => "start-up (`--version`)".into(),
            Workload::Print { size } => {
                format!(
                    "one `-p` answer ({} reply)",
                    report::size_text(*size as u64)
                )
            }
            Workload::Rpc { round_trips, cpus } => {
                format!(
                    "RPC: {} get_state round trips, {}",
                    search::thousands(*round_trips),
                    match cpus {
                        RpcCpus::One => "one CPU",
                        RpcCpus::Two => "two CPUs",
                    }
                )
            }
            Workload::Agents { count } => {
                format!("{} agents, one answer each", search::thousands(*count))
            }
            Workload::AgentLoop { turns } => format!("agent loop, {turns} turns"),
            Workload::Read { bytes } => {
                format!("read 2,000 lines of {}", report::size_text(*bytes))
            }
            Workload::Search {
                search,
                files,
                bytes,
            } => search.label(*files, *bytes),
            Workload::SessionLoad { entries } => {
                format!(
                    "session open + context, {} entries",
                    search::thousands(*entries)
                )
            }
            Workload::Tui(work) => work.label(),
            Workload::Durable { runs, concurrent } => format!(
                "durable: {} runs {}, 11 journaled steps each",
                search::thousands(*runs),
                if *concurrent {
                    "at once"
                } else {
                    "one at a time"
                }
            ),
        }
    }
}

/// Who is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// oxpi, consuming every event.
    Oxpi,
    /// oxpi, every event plus a `partial_arguments` snapshot every 4 KB of arguments.
    OxpiPartial,
    /// oxpi on a current-thread Tokio runtime (one thread, as Node has).
    OxpiCurrentThread,
    /// The crates.io Rust port.
    PiAiRs,
    /// pi-ai (TypeScript) under Node.
    PiAiTs,
    /// pi-agent-core (TypeScript) under Node.
    PiAgentCoreTs,
    /// pi's `grep` / `find` tools (pi-coding-agent, TypeScript) under Node; they spawn `rg` and
    /// `fd`.
    PiToolsTs,
    /// The `rg` binary (ripgrep).
    Rg,
    /// The `fd` binary.
    Fd,
    /// pi-coding-agent 1.6's `SessionManager` (TypeScript) under Node 22.
    PiSessionTs,
    /// pi-coding-agent 1.6 (`pi`) under Node 22, in a terminal.
    Pi16,
    /// The stream's floor: the same request, its bytes received and counted, not parsed.
    StreamFloor,
    /// The RPC floor: an echo process answering every line on the same pipes.
    EchoFloor,
    /// The `pi` command (pi-coding-agent, TypeScript) under Node.
    PiCli,
    /// The same runs through oxpi-durable: one Restate server, two service processes.
    OxpiDurable,
}

/// Bytes of arguments between two `partial_arguments` snapshots in the OxpiPartial subject.
pub(crate) const SNAPSHOT_EVERY: usize = 4 * KIB;

impl Subject {
    /// The name in the table.
    pub(crate) fn name(self) -> String {
        match self {
            Subject::Oxpi => "oxpi".into(),
            Subject::OxpiPartial => "oxpi + partial args".into(),
            Subject::OxpiCurrentThread => "oxpi, current-thread runtime".into(),
            Subject::PiAiRs => format!("pi-ai Rust port {PI_RS_VERSION}"),
            Subject::PiAiTs => format!("pi-ai TS {PI_TS_VERSION}"),
            Subject::PiAgentCoreTs => format!("pi-agent-core TS {PI_TS_VERSION}"),
            Subject::PiToolsTs => format!("pi-coding-agent TS {PI_TS_VERSION}"),
            Subject::Rg => "rg (ripgrep)".into(),
            Subject::Fd => "fd".into(),
            Subject::PiSessionTs => format!("pi-coding-agent TS {} (Node 22)", env::PI16_VERSION),
            Subject::Pi16 => "pi 1.6 (Node 22)".into(),
            Subject::StreamFloor => "floor: bytes received, not parsed".into(),
            Subject::EchoFloor => "floor: echo process".into(),
            Subject::PiCli => format!("pi {PI_TS_VERSION}"),
            Subject::OxpiDurable => "oxpi-durable on Restate".into(),
        }
    }

    pub(crate) fn is_node(self) -> bool {
        matches!(
            self,
            Subject::PiAiTs
                | Subject::PiAgentCoreTs
                | Subject::PiToolsTs
                | Subject::PiSessionTs
                | Subject::Pi16
                | Subject::PiCli
        )
    }

    /// One of oxpi's own subjects, the ones measured against a floor.
    pub(crate) fn is_oxpi(self) -> bool {
        matches!(
            self,
            Subject::Oxpi | Subject::OxpiPartial | Subject::OxpiCurrentThread
        )
    }

    /// True for a floor (what the transport alone costs), not a program measured against it.
    pub(crate) fn is_floor(self) -> bool {
        matches!(self, Subject::StreamFloor | Subject::EchoFloor)
    }
}

/// The workloads and subjects of one run.
#[derive(Debug)]
struct Plan {
    runs: usize,
    workloads: Vec<Workload>,
    node_budget_s: f64,
    out: PathBuf,
}

impl Plan {
    fn new(root: &Path, target: &Path, options: &Options) -> Self {
        let (sizes, runs, file, budget): (&[usize], u64, u64, u64) = if options.quick {
            (&[10 * KIB, 100 * KIB], 1, 64 << 20, 10)
        } else {
            (
                &[10 * KIB, 100 * KIB, 300 * KIB, 1024 * KIB],
                5,
                1 << 30,
                240,
            )
        };
        let (tree_files, tree_bytes) = if options.quick {
            (2_000, 20 << 20)
        } else {
            (20_000, 200 << 20)
        };
        // The rows users feel first. The session-load row (a 50,000-entry session written by
        // pi's SessionManager) and the interactive view's rows belong here too, after these.
        let mut workloads = vec![
            Workload::Startup,
            Workload::Print { size: 2 * KIB },
            Workload::Rpc {
                round_trips: 1000,
                cpus: RpcCpus::One,
            },
            Workload::Rpc {
                round_trips: 1000,
                cpus: RpcCpus::Two,
            },
            Workload::Agents { count: 1000 },
        ];
        workloads.push(Workload::Stream {
            kind: "openai-text",
            size: 100 * KIB,
        });
        for kind in ["openai-tool", "anthropic-tool"] {
            for &size in sizes {
                workloads.push(Workload::Stream { kind, size });
            }
        }
        workloads.push(Workload::AgentLoop { turns: 500 });
        workloads.push(Workload::Read { bytes: file });
        for search in [
            search::Search::GrepLiteral,
            search::Search::GrepRegex,
            search::Search::Find,
        ] {
            workloads.push(Workload::Search {
                search,
                files: tree_files,
                bytes: tree_bytes,
            });
        }
        workloads.push(Workload::SessionLoad {
            entries: if options.quick { 5_000 } else { 50_000 },
        });
        // What durability costs: the same runs in process and on Restate.
        let (one_by_one, at_once) = if options.quick { (3, 20) } else { (10, 1000) };
        workloads.push(Workload::Durable {
            runs: one_by_one,
            concurrent: false,
        });
        workloads.push(Workload::Durable {
            runs: at_once,
            concurrent: true,
        });
        // The interactive rows: --quick streams a smaller reply.
        let reply = if options.quick { 20 * KIB } else { 100 * KIB };
        workloads.push(Workload::Tui(tui::TuiWork::Start));
        for history_lines in [0, 5_000] {
            workloads.push(Workload::Tui(tui::TuiWork::Stream {
                size: reply,
                history_lines,
            }));
        }
        if let Some(only) = &options.only {
            workloads.retain(|w| w.label().contains(only.as_str()));
        }
        let out = options.out.clone().unwrap_or_else(|| {
            if options.quick {
                target.join("oxpi-bench").join("BENCHMARKS-quick.md")
            } else {
                root.join("BENCHMARKS.md")
            }
        });
        Self {
            runs: options.runs.unwrap_or(runs) as usize,
            workloads,
            node_budget_s: options.node_budget.unwrap_or(budget) as f64,
            out,
        }
    }
}

/// The results of one subject on one workload.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub(crate) workload: Workload,
    pub(crate) subject: Subject,
    /// The JSON reports of the successful runs.
    pub(crate) samples: Vec<Value>,
    /// Why it was not measured (the subject cannot do it, Node missing, over budget).
    pub(crate) skipped: Option<String>,
    /// Why a run failed.
    pub(crate) failed: Option<String>,
    /// Runs planned (fewer than the plan's when the Node budget allows fewer).
    pub(crate) runs: usize,
}

/// Where the programs are and what they are run against.
struct Env {
    /// The release `oxpi` command.
    oxpi_bin: PathBuf,
    /// Where the `pi` and `oxpi` commands read their settings in the bench (see
    /// [`rows::pi_home`]).
    homes: rows::Homes,
    bench_bin: PathBuf,
    piai_rs_bin: PathBuf,
    driver: PathBuf,
    /// `bench/node/session_load.mjs`.
    session_script: PathBuf,
    node: Option<env::Node>,
    /// Why Node subjects are skipped, when `node` is `None`.
    no_node: String,
    origin: String,
    read_file: Option<PathBuf>,
    /// The tree the search rows run on.
    tree: Option<search::Tree>,
    /// The session file of the session-load row (pi writes it, or oxpi without pi), or why
    /// there is none.
    session: Result<PathBuf, String>,
    /// The Node 22 that runs pi for the session-load row, or why pi is not measured.
    pi_session: Result<env::Node, String>,
    binaries: search::Binaries,
    /// The interactive rows' terminal and programs, or why they are not measured.
    tui: Result<tui::Setup, String>,
}

/// Runs `bench`; `Ok(true)` when every oxpi measurement succeeded (missed targets are
/// reported, not failures: the targets are checked by reading the ratios).
pub(crate) fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    let started = Instant::now();
    let target = env::target_dir(root);
    let plan = Plan::new(root, &target, &options);
    let machine = env::Machine::read();
    println!("==> {}", machine.summary());

    println!("==> cargo build --release -p oxpi-bench -p oxpi-cli");
    env::cargo(
        root,
        &["build", "--release", "-p", "oxpi-bench", "-p", "oxpi-cli"],
    )?;
    let bin = target.join("release");

    let mut notes = Vec::new();
    let mut no_node = String::new();
    let node = if options.no_node {
        no_node = "not measured (--no-node)".into();
        notes.push("Node measurements skipped (--no-node).".to_string());
        None
    } else {
        match env::Node::prepare() {
            Ok(node) => Some(node),
            Err(why) => {
                println!("note: {why}");
                no_node = why.clone();
                notes.push(why);
                None
            }
        }
    };

    let read_file = match plan.workloads.iter().find_map(|w| match w {
        Workload::Read { bytes } => Some(*bytes),
        _ => None,
    }) {
        Some(bytes) => Some(env::big_file(&target.join("oxpi-bench"), bytes)?),
        None => None,
    };

    let planned_tree = plan.workloads.iter().find_map(|w| match w {
        Workload::Search { files, bytes, .. } => Some((*files, *bytes)),
        _ => None,
    });
    let (tree, binaries) = match planned_tree {
        Some((files, bytes)) => {
            let tree = search::tree(
                &bin.join("oxpi-bench"),
                &target.join("oxpi-bench"),
                files,
                bytes,
            )?;
            println!(
                "==> search tree {}: {} files, {:.0} MiB",
                tree.root.display(),
                tree.files,
                tree.bytes as f64 / 1048576.0
            );
            let binaries = search::Binaries::prepare();
            for why in &binaries.missing {
                println!("note: {why}");
                notes.push(why.clone());
            }
            (Some(tree), binaries)
        }
        None => (None, search::Binaries::default()),
    };

    let (session, pi_session) = match plan.workloads.iter().find_map(|w| match w {
        Workload::SessionLoad { entries } => Some(*entries),
        _ => None,
    }) {
        Some(entries) => {
            let pi = if options.no_node {
                Err("not measured (--no-node)".to_string())
            } else {
                env::Node::prepare_pi_session()
            };
            let writer = match &pi {
                Ok(node) => session::Writer::Pi(node),
                Err(why) => {
                    let why =
                        format!("pi session loading: {why}; the session file is written by oxpi");
                    println!("note: {why}");
                    notes.push(why);
                    session::Writer::Oxpi(&bin)
                }
            };
            let file = session::file(root, &target.join("oxpi-bench"), writer, entries);
            if let Err(why) = &file {
                println!("note: {why}");
                notes.push(why.clone());
            }
            (file, pi)
        }
        None => (Err("not planned".into()), Err("not planned".into())),
    };

    let prerender: Vec<String> = plan
        .workloads
        .iter()
        .filter_map(|w| match w {
            Workload::Stream { kind, size } => Some(format!("{kind}:{size}")),
            Workload::Tui(tui::TuiWork::Stream { size, .. }) => Some(format!("tui-text:{size}")),
            Workload::Print { size } => Some(format!("openai-text:{size}")),
            _ => None,
        })
        .collect();
    let mut server = Server::start(&bin.join("oxpi-bench"), &prerender.join(","))?;
    println!("==> stream server at {}", server.origin);

    let tui = if plan.workloads.iter().any(|w| matches!(w, Workload::Tui(_))) {
        tui::prepare(&target, &options, &server.origin)
    } else {
        Err("not planned".into())
    };
    if let Err(why) = &tui {
        println!("note: interactive rows: {why}");
    }

    let print_size = plan
        .workloads
        .iter()
        .find_map(|w| match w {
            Workload::Print { size } => Some(*size),
            _ => None,
        })
        .unwrap_or(2 * KIB);
    let homes = rows::pi_home(&target.join("oxpi-bench"), &server.origin, print_size)?;
    let env = Env {
        oxpi_bin: bin.join("oxpi"),
        homes,
        bench_bin: bin.join("oxpi-bench"),
        piai_rs_bin: bin.join("piai-rs-bench"),
        driver: root.join("bench").join("node").join("driver.mjs"),
        session_script: root.join("bench").join("node").join("session_load.mjs"),
        node,
        no_node,
        origin: server.origin.clone(),
        read_file,
        tree,
        binaries,
        session,
        pi_session,
        tui,
    };
    let cells = measure(&plan, &env);
    server.stop();

    let versions = env::Versions::read(root, env.node.as_ref());
    let elapsed = started.elapsed().as_secs_f64();
    let command = if options.quick {
        "cargo xtask bench --quick".to_string()
    } else {
        std::iter::once("cargo xtask bench".to_string())
            .chain(std::env::args().skip(2))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let text = report::render(&report::Context {
        cells: &cells,
        machine: &machine,
        versions: &versions,
        command: &command,
        runs: plan.runs,
        node_budget_s: plan.node_budget_s,
        quick: options.quick,
        notes: &notes,
        elapsed_s: elapsed,
        load_after: env::Machine::read().load,
    });
    println!("\n{text}");
    if let Some(parent) = plan.out.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("could not create {}: {e}", parent.display()))?;
    }
    std::fs::write(&plan.out, &text)
        .map_err(|e| format!("could not write {}: {e}", plan.out.display()))?;
    println!("==> wrote {} ({elapsed:.0} s in all)", plan.out.display());

    let broken: Vec<String> = cells
        .iter()
        .filter(|c| {
            matches!(
                c.subject,
                Subject::Oxpi | Subject::OxpiPartial | Subject::OxpiCurrentThread
            )
        })
        .filter_map(|c| {
            c.failed
                .as_ref()
                .map(|why| format!("{} / {}: {why}", c.workload.label(), c.subject.name()))
        })
        .collect();
    for line in &broken {
        eprintln!("error: oxpi failed: {line}");
    }
    Ok(broken.is_empty())
}

fn subjects(workload: &Workload) -> Vec<Subject> {
    match workload {
        Workload::Startup | Workload::Print { .. } => vec![Subject::Oxpi, Subject::PiCli],
        Workload::Rpc { .. } => vec![Subject::Oxpi, Subject::EchoFloor, Subject::PiCli],
        Workload::Agents { .. } => vec![Subject::Oxpi, Subject::PiAgentCoreTs],
        Workload::Durable { .. } => vec![Subject::Oxpi, Subject::OxpiDurable],
        Workload::Stream { kind, .. } if *kind == "openai-text" => vec![
            Subject::Oxpi,
            Subject::StreamFloor,
            Subject::PiAiRs,
            Subject::PiAiTs,
        ],
        Workload::Stream { .. } => vec![
            Subject::Oxpi,
            Subject::OxpiPartial,
            Subject::StreamFloor,
            Subject::PiAiRs,
            Subject::PiAiTs,
        ],
        Workload::AgentLoop { .. } => vec![
            Subject::Oxpi,
            Subject::OxpiCurrentThread,
            Subject::PiAgentCoreTs,
        ],
        Workload::Read { .. } => vec![Subject::Oxpi],
        Workload::SessionLoad { .. } => vec![Subject::Oxpi, Subject::PiSessionTs],
        Workload::Tui(_) => vec![Subject::Oxpi, Subject::Pi16],
        Workload::Search { search, .. } => match search {
            search::Search::Find => vec![Subject::Oxpi, Subject::Fd, Subject::PiToolsTs],
            _ => vec![Subject::Oxpi, Subject::Rg, Subject::PiToolsTs],
        },
    }
}

/// How many times as many runs a cell gets whose first run took `ms`: on a busy machine a run of
/// a few milliseconds is mostly scheduling noise (and page faults, whose cost here varies
/// tenfold with the host's memory pressure), and more runs steady its median. Runs under 50 ms
/// get three times as many, runs under 10 ms (the 10 KB and 100 KB streams and their floors,
/// whose ratio is the one closest to its target) nine times as many.
fn short_run_factor(ms: f64) -> usize {
    if ms < 10.0 {
        9
    } else if ms < 50.0 {
        3
    } else {
        1
    }
}

/// After the first round, the runs of every cell not under Node: [`short_run_factor`] of a
/// first run's time. A workload's floor and oxpi's subjects, whose ratio to the floor is a
/// target, all take the factor of oxpi's first run, so that their extra runs fall in the same
/// rounds (in the later rounds only the short cells run, back to back, which a floor measured
/// there alone would gain or lose by); every other subject takes its own.
fn settle_run_counts(cells: &mut [Cell], base: usize) {
    let first_ms = |cell: &Cell| cell.samples.first().and_then(|s| s["wall_ms"].as_f64());
    let oxpi_ms: Vec<Option<f64>> = cells
        .iter()
        .map(|cell| {
            cells
                .iter()
                .find(|c| c.workload == cell.workload && c.subject == Subject::Oxpi)
                .and_then(first_ms)
        })
        .collect();
    for (cell, oxpi_ms) in cells.iter_mut().zip(oxpi_ms) {
        if cell.subject.is_node() {
            continue;
        }
        let lead = if cell.subject.is_floor() || cell.subject.is_oxpi() {
            oxpi_ms.or_else(|| first_ms(cell))
        } else {
            first_ms(cell)
        };
        cell.runs = base * lead.map_or(1, short_run_factor);
    }
}

/// Runs every cell round by round: each round runs every cell that still needs runs, in plan
/// order, so load that comes and goes on the machine falls on every workload and subject alike
/// (the linearity ratios compare different workloads).
fn measure(plan: &Plan, env: &Env) -> Vec<Cell> {
    let mut cells: Vec<Cell> = plan
        .workloads
        .iter()
        .flat_map(|workload| {
            subjects(workload).into_iter().map(|subject| Cell {
                workload: workload.clone(),
                subject,
                samples: Vec::new(),
                skipped: None,
                failed: None,
                runs: plan.runs,
            })
        })
        .collect();
    if env.node.is_none() {
        for cell in cells.iter_mut().filter(|c| c.subject.is_node()) {
            cell.skipped = Some(env.no_node.clone());
        }
    }
    let mut round = 0;
    loop {
        let started = Instant::now();
        let mut ran = 0;
        for i in round_order(&cells, round) {
            if round == 0 && cells[i].subject.is_node() && cells[i].skipped.is_none() {
                if let Some((runs, why)) = node_budget(&cells[..i], &cells[i].workload, plan) {
                    cells[i].runs = runs;
                    cells[i].skipped = why;
                }
            }
            let cell = &mut cells[i];
            if cell.skipped.is_some() || cell.failed.is_some() || round >= cell.runs {
                continue;
            }
            ran += 1;
            match execute(env, &cell.workload, cell.subject) {
                Outcome::Ok(sample) => cell.samples.push(sample),
                Outcome::Skipped(why) => cell.skipped = Some(why),
                Outcome::Failed(why) => cell.failed = Some(why),
            }
        }
        if ran == 0 {
            break;
        }
        if round == 0 {
            settle_run_counts(&mut cells, plan.runs);
        }
        round += 1;
        println!(
            "--> round {round}: {ran} runs ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
    }
    for workload in &plan.workloads {
        print!("--> {}:", workload.label());
        for cell in cells.iter().filter(|c| &c.workload == workload) {
            match (&cell.skipped, &cell.failed) {
                (Some(_), _) => print!("  {} skipped;", cell.subject.name()),
                (_, Some(why)) => print!("  {} FAILED ({why});", cell.subject.name()),
                _ => print!(
                    "  {} {:.1} ms;",
                    cell.subject.name(),
                    report::median(&report::walls(cell))
                ),
            }
        }
        println!();
    }
    cells
}

/// The order of the cells in round `round`: workload by workload as planned, each workload's
/// subjects in the order of row `round` of a Williams design (a Latin square in which, over
/// its rows, every subject runs right after every other one equally often: once each in `n`
/// rounds for `n` subjects, `n` even; twice in `2n`, `n` odd). What ran just before matters: a
/// subject that always ran right after another of the same program would find that program's
/// code still in the caches, and one that always ran right after pi-ai under Node (which frees
/// a hundred megabytes on exit, that this VM hands back) would meet the slowest fresh memory.
/// A rotation keeps every subject's predecessor the same, so it is not used.
fn round_order(cells: &[Cell], round: usize) -> Vec<usize> {
    let mut order = Vec::with_capacity(cells.len());
    let mut start = 0;
    while start < cells.len() {
        let end = (start..cells.len())
            .find(|&i| cells[i].workload != cells[start].workload)
            .unwrap_or(cells.len());
        order.extend(
            williams_row(end - start, round)
                .into_iter()
                .map(|k| start + k),
        );
        start = end;
    }
    order
}

/// Row `round` (cyclically) of the Williams design for `n` subjects: the first row is 0, 1,
/// n-1, 2, n-2, …; row r adds r to each (mod n); for odd `n` rows n..2n are the first n
/// reversed.
fn williams_row(n: usize, round: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let first = (0..n).map(|k| {
        if k % 2 == 1 {
            k.div_ceil(2)
        } else {
            (n - k / 2) % n
        }
    });
    let period = if n % 2 == 0 { n } else { 2 * n };
    let r = round % period;
    let mut row: Vec<usize> = first.map(|k| (k + r % n) % n).collect();
    if r >= n {
        row.reverse();
    }
    row
}

/// For a pi-ai TS stream row: how many runs fit the budget, or why the row is skipped. pi-ai
/// TS re-parses the whole argument text on every delta, so its time grows with the square of
/// the size; the estimate scales the previous size's median by that square.
fn node_budget(done: &[Cell], workload: &Workload, plan: &Plan) -> Option<(usize, Option<String>)> {
    let Workload::Stream { kind, size } = workload else {
        return None;
    };
    let previous = done.iter().rev().find_map(|c| match &c.workload {
        Workload::Stream { kind: k, size: s }
            if k == kind && *s < *size && c.subject == Subject::PiAiTs =>
        {
            Some((*s, c))
        }
        _ => None,
    })?;
    let (previous_size, cell) = previous;
    if let Some(why) = &cell.skipped {
        if why.starts_with("skipped (quadratic") || why.starts_with("over budget") {
            return Some((
                0,
                Some(format!(
                    "over budget, as the {} run was",
                    report::size_text(previous_size as u64)
                )),
            ));
        }
        return None;
    }
    let walls = report::walls(cell);
    if walls.is_empty() {
        return None;
    }
    let scale = *size as f64 / previous_size as f64;
    let estimate_s = report::median(&walls) / 1000.0 * scale * scale;
    if estimate_s > plan.node_budget_s {
        return Some((
            0,
            Some(format!(
                "skipped (quadratic: est. {estimate_s:.0} s per run, budget {:.0} s)",
                plan.node_budget_s
            )),
        ));
    }
    let runs = ((plan.node_budget_s / estimate_s) as usize).clamp(1, plan.runs);
    Some((runs, None))
}

/// The stream server child process; it exits when its stdin closes.
struct Server {
    child: Child,
    origin: String,
}

impl Server {
    fn start(bin: &Path, prerender: &str) -> Result<Self, String> {
        let mut child = Command::new(bin)
            .args(["serve", "--prerender", prerender])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("could not start the stream server: {e}"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the stream server has no stdout")?;
        let mut origin = String::new();
        BufReader::new(stdout)
            .read_line(&mut origin)
            .map_err(|e| format!("the stream server did not start: {e}"))?;
        let origin = origin.trim().to_string();
        if !origin.starts_with("http://") {
            let _ = child.kill();
            return Err(format!("the stream server printed {origin:?}"));
        }
        Ok(Self { child, origin })
    }

    fn stop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests;
