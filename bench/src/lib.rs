//! The programs measured by `cargo xtask bench`, and what they share.
//!
//! Each measurement is its own process, so peak RSS and CPU time belong to one subject and one
//! run. A program prints one JSON line ([`Report`]) on stdout; the xtask collects them.
//!
//! - `oxpi-bench serve`: the stream server ([`server`]), serving [`payload`] streams.
//! - `oxpi-bench stream`: oxpi streams one reply from the server, consuming every event.
//! - `oxpi-bench agent-loop`: oxpi's agent on the faux provider, many turns with a no-op tool.
//! - `oxpi-bench read`: oxpi's read tool on a large file.
//! - `oxpi-bench rpc -- PROGRAM ARGS…`: sequential `get_state` round trips over a child's
//!   `--mode rpc` pipes ([`rpc`]); `oxpi-bench rpc-echo` is the echo process that is their floor.
//! - `oxpi-bench stream-floor`: the same request, the body's bytes counted and not parsed: the
//!   transport floor of the stream rows.
//! - `oxpi-bench agents`: 1,000 agents on one faux provider, one answer each.
//! - `oxpi-bench run [--expect-text SIZE] -- PROGRAM ARGS…`: one whole process, start to exit
//!   ([`process`]): the start-up and `-p` rows.
//! - `piai-rs-bench stream`: the crates.io port `pi-ai` 1.0.0 on the same streams.
//! - `pi-replay`: every recorded provider stream through oxpi and pi-ai 0.73.1 / 1.6.0, compared
//!   ([`replay`], [`explain`], [`concerns`]; run by `cargo xtask pi-replay`, not a measurement).

pub mod concerns;
pub mod explain;
pub mod measure;
pub mod payload;
pub mod process;
pub mod replay;
pub mod rpc;
pub mod server;
pub mod tree;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::measure::Figures;
use crate::payload::Kind;

/// One program's result line.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `ok`, `skipped` (the subject cannot do this, e.g. a provider not implemented) or
    /// `failed` (wrong result or error).
    pub status: &'static str,
    /// Why it was skipped or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The figures, when measured.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub figures: Option<Figures>,
    /// Program-specific figures.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl Report {
    /// A measured, correct run.
    pub fn ok(figures: Figures) -> Self {
        Self {
            status: "ok",
            note: None,
            figures: Some(figures),
            extra: Map::new(),
        }
    }

    /// A run the subject cannot do.
    pub fn skipped(note: impl Into<String>) -> Self {
        Self {
            status: "skipped",
            note: Some(note.into()),
            figures: None,
            extra: Map::new(),
        }
    }

    /// A failed run.
    pub fn failed(note: impl Into<String>) -> Self {
        Self {
            status: "failed",
            note: Some(note.into()),
            figures: None,
            extra: Map::new(),
        }
    }

    /// Adds a program-specific figure.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    /// Prints the line and returns the exit code (0 unless failed).
    pub fn print(&self) -> std::process::ExitCode {
        match serde_json::to_string(self) {
            Ok(line) => println!("{line}"),
            Err(e) => println!("{{\"status\":\"failed\",\"note\":\"could not encode: {e}\"}}"),
        }
        if self.status == "failed" {
            std::process::ExitCode::FAILURE
        } else {
            std::process::ExitCode::SUCCESS
        }
    }
}

/// Checks a finished stream's content: the reply text for the text stream, the tool call's
/// name and parsed arguments for the tool streams.
pub fn verify(
    kind: Kind,
    size: usize,
    text: &str,
    tool: Option<(&str, &Value)>,
) -> Result<(), String> {
    if kind.is_tool() {
        let Some((name, arguments)) = tool else {
            return Err("no tool call in the final message".into());
        };
        if name != payload::TOOL_NAME {
            return Err(format!("tool name {name:?}"));
        }
        let expected: Value = serde_json::from_str(&payload::tool_arguments(size))
            .map_err(|e| format!("bad expected arguments: {e}"))?;
        if *arguments != expected {
            let got = arguments.to_string();
            return Err(format!(
                "arguments differ from what was sent ({} bytes received as JSON text, starting {:?})",
                got.len(),
                got.chars().take(80).collect::<String>()
            ));
        }
        Ok(())
    } else if text == payload::text_content(size) {
        Ok(())
    } else {
        Err(format!(
            "text differs ({} bytes received, {size} sent)",
            text.len()
        ))
    }
}

/// Simple `--flag value` parsing for the bench programs.
#[derive(Debug)]
pub struct Args {
    rest: Vec<String>,
}

impl Args {
    /// The arguments after the subcommand.
    pub fn new(rest: Vec<String>) -> Self {
        Self { rest }
    }

    /// The value after `flag`, if present.
    pub fn get(&self, flag: &str) -> Option<&str> {
        let i = self.rest.iter().position(|a| a == flag)?;
        self.rest.get(i + 1).map(String::as_str)
    }

    /// The value after `flag`, parsed, or `default`.
    pub fn num(&self, flag: &str, default: usize) -> Result<usize, String> {
        match self.get(flag) {
            None => Ok(default),
            Some(text) => text
                .parse()
                .map_err(|_| format!("{flag} wants a whole number, got {text:?}")),
        }
    }

    /// The value after `flag`, required.
    pub fn need(&self, flag: &str) -> Result<&str, String> {
        self.get(flag).ok_or_else(|| format!("{flag} is required"))
    }
}
