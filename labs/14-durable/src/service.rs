//! The lab's service process: the same binary started again with `LAB14_SERVICE` set, serving
//! a [`DurableAgent`] (object `OxpiAgent`) on `127.0.0.1:$LAB14_PORT` against the model in
//! `$LAB14_MODEL` (JSON). Its two tools work in `$LAB14_DIR`:
//!
//! - `get_code` (`Replay::Never`): issues a fresh code, appends it to `issued.txt` (the
//!   countable effect: a second run would add a second, different line) and returns it.
//! - `write` (`Replay::Safe`: writing the same content again changes nothing): writes a file,
//!   appends a line to `writes.log`, then waits `$LAB14_WRITE_DELAY_MS` before returning (the
//!   first process waits until it is killed).
//!
//! Every model request and every journaled step is appended to `events.log` as
//! `<pid>\trequest\t<turn>`, `<pid>\tmodel\t<turn>\t<replayed>` or
//! `<pid>\ttool\t<name>\t<call id>\t<replayed>\t<outcome unknown>`, and printed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use oxpi_agent_core::prelude::*;
use oxpi_agent_core::Replay;
use oxpi_ai::{ApiKey, Message, Model, StreamOptions};
use oxpi_durable::{DurableAgent, StepEvent};

/// The variable that makes the binary a service process.
pub const SERVICE_ENV: &str = "LAB14_SERVICE";

/// The agent's system prompt (see the lab's notes on the 1.5B model).
pub const SYSTEM_PROMPT: &str =
    "You are a helpful assistant that can use tools. To use a tool, reply with a tool call. \
Do the steps in order, one tool call per reply. When all steps are done, reply with the requested text only.";

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct WriteArgs {
    /// Path of the file to write.
    path: String,
    /// Content to write to the file.
    content: String,
}

/// Appends `text` to `path` and syncs it (each line is one observable fact).
pub fn append(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_data()
}

/// A fresh code: `dur-` and six digits that differ from call to call.
fn issue_code() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    hasher.write_u128(nanos);
    format!("dur-{:06}", hasher.finish() % 1_000_000)
}

fn log(events: &Path, line: &str) {
    let line = format!("{}\t{line}", std::process::id());
    println!(
        "  [service {}] {}",
        std::process::id(),
        line.replace('\t', " ")
    );
    let _ = append(events, &format!("{line}\n"));
}

fn tools(dir: &Path, write_delay: Duration) -> Result<Vec<AgentToolHandle>, String> {
    let issued = dir.join("issued.txt");
    let get_code = AgentToolHandle::from_fn(
        "get_code",
        "Issue a new verification code (验证代号). Each call issues a different one.",
        move |_: NoArgs| {
            let issued = issued.clone();
            async move {
                let code = issue_code();
                append(&issued, &format!("{code}\n"))
                    .map_err(|e| ToolError::new(format!("could not record the code: {e}")))?;
                Ok::<_, ToolError>(format!("本次验证代号：{code}"))
            }
        },
    )
    .map_err(|e| e.to_string())?
    .with_replay(Replay::Never);
    let root = dir.to_path_buf();
    let write = AgentToolHandle::from_fn(
        "write",
        "Write content to a file in the working directory, creating or replacing it.",
        move |args: WriteArgs| {
            let root = root.clone();
            async move {
                let name = Path::new(&args.path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .filter(|n| !n.is_empty() && args.path.trim_start_matches("./") == *n)
                    .ok_or_else(|| {
                        ToolError::new(format!("{}: only files of this directory", args.path))
                    })?;
                std::fs::write(root.join(&name), &args.content)
                    .map_err(|e| ToolError::new(format!("could not write {name}: {e}")))?;
                append(
                    &root.join("writes.log"),
                    &format!("{}\t{name}\n", std::process::id()),
                )
                .map_err(|e| ToolError::new(format!("could not log the write: {e}")))?;
                tokio::time::sleep(write_delay).await;
                Ok::<_, ToolError>(format!(
                    "Successfully wrote {} bytes to {name}",
                    args.content.len()
                ))
            }
        },
    )
    .map_err(|e| e.to_string())?
    .with_replay(Replay::Safe);
    Ok(vec![get_code, write])
}

fn var(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

/// The agent options of the lab's run: the tools, the system prompt, greedy sampling, and a
/// stream function that logs each real model request (a replayed turn makes none).
fn agent_options(
    model: Model,
    api_key: Option<ApiKey>,
    tools: Vec<AgentToolHandle>,
    events: PathBuf,
) -> AgentOptions {
    let mut stream_options = StreamOptions::default()
        .with_temperature(0.0)
        .with_max_tokens(400);
    stream_options.api_key = api_key;
    let mut options = AgentOptions::new(model)
        .with_system_prompt(SYSTEM_PROMPT)
        .with_tools(tools)
        .with_max_turns(6)
        .with_stream_options(stream_options);
    options.stream_fn = Some(Arc::new(move |model, context, options| {
        let turn = context
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant(_)))
            .count();
        log(&events, &format!("request\t{turn}"));
        oxpi_ai::stream(model, context, options)
    }));
    options
}

/// Serves the durable agent as the environment says; returns only on an error.
pub async fn serve() -> Result<(), String> {
    let port: u16 = var("LAB14_PORT")?
        .parse()
        .map_err(|e| format!("LAB14_PORT: {e}"))?;
    let model: Model =
        serde_json::from_str(&var("LAB14_MODEL")?).map_err(|e| format!("LAB14_MODEL: {e}"))?;
    let api_key = std::env::var("LAB14_API_KEY")
        .ok()
        .filter(|k| !k.is_empty())
        .map(ApiKey::new);
    let dir = PathBuf::from(var("LAB14_DIR")?);
    let delay = Duration::from_millis(
        var("LAB14_WRITE_DELAY_MS")?
            .parse()
            .map_err(|e| format!("LAB14_WRITE_DELAY_MS: {e}"))?,
    );
    let tools = tools(&dir, delay)?;
    let events = dir.join("events.log");
    let observed = events.clone();
    let agent = DurableAgent::new(move |_run| {
        agent_options(
            model.clone(),
            api_key.clone(),
            tools.clone(),
            events.clone(),
        )
    })
    .with_observer(move |event| match event {
        StepEvent::ModelTurn { turn, replayed, .. } => {
            log(&observed, &format!("model\t{turn}\t{replayed}"));
        }
        StepEvent::ToolCall {
            call_id,
            tool_name,
            replayed,
            outcome_unknown,
            ..
        } => log(
            &observed,
            &format!("tool\t{tool_name}\t{call_id}\t{replayed}\t{outcome_unknown}"),
        ),
        _ => {}
    });
    agent
        .serve(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .await;
    Ok(())
}
