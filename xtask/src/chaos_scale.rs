//! `cargo xtask chaos --scale N`: what durability costs. The same scripted runs (a model turn
//! per tool call, a tool that appends a line to a file) in process (`Agent::prompt`) and
//! durable (one Restate server, two service processes behind a balancer): runs one after
//! another give the overhead per journaled step, N concurrent runs the throughput.

use std::time::{Duration, Instant};

use oxpi_agent_core::oxpi_ai::Model;
use oxpi_agent_core::Agent;
use oxpi_durable::scripted::agent_options;
use oxpi_durable::server::{free_port, RestateServer, ServiceProcess};
use oxpi_testkit::scripted_runs::{final_text, prompt_text, reply_for};
use oxpi_testkit::TestServer;

use crate::chaos::{balance, prompt, service};

/// Runs one after another for the per-step overhead.
const SEQUENTIAL: u32 = 10;

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

/// Runs `--scale`; `Ok(true)` when every run finished.
pub(crate) async fn run(runs: u32, calls: u32) -> Result<bool, String> {
    let binary = std::env::current_exe().map_err(|e| format!("no path to xtask: {e}"))?;
    let restate = RestateServer::start().await?;
    let model_server = TestServer::start_fn(|request| reply_for(&request.json()))
        .await
        .map_err(|e| format!("model server: {e}"))?;
    let model_url = format!("{}/v1", model_server.base_url());
    let model = Model::openai_compatible(model_url.clone(), "scripted");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ports = [free_port()?, free_port()?];
    let balancer = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let balancer_port = balancer.local_addr().map_err(|e| e.to_string())?.port();
    tokio::spawn(balance(balancer, ports));
    let mut machines = Vec::new();
    for port in ports {
        machines.push(
            ServiceProcess::start(service(&binary, port, &model_url, dir.path(), 0), port).await?,
        );
    }
    restate
        .register(&format!("http://127.0.0.1:{balancer_port}"))
        .await?;
    let ingress = restate.ingress_url();
    let effects = dir.path().join("effects-in-process");
    let steps = 2 * calls + 1;

    // Warm both paths once.
    in_process(&model, &effects, "warm", calls).await?;
    prompt(&ingress, "warm", calls).await?;

    let started = Instant::now();
    for i in 0..SEQUENTIAL {
        in_process(&model, &effects, &format!("seq-{i}"), calls).await?;
    }
    let sequential_in_process = started.elapsed();
    let started = Instant::now();
    for i in 0..SEQUENTIAL {
        prompt(&ingress, &format!("seq-{i}"), calls).await?;
    }
    let sequential_durable = started.elapsed();

    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..runs {
        let (model, effects) = (model.clone(), effects.clone());
        tasks.spawn(async move { in_process(&model, &effects, &format!("par-{i}"), calls).await });
    }
    let mut failed = 0u32;
    while let Some(done) = tasks.join_next().await {
        failed += u32::from(!matches!(done, Ok(Ok(()))));
    }
    let concurrent_in_process = started.elapsed();

    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..runs {
        let ingress = ingress.clone();
        tasks.spawn(async move { prompt(&ingress, &format!("par-{i}"), calls).await });
    }
    let mut failed_durable = 0u32;
    while let Some(done) = tasks.join_next().await {
        if let Ok(Err(e)) = &done {
            println!("  durable run failed: {e}");
        }
        failed_durable += u32::from(!matches!(done, Ok(Ok(()))));
    }
    let concurrent_durable = started.elapsed();

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
    drop(machines);
    Ok(failed == 0 && failed_durable == 0)
}
