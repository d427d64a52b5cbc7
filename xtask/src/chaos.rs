//! `cargo xtask chaos`: durable runs (oxpi-durable) under kill -9, with real processes: one
//! Restate server, two service processes ("two machines") behind a TCP balancer, a scripted
//! model that streams slowly, and a side-effecting tool (each call appends a line to a file,
//! and is not safe to repeat). Service processes are killed at random moments — during a model
//! stream, during a tool, between turns — and started again. The report counts runs started,
//! finished and lost, duplicate side effects, model calls re-made for journaled turns, and
//! transcripts against an uninterrupted run's.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use oxpi_durable::server::{free_port, RestateServer, ServiceProcess};
use oxpi_durable::OUTCOME_UNKNOWN;
use oxpi_testkit::scripted_runs::{final_text, prompt_text, reply_for};
use oxpi_testkit::{Part, Reply, TestServer};
use serde_json::Value;

const USAGE: &str = "\
cargo xtask chaos [--quick] [--runs N] [--kills N] [--calls N] [--seed N] [--scale N]
                  [--bench in-process|durable [--one-at-a-time]]

Durable agent runs under kill -9: a Restate server, two oxpi-durable service processes behind a
TCP balancer, a scripted model, a tool that appends a line to a file. Kills a service process at
random moments and restarts it; reports runs started/finished/lost, duplicate side effects,
model calls re-made for journaled turns, and transcripts against an uninterrupted run's. Fails
unless duplicates, re-made calls, lost runs and unexplained transcript differences are all 0.

Options:
  --quick     The short version run by `cargo xtask ci`: 12 runs, 40 kills
  --runs N    Runs (default 60)
  --kills N   Kills (default 300)
  --calls N   Tool calls per run, one per turn (default 5)
  --seed N    Seed of the kill schedule (default: from the clock)
  --scale N   No kills: N concurrent runs through Restate against the same runs in process
              (throughput), and the overhead per journaled step (runs one after another)
  --bench S   With --scale N: one side only (in-process or durable), N runs at once (or one
              after another with --one-at-a-time), printed as one JSON line (cargo xtask bench)
  -h, --help  Show this help";

/// Options of `chaos`.
#[derive(Debug, PartialEq)]
pub(crate) struct Options {
    help: bool,
    runs: u32,
    kills: u32,
    calls: u32,
    seed: Option<u64>,
    scale: Option<u32>,
    bench: Option<crate::chaos_scale::Side>,
    one_at_a_time: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            help: false,
            runs: 60,
            kills: 300,
            calls: 5,
            seed: None,
            scale: None,
            bench: None,
            one_at_a_time: false,
        }
    }
}

impl Options {
    /// The short version (`cargo xtask ci`).
    pub(crate) fn quick() -> Self {
        Self {
            runs: 12,
            kills: 40,
            ..Self::default()
        }
    }

    /// Parses the arguments after `chaos`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self::default();
        let mut args = argv.into_iter();
        while let Some(arg) = args.next() {
            let mut number = |name: &str| -> Result<u64, String> {
                args.next()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("chaos: {name} needs a number\n\n{USAGE}"))
            };
            match arg.as_str() {
                "-h" | "--help" => options.help = true,
                "--quick" => {
                    let help = options.help;
                    options = Self::quick();
                    options.help = help;
                }
                "--runs" => options.runs = u32::try_from(number("--runs")?).unwrap_or(u32::MAX),
                "--kills" => options.kills = u32::try_from(number("--kills")?).unwrap_or(u32::MAX),
                "--calls" => options.calls = u32::try_from(number("--calls")?).unwrap_or(u32::MAX),
                "--seed" => options.seed = Some(number("--seed")?),
                "--scale" => {
                    options.scale = Some(u32::try_from(number("--scale")?).unwrap_or(u32::MAX))
                }
                "--bench" => {
                    let side = args.next().unwrap_or_default();
                    options.bench =
                        Some(crate::chaos_scale::Side::parse(&side).ok_or_else(|| {
                            format!("chaos: --bench takes in-process or durable\n\n{USAGE}")
                        })?)
                }
                "--one-at-a-time" => options.one_at_a_time = true,
                other => return Err(format!("chaos: unexpected argument `{other}`\n\n{USAGE}")),
            }
        }
        Ok(options)
    }
}

/// A small xorshift generator: the kill schedule is reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Forwards each connection on `listener` to a live backend (the first that accepts, starting
/// at a random one): a load balancer in front of the two "machines".
/// How long the chaos run's tool takes (ms): long enough for kills to land mid-call.
const TOOL_DELAY_MS: u32 = 150;

/// Two service processes ("two machines") on free ports behind a TCP balancer, registered with
/// `restate`: their ports and processes.
pub(crate) async fn machines(
    restate: &RestateServer,
    binary: &Path,
    model_url: &str,
    dir: &Path,
    tool_delay_ms: u32,
) -> Result<([u16; 2], Vec<ServiceProcess>), String> {
    let ports = [free_port()?, free_port()?];
    let balancer = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let balancer_port = balancer.local_addr().map_err(|e| e.to_string())?.port();
    tokio::spawn(balance(balancer, ports));
    let mut processes = Vec::new();
    for port in ports {
        processes.push(
            ServiceProcess::start(service(binary, port, model_url, dir, tool_delay_ms), port)
                .await?,
        );
    }
    restate
        .register(&format!("http://127.0.0.1:{balancer_port}"))
        .await?;
    Ok((ports, processes))
}

pub(crate) async fn balance(listener: tokio::net::TcpListener, backends: [u16; 2]) {
    let mut turn = 0usize;
    while let Ok((mut inbound, _)) = listener.accept().await {
        turn += 1;
        let order = [backends[turn % 2], backends[(turn + 1) % 2]];
        tokio::spawn(async move {
            for port in order {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await
                {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    return;
                }
            }
        });
    }
}

/// A service process: this program again, as `chaos-service` (the scripted durable agent of
/// `oxpi_durable::scripted`), so no other binary is built.
pub(crate) fn service(
    binary: &Path,
    port: u16,
    model_url: &str,
    dir: &Path,
    tool_delay_ms: u32,
) -> Command {
    let mut command = Command::new(binary);
    command
        .arg("chaos-service")
        .env("OXPI_DURABLE_PORT", port.to_string())
        .env("OXPI_DURABLE_MODEL_URL", model_url)
        .env("OXPI_DURABLE_EFFECTS", dir.join("effects"))
        .env("OXPI_DURABLE_EVENTS", dir.join("events"))
        .env("OXPI_DURABLE_TOOL_DELAY_MS", tool_delay_ms.to_string());
    command
}

/// A streamed reply with a pause between its chunks, so kills land mid-stream.
fn slow(reply: Reply) -> Reply {
    match reply {
        Reply::Respond {
            status,
            headers,
            body,
        } => Reply::Respond {
            status,
            headers,
            body: body
                .into_iter()
                .flat_map(|part| [Part::Sleep(Duration::from_millis(60)), part])
                .collect(),
        },
        other => other,
    }
}

pub(crate) async fn prompt(ingress: &str, run: &str, calls: u32) -> Result<(), String> {
    let response = reqwest::Client::new()
        .post(format!("{ingress}/OxpiAgent/{run}/prompt"))
        .header("idempotency-key", run)
        .json(&serde_json::json!({"text": prompt_text(run, calls, "record")}))
        .timeout(Duration::from_secs(1800))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let body: Value = response.json().await.map_err(|e| e.to_string())?;
    if status.is_success() && body["text"] == final_text(run, calls) {
        Ok(())
    } else {
        Err(format!("{status}: {body}"))
    }
}

async fn transcript(ingress: &str, run: &str) -> Result<Vec<Value>, String> {
    let response = reqwest::Client::new()
        .post(format!("{ingress}/OxpiAgent/{run}/get_messages"))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let messages: Vec<Value> = response.json().await.map_err(|e| e.to_string())?;
    Ok(messages.into_iter().map(|m| normalized(m, run)).collect())
}

/// A message without the clock's fields, its run id replaced by `RUN`.
fn normalized(value: Value, run: &str) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| k != "timestamp" && k != "durationMs")
                .map(|(k, v)| (k, normalized(v, run)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| normalized(v, run)).collect())
        }
        Value::String(s) => Value::String(s.replace(run, "RUN")),
        other => other,
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Runs `chaos`; `Ok(true)` when every zero holds.
pub(crate) async fn run(_root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    if let (Some(side), Some(runs)) = (options.bench, options.scale) {
        let concurrent = !options.one_at_a_time;
        return crate::chaos_scale::bench_sample(side, runs, options.calls, concurrent).await;
    }
    if options.bench.is_some() {
        return Err(format!("chaos: --bench needs --scale N\n\n{USAGE}"));
    }
    if let Some(runs) = options.scale {
        return crate::chaos_scale::run(runs, options.calls).await;
    }
    let started = Instant::now();
    let binary = std::env::current_exe().map_err(|e| format!("no path to xtask: {e}"))?;
    let restate = RestateServer::start().await?;
    let requests: Arc<Mutex<HashMap<(String, u32), u32>>> = Arc::default();
    let model = {
        let requests = requests.clone();
        TestServer::start_fn(move |request| {
            let body = request.json();
            if let Some(key) = oxpi_testkit::scripted_runs::run_and_turn(&body) {
                *requests
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(key)
                    .or_default() += 1;
            }
            slow(reply_for(&body))
        })
        .await
        .map_err(|e| format!("model server: {e}"))?
    };
    let model_url = format!("{}/v1", model.base_url());
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (ports, mut machines) =
        machines(&restate, &binary, &model_url, dir.path(), TOOL_DELAY_MS).await?;
    let ingress = restate.ingress_url();

    // The uninterrupted run every transcript is compared with.
    prompt(&ingress, "chaos-reference", options.calls).await?;
    let reference = transcript(&ingress, "chaos-reference").await?;

    let seed = options.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    }) | 1;
    let mut rng = Rng(seed);
    println!(
        "chaos: {} runs of {} tool calls, {} kills, seed {seed}",
        options.runs, options.calls, options.kills
    );
    let names: Vec<String> = (0..options.runs).map(|i| format!("chaos-{i:04}")).collect();
    let mut runs = tokio::task::JoinSet::new();
    // Runs start one after another over the time the kills take (a kill every 0.85 s on
    // average, and its restart), so kills keep finding runs in flight.
    let stagger = Duration::from_millis(1000) * options.kills / options.runs.max(1);
    for (i, name) in names.iter().enumerate() {
        let (ingress, name, calls) = (ingress.clone(), name.clone(), options.calls);
        let delay = stagger * u32::try_from(i).unwrap_or(u32::MAX);
        runs.spawn(async move {
            tokio::time::sleep(delay).await;
            (name.clone(), prompt(&ingress, &name, calls).await)
        });
    }
    let mut kills = 0u32;
    let mut outcomes: BTreeMap<String, Result<(), String>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(1800);
    while outcomes.len() < names.len() && Instant::now() < deadline {
        let wait = Duration::from_millis(200 + rng.below(1300));
        tokio::select! {
            Some(done) = runs.join_next() => {
                if let Ok((name, outcome)) = done {
                    outcomes.insert(name, outcome);
                }
            }
            _ = tokio::time::sleep(wait) => {
                if kills < options.kills {
                    let which = usize::try_from(rng.below(2)).unwrap_or(0);
                    machines[which].kill();
                    kills += 1;
                    machines[which] = ServiceProcess::start(
                        service(&binary, ports[which], &model_url, dir.path(), TOOL_DELAY_MS),
                        ports[which],
                    )
                    .await?;
                }
            }
        }
    }
    // Kills left when every run had finished are made on idle processes; reported as made.
    runs.abort_all();

    let finished: Vec<&String> = outcomes
        .iter()
        .filter(|(_, o)| o.is_ok())
        .map(|(n, _)| n)
        .collect();
    let lost: Vec<String> = names
        .iter()
        .filter(|n| !matches!(outcomes.get(*n), Some(Ok(()))))
        .cloned()
        .collect();
    for name in &lost {
        if let Some(Err(e)) = outcomes.get(name) {
            println!("  lost {name}: {e}");
        }
    }

    // Side effects: every call of the (unsafe) tool at most once.
    let mut effects: HashMap<String, u32> = HashMap::new();
    for line in lines(&dir.path().join("effects")) {
        *effects.entry(line).or_default() += 1;
    }
    let duplicates: u32 = effects.values().map(|n| n.saturating_sub(1)).sum();
    // Journaled steps that ran for real more than once (the journal failed to answer).
    let mut executed: HashMap<(String, String, String), u32> = HashMap::new();
    let mut unknown = 0u32;
    let mut replayed = 0u32;
    for line in lines(&dir.path().join("events")) {
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() < 4 {
            continue;
        }
        if fields[3] == "true" {
            replayed += 1;
        } else {
            *executed
                .entry((fields[0].into(), fields[1].into(), fields[2].into()))
                .or_default() += 1;
        }
        if fields.get(4) == Some(&"true") {
            unknown += 1;
        }
    }
    let remade: u32 = executed
        .iter()
        .filter(|((kind, _, _), _)| kind == "model")
        .map(|(_, n)| n.saturating_sub(1))
        .sum();
    let requests = requests.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let total_requests: u32 = requests.values().sum();
    let repeated_requests: u32 = requests.values().map(|n| n.saturating_sub(1)).sum();

    // Transcripts against the reference: equal, or differing only where an interrupted call's
    // result says its outcome is unknown.
    let (mut equal, mut with_unknown, mut different) = (0u32, 0u32, 0u32);
    for name in &finished {
        let messages = transcript(&ingress, name).await?;
        if messages == reference {
            equal += 1;
            continue;
        }
        let explained = messages.len() == reference.len()
            && messages.iter().zip(&reference).all(|(got, want)| {
                got == want
                    || (got["role"] == "toolResult"
                        && got["content"][0]["text"] == OUTCOME_UNKNOWN
                        && got["toolCallId"] == want["toolCallId"])
            });
        if explained {
            with_unknown += 1;
        } else {
            different += 1;
            println!("  transcript of {name} differs from the uninterrupted run's");
        }
    }

    println!("chaos report ({:.0} s)", started.elapsed().as_secs_f64());
    println!("  service processes killed (SIGKILL) and restarted: {kills}");
    println!("  runs started: {}", names.len());
    println!("  runs finished: {}", finished.len());
    println!("  runs lost: {} (must be 0)", lost.len());
    println!(
        "  tool side effects: {}; duplicates: {duplicates} (must be 0)",
        effects.len() + duplicates as usize
    );
    println!("  tool calls interrupted mid-call, ended as 'outcome unknown': {unknown}");
    println!("  steps answered by the journal on replay: {replayed}");
    println!("  model requests: {total_requests}; repeated after a kill mid-stream (not journaled yet): {repeated_requests}");
    println!("  model calls re-made for journaled turns: {remade} (must be 0)");
    println!("  transcripts equal to the uninterrupted run's: {equal}; equal but for 'outcome unknown' results: {with_unknown}; other differences: {different} (must be 0)");
    Ok(lost.is_empty() && duplicates == 0 && remade == 0 && different == 0)
}
