//! `cargo xtask ci`: every check the project makes, in the order CI runs them — the one test
//! command of the README, called by `.ci/run`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::{labs, local_model, pi_replay, pi_reqdiff, tasks};

const USAGE: &str = "\
cargo xtask ci [--no-labs]

Runs, in order, stopping at the first failure:
  1. cargo fmt --all -- --check
  2. cargo clippy --workspace --all-targets -- -D warnings
  3. cargo test --workspace -- --skip replays_every_recorded
     cargo test --workspace replays_every_recorded -- --nocapture
                                       (the recorded-stream replays, each printing how many it replayed)
     cargo test -p oxpi-ai --no-default-features --test without_tls
     cargo check -p oxpi-ai --no-default-features --features native-tls
                                       (oxpi-ai without TLS, and with the platform's TLS)
     cargo clippy -p oxpi-ai --features vertex,bedrock --all-targets -- -D warnings
     cargo test -p oxpi-ai --features vertex,bedrock --test google_vertex --test bedrock
     cargo test -p oxpi-ai --features vertex,bedrock --doc
                                       (Vertex AI credentials and Bedrock, features off by default)
  4. cargo doc --workspace --no-deps   (with RUSTDOCFLAGS=-D warnings)
  5. cargo xtask bench --quick --no-node  (the benchmark smoke run, so the bench cannot rot)
     cargo run -p xtask --features bedrock -- pi-reqdiff
                                       (oxpi's requests against pi-ai 1.6.0's, Bedrock included,
                                       when Node is installed; a 'pi-reqdiff skipped' line otherwise)
     cargo xtask pi-replay --pi 1.6    (the recorded streams through pi-ai 1.6.0, same condition)
     cargo xtask chaos --quick         (durable runs under kill -9: 12 runs, 40 kills, ~1 min;
                                       every zero of the report must hold)
  6. cargo xtask local-model           (installs the embedded model on first use, ~1.1 GB)
  7. cargo xtask labs                  (every lab once, against the configured model)
  8. cargo xtask tasks --quick         (three coding tasks through oxpi on the embedded model)

Options:
  --no-labs   Skip steps 6 to 8 (no model download, no live model)
  -h, --help  Show this help";

/// The name every recorded-stream replay test starts with (one per wire API).
const REPLAY_TESTS: &str = "replays_every_recorded";

/// Options of `ci`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    help: bool,
    no_labs: bool,
}

impl Options {
    /// Parses the arguments after `ci`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self::default();
        for arg in argv {
            match arg.as_str() {
                "-h" | "--help" => options.help = true,
                "--no-labs" => options.no_labs = true,
                other => return Err(format!("ci: unexpected argument `{other}`\n\n{USAGE}")),
            }
        }
        Ok(options)
    }
}

fn cargo(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let started = Instant::now();
    println!("==> cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root)
        .status()
        .map_err(|e| format!("could not run cargo: {e}"))?;
    println!(
        "<== cargo {} ({:.1}s)",
        args.join(" "),
        started.elapsed().as_secs_f64()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

/// Runs `ci`; `Ok(true)` when every step passed.
pub(crate) async fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    cargo(root, &["fmt", "--all", "--", "--check"], &[])?;
    cargo(
        root,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    cargo(
        root,
        &["test", "--workspace", "--", "--skip", REPLAY_TESTS],
        &[],
    )?;
    // Run apart and uncaptured, so the log shows how many recorded exchanges each replayed.
    cargo(
        root,
        &["test", "--workspace", REPLAY_TESTS, "--", "--nocapture"],
        &[],
    )?;
    // oxpi-ai's TLS features: none (an https URL is a clear error) and the platform's TLS.
    cargo(
        root,
        &[
            "test",
            "-p",
            "oxpi-ai",
            "--no-default-features",
            "--test",
            "without_tls",
        ],
        &[],
    )?;
    cargo(
        root,
        &[
            "check",
            "-p",
            "oxpi-ai",
            "--no-default-features",
            "--features",
            "native-tls",
        ],
        &[],
    )?;
    cargo(
        root,
        &[
            "clippy",
            "-p",
            "oxpi-ai",
            "--features",
            "vertex,bedrock",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    cargo(
        root,
        &[
            "test",
            "-p",
            "oxpi-ai",
            "--features",
            "vertex,bedrock",
            "--test",
            "google_vertex",
            "--test",
            "bedrock",
        ],
        &[],
    )?;
    cargo(
        root,
        &[
            "test",
            "-p",
            "oxpi-ai",
            "--features",
            "vertex,bedrock",
            "--doc",
        ],
        &[],
    )?;
    cargo(
        root,
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    println!("==> cargo xtask bench --quick --no-node");
    let bench = crate::bench::Options::parse(vec!["--quick".into(), "--no-node".into()])?;
    if !crate::bench::run(root, bench)? {
        return Ok(false);
    }
    // The Restate server comes from npm (installed on first use), as pi does for the pi checks.
    let npm = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if npm {
        println!("==> cargo xtask chaos --quick");
        if !crate::chaos::run(root, crate::chaos::Options::quick()).await? {
            return Ok(false);
        }
    } else {
        println!("chaos skipped: no npm to install restate-server");
    }
    if !pi_reqdiff::node_available() {
        println!("pi-reqdiff and pi-replay skipped: no node");
    } else if let Err(reason) = crate::bench::env::Node::prepare_pi16() {
        println!("pi-reqdiff and pi-replay skipped: {reason}");
    } else {
        // Built with oxpi-ai's `bedrock` feature (step 3 already compiles it), so the Bedrock
        // cases are compared too; a failed comparison fails this step.
        cargo(
            root,
            &[
                "run",
                "--quiet",
                "-p",
                "xtask",
                "--features",
                "bedrock",
                "--",
                "pi-reqdiff",
            ],
            &[],
        )?;
        // pi 1.6 only: its install is the one pi-reqdiff just used (0.73.1's is the bench's).
        println!("==> cargo xtask pi-replay --pi 1.6");
        if !pi_replay::run(root, pi_replay::Options::pi16_only())? {
            return Ok(false);
        }
    }
    if options.no_labs {
        return Ok(true);
    }
    println!("==> cargo xtask local-model");
    if !local_model::run(local_model::Options::default()).await? {
        return Ok(false);
    }
    println!("==> cargo xtask labs");
    if !labs::run(root, labs::Options::default()).await? {
        return Ok(false);
    }
    // The task suite's short version: three tasks, one run each, through `oxpi` on the model.
    println!("==> cargo xtask tasks --quick");
    tasks::run(root, tasks::Options::quick()).await
}
