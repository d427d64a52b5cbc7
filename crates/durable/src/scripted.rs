//! A durable agent service with side-effecting tools, for the crate's tests and `cargo xtask
//! chaos` (the `oxpi-durable-scripted` binary, and xtask's own `chaos-service`): [`serve_from_env`] serves `OxpiAgent` on `127.0.0.1:$OXPI_DURABLE_PORT` against the OpenAI-compatible
//! model at `$OXPI_DURABLE_MODEL_URL`.
//!
//! Tools: `record` (not safe to repeat) and `record_safe` (safe to repeat) each append one line
//! `<run>\t<line>` to `$OXPI_DURABLE_EFFECTS` (the countable side effect; the line names the run
//! and turn, so each call's is distinct), then, if the line is one of the comma-separated
//! `$OXPI_DURABLE_HANG_ON`, never return (a test kills the process while the call hangs there),
//! else wait `$OXPI_DURABLE_TOOL_DELAY_MS` (default 0) before returning. Each journaled step is logged to
//! `$OXPI_DURABLE_EVENTS` (if set) as `model\t<run>\t<turn>\t<replayed>` or
//! `tool\t<run>\t<call id>\t<replayed>\t<outcome unknown>`. Calls of the tools named in the
//! comma-separated `$OXPI_DURABLE_APPROVE` wait for approval. `record_big` and `record_huge` (not
//! safe to repeat) do as `record` and return a large result ([`recorded_text`]: the line, then
//! `$OXPI_DURABLE_BIG_BYTES` bytes, default [`BIG_BYTES`], or [`HUGE_BYTES`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{DurableAgent, StepEvent};
use oxpi_agent_core::oxpi_ai::Model;
use oxpi_agent_core::prelude::*;
use oxpi_agent_core::Replay;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct Line {
    /// The line to record.
    line: String,
}

/// Appends `text` to `path` and syncs it, so each line is a fact another process can count
/// (the side effect of a scripted tool; `lab-14`'s read log).
pub fn append(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_data()
}

/// The size of `record_big`'s filler when `$OXPI_DURABLE_BIG_BYTES` is not set (1 MiB).
pub const BIG_BYTES: usize = 1 << 20;

/// The size of `record_huge`'s filler: 1 MiB more than a durable run keeps of a result.
pub const HUGE_BYTES: usize = crate::MAX_RESULT_BYTES + (1 << 20);

/// What a record tool returns for `line` with `filler` bytes after it: `recorded: <line>`, then
/// (if `filler` > 0) a newline and `filler` bytes repeating the line.
pub fn recorded_text(line: &str, filler: usize) -> String {
    let mut text = format!("recorded: {line}");
    if filler > 0 && !line.is_empty() {
        text.push('\n');
        let unit = format!("{line} ");
        let mut rest = filler;
        while rest > 0 {
            let take = rest.min(unit.len());
            text.push_str(&unit[..take]);
            rest -= take;
        }
    }
    text
}

fn record_tool(
    name: &str,
    run: String,
    effects: PathBuf,
    hang_on: Vec<String>,
    delay: Duration,
    filler: usize,
) -> Result<AgentToolHandle, String> {
    AgentToolHandle::from_fn(name, "Record a line", move |args: Line| {
        let (run, effects) = (run.clone(), effects.clone());
        let hang = hang_on.contains(&args.line);
        async move {
            append(&effects, &format!("{run}\t{}\n", args.line))
                .map_err(|e| ToolError::new(format!("could not record: {e}")))?;
            if hang {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(delay).await;
            Ok::<_, ToolError>(recorded_text(&args.line, filler))
        }
    })
    .map_err(|e| e.to_string())
}

/// The scripted agent's options for run `run` (its tools append to `effects`), as the service
/// builds them: the same agent in process, for comparisons (`cargo xtask chaos --scale`).
pub fn agent_options(run: &str, model: Model, effects: &std::path::Path) -> AgentOptions {
    options_with(run, model, effects, Vec::new(), Duration::ZERO)
}

fn options_with(
    run: &str,
    model: Model,
    effects: &std::path::Path,
    hang_on: Vec<String>,
    delay: Duration,
) -> AgentOptions {
    let big = std::env::var("OXPI_DURABLE_BIG_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(BIG_BYTES);
    let effects = effects.to_path_buf();
    let tool = |name: &str, filler: usize, replay: Replay| {
        record_tool(
            name,
            run.to_string(),
            effects.clone(),
            hang_on.clone(),
            delay,
            filler,
        )
        .map(|t| t.with_replay(replay))
    };
    let tools = [
        tool("record", 0, Replay::Never),
        tool("record_safe", 0, Replay::Safe),
        tool("record_big", big, Replay::Never),
        tool("record_huge", HUGE_BYTES, Replay::Never),
    ];
    AgentOptions::new(model).with_tools(tools.into_iter().flatten())
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

/// Serves the scripted agent as the environment says (see the module's documentation); returns
/// only on a configuration error.
pub async fn serve_from_env() -> Result<(), String> {
    let port: u16 = env("OXPI_DURABLE_PORT")?
        .parse()
        .map_err(|e| format!("OXPI_DURABLE_PORT: {e}"))?;
    let model = Model::openai_compatible(env("OXPI_DURABLE_MODEL_URL")?, "scripted");
    let effects = PathBuf::from(env("OXPI_DURABLE_EFFECTS")?);
    let hang_on: Vec<String> = std::env::var("OXPI_DURABLE_HANG_ON")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let delay = Duration::from_millis(
        std::env::var("OXPI_DURABLE_TOOL_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    );
    let events = std::env::var_os("OXPI_DURABLE_EVENTS").map(PathBuf::from);
    // Check the tools once before serving, so a broken schema fails at start.
    record_tool(
        "record",
        String::new(),
        effects.clone(),
        Vec::new(),
        delay,
        0,
    )?;
    let agent = DurableAgent::new(move |run| {
        options_with(run, model.clone(), &effects, hang_on.clone(), delay)
    });
    let approve: Vec<String> = std::env::var("OXPI_DURABLE_APPROVE")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let agent = if approve.is_empty() {
        agent
    } else {
        agent.with_approval(move |call| approve.contains(&call.name))
    };
    let agent = match events {
        Some(path) => agent.with_observer(move |event| {
            let line = match event {
                StepEvent::ModelTurn {
                    run,
                    turn,
                    replayed,
                } => format!("model\t{run}\t{turn}\t{replayed}\n"),
                StepEvent::ToolCall {
                    run,
                    call_id,
                    replayed,
                    outcome_unknown,
                    ..
                } => format!("tool\t{run}\t{call_id}\t{replayed}\t{outcome_unknown}\n"),
            };
            let _ = append(&path, &line);
        }),
        None => agent,
    };
    agent
        .serve(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .await;
    Ok(())
}
