//! One measurement: the command of a subject on a workload, run, and its JSON report read.

use std::process::{Command, Stdio};

use serde_json::Value;

use super::{rows, search, tui, Env, Subject, Workload, SNAPSHOT_EVERY};

/// How one run went.
pub(crate) enum Outcome {
    Ok(Value),
    Skipped(String),
    Failed(String),
}

pub(crate) fn execute(env: &Env, workload: &Workload, subject: Subject) -> Outcome {
    if let Workload::Tui(work) = workload {
        let setup = match &env.tui {
            Ok(setup) => setup,
            Err(why) => return Outcome::Skipped(why.clone()),
        };
        let program = match subject {
            Subject::Pi16 => match &setup.pi {
                Some(pi) => pi.clone(),
                None => return Outcome::Skipped(setup.no_pi.clone()),
            },
            _ => tui::Program::Oxpi(setup.oxpi.clone()),
        };
        return match setup.run(*work, &program) {
            Ok(sample) => Outcome::Ok(sample),
            Err(why) => Outcome::Failed(why),
        };
    }
    if let Workload::Search { search, .. } = workload {
        let Some(tree) = &env.tree else {
            return Outcome::Failed("no tree to search".into());
        };
        let runner = match subject {
            Subject::Rg if env.binaries.rg.is_none() => {
                return Outcome::Skipped("rg not found".into())
            }
            Subject::Fd if env.binaries.fd.is_none() => {
                return Outcome::Skipped("fd not found".into())
            }
            Subject::Rg => search::Runner::Rg,
            Subject::Fd => search::Runner::Fd,
            Subject::PiToolsTs => match &env.node {
                Some(node) => search::Runner::PiTs {
                    node: node.node.clone(),
                    driver: env.driver.clone(),
                    install_dir: node.install_dir.clone(),
                },
                None => return Outcome::Skipped("Node.js not available".into()),
            },
            _ => search::Runner::Oxpi,
        };
        return match search::run(*search, &runner, &env.bench_bin, &env.binaries, tree) {
            Ok(report) => Outcome::Ok(report),
            Err(why) => Outcome::Failed(why),
        };
    }
    if let Workload::Durable { runs, concurrent } = workload {
        let side = match subject {
            Subject::OxpiDurable => "durable",
            _ => "in-process",
        };
        if side == "durable"
            && std::process::Command::new("npm")
                .arg("--version")
                .output()
                .is_err()
        {
            return Outcome::Skipped("npm not found: no Restate server".into());
        }
        let xtask = match std::env::current_exe() {
            Ok(path) => path,
            Err(e) => return Outcome::Failed(format!("no path to xtask: {e}")),
        };
        let mut c = Command::new(xtask);
        c.args(["chaos", "--scale", &runs.to_string(), "--bench", side]);
        if !concurrent {
            c.arg("--one-at-a-time");
        }
        return report_of(c);
    }
    if let Some(command) = rows::command(env, workload, subject) {
        return match command {
            Ok(command) => report_of(command),
            Err(why) => Outcome::Skipped(why),
        };
    }
    let command = match (workload, subject) {
        (Workload::Stream { kind, size }, Subject::Oxpi | Subject::OxpiPartial) => {
            let mut c = Command::new(&env.bench_bin);
            c.args(["stream", "--url", &env.origin, "--kind", kind])
                .args(["--size", &size.to_string()]);
            if subject == Subject::OxpiPartial {
                c.args(["--partial-every", &SNAPSHOT_EVERY.to_string()]);
            }
            c
        }
        (Workload::Stream { kind, size }, Subject::PiAiRs) => {
            let mut c = Command::new(&env.piai_rs_bin);
            c.args(["stream", "--url", &env.origin, "--kind", kind])
                .args(["--size", &size.to_string()]);
            c
        }
        (Workload::Stream { kind, size }, Subject::PiAiTs) => {
            let Some(node) = &env.node else {
                return Outcome::Skipped("Node.js not available".into());
            };
            let mut c = Command::new(&node.node);
            c.arg(&env.driver).arg(&node.install_dir).args([
                "stream",
                &env.origin,
                kind,
                &size.to_string(),
            ]);
            c
        }
        (Workload::AgentLoop { turns }, Subject::Oxpi | Subject::OxpiCurrentThread) => {
            let mut c = Command::new(&env.bench_bin);
            c.args(["agent-loop", "--turns", &turns.to_string()]);
            if subject == Subject::OxpiCurrentThread {
                c.args(["--runtime", "current"]);
            }
            c
        }
        (Workload::AgentLoop { turns }, Subject::PiAgentCoreTs) => {
            let Some(node) = &env.node else {
                return Outcome::Skipped("Node.js not available".into());
            };
            let mut c = Command::new(&node.node);
            c.arg(&env.driver)
                .arg(&node.install_dir)
                .args(["agent-loop", &turns.to_string()]);
            c
        }
        (Workload::SessionLoad { .. }, Subject::Oxpi) => {
            let file = match &env.session {
                Ok(file) => file,
                Err(why) => return Outcome::Skipped(format!("no session file: {why}")),
            };
            let mut c = Command::new(&env.bench_bin);
            c.arg("session-load").arg("--file").arg(file);
            c
        }
        (Workload::SessionLoad { .. }, Subject::PiSessionTs) => {
            let (file, node) = match (&env.session, &env.pi_session) {
                (Ok(file), Ok(node)) => (file, node),
                (_, Err(why)) | (Err(why), _) => return Outcome::Skipped(why.clone()),
            };
            let mut c = Command::new(&node.node);
            c.arg(&env.session_script)
                .arg(&node.install_dir)
                .arg("load")
                .arg(file);
            c
        }
        (Workload::Read { .. }, Subject::Oxpi) => {
            let Some(file) = &env.read_file else {
                return Outcome::Failed("no file to read".into());
            };
            let mut c = Command::new(&env.bench_bin);
            c.arg("read").arg("--file").arg(file);
            c
        }
        _ => return Outcome::Skipped("not applicable".into()),
    };
    report_of(command)
}

/// Runs a measuring program and reads its JSON report line.
fn report_of(mut command: Command) -> Outcome {
    let output = match command.stdin(Stdio::null()).output() {
        Ok(output) => output,
        Err(e) => return Outcome::Failed(format!("could not start: {e}")),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'));
    let Some(report) = line.and_then(|l| serde_json::from_str::<Value>(l).ok()) else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
        return Outcome::Failed(format!("no report ({}): {tail}", output.status));
    };
    let note = report["note"].as_str().unwrap_or_default().to_string();
    match report["status"].as_str() {
        Some("ok") => Outcome::Ok(report),
        Some("skipped") => Outcome::Skipped(note),
        _ => Outcome::Failed(note),
    }
}
