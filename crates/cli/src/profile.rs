//! Prompt profiles: what the command tells a class of models. `default` is pi's behaviour;
//! `small` is for small local models (the embedded Qwen2.5-Coder-1.5B, or one behind
//! llama.cpp, Ollama or vLLM): a short system prompt such a model follows, with up to
//! [`SMALL_FILE_LIST`] of the project's files; shorter tool descriptions with examples
//! ([`SMALL_TOOL_DESCRIPTIONS`]); `read` of a directory answered with its listing; tool calls
//! read from its text (`compat.toolCallsInText`); the first reply to each message forced to be
//! a tool call (asked as a JSON schema, `compat.toolChoiceAsJsonSchema`, where the server
//! constrains decoding); a hint after each tool result (`compat.toolResultHint`); and greedy
//! sampling (temperature 0). The embedded model gets `small` unless `--prompt-profile` says
//! otherwise.

use std::path::Path;

use clap::ValueEnum;
use oxpi_agent_core::AgentToolHandle;
use oxpi_ai::{Model, StreamOptions, ToolChoice};

/// A class of models and what the command sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PromptProfile {
    /// pi's system prompt and sampling.
    Default,
    /// Small local models: a short prompt, text tool calls, temperature 0.
    Small,
}

/// The system prompt's first section under `small`. Measured on the embedded model (greedy) on
/// `tasks/01-cargo-version` (`fixtures/local-model/replies.jsonl`): a preamble that only said
/// "read files or run commands instead of guessing" got a guessed version (4 of 4 requests);
/// this one, which says the model cannot see a file it has not read, got a `read` call.
pub(crate) const SMALL_PREAMBLE: &str = "You are a coding assistant working in the user's \
project directory. You cannot see any file until you read it with a tool, so never answer from \
memory: first reply with a tool call only (read a file, or run a command with bash). Make one \
tool call per reply. When the tool results answer the question or the task is done, reply with \
the answer only.";

/// The tool descriptions under `small`, replacing pi's (the schemas stay). Measured on the
/// embedded model's first (forced) call over `tasks/`: with pi's texts it replaced `notes.md`
/// with a `write` of the one line it was asked to add, counted a CSV's lines itself (12 for 13)
/// and ran `cat /etc/netplan/…` for a question about `net.py`; with these it appended with
/// `echo >>`, ran `wc -l` and chose `read` more often for "what does FILE say" questions.
pub(crate) const SMALL_TOOL_DESCRIPTIONS: [(&str, &str); 3] = [
    (
        "read",
        "Read a file of the project: use it to answer a question about what a file contains \
         or defines.",
    ),
    (
        "bash",
        "Run a shell command in the project directory and return its output. Use it to count \
         lines (wc -l FILE), to add a line at the end of a file (echo 'LINE' >> FILE), to \
         replace a word everywhere in a file (sed -i 's/OLD/NEW/g' FILE), to search files \
         (grep), and to run scripts and tests.",
    ),
    (
        "write",
        "Create a new file with the given content. It replaces the whole content of an \
         existing file: to change part of a file use edit.",
    ),
];

/// How many of the project's files the system prompt lists under `small`.
pub(crate) const SMALL_FILE_LIST: usize = 50;

/// The profile of a run: the flag's, else `small` for the embedded model and `default` for
/// every other.
pub(crate) fn choose(flag: Option<PromptProfile>, embedded: bool) -> PromptProfile {
    flag.unwrap_or(if embedded {
        PromptProfile::Small
    } else {
        PromptProfile::Default
    })
}

impl PromptProfile {
    /// The system prompt's first section, when the profile replaces pi's.
    pub(crate) fn preamble(self) -> Option<&'static str> {
        match self {
            Self::Default => None,
            Self::Small => Some(SMALL_PREAMBLE),
        }
    }

    /// `model` as the profile sends it: under `small`, tool calls are also read from its text.
    pub(crate) fn model(self, mut model: Model) -> Model {
        if self == Self::Small {
            let mut compat = match model.compat.take() {
                Some(serde_json::Value::Object(map)) => map,
                _ => serde_json::Map::new(),
            };
            compat.insert("toolCallsInText".into(), true.into());
            compat
                .entry("toolChoiceAsJsonSchema")
                .or_insert(true.into());
            compat
                .entry("toolResultHint")
                .or_insert(oxpi_local::TOOL_RESULT_HINT.into());
            model.compat = Some(serde_json::Value::Object(compat));
        }
        model
    }

    /// The tool choice of the first request after each user message: under `small`, a tool
    /// call is required (and, through `toolChoiceAsJsonSchema`, well-formed by construction on
    /// servers that constrain decoding to a schema), as its preamble asks.
    pub(crate) fn tool_choice_after_user(self) -> Option<ToolChoice> {
        match self {
            Self::Default => None,
            Self::Small => Some(ToolChoice::Required),
        }
    }

    /// `tools` as the profile declares them: under `small`, the built-in tools named in
    /// [`SMALL_TOOL_DESCRIPTIONS`] get those descriptions; other tools (MCP, a user's) keep theirs.
    pub(crate) fn tools(self, tools: Vec<AgentToolHandle>) -> Vec<AgentToolHandle> {
        if self == Self::Default {
            return tools;
        }
        tools
            .into_iter()
            .map(|tool| {
                match SMALL_TOOL_DESCRIPTIONS
                    .iter()
                    .find(|(name, _)| *name == tool.name())
                {
                    Some((_, description)) => tool.with_description(*description),
                    None => tool,
                }
            })
            .collect()
    }

    /// The system prompt's list of the project's files, under `small` (see `project_files`).
    pub(crate) fn file_list(self, cwd: &Path) -> Option<String> {
        match self {
            Self::Default => None,
            Self::Small => crate::project_files::listing(cwd, SMALL_FILE_LIST),
        }
    }

    /// The stream options of each request: under `small`, greedy sampling.
    pub(crate) fn stream_options(self) -> StreamOptions {
        match self {
            Self::Default => StreamOptions::default(),
            Self::Small => StreamOptions::default().with_temperature(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_model_gets_small_unless_the_flag_says_otherwise() {
        assert_eq!(choose(None, true), PromptProfile::Small);
        assert_eq!(choose(None, false), PromptProfile::Default);
        assert_eq!(
            choose(Some(PromptProfile::Default), true),
            PromptProfile::Default
        );
        assert_eq!(
            choose(Some(PromptProfile::Small), false),
            PromptProfile::Small
        );
    }

    #[test]
    fn small_reads_text_tool_calls_keeps_other_compat_and_samples_greedily() {
        let mut model = Model::openai_compatible("http://127.0.0.1:9/v1", "qwen");
        model.compat = Some(serde_json::json!({"supportsUsageInStreaming": true}));
        let small = PromptProfile::Small.model(model.clone());
        assert_eq!(
            small.compat,
            Some(serde_json::json!({
                "supportsUsageInStreaming": true,
                "toolCallsInText": true,
                "toolChoiceAsJsonSchema": true,
                "toolResultHint": oxpi_local::TOOL_RESULT_HINT,
            }))
        );
        let mut declined = model.clone();
        declined.compat = Some(serde_json::json!({"toolChoiceAsJsonSchema": false}));
        assert_eq!(
            PromptProfile::Small.model(declined).compat,
            Some(serde_json::json!({
                "toolCallsInText": true,
                "toolChoiceAsJsonSchema": false,
                "toolResultHint": oxpi_local::TOOL_RESULT_HINT,
            }))
        );
        assert_eq!(
            PromptProfile::Small.tool_choice_after_user(),
            Some(ToolChoice::Required)
        );
        assert_eq!(PromptProfile::Default.tool_choice_after_user(), None);
        assert_eq!(PromptProfile::Default.model(model.clone()), model);
        assert_eq!(PromptProfile::Small.stream_options().temperature, Some(0.0));
        assert_eq!(PromptProfile::Default.stream_options().temperature, None);
        assert_eq!(PromptProfile::Small.preamble(), Some(SMALL_PREAMBLE));
        assert_eq!(PromptProfile::Default.preamble(), None);
    }

    #[test]
    fn small_declares_its_tool_descriptions_and_lists_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "# Notes\n").unwrap();
        let ws = oxpi_tools::Workspace::new(dir.path()).unwrap();
        let names: Vec<String> = ["read", "bash", "edit", "write"].map(String::from).into();
        let built =
            crate::tool_choice::build(&names, &ws, &crate::tool_choice::BashSetup::default(), true)
                .unwrap();
        let pi_edit = built[2].definition().description.clone();
        let small = PromptProfile::Small.tools(built.clone());
        let described: Vec<(&str, &str)> = small
            .iter()
            .map(|t| (t.name(), t.definition().description.as_str()))
            .collect();
        assert_eq!(
            described,
            [
                ("read", SMALL_TOOL_DESCRIPTIONS[0].1),
                ("bash", SMALL_TOOL_DESCRIPTIONS[1].1),
                ("edit", pi_edit.as_str()),
                ("write", SMALL_TOOL_DESCRIPTIONS[2].1),
            ]
        );
        // The schemas stay the tools' own.
        for (small, pi) in small.iter().zip(&built) {
            assert_eq!(small.definition().parameters, pi.definition().parameters);
        }
        assert_eq!(PromptProfile::Default.tools(built.clone()).len(), 4);
        assert_eq!(
            PromptProfile::Default.tools(built.clone())[0].definition(),
            built[0].definition()
        );
        assert_eq!(
            PromptProfile::Small.file_list(dir.path()).as_deref(),
            Some("notes.md")
        );
        assert_eq!(PromptProfile::Default.file_list(dir.path()), None);
    }
}
