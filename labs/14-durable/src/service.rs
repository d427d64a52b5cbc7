//! The lab's service process: the same binary started again with `LAB14_SERVICE` set, serving
//! a [`DurableAgent`] (object `OxpiAgent`) on `127.0.0.1:$LAB14_PORT` against the model in
//! `$LAB14_MODEL` (JSON). Its two tools work in `$LAB14_DIR`:
//!
//! - `get_ticket` (`Replay::Never`): issues a fresh ticket, appends it to `issued.txt` (the
//!   countable effect: a second run would add a second, different line) and returns a pointer:
//!   the code is not here, redeem the ticket.
//! - `redeem` (`Replay::Safe`: it only reads): appends a line to `redeems.log`, checks that the
//!   ticket was issued, waits `$LAB14_REDEEM_DELAY_MS` (the first process: until it is killed)
//!   and returns the ticket's code ([`code_for`]).
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
pub const SYSTEM_PROMPT: &str = "You are a helpful assistant that can use tools. To use a tool, reply with a tool call. \
Follow the pointers in tool results, one tool call per reply. As soon as a tool result contains the code itself, \
stop calling tools and reply with exactly that code, nothing else, and never shorten it.";

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct RedeemArgs {
    /// The ticket (凭证), e.g. T-123456.
    ticket: String,
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

/// A fresh ticket: `T-` and six digits that differ from call to call.
fn issue_ticket() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    hasher.write_u128(nanos);
    format!("T-{:06}", hasher.finish() % 1_000_000)
}

/// The code a ticket redeems to (`dur-` and six digits): the same on every call (FNV-1a).
pub fn code_for(ticket: &str) -> String {
    let hash = ticket.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("dur-{:06}", hash % 1_000_000)
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

fn tools(dir: &Path, redeem_delay: Duration) -> Result<Vec<AgentToolHandle>, String> {
    let issued = dir.join("issued.txt");
    let get_ticket = AgentToolHandle::from_fn(
        "get_ticket",
        "Issue a new ticket (凭证). Each call issues a different one.",
        move |_: NoArgs| {
            let issued = issued.clone();
            async move {
                let ticket = issue_ticket();
                append(&issued, &format!("{ticket}\n"))
                    .map_err(|e| ToolError::new(format!("could not record the ticket: {e}")))?;
                Ok::<_, ToolError>(format!("验证代号不在这里，请用 redeem 兑换凭证 {ticket}。"))
            }
        },
    )
    .map_err(|e| e.to_string())?
    .with_replay(Replay::Never);
    let root = dir.to_path_buf();
    let redeem = AgentToolHandle::from_fn(
        "redeem",
        "Redeem a ticket (凭证) for the verification code (验证代号).",
        move |args: RedeemArgs| {
            let root = root.clone();
            async move {
                let ticket = args.ticket.trim().to_string();
                append(
                    &root.join("redeems.log"),
                    &format!("{}\t{ticket}\n", std::process::id()),
                )
                .map_err(|e| ToolError::new(format!("could not log the call: {e}")))?;
                let issued = std::fs::read_to_string(root.join("issued.txt")).unwrap_or_default();
                if !issued.lines().any(|l| l == ticket) {
                    return Err(ToolError::new(format!("unknown ticket {ticket}")));
                }
                tokio::time::sleep(redeem_delay).await;
                Ok::<_, ToolError>(format!("本次验证代号：{}", code_for(&ticket)))
            }
        },
    )
    .map_err(|e| e.to_string())?
    .with_replay(Replay::Safe);
    Ok(vec![get_ticket, redeem])
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
        var("LAB14_REDEEM_DELAY_MS")?
            .parse()
            .map_err(|e| format!("LAB14_REDEEM_DELAY_MS: {e}"))?,
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
