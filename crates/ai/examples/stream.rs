//! Streams one reply and prints each event as a JSON line (pi-ai's event shape, without the
//! `partial` field), or with `--summary` only the final message.
//!
//! ```text
//! cargo run -p oxpi-ai --example stream -- --base-url http://127.0.0.1:8080/v1 --model qwen "Say hi"
//! cargo run -p oxpi-ai --example stream -- --provider openai --model gpt-4o-mini "Say hi"
//! ```

use std::process::ExitCode;

use futures::StreamExt;
use oxpi_ai::{AssistantMessageEvent, Context, Message, Model, StopReason, StreamOptions};
use serde_json::Value;

const USAGE: &str =
    "usage: stream [--provider P] [--base-url URL] --model ID [--api-key KEY] [--api API] \
[--system TEXT] [--max-tokens N] [--temperature T] [--summary] PROMPT";

struct Args {
    provider: Option<String>,
    base_url: Option<String>,
    model: String,
    api_key: Option<String>,
    api: Option<String>,
    system: Option<String>,
    max_tokens: Option<u64>,
    temperature: Option<f32>,
    summary: bool,
    prompt: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut out = Args {
        provider: None,
        base_url: None,
        model: String::new(),
        api_key: None,
        api: None,
        system: None,
        max_tokens: None,
        temperature: None,
        summary: false,
        prompt: String::new(),
    };
    let mut prompt = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--provider" => out.provider = Some(value("--provider")?),
            "--base-url" => out.base_url = Some(value("--base-url")?),
            "--model" => out.model = value("--model")?,
            "--api-key" => out.api_key = Some(value("--api-key")?),
            "--api" => out.api = Some(value("--api")?),
            "--system" => out.system = Some(value("--system")?),
            "--max-tokens" => {
                out.max_tokens = Some(
                    value("--max-tokens")?
                        .parse()
                        .map_err(|e| format!("--max-tokens: {e}"))?,
                )
            }
            "--temperature" => {
                out.temperature = Some(
                    value("--temperature")?
                        .parse()
                        .map_err(|e| format!("--temperature: {e}"))?,
                )
            }
            "--summary" => out.summary = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other if other.starts_with("--") => {
                return Err(format!("unknown option {other}\n{USAGE}"))
            }
            other => prompt.push(other.to_string()),
        }
    }
    if out.model.is_empty() || prompt.is_empty() {
        return Err(USAGE.to_string());
    }
    out.prompt = prompt.join(" ");
    Ok(out)
}

fn build_model(args: &Args) -> Result<Model, String> {
    let mut model = match (&args.provider, &args.base_url) {
        (Some(provider), base_url) => {
            let mut model =
                oxpi_ai::models::model_for(provider, &args.model).unwrap_or_else(|| {
                    let mut m =
                        Model::openai_compatible(base_url.clone().unwrap_or_default(), &args.model);
                    m.provider = provider.clone();
                    m
                });
            if let Some(url) = base_url {
                model.base_url = url.trim_end_matches('/').to_string();
            }
            model
        }
        (None, Some(base_url)) => Model::openai_compatible(base_url, &args.model),
        (None, None) => return Err("give --base-url or --provider".to_string()),
    };
    if model.base_url.is_empty() {
        return Err(format!(
            "unknown provider {:?}: give --base-url",
            model.provider
        ));
    }
    if let Some(api) = &args.api {
        model.api = api.into();
    }
    Ok(model)
}

fn event_line(event: &AssistantMessageEvent) -> String {
    let mut value = serde_json::to_value(event).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.remove("partial");
    }
    value.to_string()
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let model = match build_model(&args) {
        Ok(model) => model,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut context = Context::default().with_message(Message::user(args.prompt.clone()));
    context.system_prompt = args.system.clone();
    let mut options = StreamOptions::default();
    options.api_key = args.api_key.clone().map(Into::into);
    options.max_tokens = args.max_tokens;
    options.temperature = args.temperature;
    let mut stream = oxpi_ai::stream(&model, &context, options);
    let mut last = None;
    while let Some(event) = stream.next().await {
        if !args.summary {
            println!("{}", event_line(&event));
        }
        if let Some(message) = event.final_message() {
            last = Some(message.clone());
        }
    }
    let Some(message) = last else {
        eprintln!("the stream ended without a final message");
        return ExitCode::FAILURE;
    };
    if args.summary {
        println!("{}", serde_json::to_string(&message).unwrap_or_default());
    }
    match message.stop_reason {
        StopReason::Error | StopReason::Aborted => {
            eprintln!("error: {}", message.error_message.unwrap_or_default());
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}
