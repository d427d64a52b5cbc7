//! The lab's service process: the same binary started again with `LAB14_SERVICE` set, serving
//! a [`DurableAgent`] (object `OxpiAgent`) on `127.0.0.1:$LAB14_PORT` against the model in
//! `$LAB14_MODEL` (JSON), with one tool, `read` (`Replay::Safe`: reading again changes nothing),
//! over the files of `$LAB14_DIR`. Each read appends `<pid>\t<path>` to `reads.log` (the
//! countable effect); reading [`SLOW_FILE`] then waits `$LAB14_SLOW_READ_MS` (the first process:
//! until it is killed).
//!
//! Every model request and every journaled step is appended to `events.log` as
//! `<pid>\trequest\t<turn>`, `<pid>\tmodel\t<turn>\t<replayed>` or
//! `<pid>\ttool\t<name>\t<call id>\t<replayed>\t<outcome unknown>`, and printed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use oxpi_agent_core::prelude::*;
use oxpi_agent_core::Replay;
use oxpi_ai::{ApiKey, Message, Model, StreamOptions};
use oxpi_durable::scripted::append;
use oxpi_durable::{DurableAgent, StepEvent};

/// The variable that makes the binary a service process.
pub const SERVICE_ENV: &str = "LAB14_SERVICE";

/// The agent's system prompt (see the lab's notes on the 1.5B model).
/// lab-09's, which passed 50/50 on the embedded model.
pub const SYSTEM_PROMPT: &str = "You are a helpful assistant that can use tools. To use a tool, reply with a tool call. \
Follow pointers between files with read, one file per call. As soon as a tool result contains the code itself, \
stop calling tools and reply with exactly that code, nothing else, and never shorten it.";

/// The file whose read is slow (the lab kills the first process while it is read).
pub const SLOW_FILE: &str = "notes/code.txt";

fn log(events: &Path, line: &str) {
    let pid = std::process::id();
    println!("  [service {pid}] {}", line.replace('\t', " "));
    let _ = append(events, &format!("{pid}\t{line}\n"));
}

/// oxpi's `read` tool (its name, description, arguments and output), which first appends
/// `<pid>\t<path>` to `reads.log` and, reading [`SLOW_FILE`], takes `slow` more before it
/// returns.
struct LoggedRead {
    inner: oxpi_tools::ReadTool,
    log: PathBuf,
    slow: Duration,
}

impl AgentTool for LoggedRead {
    type Args = oxpi_tools::ReadArgs;

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    /// Reading again is safe: a read interrupted by a crash is run again.
    fn replay(&self) -> Option<Replay> {
        Some(Replay::Safe)
    }

    async fn execute(
        &self,
        tool_call_id: &str,
        args: Self::Args,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        let path = args.path.trim_start_matches("./").to_string();
        append(&self.log, &format!("{}\t{path}\n", std::process::id()))
            .map_err(|e| ToolError::new(format!("could not log the read: {e}")))?;
        let result = self
            .inner
            .execute(tool_call_id, args, cancel, on_update)
            .await?;
        if path == SLOW_FILE {
            tokio::time::sleep(self.slow).await;
        }
        Ok(result)
    }
}

fn read_tool(dir: &Path, slow: Duration) -> Result<AgentToolHandle, String> {
    let workspace = oxpi_tools::Workspace::new(dir).map_err(|e| format!("workspace: {e}"))?;
    AgentToolHandle::new(LoggedRead {
        inner: oxpi_tools::ReadTool::new(workspace),
        log: dir.join("reads.log"),
        slow,
    })
    .map_err(|e| e.to_string())
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
        var("LAB14_SLOW_READ_MS")?
            .parse()
            .map_err(|e| format!("LAB14_SLOW_READ_MS: {e}"))?,
    );
    let tools = vec![read_tool(&dir, delay)?];
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
