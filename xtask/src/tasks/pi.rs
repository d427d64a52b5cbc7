//! pi's side of `cargo xtask tasks --pi`: pi-coding-agent 1.6.0 with Node 22 (the npm package
//! `node@22`, since pi-coding-agent needs Node 22), installed on first use into
//! `OXPI_HOME/pi/coding-agent-1.6.0`, and a private `PI_CODING_AGENT_DIR` whose `models.json`
//! names the embedded model's llama.cpp server as a custom provider `local`.

use std::path::{Path, PathBuf};

use oxpi_ai::Model;

use super::Agent;

/// The pi-coding-agent release compared against.
const PI_VERSION: &str = "1.6.0";

/// Installs pi-coding-agent and Node 22 when missing; returns the install directory.
async fn install(home: &Path) -> Result<PathBuf, String> {
    let dir = home.join("pi").join(format!("coding-agent-{PI_VERSION}"));
    let marker = dir.join(".oxpi-installed");
    if marker.is_file() {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    eprintln!(
        "installing pi-coding-agent {PI_VERSION} and node@22 into {} (first use)",
        dir.display()
    );
    let output = tokio::process::Command::new("npm")
        .args([
            "install",
            "--save-exact",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&dir)
        .args([
            format!("@earendil-works/pi-coding-agent@{PI_VERSION}"),
            "node@22".to_string(),
        ])
        .output()
        .await
        .map_err(|e| format!("cannot run npm (pi needs Node and npm): {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "npm install of pi-coding-agent failed: {}",
            stderr.trim()
        ));
    }
    std::fs::write(&marker, b"").map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    Ok(dir)
}

/// The `models.json` that makes `model` (served at its `base_url`) pi's provider `local`.
pub(crate) fn models_json(model: &Model) -> serde_json::Value {
    serde_json::json!({
        "providers": {
            "local": {
                "baseUrl": model.base_url,
                "api": "openai-completions",
                "apiKey": "none",
                "models": [{
                    "id": model.id,
                    "name": model.name,
                    "contextWindow": model.context_window,
                    "maxTokens": model.max_tokens,
                }]
            }
        }
    })
}

/// pi as a task agent for `model`, and the temporary agent directory it uses (kept alive by
/// the caller for the run).
pub(crate) async fn agent(home: &Path, model: &Model) -> Result<(Agent, TempDir), String> {
    let install = install(home).await?;
    let bin = install.join("node_modules").join(".bin");
    let agent_dir = TempDir::new("oxpi-tasks-pi")?;
    let models = serde_json::to_string_pretty(&models_json(model)).unwrap_or_default();
    std::fs::write(agent_dir.0.join("models.json"), models)
        .map_err(|e| format!("cannot write models.json: {e}"))?;
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let agent = Agent {
        label: "pi",
        program: bin.join("pi"),
        args: vec![
            "-p".into(),
            "--no-session".into(),
            "--offline".into(),
            "--provider".into(),
            "local".into(),
            "--model".into(),
            model.id.clone(),
        ],
        env: vec![
            ("PATH".into(), path),
            (
                "PI_CODING_AGENT_DIR".into(),
                agent_dir.0.display().to_string(),
            ),
            ("PI_OFFLINE".into(), "1".into()),
            ("PI_SKIP_VERSION_CHECK".into(), "1".into()),
            ("PI_TELEMETRY".into(), "0".into()),
        ],
        json: false,
    };
    Ok((agent, agent_dir))
}

/// A directory removed when dropped.
pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    fn new(prefix: &str) -> Result<Self, String> {
        let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Self(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
