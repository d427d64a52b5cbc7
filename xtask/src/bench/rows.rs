//! The rows users feel, run as whole commands: start-up, one `-p` answer, RPC round trips (with
//! the echo floor), 1,000 agents; and the stream rows' transport floor. This module builds their
//! commands and checks their targets against the floors.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::report::{median, ratio, walls, Check};
use super::{Cell, Env, Subject, Workload};

/// The provider and model both commands are pointed at (a `models.json` entry).
const PROVIDER: &str = "bench";
const MODEL: &str = "bench-model";
/// The prompt of the `-p` row.
const PROMPT: &str = "Say something.";
/// Most a program may cost over its floor (RPC round trips, streams).
pub(crate) const FLOOR_LIMIT: f64 = 1.5;

/// Where `pi` and `oxpi` read their settings during the bench: one agent directory
/// (`PI_CODING_AGENT_DIR`, which both read) whose `models.json` names the stream server's text
/// reply as provider [`PROVIDER`], and an empty working directory outside the repository (no
/// context files).
#[derive(Debug, Clone)]
pub(crate) struct Homes {
    agent_dir: PathBuf,
    cwd: PathBuf,
}

/// Writes the agent directory for the server at `origin`, under `dir`. The model's base URL is
/// the text reply of the `-p` row's size, so one server answers both commands.
pub(crate) fn pi_home(dir: &Path, origin: &str, print_size: usize) -> Result<Homes, String> {
    let agent_dir = dir.join("agent");
    let cwd = std::env::temp_dir().join("oxpi-bench-cwd");
    for d in [&agent_dir, &cwd] {
        std::fs::create_dir_all(d).map_err(|e| format!("could not create {}: {e}", d.display()))?;
    }
    let models = serde_json::json!({"providers": {PROVIDER: {
        "baseUrl": format!("{origin}/openai-text/{print_size}"),
        "api": "openai-completions",
        "apiKey": "bench-key",
        "models": [{"id": MODEL}],
    }}});
    let path = agent_dir.join("models.json");
    std::fs::write(&path, format!("{models:#}"))
        .map_err(|e| format!("could not write {}: {e}", path.display()))?;
    Ok(Homes { agent_dir, cwd })
}

/// The command measuring `subject` on `workload` when this module owns the pair; `Err` says
/// why it is skipped.
pub(crate) fn command(
    env: &Env,
    workload: &Workload,
    subject: Subject,
) -> Option<Result<Command, String>> {
    let bench = || {
        let mut c = Command::new(&env.bench_bin);
        c.env("PI_CODING_AGENT_DIR", &env.homes.agent_dir)
            .env("PI_OFFLINE", "1")
            .current_dir(&env.homes.cwd);
        c
    };
    // The program and its arguments for a whole-command row: oxpi's or pi's.
    let program = |args: &[&str]| -> Result<Vec<String>, String> {
        let mut argv = match subject {
            Subject::Oxpi => vec![env.oxpi_bin.to_string_lossy().into_owned()],
            _ => {
                let node = env.node.as_ref().ok_or_else(|| env.no_node.clone())?;
                vec![
                    node.node.to_string_lossy().into_owned(),
                    node.pi_cli().to_string_lossy().into_owned(),
                ]
            }
        };
        argv.extend(args.iter().map(|a| a.to_string()));
        Ok(argv)
    };
    let model = ["--provider", PROVIDER, "--model", MODEL, "--no-session"];
    let built = match (workload, subject) {
        (Workload::Startup, Subject::Oxpi | Subject::PiCli) => {
            program(&["--version"]).map(|argv| {
                let mut c = bench();
                c.arg("run").arg("--").args(argv);
                c
            })
        }
        (Workload::Print { size }, Subject::Oxpi | Subject::PiCli) => {
            let mut args = vec!["-p"];
            args.extend(model);
            args.push(PROMPT);
            program(&args).map(|argv| {
                let mut c = bench();
                c.args(["run", "--expect-text", &size.to_string(), "--"])
                    .args(argv);
                c
            })
        }
        (
            Workload::Rpc { round_trips, cpus },
            Subject::Oxpi | Subject::PiCli | Subject::EchoFloor,
        ) => {
            let argv = if subject == Subject::EchoFloor {
                Ok(vec![
                    env.bench_bin.to_string_lossy().into_owned(),
                    "rpc-echo".to_string(),
                ])
            } else {
                let mut args = vec!["--mode", "rpc"];
                args.extend(model);
                program(&args)
            };
            argv.map(|argv| {
                let mut c = bench();
                c.args(["rpc", "--round-trips", &round_trips.to_string()])
                    .args(["--cpus", cpus.flag(), "--"])
                    .args(argv);
                c
            })
        }
        (Workload::Agents { count }, Subject::Oxpi) => {
            let mut c = bench();
            c.args(["agents", "--count", &count.to_string()]);
            Ok(c)
        }
        (Workload::Agents { count }, Subject::PiAgentCoreTs) => env
            .node
            .as_ref()
            .ok_or_else(|| env.no_node.clone())
            .map(|node| {
                let mut c = Command::new(&node.node);
                c.arg(&env.driver)
                    .arg(&node.install_dir)
                    .args(["agents", &count.to_string()]);
                c
            }),
        (Workload::Stream { kind, size }, Subject::StreamFloor) => {
            let mut c = bench();
            c.args(["stream-floor", "--url", &env.origin, "--kind", kind])
                .args(["--size", &size.to_string()]);
            Ok(c)
        }
        _ => return None,
    };
    Some(built)
}

/// The floor subject of a workload, if it has one.
pub(crate) fn floor_of(workload: &Workload) -> Option<Subject> {
    match workload {
        Workload::Rpc { .. } => Some(Subject::EchoFloor),
        Workload::Stream { .. } => Some(Subject::StreamFloor),
        _ => None,
    }
}

/// The median wall time of `subject` on `workload`, when measured.
fn wall(cells: &[Cell], workload: &Workload, subject: Subject) -> Option<f64> {
    cells
        .iter()
        .find(|c| &c.workload == workload && c.subject == subject && c.skipped.is_none())
        .map(walls)
        .filter(|w| !w.is_empty())
        .map(|w| median(&w))
}

/// A subject's median wall time over its workload's floor, measured in the same run.
pub(crate) fn over_floor(cells: &[Cell], cell: &Cell) -> Option<f64> {
    let floor = floor_of(&cell.workload)?;
    if cell.subject.is_floor() {
        return None;
    }
    let base = wall(cells, &cell.workload, floor)?;
    let ours = wall(cells, &cell.workload, cell.subject)?;
    (base > 0.0).then_some(ours / base)
}

/// The targets against the floors: oxpi within [`FLOOR_LIMIT`] of the floor on the RPC row and
/// on every stream row (pi's ratio shown beside oxpi's where measured).
pub(crate) fn checks(cells: &[Cell]) -> Vec<Check> {
    let mut out = Vec::new();
    let mut seen: Vec<&Workload> = Vec::new();
    for cell in cells {
        if floor_of(&cell.workload).is_none() || seen.contains(&&cell.workload) {
            continue;
        }
        seen.push(&cell.workload);
        let mut parts = Vec::new();
        let mut pass = None;
        for subject in [Subject::Oxpi, Subject::OxpiPartial, Subject::PiCli] {
            let Some(c) = cells
                .iter()
                .find(|c| c.workload == cell.workload && c.subject == subject)
            else {
                continue;
            };
            let Some(r) = over_floor(cells, c) else {
                continue;
            };
            parts.push(format!("{} {}", subject.name(), ratio(r)));
            if !subject.is_node() {
                pass = Some(pass.unwrap_or(true) && r <= FLOOR_LIMIT);
            }
        }
        if parts.is_empty() {
            parts.push("not measured (see the table)".into());
        }
        out.push(Check {
            target: format!("≤ {FLOOR_LIMIT}× the floor: {}", cell.workload.label()),
            measured: parts.join(", "),
            pass,
        });
    }
    out
}
