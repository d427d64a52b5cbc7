//! The command line, as pi's (`docs/cli.md`): the options oxpi implements, parsed with clap.
//!
//! pi's multi-letter short options (`-nt`, `-nc`, `-nbt`, `-xt`, `-na`, …) are not something
//! clap parses; [`normalize`] turns them (and `-a`) into their long forms before parsing.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// Which interface a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Mode {
    /// Final text on stdout (pi's `--mode text`; without a terminal it is print mode).
    Text,
    /// One JSON record per event on stdout.
    Json,
    /// JSON commands on stdin, responses and events on stdout.
    Rpc,
}

/// oxpi's options, named and behaving as pi's.
#[derive(Debug, Clone, Parser, PartialEq)]
#[command(
    name = "oxpi",
    version,
    disable_version_flag = true,
    about = "oxpi: a coding agent with pi's print, JSON and RPC modes",
    after_help = "With no --provider, --model or --base-url, the embedded local model runs \
                  (downloaded once, about 1.1 GB)."
)]
pub(crate) struct Args {
    /// Run the prompts, print the final assistant text, exit.
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// Output interface.
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Provider of the model (`openai`, `anthropic`, …).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id, `provider/id`, with an optional `:<thinking>` suffix.
    #[arg(long)]
    pub model: Option<String>,
    /// Comma-separated model patterns for Ctrl+P and RPC `cycle_model` (`provider/id`,
    /// fuzzy, globs such as `anthropic/*` or `*sonnet*`, `:<thinking>`); also the start model.
    #[arg(long = "models")]
    pub models: Option<String>,
    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
    #[arg(long)]
    pub thinking: Option<String>,
    /// API key for this run (not stored).
    #[arg(long = "api-key")]
    pub api_key: Option<String>,
    /// Base URL of any OpenAI-compatible server (e.g. http://127.0.0.1:8080/v1).
    #[arg(long = "base-url")]
    pub base_url: Option<String>,
    /// Comma-separated tool allowlist, or only `+name`/`-name` changes to the defaults.
    #[arg(short = 't', long = "tools", allow_hyphen_values = true)]
    pub tools: Option<String>,
    /// No tools at all, MCP tools included (also `-nt`).
    #[arg(long = "no-tools")]
    pub no_tools: bool,
    /// No built-in tools by default; MCP tools stay (also `-nbt`).
    #[arg(long = "no-builtin-tools")]
    pub no_builtin_tools: bool,
    /// Comma-separated tool names or `*` patterns to leave out, MCP tools included (also
    /// `-xt`).
    #[arg(long = "exclude-tools", allow_hyphen_values = true)]
    pub exclude_tools: Option<String>,
    /// Do not read AGENTS.md / CLAUDE.md (also `-nc`).
    #[arg(long = "no-context-files")]
    pub no_context_files: bool,
    /// Replace the default system prompt (text, or the path of a file).
    #[arg(long = "system-prompt")]
    pub system_prompt: Option<String>,
    /// Append text (or a file's contents) to the system prompt; repeatable.
    #[arg(long = "append-system-prompt")]
    pub append_system_prompt: Vec<String>,
    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,
    /// Open a session by file path or (partial) id.
    #[arg(long)]
    pub session: Option<String>,
    /// Fork a session (path or partial id) into a new session of this directory.
    #[arg(long)]
    pub fork: Option<String>,
    /// Where sessions are stored and looked up.
    #[arg(long = "session-dir")]
    pub session_dir: Option<PathBuf>,
    /// Keep the session in memory only.
    #[arg(long = "no-session")]
    pub no_session: bool,
    /// Session display name.
    #[arg(short = 'n', long = "name")]
    pub name: Option<String>,
    /// What the command tells the model: `small` (a short system prompt, tool calls read from
    /// text, temperature 0; the default on the embedded model) or `default` (pi's); else the
    /// setting `oxpi.promptProfile`.
    #[arg(long = "prompt-profile", value_enum)]
    pub prompt_profile: Option<crate::profile::PromptProfile>,
    /// How the tools are confined: `workspace` (the working directory; bash refused where the
    /// kernel cannot enforce it), `best-effort`, or `none` (pi's tools: any path). Default: the
    /// `oxpi.sandbox` setting, else `workspace`.
    #[arg(long, value_enum)]
    pub sandbox: Option<crate::config::settings::SandboxMode>,
    /// Trust the project for this run (its .pi settings, skills, templates, SYSTEM.md load;
    /// also `-a`).
    #[arg(long, conflicts_with = "no_approve")]
    pub approve: bool,
    /// Do not trust the project for this run (also `-na`).
    #[arg(long = "no-approve")]
    pub no_approve: bool,
    /// Accepted for pi's sake: oxpi has no extensions (also `-ne`).
    #[arg(long = "no-extensions")]
    pub no_extensions: bool,
    /// Accepted for pi's sake: oxpi makes no network calls at start (no version check, no
    /// telemetry); only a model's requests, and the embedded model's first download, go out.
    #[arg(long)]
    pub offline: bool,
    /// Show the interactive mode's whole startup header whatever `quietStartup` says (pi's).
    #[arg(long)]
    pub verbose: bool,
    /// Print the version.
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version)]
    pub version: Option<bool>,
    /// Load a prompt-template file or directory (repeatable).
    #[arg(long = "prompt-template")]
    pub prompt_template: Vec<PathBuf>,
    /// No discovered or configured prompt templates (also `-np`); `--prompt-template` still
    /// loads.
    #[arg(long = "no-prompt-templates")]
    pub no_prompt_templates: bool,
    /// Load a skill file or directory (repeatable).
    #[arg(long = "skill")]
    pub skill: Vec<PathBuf>,
    /// No discovered or configured skills (also `-ns`); `--skill` still loads.
    #[arg(long = "no-skills")]
    pub no_skills: bool,
    /// A directory the reading tools may also read (repeatable; writing stays confined).
    #[arg(long = "add-dir")]
    pub add_dir: Vec<PathBuf>,
    /// List the models that have a key (optionally fuzzy-filtered), then exit.
    #[arg(long = "list-models", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,
    /// Export a session file to HTML and exit; the first message names the output file
    /// (default `oxpi-session-<file name>.html` in the working directory).
    #[arg(long, value_name = "SESSION_FILE")]
    pub export: Option<PathBuf>,
    /// No MCP servers (`mcp.json`) for this run.
    #[arg(long = "no-mcp")]
    pub no_mcp: bool,
    /// Prompts, run one after another.
    #[arg(trailing_var_arg = true)]
    pub messages: Vec<String>,
}

/// Why the command line was refused (beyond what clap reports).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ArgsError {
    /// Two options that exclude each other.
    #[error("--fork cannot be combined with {0}")]
    ForkWith(&'static str),
    /// `--session` and `--continue` together.
    #[error("--session cannot be combined with --continue")]
    SessionWithContinue,
    /// `--no-session` with an option naming a session.
    #[error("--no-session cannot be combined with {0}")]
    NoSessionWith(&'static str),
    /// RPC mode takes its prompts as commands.
    #[error("--mode rpc takes prompts as `prompt` commands on stdin, not as arguments")]
    RpcWithMessages,
}

/// pi's multi-letter short options in their long forms (`-nt` → `--no-tools`, `-nc` →
/// `--no-context-files`); everything after `--` is left alone.
pub(crate) fn normalize(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = false;
    for arg in args {
        if rest {
            out.push(arg);
            continue;
        }
        let mapped = match arg.as_str() {
            "--" => {
                rest = true;
                "--"
            }
            "-nt" => "--no-tools",
            "-nc" => "--no-context-files",
            "-np" => "--no-prompt-templates",
            "-ns" => "--no-skills",
            "-nbt" => "--no-builtin-tools",
            "-xt" => "--exclude-tools",
            "-ne" => "--no-extensions",
            "-a" => "--approve",
            "-na" => "--no-approve",
            other => other,
        };
        out.push(mapped.to_string());
    }
    out
}

impl Args {
    /// Parses `argv` (program name first); clap's own errors (and `--help`) come back as
    /// [`clap::Error`].
    pub(crate) fn parse_from_argv(
        argv: impl IntoIterator<Item = String>,
    ) -> Result<Self, clap::Error> {
        Self::try_parse_from(normalize(argv))
    }

    /// The combinations pi refuses.
    pub(crate) fn check(&self) -> Result<(), ArgsError> {
        if self.fork.is_some() {
            if self.session.is_some() {
                return Err(ArgsError::ForkWith("--session"));
            }
            if self.continue_session {
                return Err(ArgsError::ForkWith("--continue"));
            }
            if self.no_session {
                return Err(ArgsError::ForkWith("--no-session"));
            }
        }
        if self.session.is_some() && self.continue_session {
            return Err(ArgsError::SessionWithContinue);
        }
        if self.no_session {
            if self.session.is_some() {
                return Err(ArgsError::NoSessionWith("--session"));
            }
            if self.continue_session {
                return Err(ArgsError::NoSessionWith("--continue"));
            }
        }
        if self.mode == Some(Mode::Rpc) && !self.messages.is_empty() {
            return Err(ArgsError::RpcWithMessages);
        }
        Ok(())
    }

    /// The interface: `--mode` when given, else text (print).
    pub(crate) fn mode(&self) -> Mode {
        self.mode.unwrap_or(Mode::Text)
    }

    /// `--models` split at commas, trimmed, empty entries dropped (pi's parsing).
    pub(crate) fn model_patterns(&self) -> Option<Vec<String>> {
        self.models.as_ref().map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &[&str]) -> Result<Args, clap::Error> {
        Args::parse_from_argv(
            std::iter::once("oxpi")
                .chain(list.iter().copied())
                .map(String::from),
        )
    }

    #[test]
    fn pi_s_options_parse() {
        let args = parse(&[
            "-p",
            "--model",
            "openai/gpt-4o-mini:high",
            "--api-key",
            "k",
            "-t",
            "read,ls",
            "-c",
            "hello",
            "world",
        ])
        .unwrap();
        assert!(args.print && args.continue_session);
        assert_eq!(args.model.as_deref(), Some("openai/gpt-4o-mini:high"));
        assert_eq!(args.api_key.as_deref(), Some("k"));
        assert_eq!(args.tools.as_deref(), Some("read,ls"));
        assert_eq!(args.messages, ["hello", "world"]);
        assert_eq!(args.mode(), Mode::Text);
    }

    #[test]
    fn multi_letter_short_options_are_pi_s() {
        let args = parse(&["-nt", "-nc", "--mode", "json", "--", "-nt"]).unwrap();
        assert!(args.no_tools && args.no_context_files);
        assert_eq!(args.mode(), Mode::Json);
        assert_eq!(args.messages, ["-nt"], "after -- a prompt may start with -");
    }

    #[test]
    fn pi_s_other_short_forms_and_models() {
        let args = parse(&[
            "-nbt",
            "-xt",
            "bash,mcp__*",
            "-na",
            "-ne",
            "--models",
            "a/*, b:high,,",
        ])
        .unwrap();
        assert!(args.no_builtin_tools && args.no_approve && args.no_extensions);
        assert_eq!(args.exclude_tools.as_deref(), Some("bash,mcp__*"));
        assert_eq!(args.model_patterns().unwrap(), ["a/*", "b:high"]);
        assert!(parse(&["-a"]).unwrap().approve);
        assert!(parse(&["--offline", "--verbose"]).is_ok());
        let version = parse(&["-v"]).unwrap_err();
        assert_eq!(version.kind(), clap::error::ErrorKind::DisplayVersion);
    }

    #[test]
    fn tool_changes_may_start_with_a_minus() {
        let args = parse(&["--tools", "-write,+ls"]).unwrap();
        assert_eq!(args.tools.as_deref(), Some("-write,+ls"));
    }

    #[test]
    fn conflicting_session_options_are_refused() {
        let check = |list: &[&str]| parse(list).unwrap().check();
        assert_eq!(
            check(&["--fork", "a.jsonl", "-c"]),
            Err(ArgsError::ForkWith("--continue"))
        );
        assert_eq!(
            check(&["--fork", "a", "--no-session"]),
            Err(ArgsError::ForkWith("--no-session"))
        );
        assert_eq!(
            check(&["--session", "a", "-c"]),
            Err(ArgsError::SessionWithContinue)
        );
        assert_eq!(
            check(&["--mode", "rpc", "hi"]),
            Err(ArgsError::RpcWithMessages)
        );
        assert_eq!(check(&["--session", "a"]), Ok(()));
        assert!(parse(&["--mode", "tui"]).is_err());
        assert!(parse(&["--model"]).is_err());
    }
}
