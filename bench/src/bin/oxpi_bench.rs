//! oxpi's side of `cargo xtask bench`, and the stream server. One measurement per process.
//!
//! ```text
//! oxpi-bench serve [--write-bytes N] [--prerender kind:size,…]
//! oxpi-bench stream --url ORIGIN --kind openai-text|openai-tool|anthropic-tool --size BYTES
//!                   [--partial-every BYTES] [--warmup N]
//! oxpi-bench stream-floor --url ORIGIN --kind KIND --size BYTES [--warmup N]
//! oxpi-bench agent-loop [--turns 500]
//! oxpi-bench agents [--count 1000]
//! oxpi-bench read --file PATH
//! oxpi-bench session-load --file PATH
//! oxpi-bench session-write --dir DIR --entries N
//! oxpi-bench grep|find --root DIR --args JSON
//! oxpi-bench tree --root DIR [--files N] [--bytes N]
//! oxpi-bench rpc [--round-trips 1000] [--cpus one|two|as-scheduled] -- PROGRAM ARGS…
//! oxpi-bench rpc-echo
//! oxpi-bench run [--expect-text SIZE] -- PROGRAM ARGS…
//! ```
//!
//! Every measuring command also takes `--runtime current` (a current-thread Tokio runtime
//! instead of the default multi-thread one). `--warmup N` streams N times unmeasured first, in
//! the same process. `OXPI_BENCH_TURNS=1` makes `agent-loop` print every turn's time on stderr.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use oxpi_agent_core::{
    Agent, AgentEvent, AgentOptions, AgentTool, AgentToolHandle, AgentToolResult, ToolError,
    ToolUpdateFn,
};
use oxpi_ai::faux::{FauxProvider, FauxReply};
use oxpi_ai::{
    ApiKey, AssistantContent, AssistantMessageEvent, Context, Message, Model, ProviderRegistry,
    StreamOptions, Tool, API_ANTHROPIC_MESSAGES,
};
use oxpi_bench::measure::Span;
use oxpi_bench::payload::{self, Kind};
use oxpi_bench::server::Server;
use oxpi_bench::{verify, Args, Report};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const USAGE: &str =
    "usage: oxpi-bench serve|stream|agent-loop|read|session-load|grep|find|tree|rpc|rpc-echo [options] (see the source)";

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let command = argv.next().unwrap_or_default();
    if command == "rpc-echo" {
        return match oxpi_bench::rpc::echo() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("oxpi-bench rpc-echo: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if command == "rpc" {
        return rpc(argv.collect()).print();
    }
    if command == "run" {
        return run_process(argv.collect()).print();
    }
    let args = Args::new(argv.collect());
    if command == "tree" {
        return match make_tree(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("oxpi-bench tree: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if command == "session-write" {
        return match session_write(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("oxpi-bench session-write: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if command == "session-load" {
        return match session_load(&args) {
            Ok(report) => report.print(),
            Err(e) => Report::failed(e).print(),
        };
    }
    if command == "serve" {
        return match serve(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("oxpi-bench serve: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut builder = if args.get("--runtime") == Some("current") {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return Report::failed(format!("runtime: {e}")).print(),
    };
    let report = runtime.block_on(async {
        match command.as_str() {
            "stream" => stream(&args).await,
            "stream-floor" => stream_floor(&args).await,
            "agent-loop" => agent_loop(&args).await,
            "agents" => agents(&args).await,
            "read" => read(&args).await,
            "grep" => search(&args, "grep").await,
            "find" => search(&args, "find").await,
            _ => Err(USAGE.to_string()),
        }
    });
    match report {
        Ok(report) => report.print(),
        Err(e) => Report::failed(e).print(),
    }
}

/// `rpc [--round-trips N] [--cpus one|two|as-scheduled] -- PROGRAM ARGS…`: times N
/// `get_state` round trips, the client and the child pinned as `--cpus` says.
fn rpc(argv: Vec<String>) -> Report {
    let Some(split) = argv.iter().position(|a| a == "--") else {
        return Report::failed("usage: oxpi-bench rpc [--round-trips N] -- PROGRAM ARGS…");
    };
    let args = Args::new(argv[..split].to_vec());
    let child = &argv[split + 1..];
    let n = match args.num("--round-trips", 1000) {
        Ok(n) => n,
        Err(e) => return Report::failed(e),
    };
    let cpus = match oxpi_bench::rpc::Cpus::parse(args.get("--cpus").unwrap_or("as-scheduled")) {
        Ok(cpus) => cpus,
        Err(e) => return Report::failed(e),
    };
    // A placement this machine cannot give (two CPUs on one) skips the row.
    if let Err(e) = oxpi_bench::rpc::placement(cpus) {
        return Report::skipped(e);
    }
    let Some((program, rest)) = child.split_first() else {
        return Report::failed("no program after --");
    };
    match oxpi_bench::rpc::round_trips(program, rest, n, cpus) {
        Ok(figures) => Report::ok(figures).with("round_trips", n),
        Err(e) => Report::failed(e),
    }
}

/// `run [--expect-text SIZE] -- PROGRAM ARGS…`: one whole process, start to exit; with
/// `--expect-text`, its standard output must be the text reply of that size the stream server
/// sends (surrounding whitespace aside).
fn run_process(argv: Vec<String>) -> Report {
    let Some(split) = argv.iter().position(|a| a == "--") else {
        return Report::failed("usage: oxpi-bench run [--expect-text SIZE] -- PROGRAM ARGS…");
    };
    let args = Args::new(argv[..split].to_vec());
    let Some((program, rest)) = argv[split + 1..].split_first() else {
        return Report::failed("no program after --");
    };
    let ran = match oxpi_bench::process::run(program, rest, b"") {
        Ok(ran) => ran,
        Err(e) => return Report::failed(e),
    };
    let expected = match args.get("--expect-text").map(str::parse::<usize>) {
        None => None,
        Some(Ok(size)) => Some(payload::text_content(size)),
        Some(Err(_)) => return Report::failed("--expect-text wants a size"),
    };
    if let Some(expected) = expected {
        let got = ran.stdout.trim();
        if got != expected.trim() {
            let start: String = got.chars().take(80).collect();
            return Report::failed(format!(
                "unexpected output ({} bytes, starting {start:?})",
                got.len()
            ));
        }
    }
    Report::ok(ran.figures).with("stdout_bytes", ran.stdout.len())
}

/// Serves until stdin closes (the xtask holds it open), printing the origin first.
fn serve(args: &Args) -> Result<(), String> {
    let write_bytes = args.num("--write-bytes", 0)?;
    let mut prerender = Vec::new();
    for item in args
        .get("--prerender")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
    {
        let (kind, size) = item
            .split_once(':')
            .ok_or_else(|| format!("--prerender wants kind:size, got {item:?}"))?;
        let kind = Kind::parse(kind).ok_or_else(|| format!("unknown stream kind {kind:?}"))?;
        let size = size.parse().map_err(|_| format!("bad size {size:?}"))?;
        prerender.push((kind, size));
    }
    let server = Server::start(&prerender, write_bytes).map_err(|e| e.to_string())?;
    println!("{}", server.origin());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    Ok(())
}

/// The tool offered in the streaming requests (the reply calls it).
fn write_tool() -> Tool {
    Tool {
        name: payload::TOOL_NAME.to_string(),
        description: "Write a file".to_string(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"]
        }),
        constrained_sampling: None,
    }
}

/// Streams once per `--warmup` (unmeasured, same process), then once measured.
async fn stream(args: &Args) -> Result<Report, String> {
    for _ in 0..args.num("--warmup", 0)? {
        let report = stream_once(args).await?;
        if report.status != "ok" {
            return Ok(report);
        }
    }
    stream_once(args).await
}

async fn stream_once(args: &Args) -> Result<Report, String> {
    let origin = args.need("--url")?;
    let kind = Kind::parse(args.need("--kind")?).ok_or("unknown --kind")?;
    let size = args.num("--size", 0)?;
    let partial_every = args.num("--partial-every", 0)?;
    let mut model = Model::openai_compatible(payload::base_url(origin, kind, size), "bench-model");
    model.api = kind.api().into();
    if kind == Kind::AnthropicTool {
        model.provider = "anthropic".to_string();
    }
    let context = Context::new("You are a benchmark.")
        .with_message(Message::user("Write the file."))
        .with_tool(write_tool());
    let options = StreamOptions::default()
        .with_api_key(ApiKey::new("bench-key"))
        .with_max_retries(0);

    let span = Span::start();
    let mut events = oxpi_ai::stream(&model, &context, options);
    let (mut count, mut delta_bytes, mut since, mut snapshots) = (0u64, 0usize, 0usize, 0u64);
    let mut last = None;
    let mut first_event_ms = 0.0;
    while let Some(event) = events.next().await {
        if count == 0 {
            first_event_ms = span.elapsed_ms();
        }
        count += 1;
        match event {
            AssistantMessageEvent::TextDelta { delta, .. } => delta_bytes += delta.len(),
            AssistantMessageEvent::ToolcallDelta {
                content_index,
                delta,
            } => {
                delta_bytes += delta.len();
                if partial_every > 0 {
                    since += delta.len();
                    if since >= partial_every {
                        since = 0;
                        let mut partial = events.partial();
                        let snapshot = partial.partial_arguments(content_index);
                        snapshots += u64::from(snapshot.is_some());
                        std::hint::black_box(snapshot);
                    }
                }
            }
            AssistantMessageEvent::Done { message, .. } => last = Some(Ok(message)),
            AssistantMessageEvent::Error { error, .. } => last = Some(Err(error)),
            other => {
                std::hint::black_box(other);
            }
        }
    }
    drop(events);
    let figures = span.finish();

    let message = match last {
        Some(Ok(message)) => message,
        Some(Err(error)) => {
            let text = error.error_message.unwrap_or_default();
            if model.api == API_ANTHROPIC_MESSAGES && text.contains("not implemented") {
                return Ok(Report::skipped(format!(
                    "oxpi's anthropic-messages provider is not implemented yet ({text})"
                )));
            }
            return Ok(Report::failed(format!("the stream ended in error: {text}")));
        }
        None => return Ok(Report::failed("the stream ended without done or error")),
    };
    let call = message.content.iter().find_map(|c| match c {
        AssistantContent::ToolCall(tc) => Some(tc),
        _ => None,
    });
    let arguments = call.map(|tc| serde_json::Value::Object(tc.arguments.clone()));
    let tool = call
        .zip(arguments.as_ref())
        .map(|(tc, a)| (tc.name.as_str(), a));
    if let Err(e) = verify(kind, size, &message.text(), tool) {
        return Ok(Report::failed(e));
    }
    Ok(Report::ok(figures)
        .with("events", count)
        .with("delta_bytes", delta_bytes)
        .with("snapshots", snapshots)
        .with("first_event_ms", first_event_ms))
}

/// The transport floor of a stream row: the same request to the same server with the client
/// every provider builds (`new_client`, built inside the span as the first `stream` builds
/// it), the body received and its bytes and lines counted, nothing parsed. Streams once per
/// `--warmup` (unmeasured, same process), then once measured.
async fn stream_floor(args: &Args) -> Result<Report, String> {
    let origin = args.need("--url")?;
    let kind = Kind::parse(args.need("--kind")?).ok_or("unknown --kind")?;
    let size = args.num("--size", 0)?;
    let path = match kind {
        Kind::AnthropicTool => "/v1/messages",
        Kind::OpenAiText | Kind::OpenAiTool | Kind::TuiText => "/chat/completions",
    };
    let url = format!("{}{path}", payload::base_url(origin, kind, size));
    let expected = payload::render(kind, size).len();
    let body = json!({"model": "bench-model", "stream": true, "messages": [
        {"role": "user", "content": "Write the file."}
    ]})
    .to_string();
    let mut outcome = None;
    for _ in 0..=args.num("--warmup", 0)? {
        let span = Span::start();
        let client = oxpi_ai::providers::client::new_client()?;
        let mut response = client
            .post(&url)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .map_err(|e| format!("request: {e}"))?;
        let (mut bytes, mut lines) = (0usize, 0usize);
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("read: {e}"))? {
            bytes += chunk.len();
            lines += chunk.iter().filter(|&&b| b == b'\n').count();
        }
        outcome = Some((span.finish(), bytes, lines));
    }
    let Some((figures, bytes, lines)) = outcome else {
        return Err("nothing measured".into());
    };
    if bytes != expected {
        return Ok(Report::failed(format!(
            "{bytes} bytes received, {expected} sent"
        )));
    }
    Ok(Report::ok(figures)
        .with("body_bytes", bytes)
        .with("lines", lines))
}

/// The no-op tool of the agent loop.
struct Noop;

/// Arguments of the no-op tool.
#[derive(Deserialize, JsonSchema)]
struct NoopArgs {
    /// The turn number.
    #[allow(dead_code)]
    turn: u64,
}

impl AgentTool for Noop {
    type Args = NoopArgs;

    fn name(&self) -> &str {
        "noop"
    }

    fn description(&self) -> &str {
        "Does nothing"
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        _args: NoopArgs,
        _cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        Ok(AgentToolResult::text("ok"))
    }
}

/// Median of a window of per-turn durations, microseconds.
fn median_us(window: &[Duration]) -> f64 {
    let mut v: Vec<f64> = window.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

async fn agent_loop(args: &Args) -> Result<Report, String> {
    let turns = args.num("--turns", 500)?.max(20);
    // 16 characters per delta: pi's faux provider is run with 4-token (16-character) chunks.
    let faux = FauxProvider::new().with_chunk_chars(16);
    for turn in 1..=turns {
        faux.push(FauxReply::new().with_raw_tool_call(
            Some(format!("call_{turn}")),
            "noop",
            json!({ "turn": turn }).to_string(),
        ));
    }
    faux.push(FauxReply::text("done"));
    let mut registry = ProviderRegistry::new();
    registry.register(faux.clone());
    let noop = AgentToolHandle::new(Noop).map_err(|e| e.to_string())?;
    let agent = Agent::new(
        AgentOptions::new(faux.model())
            .with_registry(registry)
            .with_system_prompt("You are a benchmark.")
            .with_tool(noop)
            .with_max_turns(turns + 10),
    );
    let starts: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let sink = starts.clone();
    let _subscription = agent.subscribe(move |event| {
        if matches!(event, AgentEvent::TurnStart) {
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Instant::now());
        }
    });

    let span = Span::start();
    agent.prompt("Go.").await.map_err(|e| e.to_string())?;
    let figures = span.finish();

    if let Some(error) = agent.error_message() {
        return Ok(Report::failed(format!("the run failed: {error}")));
    }
    let expected_messages = 1 + 2 * turns + 1;
    if agent.messages().len() != expected_messages {
        return Ok(Report::failed(format!(
            "{} messages in the history, expected {expected_messages}",
            agent.messages().len()
        )));
    }
    let starts = starts.lock().unwrap_or_else(|p| p.into_inner()).clone();
    // durations[k - 1] is turn k: from its turn_start to the next turn's.
    let durations: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    if durations.len() < turns {
        return Ok(Report::failed(format!(
            "{} turns measured, expected {turns}",
            durations.len()
        )));
    }
    if std::env::var_os("OXPI_BENCH_TURNS").is_some() {
        let us: Vec<String> = durations
            .iter()
            .map(|d| format!("{:.0}", d.as_secs_f64() * 1e6))
            .collect();
        eprintln!("per-turn µs: {}", us.join(" "));
    }
    let early = median_us(&durations[5..15]);
    let late = median_us(&durations[turns - 10..turns]);
    Ok(Report::ok(figures)
        .with("turns", turns)
        .with("turn10_us", early)
        .with("turn_last_us", late)
        .with("requests", faux.call_count()))
}

/// `agents`: `--count` agents on one faux provider, each answering one prompt with a short text
/// reply, all started at once and all kept alive until every one has answered; RSS per agent
/// is the growth of the peak over the count.
async fn agents(args: &Args) -> Result<Report, String> {
    let count = args.num("--count", 1000)?.max(1);
    let faux = FauxProvider::new().with_chunk_chars(16);
    for _ in 0..count {
        faux.push(FauxReply::text("Done: the answer is short."));
    }
    let mut registry = ProviderRegistry::new();
    registry.register(faux.clone());
    let registry = Arc::new(registry);

    let span = Span::start();
    let mut agents = Vec::with_capacity(count);
    let mut runs = Vec::with_capacity(count);
    for i in 0..count {
        let shared = registry.clone();
        let agent = Agent::new(
            AgentOptions::new(faux.model())
                .with_stream_fn(move |model, context, options| {
                    shared.stream(model, context, options)
                })
                .with_system_prompt("You are a benchmark."),
        );
        let running = agent.clone();
        runs.push(tokio::spawn(async move {
            running.prompt(format!("Agent {i}: go.")).await.map(|_| ())
        }));
        agents.push(agent);
    }
    for run in runs {
        run.await
            .map_err(|e| format!("an agent's task failed: {e}"))?
            .map_err(|e| e.to_string())?;
    }
    let figures = span.finish();

    let answered = agents
        .iter()
        .filter(|a| a.error_message().is_none() && a.messages().len() == 2)
        .count();
    if answered != count {
        return Ok(Report::failed(format!(
            "{answered} of {count} agents answered"
        )));
    }
    let per_agent_kib =
        figures.peak_rss_kib.saturating_sub(figures.rss_before_kib) as f64 / count as f64;
    Ok(Report::ok(figures)
        .with("agents", count)
        .with("rss_per_agent_kib", per_agent_kib))
}

async fn read(args: &Args) -> Result<Report, String> {
    let file = std::path::Path::new(args.need("--file")?);
    let dir = file.parent().ok_or("--file has no parent directory")?;
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("--file has no name")?;
    let file_bytes = std::fs::metadata(file).map_err(|e| e.to_string())?.len();
    let workspace = oxpi_tools::Workspace::new(dir).map_err(|e| e.to_string())?;
    let tool = oxpi_tools::ReadTool::new(workspace);

    let span = Span::start();
    let result = tool
        .execute(
            "read-1",
            oxpi_tools::ReadArgs::new(name),
            CancellationToken::new(),
            Arc::new(|_| {}),
        )
        .await;
    let figures = span.finish();

    let result = result.map_err(|e| format!("read failed: {e}"))?;
    let details: oxpi_tools::ReadDetails =
        serde_json::from_value(result.details.unwrap_or_default())
            .map_err(|e| format!("read details: {e}"))?;
    let oxpi_tools::ReadDetails::Text(text) = details else {
        return Ok(Report::failed("read returned an image"));
    };
    if text.lines != 2000 {
        return Ok(Report::failed(format!(
            "{} lines returned, expected the first 2000",
            text.lines
        )));
    }
    Ok(Report::ok(figures)
        .with("bytes_read", text.bytes_read)
        .with("lines", text.lines)
        .with("file_bytes", file_bytes))
}

/// `session-load --file PATH`: opens a session file read-only and builds its context (issue
/// 46.14), as `bench/node/session_load.mjs load` does with pi's `SessionManager`; the CPU time of
/// each step, and the peak RSS of the process once the context is built. No async runtime is
/// started, so none of its threads or buffers count.
fn session_load(args: &Args) -> Result<Report, String> {
    let file = std::path::Path::new(args.need("--file")?);
    let file_bytes = std::fs::metadata(file).map_err(|e| e.to_string())?.len();
    let span = Span::start();
    let (t0, c0) = (Instant::now(), oxpi_bench::measure::usage().cpu_us);
    let session = oxpi_session::SessionManager::open_read_only(file).map_err(|e| e.to_string())?;
    let (t1, c1) = (Instant::now(), oxpi_bench::measure::usage().cpu_us);
    let context = session.build_session_context();
    let (t2, c2) = (Instant::now(), oxpi_bench::measure::usage().cpu_us);
    let figures = span.finish();
    let entries = session.entries().count();
    if context.messages.len() != entries {
        return Ok(Report::failed(format!(
            "{} messages in the context of {entries} entries",
            context.messages.len()
        )));
    }
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1000.0;
    Ok(Report::ok(figures)
        .with("open_ms", ms(t0, t1))
        .with("context_ms", ms(t1, t2))
        .with("open_cpu_ms", c1.saturating_sub(c0) as f64 / 1000.0)
        .with("context_cpu_ms", c2.saturating_sub(c1) as f64 / 1000.0)
        .with("entries", entries)
        .with("messages", context.messages.len())
        .with("file_bytes", file_bytes))
}

/// `session-write --dir DIR --entries N`: the session `bench/node/session_load.mjs write`
/// makes with pi's `SessionManager` (the same turns), written by oxpi's, for a run without pi.
/// Prints `{"file", "bytes"}`.
fn session_write(args: &Args) -> Result<(), String> {
    let dir = std::path::Path::new(args.need("--dir")?);
    let count = args.num("--entries", 50_000)?;
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let mut session =
        oxpi_session::SessionManager::create(&cwd, dir, oxpi_session::NewSessionOptions::new())
            .map_err(|e| e.to_string())?;
    let usage = json!({"input": 1200, "output": 80, "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": 1280, "cost": {"input": 0.001, "output": 0.0002, "cacheRead": 0,
        "cacheWrite": 0, "total": 0.0012}});
    let mut t: u64 = 1_700_000_000_000;
    let mut stamp = || {
        t += 1;
        t - 1
    };
    for n in 0..count {
        let k = n - n % 3;
        let module = k % 97;
        let message = match n % 3 {
            0 => {
                json!({"role": "user", "content": format!("Question {k}: what does file src/module_{module}.rs do, and how does it relate to the others?"), "timestamp": stamp()})
            }
            1 => json!({"role": "assistant", "content": [
                    {"type": "text", "text": format!("Let me read src/module_{module}.rs to answer that.")},
                    {"type": "toolCall", "id": format!("call_{k}"), "name": "read", "arguments": {"path": format!("src/module_{module}.rs")}}],
                "api": "openai-completions", "provider": "openai", "model": "gpt-4o-mini",
                "usage": usage, "stopReason": "toolUse", "timestamp": stamp()}),
            _ => {
                json!({"role": "toolResult", "toolCallId": format!("call_{k}"), "toolName": "read",
                "content": [{"type": "text", "text": format!("pub fn run_{k}() -> u32 {{\n    // module {k}\n    {k}\n}}\n").repeat(2)}],
                "isError": false, "timestamp": stamp()})
            }
        };
        session
            .append_message_json(message)
            .map_err(|e| e.to_string())?;
    }
    let file = session.session_file().ok_or("the session has no file")?;
    let bytes = std::fs::metadata(file).map_err(|e| e.to_string())?.len();
    println!("{}", json!({"file": file, "bytes": bytes}));
    Ok(())
}

/// Runs one of oxpi's tools (`grep` or `find`) on `--root` with JSON `--args`, once, and reports
/// the time and how many lines it returned.
async fn search(args: &Args, tool: &str) -> Result<Report, String> {
    let root = args.need("--root")?;
    let call: serde_json::Value =
        serde_json::from_str(args.need("--args")?).map_err(|e| format!("--args: {e}"))?;
    let serde_json::Value::Object(call) = call else {
        return Err("--args must be a JSON object".into());
    };
    let workspace = oxpi_tools::Workspace::new(root).map_err(|e| e.to_string())?;
    let handle = match tool {
        "grep" => oxpi_tools::grep_tool(workspace),
        _ => oxpi_tools::find_tool(workspace),
    }
    .map_err(|e| e.to_string())?;
    let span = Span::start();
    let result = handle
        .execute("search-1", call, CancellationToken::new(), Arc::new(|_| {}))
        .await;
    let figures = span.finish();
    let result = result.map_err(|e| format!("{tool} failed: {e}"))?;
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .unwrap_or_default()
        .to_string();
    let lines = text.split("\n\n[").next().unwrap_or("").lines().count();
    Ok(Report::ok(figures).with("lines", lines))
}

/// Writes the search tree (see `oxpi_bench::tree`) and prints its figures as JSON.
fn make_tree(args: &Args) -> Result<(), String> {
    let root = std::path::Path::new(args.need("--root")?);
    let files = args.num("--files", 20_000)?;
    let bytes = args.num("--bytes", 200 << 20)? as u64;
    let stats = oxpi_bench::tree::generate(root, files, bytes).map_err(|e| e.to_string())?;
    println!(
        "{}",
        json!({"files": stats.files, "bytes": stats.bytes, "rs_files": stats.rs_files})
    );
    Ok(())
}
