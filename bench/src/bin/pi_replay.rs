//! Replays every recorded provider stream through oxpi and through pi-ai (0.73.1, 1.6.0 or both)
//! and lists where the final messages differ. Run by `cargo xtask pi-replay`, which installs
//! pi-ai first.
//!
//! ```text
//! pi_replay --fixtures DIR --script bench/node/replay.mjs --docs docs/differences-from-pi.md
//!           --out DIR --pi 0.73.1=NODE_DIR [--pi 1.6.0=NODE_DIR]
//! ```
//!
//! Writes `manifest.jsonl`, `oxpi.jsonl` and, per pi version, `pi-<version>.jsonl` (one summary
//! per exchange) and `differences-<version>.jsonl` (one line per exchange whose summaries differ:
//! the fields and both summaries) into `--out`, and prints the counts per API and per documented
//! difference. A difference is explained only by an entry of the page whose `Concerns:` line
//! names that version; an entry that names a version and explains none of its streams fails the
//! run as well (its tag is out of date).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use oxpi_bench::concerns::{concerns_by_anchor, PiVersion};
use oxpi_bench::explain::{explain, Known};
use oxpi_bench::replay::{manifest, replay_oxpi, Exchange, RecordingServer, Summary};

struct Args {
    fixtures: PathBuf,
    script: PathBuf,
    docs: PathBuf,
    out: PathBuf,
    /// Each pi version and the directory npm installed it into.
    pis: Vec<(PiVersion, PathBuf)>,
}

fn parse() -> Result<Args, String> {
    let mut fixtures = None;
    let mut script = None;
    let mut docs = None;
    let mut out = None;
    let mut pis = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--fixtures" => fixtures = Some(PathBuf::from(value)),
            "--script" => script = Some(PathBuf::from(value)),
            "--docs" => docs = Some(PathBuf::from(value)),
            "--out" => out = Some(PathBuf::from(value)),
            "--pi" => {
                let (version, dir) = value
                    .split_once('=')
                    .ok_or_else(|| format!("--pi {value}: expected VERSION=NODE_DIR"))?;
                let version = PiVersion::parse(version)
                    .ok_or_else(|| format!("--pi {value}: unknown pi version `{version}`"))?;
                pis.push((version, PathBuf::from(dir)));
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if pis.is_empty() {
        return Err("--pi VERSION=NODE_DIR is required".into());
    }
    Ok(Args {
        fixtures: fixtures.ok_or("--fixtures is required")?,
        script: script.ok_or("--script is required")?,
        docs: docs.ok_or("--docs is required")?,
        out: out.ok_or("--out is required")?,
        pis,
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
    let page =
        std::fs::read_to_string(&args.docs).map_err(|e| format!("{}: {e}", args.docs.display()))?;
    let tags = concerns_by_anchor(&page).map_err(|e| {
        format!(
            "{}: Concerns: lines that do not parse:\n{e}",
            args.docs.display()
        )
    })?;
    if let Some(missing) = Known::ALL.iter().find(|k| !tags.contains_key(k.anchor())) {
        return Err(format!(
            "{} has no entry #{} with a Concerns: line",
            args.docs.display(),
            missing.anchor()
        ));
    }
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

    let mut failures = Vec::new();
    for (version, node_dir) in &args.pis {
        let concerns = |k: Known| tags.get(k.anchor()).is_some_and(|v| v.contains(version));
        let pi = replay_pi(&args, *version, node_dir, &manifest_path, exchanges.len())?;
        failures.extend(compare(
            &args.out, *version, &exchanges, &oxpi, &pi, concerns,
        )?);
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// Runs `bench/node/replay.mjs` for `version`; one summary per exchange, in manifest order.
fn replay_pi(
    args: &Args,
    version: PiVersion,
    node_dir: &Path,
    manifest_path: &Path,
    expected: usize,
) -> Result<Vec<Summary>, String> {
    eprintln!(
        "replaying through pi-ai {} under Node",
        version.npm_version()
    );
    let output = Command::new("node")
        .arg(&args.script)
        .arg(node_dir)
        .arg(manifest_path)
        .arg(version.script_name())
        .output()
        .map_err(|e| format!("could not run node: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "the pi-ai {} replay failed ({}): {}",
            version.npm_version(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let pi: Vec<Summary> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("pi-ai output {l:?}: {e}")))
        .collect::<Result<_, _>>()?;
    write_lines(
        &args.out.join(format!("pi-{}.jsonl", version.npm_version())),
        &pi,
    )?;
    if pi.len() != expected {
        return Err(format!(
            "pi-ai {} replayed {} streams, oxpi {expected}",
            version.npm_version(),
            pi.len(),
        ));
    }
    Ok(pi)
}

/// Compares oxpi's summaries with one pi version's, prints the table and writes the differences;
/// the failures (unexplained streams, entries whose tag names this version but explain none of
/// its streams).
fn compare(
    out: &Path,
    version: PiVersion,
    exchanges: &[Exchange],
    oxpi: &[Summary],
    pi: &[Summary],
    concerns: impl Fn(Known) -> bool + Copy,
) -> Result<Vec<String>, String> {
    // API → (replayed, same, differ by documented reasons only, unexplained)
    let mut per_api: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    let mut per_known: BTreeMap<Known, usize> = BTreeMap::new();
    let mut differing = Vec::new();
    let mut unexplained_ids = Vec::new();
    for ((exchange, ours), theirs) in exchanges.iter().zip(oxpi).zip(pi) {
        let (known, unexplained) = explain(exchange, ours, theirs, concerns);
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
    let details = out.join(format!("differences-{}.jsonl", version.npm_version()));
    write_lines(&details, &differing)?;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "\noxpi against pi-ai {}:\n", version.npm_version());
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
        "\nDocumented differences that concern {version} (docs/differences-from-pi.md):"
    );
    let mut failures = Vec::new();
    for known in Known::ALL.into_iter().filter(|k| concerns(*k)) {
        let count = per_known.get(&known).copied().unwrap_or(0);
        let _ = writeln!(stdout, "  #{}: {count} streams", known.anchor());
        if count == 0 {
            failures.push(format!(
                "#{} says it concerns {version}, but no stream replayed through pi-ai {} differs \
                 that way: take {version} off its Concerns: line",
                known.anchor(),
                version.npm_version()
            ));
        }
    }
    let _ = writeln!(stdout, "Details: {}", details.display());
    if !unexplained_ids.is_empty() {
        failures.push(format!(
            "{} streams differ from pi-ai {} in ways no entry of docs/differences-from-pi.md \
             concerning {version} explains:\n  {}",
            unexplained_ids.len(),
            version.npm_version(),
            unexplained_ids.join("\n  ")
        ));
    }
    Ok(failures)
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
