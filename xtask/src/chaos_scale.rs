//! `cargo xtask chaos --scale N`: what durability costs. The same scripted runs (a model turn
//! per tool call, a tool that appends a line to a file) in process (`Agent::prompt`) and
//! durable (one Restate server, two service processes behind a balancer): runs one after
//! another give the overhead per journaled step, N concurrent runs the throughput.
//!
//! `--bench in-process|durable` measures one side for `cargo xtask bench` and prints one JSON
//! report line (the set-up and a warm-up run are outside the measured span).

use std::time::{Duration, Instant};

use oxpi_agent_core::oxpi_ai::Model;
use oxpi_agent_core::Agent;
use oxpi_durable::scripted::agent_options;
use oxpi_durable::server::{RestateServer, ServiceProcess};
use oxpi_testkit::scripted_runs::{final_text, prompt_text, reply_for};
use oxpi_testkit::TestServer;

use crate::chaos::{machines, prompt};

/// Runs one after another for the per-step overhead.
const SEQUENTIAL: u32 = 10;

/// Which side a bench sample measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// `Agent::prompt` in this process.
    InProcess,
    /// Through Restate and two service processes.
    Durable,
}

impl Side {
    /// `in-process` or `durable`.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "in-process" => Some(Self::InProcess),
            "durable" => Some(Self::Durable),
            _ => None,
        }
    }
}

async fn in_process(
    model: &Model,
    effects: &std::path::Path,
    run: &str,
    calls: u32,
) -> Result<(), String> {
    let agent = Agent::new(agent_options(run, model.clone(), effects));
    let outcome = agent
        .prompt(prompt_text(run, calls, "record"))
        .await
        .map_err(|e| format!("{run}: {e}"))?;
    if outcome.text() == final_text(run, calls) {
        Ok(())
    } else {
        Err(format!("{run}: unexpected reply {}", outcome.text()))
    }
}

/// The scripted model and, for the durable side, the Restate server with two service
/// processes behind a balancer, registered and ready.
struct Setup {
    model: Model,
    effects: std::path::PathBuf,
    /// The durable side: Restate's ingress URL.
    ingress: Option<String>,
    _model_server: TestServer,
    _durable: Option<(RestateServer, Vec<ServiceProcess>)>,
    _dir: tempfile::TempDir,
}

impl Setup {
    async fn start(durable: bool) -> Result<Self, String> {
        let model_server = TestServer::start_fn(|request| reply_for(&request.json()))
            .await
            .map_err(|e| format!("model server: {e}"))?;
        let model_url = format!("{}/v1", model_server.base_url());
        let model = Model::openai_compatible(model_url.clone(), "scripted");
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let effects = dir.path().join("effects-in-process");
        let mut setup = Self {
            model,
            effects,
            ingress: None,
            _model_server: model_server,
            _durable: None,
            _dir: dir,
        };
        if !durable {
            return Ok(setup);
        }
        let binary = std::env::current_exe().map_err(|e| format!("no path to xtask: {e}"))?;
        let restate = RestateServer::start().await?;
        let (_, machines) = machines(&restate, &binary, &model_url, setup._dir.path(), 0).await?;
        setup.ingress = Some(restate.ingress_url());
        setup._durable = Some((restate, machines));
        Ok(setup)
    }

    /// One run named `run` on `side`.
    async fn run(&self, side: Side, run: &str, calls: u32) -> Result<(), String> {
        match (side, &self.ingress) {
            (Side::Durable, Some(ingress)) => prompt(ingress, run, calls).await,
            (Side::Durable, None) => Err("no durable set-up".into()),
            (Side::InProcess, _) => in_process(&self.model, &self.effects, run, calls).await,
        }
    }

    /// `count` runs of `calls` calls on `side`, one after another or all at once (names
    /// prefixed `prefix`); the time they took and how many failed.
    async fn runs(
        &self,
        side: Side,
        prefix: &str,
        count: u32,
        calls: u32,
        concurrent: bool,
    ) -> (Duration, u32) {
        let started = Instant::now();
        let mut failed = 0u32;
        if concurrent {
            let mut tasks = tokio::task::JoinSet::new();
            for i in 0..count {
                let run = format!("{prefix}-{i}");
                let (model, effects, ingress) = (
                    self.model.clone(),
                    self.effects.clone(),
                    self.ingress.clone(),
                );
                tasks.spawn(async move {
                    match (side, ingress) {
                        (Side::Durable, Some(ingress)) => prompt(&ingress, &run, calls).await,
                        (Side::Durable, None) => Err("no durable set-up".into()),
                        (Side::InProcess, _) => in_process(&model, &effects, &run, calls).await,
                    }
                });
            }
            while let Some(done) = tasks.join_next().await {
                if let Ok(Err(e)) = &done {
                    println!("  run failed: {e}");
                }
                failed += u32::from(!matches!(done, Ok(Ok(()))));
            }
        } else {
            for i in 0..count {
                if let Err(e) = self.run(side, &format!("{prefix}-{i}"), calls).await {
                    println!("  run failed: {e}");
                    failed += 1;
                }
            }
        }
        (started.elapsed(), failed)
    }
}

/// Runs `--scale`; `Ok(true)` when every run finished.
pub(crate) async fn run(runs: u32, calls: u32) -> Result<bool, String> {
    let setup = Setup::start(true).await?;
    let steps = 2 * calls + 1;
    // Warm both paths once.
    setup.run(Side::InProcess, "warm", calls).await?;
    setup.run(Side::Durable, "warm", calls).await?;

    let (sequential_in_process, f1) = setup
        .runs(Side::InProcess, "seq", SEQUENTIAL, calls, false)
        .await;
    let (sequential_durable, f2) = setup
        .runs(Side::Durable, "seq", SEQUENTIAL, calls, false)
        .await;
    let (concurrent_in_process, f3) = setup.runs(Side::InProcess, "par", runs, calls, true).await;
    let (concurrent_durable, f4) = setup.runs(Side::Durable, "par", runs, calls, true).await;
    let (failed, failed_durable) = (f1 + f3, f2 + f4);

    let per_run = |d: Duration| d.as_secs_f64() * 1000.0 / f64::from(SEQUENTIAL);
    let overhead = (sequential_durable.as_secs_f64() - sequential_in_process.as_secs_f64())
        * 1000.0
        / f64::from(SEQUENTIAL * steps);
    let rate = |d: Duration| f64::from(runs) / d.as_secs_f64().max(1e-9);
    println!(
        "chaos --scale: runs of {calls} tool calls ({steps} journaled steps: {} model turns, {calls} tool calls); one Restate server, two service processes",
        calls + 1
    );
    println!("| measure | in process | durable |");
    println!("| --- | --- | --- |");
    println!(
        "| one run at a time ({SEQUENTIAL} runs) | {:.1} ms per run | {:.1} ms per run |",
        per_run(sequential_in_process),
        per_run(sequential_durable)
    );
    println!("| overhead per journaled step | | {overhead:.2} ms |");
    println!(
        "| {runs} concurrent runs | {:.1} s, {:.0} runs/s | {:.1} s, {:.0} runs/s |",
        concurrent_in_process.as_secs_f64(),
        rate(concurrent_in_process),
        concurrent_durable.as_secs_f64(),
        rate(concurrent_durable)
    );
    println!("| runs that failed | {failed} | {failed_durable} |");
    Ok(failed == 0 && failed_durable == 0)
}

/// One bench sample (`--bench`): `runs` runs of `calls` calls on `side`, all at once or one
/// after another, printed as a JSON report line (`wall_ms` of the runs alone; `extra`: runs,
/// journaled steps, ms per step, runs per second). `Ok(true)` when every run finished.
pub(crate) async fn bench_sample(
    side: Side,
    runs: u32,
    calls: u32,
    concurrent: bool,
) -> Result<bool, String> {
    let setup = Setup::start(side == Side::Durable).await?;
    setup.run(side, "warm", calls).await?;
    let (took, failed) = setup.runs(side, "bench", runs, calls, concurrent).await;
    let steps = u64::from(runs) * u64::from(2 * calls + 1);
    let wall_ms = took.as_secs_f64() * 1000.0;
    let report = if failed == 0 {
        serde_json::json!({
            "status": "ok",
            "wall_ms": wall_ms,
            "extra": {
                "runs": runs,
                "steps": steps,
                "ms_per_step": wall_ms / steps.max(1) as f64,
                "runs_per_s": f64::from(runs) / took.as_secs_f64().max(1e-9),
            },
        })
    } else {
        serde_json::json!({"status": "failed", "note": format!("{failed} of {runs} runs failed")})
    };
    println!("{report}");
    Ok(failed == 0)
}
