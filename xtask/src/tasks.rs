//! `cargo xtask tasks`: small checkable coding tasks (`tasks/*/`) run through `oxpi -p` on the
//! embedded model, N runs each, with pass rate and median time per task (oxpi runs in
//! `--mode json`, so each run also shows the tokens llama.cpp evaluated per turn and what its
//! prompt cache kept); `--pi` runs the same
//! tasks through pi-coding-agent 1.6 (Node 22) against the same llama.cpp server as a baseline.
//!
//! A task is a directory with `prompt.txt` (the prompt), `project/` (copied to a fresh temporary
//! directory for each run, the agent's working directory), `check.sh` (run in that copy after
//! the agent, with `$ANSWER` naming a file that holds the agent's final reply; exit 0 = pass) and
//! `solution.sh` (a reference solution, used by this module's tests to check each check).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::args;

mod json_reply;
mod pi;

const USAGE: &str = "\
cargo xtask tasks [--repeat N] [--quick] [--pi] [--only NAME] [--timeout SECS]

Runs the coding tasks of tasks/ through `oxpi -p` on the embedded model (one llama.cpp server
for the whole run), checks each run, and prints the pass rate and the median time per task.

Options:
  --repeat N      Runs per task (default 3)
  --quick         Three tasks, one run each (what a CI step can afford)
  --pi            Also run every task through pi -p (pi-coding-agent 1.6, Node 22, installed
                  into OXPI_HOME/pi on first use) against the same server, as the baseline
                  (the server's context window is then 8,192 tokens, which pi's prompt needs)
  --only NAME     Only the tasks whose directory name contains NAME (repeatable)
  --timeout SECS  Limit per run (default 300)
  -h, --help      Show this help";

/// The context window of the model server when pi runs too (see `run`).
const PI_CTX_SIZE: u32 = 8192;

/// The tasks `--quick` runs.
const QUICK: [&str; 3] = ["01-cargo-version", "02-notes-append", "11-run-script"];

/// Options of `tasks`.
#[derive(Debug, PartialEq)]
pub(crate) struct Options {
    help: bool,
    repeat: u64,
    quick: bool,
    pi: bool,
    only: Vec<String>,
    timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            help: false,
            repeat: 3,
            quick: false,
            pi: false,
            only: Vec::new(),
            timeout: Duration::from_secs(300),
        }
    }
}

impl Options {
    /// `--quick`: what `cargo xtask ci` runs.
    pub(crate) fn quick() -> Self {
        Self {
            quick: true,
            repeat: 1,
            ..Self::default()
        }
    }

    /// Parses the arguments after `tasks`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self::default();
        let mut rest = argv.into_iter();
        while let Some(arg) = rest.next() {
            let (flag, inline) = args::split_flag(&arg);
            match flag {
                "-h" | "--help" => options.help = true,
                "--quick" => options.quick = true,
                "--pi" => options.pi = true,
                "--repeat" => {
                    let text = args::value(flag, inline, &mut rest)?;
                    options.repeat = args::positive(flag, &text)?;
                }
                "--timeout" => {
                    let text = args::value(flag, inline, &mut rest)?;
                    options.timeout = Duration::from_secs(args::positive(flag, &text)?);
                }
                "--only" => options.only.push(args::value(flag, inline, &mut rest)?),
                other => return Err(format!("tasks: unexpected argument `{other}`\n\n{USAGE}")),
            }
        }
        if options.quick {
            options.repeat = 1;
        }
        Ok(options)
    }
}

/// One task of `tasks/`.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    /// Its directory name.
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// The prompt.
    pub prompt: String,
}

/// The tasks under `root/tasks`, by name.
pub(crate) fn load(root: &Path) -> Result<Vec<Task>, String> {
    let dir = root.join("tasks");
    let entries =
        std::fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut tasks = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.join("prompt.txt").is_file() {
            continue;
        }
        let prompt = std::fs::read_to_string(path.join("prompt.txt"))
            .map_err(|e| format!("cannot read {}/prompt.txt: {e}", path.display()))?;
        for needed in ["check.sh", "project"] {
            if !path.join(needed).exists() {
                return Err(format!("{} has no {needed}", path.display()));
            }
        }
        tasks.push(Task {
            name: entry.file_name().to_string_lossy().into_owned(),
            dir: path,
            prompt: prompt.trim().to_string(),
        });
    }
    tasks.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tasks)
}

/// A fresh copy of the task's project, the agent's working directory.
pub(crate) fn workdir(task: &Task) -> Result<PathBuf, String> {
    // The agent sees its working directory (pi's prompt names it), so it is a short, neutral
    // `/tmp/oxpi-tasks/<n>/project`, as a user's would be: no task name, no long numbers for a
    // small model to copy into its paths. `<n>` is the first number free, claimed by creating
    // it (concurrent runs get different ones).
    let base = std::env::temp_dir().join("oxpi-tasks");
    std::fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let run_dir = (1..=100_000)
        .map(|n| base.join(n.to_string()))
        .find(|dir| std::fs::create_dir(dir).is_ok())
        .ok_or_else(|| format!("no free directory under {}", base.display()))?;
    let project = run_dir.join("project");
    copy_dir(&task.dir.join("project"), &project)?;
    Ok(project)
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries.flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| format!("cannot copy {}: {e}", src.display()))?;
        }
    }
    Ok(())
}

/// Runs the task's `script` (`check.sh`, `solution.sh`) in `workdir` with `$ANSWER` set;
/// true when it exits 0.
pub(crate) fn run_script(task: &Task, script: &str, workdir: &Path, answer: &Path) -> bool {
    std::process::Command::new("sh")
        .arg(task.dir.join(script))
        .current_dir(workdir)
        .env("ANSWER", answer)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What one run of one agent on one task gave.
#[derive(Debug, Clone)]
struct RunResult {
    passed: bool,
    seconds: f64,
    note: String,
}

/// An agent command: what to run for a prompt in a directory.
pub(crate) struct Agent {
    /// Its name in the table.
    pub label: &'static str,
    /// The program.
    pub program: PathBuf,
    /// Arguments before the prompt.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// It prints `--mode json` records (the reply and each turn's tokens are read from them)
    /// rather than the reply alone.
    pub json: bool,
}

/// One run of `task` by `agent`; its output goes to `transcripts/<task>.<agent>.<run>.out`
/// when a directory is given.
async fn run_once(
    agent: &Agent,
    task: &Task,
    timeout: Duration,
    transcripts: Option<&Path>,
    run: u64,
) -> Result<RunResult, String> {
    let dir = workdir(task)?;
    let answer = dir.with_extension("answer");
    let run_dir = dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.clone());
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new(&agent.program);
    cmd.args(&agent.args)
        .arg(&task.prompt)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in &agent.env {
        cmd.env(k, v);
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", agent.program.display()))?;
    let outcome = tokio::time::timeout(timeout, child.wait_with_output()).await;
    let seconds = started.elapsed().as_secs_f64();
    let (stdout, note) = match outcome {
        Err(_) => (
            String::new(),
            format!("timed out after {}s", timeout.as_secs()),
        ),
        Ok(Err(e)) => (String::new(), format!("failed to run: {e}")),
        Ok(Ok(out)) => {
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let note = if out.status.success() {
                String::new()
            } else {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let last = stderr.lines().last().unwrap_or("").trim().to_string();
                format!("exit {}: {last}", out.status.code().unwrap_or(-1))
            };
            (stdout, note)
        }
    };
    let stdout_kept = stdout.clone();
    let (reply, tokens) = if agent.json {
        let (reply, turns) = json_reply::read(&stdout);
        (reply, format!("  tokens {}", json_reply::summary(&turns)))
    } else {
        (stdout, String::new())
    };
    std::fs::write(&answer, &reply).map_err(|e| format!("cannot write the answer: {e}"))?;
    let passed = note.is_empty() && run_script(task, "check.sh", &dir, &answer);
    let reply: String = reply.split_whitespace().collect::<Vec<_>>().join(" ");
    let note = if note.is_empty() {
        format!(
            "reply: {}{tokens}",
            reply.chars().take(80).collect::<String>()
        )
    } else {
        format!("{note}{tokens}")
    };
    if let Some(transcripts) = transcripts {
        let file = transcripts.join(format!("{}.{}.{}.out", task.name, agent.label, run));
        std::fs::write(&file, &stdout_kept)
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    }
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok(RunResult {
        passed,
        seconds,
        note,
    })
}

/// The median of `values` (0 when empty).
pub(crate) fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// Pass count and median seconds of one agent on one task.
#[derive(Debug, Clone, Default)]
struct Score {
    passed: u64,
    runs: u64,
    times: Vec<f64>,
}

impl Score {
    fn cell(&self) -> String {
        let mut times = self.times.clone();
        format!("{}/{} {:>6.1}s", self.passed, self.runs, median(&mut times))
    }
}

/// Builds the `oxpi` binary (debug) and returns its path.
fn build_oxpi(root: &Path) -> Result<PathBuf, String> {
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", "oxpi-cli", "--bin", "oxpi"])
        .current_dir(root)
        .status()
        .map_err(|e| format!("cannot run cargo build: {e}"))?;
    if !status.success() {
        return Err("cargo build -p oxpi-cli failed".to_string());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    Ok(target.join("debug").join("oxpi"))
}

/// Runs `tasks`; `Ok(true)` when every oxpi run passed.
pub(crate) async fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    let mut tasks = load(root)?;
    if options.quick {
        tasks.retain(|t| QUICK.contains(&t.name.as_str()));
    }
    if !options.only.is_empty() {
        tasks.retain(|t| options.only.iter().any(|o| t.name.contains(o.as_str())));
    }
    if tasks.is_empty() {
        return Err("no task selected".to_string());
    }
    let oxpi = build_oxpi(root)?;
    let mut config = oxpi_local::LocalModelConfig::from_env();
    if options.pi {
        // pi sizes a reply as the window less its estimate of the request (its system prompt
        // and tool descriptions come to about 4,000 tokens): in the embedded model's 4,096 it
        // asks for one token (`max_completion_tokens: 1`), stops at `length` and prints
        // nothing. Both programs then run on a window pi fits in.
        config.ctx_size = config.ctx_size.max(PI_CTX_SIZE);
    }
    let server = oxpi_local::start(&config)
        .await
        .map_err(|e| format!("could not start the embedded model: {e}"))?;
    let model = server.model();
    let mut agents = vec![Agent {
        label: "oxpi",
        program: oxpi,
        args: vec![
            "--mode".into(),
            "json".into(),
            "--no-session".into(),
            "--base-url".into(),
            server.api_base_url(),
            "--model".into(),
            model.id.clone(),
            "--prompt-profile".into(),
            "small".into(),
        ],
        env: Vec::new(),
        json: true,
    }];
    let pi_dir = if options.pi {
        let (agent, dir) = pi::agent(&config.home, &model).await?;
        agents.push(agent);
        Some(dir)
    } else {
        None
    };
    println!(
        "{} task(s) x {} run(s) on {} at {}",
        tasks.len(),
        options.repeat,
        model.id,
        server.api_base_url()
    );
    // Each run's output (`--mode json` records for oxpi), for reading what the model did.
    let transcripts = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("tasks");
    let _ = std::fs::remove_dir_all(&transcripts);
    std::fs::create_dir_all(&transcripts)
        .map_err(|e| format!("cannot create {}: {e}", transcripts.display()))?;
    println!("each run's output: {}", transcripts.display());
    let started = Instant::now();
    let mut scores = vec![vec![Score::default(); agents.len()]; tasks.len()];
    for (t, task) in tasks.iter().enumerate() {
        for run in 1..=options.repeat {
            for (a, agent) in agents.iter().enumerate() {
                let result =
                    run_once(agent, task, options.timeout, Some(&transcripts), run).await?;
                println!(
                    "{:<20} {:<5} {:<4} {:>6.1}s  {}",
                    task.name,
                    agent.label,
                    if result.passed { "pass" } else { "FAIL" },
                    result.seconds,
                    result.note
                );
                let score = &mut scores[t][a];
                score.runs += 1;
                score.passed += u64::from(result.passed);
                score.times.push(result.seconds);
            }
        }
    }
    drop(pi_dir);
    let _ = server.shutdown().await;
    print_summary(&tasks, &agents, &scores, started.elapsed());
    Ok(scores.iter().all(|row| row[0].passed == row[0].runs))
}

fn print_summary(tasks: &[Task], agents: &[Agent], scores: &[Vec<Score>], took: Duration) {
    println!();
    let mut header = format!("| {:<20} |", "task");
    for agent in agents {
        header.push_str(&format!(" {:<14} |", agent.label));
    }
    println!("{header}");
    println!("|{}|", vec!["---"; agents.len() + 1].join("|"));
    for (task, row) in tasks.iter().zip(scores) {
        let mut line = format!("| {:<20} |", task.name);
        for score in row {
            line.push_str(&format!(" {:<14} |", score.cell()));
        }
        println!("{line}");
    }
    let mut total = format!("| {:<20} |", "all");
    for a in 0..agents.len() {
        let (passed, runs) = scores
            .iter()
            .fold((0, 0), |(p, r), row| (p + row[a].passed, r + row[a].runs));
        let mut medians: Vec<f64> = scores
            .iter()
            .map(|row| median(&mut row[a].times.clone()))
            .collect();
        let pct = (passed * 100).checked_div(runs).unwrap_or(0);
        total.push_str(&format!(
            " {passed}/{runs} {pct}% {:.1}s |",
            median(&mut medians)
        ));
    }
    println!("{total}");
    println!(
        "(pass/runs and median seconds per task; `all`: total and the median of the medians; {:.0}s in all)",
        took.as_secs_f64()
    );
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
