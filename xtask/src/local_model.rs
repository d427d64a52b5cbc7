//! `cargo xtask local-model`: install the embedded local model ahead of time.

use std::time::{Duration, Instant};

use oxpi_local::{Engine, LocalModelConfig, ENGINE_REQUIREMENT};

use crate::args;

const USAGE: &str = "\
cargo xtask local-model [--check]

Installs the embedded local model ahead of time: a Python venv with the llama.cpp
engine (xllamacpp) and the Qwen2.5-Coder-1.5B-Instruct weights (about 1.1 GB on first
use), in OXPI_HOME (default ~/.cache/oxpi). Does nothing when already installed.
OXPI_LOCAL_MODEL and OXPI_LLAMA_SERVER select your own model file or llama-server binary.

Options:
  --check     Also start the server, check GET /health and ask for one short completion
  -h, --help  Show this help";

/// Options of `local-model`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    help: bool,
    check: bool,
}

impl Options {
    /// Parses the arguments after `local-model`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self::default();
        for arg in argv {
            match args::split_flag(&arg).0 {
                "-h" | "--help" => options.help = true,
                "--check" => options.check = true,
                other => {
                    return Err(format!(
                        "local-model: unexpected argument `{other}`\n\n{USAGE}"
                    ))
                }
            }
        }
        Ok(options)
    }
}

/// Runs `local-model`; `Ok(true)` when everything worked.
pub(crate) async fn run(options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    let config = LocalModelConfig::from_env();
    let started = Instant::now();
    let installed = oxpi_local::ensure_installed(&config)
        .await
        .map_err(|e| e.to_string())?;
    println!("cache:  {}", config.home.display());
    match &installed.engine {
        Engine::Xllamacpp { python } => {
            println!("engine: {ENGINE_REQUIREMENT} run by {}", python.display())
        }
        Engine::LlamaServer { path } => println!("engine: {}", path.display()),
    }
    println!(
        "model:  {} ({})",
        installed.model_path.display(),
        installed.model_id
    );
    println!("install check took {:.1}s", started.elapsed().as_secs_f64());
    if options.check {
        check(&config, &installed).await?;
    }
    Ok(true)
}

/// Starts the server, checks `/health` and one chat completion, and stops it.
async fn check(config: &LocalModelConfig, installed: &oxpi_local::Installed) -> Result<(), String> {
    let started = Instant::now();
    let server = oxpi_local::start_installed(config, installed)
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "server ready in {:.1}s at {}",
        started.elapsed().as_secs_f64(),
        server.base_url()
    );
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(120))
        .build()
        .map_err(|e| e.to_string())?;
    let health = client
        .get(format!("{}/health", server.base_url()))
        .send()
        .await
        .map_err(|e| format!("GET /health: {e}"))?;
    println!("GET /health -> {}", health.status());
    let model = server.model();
    let started = Instant::now();
    let reply: serde_json::Value = client
        .post(format!("{}/chat/completions", model.base_url))
        .json(&serde_json::json!({
            "model": model.id,
            "messages": [{"role": "user", "content": "Reply with the single word: pong"}],
            "max_tokens": 16,
            "temperature": 0
        }))
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| format!("POST /v1/chat/completions: {e}"))?
        .json()
        .await
        .map_err(|e| format!("reading the completion: {e}"))?;
    let text = reply["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default();
    println!(
        "completion in {:.1}s: {text:?}",
        started.elapsed().as_secs_f64()
    );
    let status = server.shutdown().await.map_err(|e| e.to_string())?;
    println!("server stopped ({status})");
    if !health.status().is_success() || text.trim().is_empty() {
        return Err(format!(
            "check failed: health {}, reply {reply}",
            health.status()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flags() {
        assert_eq!(Options::parse(vec![]), Ok(Options::default()));
        assert_eq!(
            Options::parse(vec!["--check".into()]),
            Ok(Options {
                help: false,
                check: true
            })
        );
        assert!(Options::parse(vec!["--nope".into()]).is_err());
    }
}
