//! Replays every recorded provider stream through oxpi and through pi-ai 0.73.1 and lists where
//! the final messages differ. Run by `cargo xtask pi-replay`, which installs pi-ai first.
//!
//! ```text
//! pi_replay --fixtures DIR --node-dir DIR --script bench/node/replay.mjs --out DIR
//! ```
//!
//! Writes `oxpi.jsonl`, `pi.jsonl` (one summary per exchange) and `differences.jsonl` (one line
//! per exchange whose summaries differ: the fields and both summaries) into `--out`, and prints
//! the counts per API and per differing field.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use oxpi_bench::replay::{explain, manifest, replay_oxpi, Known, RecordingServer, Summary};

struct Args {
    fixtures: PathBuf,
    node_dir: PathBuf,
    script: PathBuf,
    out: PathBuf,
}

fn parse() -> Result<Args, String> {
    let mut fixtures = None;
    let mut node_dir = None;
    let mut script = None;
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .map(PathBuf::from)
            .ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--fixtures" => fixtures = Some(value),
            "--node-dir" => node_dir = Some(value),
            "--script" => script = Some(value),
            "--out" => out = Some(value),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        fixtures: fixtures.ok_or("--fixtures is required")?,
        node_dir: node_dir.ok_or("--node-dir is required")?,
        script: script.ok_or("--script is required")?,
        out: out.ok_or("--out is required")?,
    })
}

fn write_lines<T: serde::Serialize>(path: &PathBuf, items: &[T]) -> Result<(), String> {
    let mut text = String::new();
    for item in items {
        text.push_str(&serde_json::to_string(item).map_err(|e| e.to_string())?);
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn run() -> Result<(), String> {
    let args = parse()?;
    let exchanges = manifest(&args.fixtures)?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let manifest_path = args.out.join("manifest.jsonl");
    write_lines(&manifest_path, &exchanges)?;
    eprintln!("{} recorded streams of the four APIs", exchanges.len());

    let server = RecordingServer::start(&exchanges).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let oxpi: Vec<Summary> = runtime.block_on(async {
        let mut out = Vec::new();
        for (index, exchange) in exchanges.iter().enumerate() {
            out.push(replay_oxpi(server.origin(), index, exchange).await);
        }
        out
    });
    write_lines(&args.out.join("oxpi.jsonl"), &oxpi)?;

    let output = Command::new("node")
        .arg(&args.script)
        .arg(&args.node_dir)
        .arg(&manifest_path)
        .output()
        .map_err(|e| format!("could not run node: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "the pi-ai replay failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let pi: Vec<Summary> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("pi-ai output {l:?}: {e}")))
        .collect::<Result<_, _>>()?;
    write_lines(&args.out.join("pi.jsonl"), &pi)?;
    if pi.len() != oxpi.len() {
        return Err(format!(
            "pi-ai replayed {} streams, oxpi {}",
            pi.len(),
            oxpi.len()
        ));
    }

    // API → (replayed, same, differ by documented reasons only, unexplained)
    let mut per_api: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    let mut per_known: BTreeMap<Known, usize> = BTreeMap::new();
    let mut differing = Vec::new();
    let mut unexplained_ids = Vec::new();
    for ((exchange, ours), theirs) in exchanges.iter().zip(&oxpi).zip(&pi) {
        let (known, unexplained) = explain(exchange, ours, theirs);
        let row = per_api.entry(exchange.api.as_str()).or_default();
        row[0] += 1;
        match (known.is_empty(), unexplained.is_empty()) {
            (true, true) => row[1] += 1,
            (false, true) => row[2] += 1,
            _ => row[3] += 1,
        }
        for k in &known {
            *per_known.entry(*k).or_default() += 1;
        }
        if !unexplained.is_empty() {
            unexplained_ids.push(format!("{} ({})", exchange.id, unexplained.join(", ")));
        }
        if !known.is_empty() || !unexplained.is_empty() {
            differing.push(serde_json::json!({
                "id": exchange.id,
                "api": exchange.api,
                "known": known.iter().map(|k| k.anchor()).collect::<Vec<_>>(),
                "unexplained": unexplained,
                "oxpi": ours,
                "pi": theirs,
            }));
        }
    }
    write_lines(&args.out.join("differences.jsonl"), &differing)?;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(
        stdout,
        "| API | replayed | same final message | differs as documented | differs otherwise |"
    );
    let _ = writeln!(stdout, "| --- | ---: | ---: | ---: | ---: |");
    for (api, [all, same, known, other]) in &per_api {
        let _ = writeln!(stdout, "| {api} | {all} | {same} | {known} | {other} |");
    }
    let _ = writeln!(
        stdout,
        "\nDocumented differences (docs/differences-from-pi.md):"
    );
    for (known, count) in &per_known {
        let _ = writeln!(stdout, "  #{}: {count} streams", known.anchor());
    }
    let _ = writeln!(
        stdout,
        "Details: {}",
        args.out.join("differences.jsonl").display()
    );
    if !unexplained_ids.is_empty() {
        return Err(format!(
            "{} streams differ in ways docs/differences-from-pi.md does not explain:\n  {}",
            unexplained_ids.len(),
            unexplained_ids.join("\n  ")
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pi_replay: {e}");
            ExitCode::FAILURE
        }
    }
}
