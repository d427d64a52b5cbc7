//! The crates.io Rust port `pi-ai` 1.0.0 on the bench streams, consumed the same way as oxpi's:
//! every event is taken from the stream, delta bytes are counted, the final message checked.
//!
//! ```text
//! piai-rs-bench stream --url ORIGIN --kind openai-text|openai-tool|anthropic-tool --size BYTES
//!                      [--warmup N]
//! ```

use std::process::ExitCode;

use futures::StreamExt;
use oxpi_bench::measure::Span;
use oxpi_bench::payload::{self, Kind};
use oxpi_bench::{verify, Args, Report};
use pi_ai::{AssistantMessageEvent, Content, Context, Message, Model, StreamOptions, Tool};
use serde_json::json;

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let command = argv.next().unwrap_or_default();
    let args = Args::new(argv.collect());
    if command != "stream" {
        return Report::failed("usage: piai-rs-bench stream --url ORIGIN --kind KIND --size BYTES")
            .print();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return Report::failed(format!("runtime: {e}")).print(),
    };
    match runtime.block_on(stream(&args)) {
        Ok(report) => report.print(),
        Err(e) => Report::failed(e).print(),
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
    let base_url = payload::base_url(origin, kind, size);
    let model = match kind {
        Kind::AnthropicTool => Model {
            id: "bench-model".into(),
            name: "bench-model".into(),
            api: "anthropic-messages".into(),
            provider: "anthropic".into(),
            base_url,
            reasoning: false,
            context_window: 200_000,
            max_tokens: 8_192,
        },
        _ => Model::openai_compat("bench", "bench-model", base_url, 128_000, 4_096),
    };
    let context = Context {
        system_prompt: Some("You are a benchmark.".into()),
        messages: vec![Message::user_text("Write the file.")],
        tools: vec![Tool {
            name: payload::TOOL_NAME.into(),
            description: "Write a file".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"]
            }),
        }],
    };
    let options = StreamOptions {
        api_key: Some("bench-key".into()),
        ..StreamOptions::default()
    };

    let span = Span::start();
    let mut events = pi_ai::stream_simple(&model, &context, &options)
        .await
        .map_err(|e| format!("stream_simple failed: {e}"))?;
    let (mut count, mut delta_bytes) = (0u64, 0usize);
    let mut last = None;
    let mut first_event_ms = 0.0;
    while let Some(event) = events.next().await {
        if count == 0 {
            first_event_ms = span.elapsed_ms();
        }
        count += 1;
        match event {
            Ok(AssistantMessageEvent::TextDelta { delta, .. })
            | Ok(AssistantMessageEvent::ToolCallDelta { delta, .. }) => delta_bytes += delta.len(),
            Ok(AssistantMessageEvent::Done { message, .. }) => last = Some(Ok(message)),
            Ok(AssistantMessageEvent::Error { error, .. }) => {
                last = Some(Err(error.error_message.unwrap_or_default()))
            }
            Err(e) => last = Some(Err(e.to_string())),
            Ok(other) => {
                std::hint::black_box(other);
            }
        }
    }
    drop(events);
    let figures = span.finish();

    let message = match last {
        Some(Ok(message)) => message,
        Some(Err(text)) => return Ok(Report::failed(format!("the stream failed: {text}"))),
        None => return Ok(Report::failed("the stream ended without done")),
    };
    let text: String = message.content.iter().filter_map(|c| c.as_text()).collect();
    let tool = message.content.iter().find_map(|c| match c {
        Content::ToolCall {
            name, arguments, ..
        } => Some((name.as_str(), arguments)),
        _ => None,
    });
    if let Err(e) = verify(kind, size, &text, tool) {
        return Ok(Report::failed(e));
    }
    Ok(Report::ok(figures)
        .with("events", count)
        .with("delta_bytes", delta_bytes)
        .with("first_event_ms", first_event_ms))
}
