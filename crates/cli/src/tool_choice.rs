//! Which tools the agent gets: pi's defaults (`read`, `bash`, `edit`, `write`, or the
//! `defaultTools` setting), `--tools` as an allowlist or as `+name`/`-name` changes to the
//! defaults, `--no-tools` for none; every tool over the workspace (confined to the working
//! directory unless `--sandbox none`), bash under the chosen sandbox.

use std::path::PathBuf;

use oxpi_agent_core::AgentToolHandle;
use oxpi_tools::{RunningCommands, Sandbox, Workspace};

/// How `bash` runs: its sandbox, shell (`shellPath`) and command prefix
/// (`shellCommandPrefix`), and where its running commands are registered.
#[derive(Debug, Clone, Default)]
pub(crate) struct BashSetup {
    /// The sandbox.
    pub sandbox: Sandbox,
    /// The shell, when not the default.
    pub shell: Option<PathBuf>,
    /// Put before every command on its own line.
    pub command_prefix: Option<String>,
    /// The running command trees and temporary directories, killed and removed when the
    /// command ends on a signal.
    pub commands: RunningCommands,
}

/// pi's default tools.
pub(crate) const DEFAULT_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];

/// The built-in tools oxpi has.
pub(crate) const BUILTIN_TOOLS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// Why the tool selection was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ToolChoiceError {
    /// A name that is no built-in tool.
    #[error("unknown tool {0:?}: the tools are read, bash, edit, write, grep, find, ls")]
    Unknown(String),
    /// Plain names and `+`/`-` entries mixed.
    #[error("--tools mixes plain names with +name/-name entries: use one kind")]
    Mixed,
    /// A `+`/`-` entry with a pattern.
    #[error("--tools: +name and -name entries take exact tool names, not patterns: {0}")]
    Pattern(String),
    /// A tool could not be built.
    #[error("tool {name} could not be built: {reason}")]
    Build {
        /// The tool.
        name: String,
        /// Why.
        reason: String,
    },
}

/// Whether `name` matches one of `patterns`: exact tool names, or patterns where `*` matches
/// any characters (pi's `createToolNameMatcher`).
pub(crate) fn matches_any(patterns: &[String], name: &str) -> bool {
    patterns
        .iter()
        .any(|p| p == name || (p.contains('*') && crate::config::mcp_json::glob(p, name)))
}

/// pi's `--tools`, `--no-tools`, `--no-builtin-tools` and `--exclude-tools`, as given.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolFlags<'a> {
    /// `--tools`.
    pub tools: Option<&'a str>,
    /// `--no-tools`.
    pub no_tools: bool,
    /// `--no-builtin-tools`.
    pub no_builtin: bool,
    /// `--exclude-tools`, split at commas.
    pub exclude: Vec<String>,
}

fn split_list(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect()
}

impl<'a> ToolFlags<'a> {
    /// The flags of the command line.
    pub(crate) fn new(
        tools: Option<&'a str>,
        no_tools: bool,
        no_builtin: bool,
        exclude: Option<&str>,
    ) -> Self {
        Self {
            tools,
            no_tools,
            no_builtin,
            exclude: exclude.map(split_list).unwrap_or_default(),
        }
    }

    /// Whether the MCP tool `name` is offered: not with `--no-tools`, not when an
    /// `--exclude-tools` entry matches it, and, when a `--tools` allowlist has an entry starting
    /// with `mcp__`, only when one of its entries matches it (pi's rules).
    pub(crate) fn keeps_mcp_tool(&self, name: &str) -> bool {
        if self.no_tools || matches_any(&self.exclude, name) {
            return false;
        }
        match self.tools.map(split_list) {
            Some(list)
                if !list
                    .iter()
                    .any(|e| e.starts_with('+') || e.starts_with('-'))
                    && list.iter().any(|e| e.starts_with("mcp__")) =>
            {
                matches_any(&list, name)
            }
            _ => true,
        }
    }
}

/// The selected built-in tool names: `defaults` (pi's, or the `defaultTools` setting; none with
/// `--no-builtin-tools`) when no `--tools`; a `--tools` allowlist of names and `*` patterns
/// (`mcp__` entries are for MCP tools), or `+name`/`-name` changes to the defaults; then
/// `--exclude-tools` applied.
pub(crate) fn select_from(
    flags: &ToolFlags<'_>,
    defaults: &[String],
) -> Result<Vec<String>, ToolChoiceError> {
    if flags.no_tools {
        return Ok(Vec::new());
    }
    let defaults: &[String] = if flags.no_builtin { &[] } else { defaults };
    let mut out = select_list(flags.tools, defaults)?;
    out.retain(|name| !matches_any(&flags.exclude, name));
    Ok(out)
}

fn select_list(tools: Option<&str>, defaults: &[String]) -> Result<Vec<String>, ToolChoiceError> {
    let Some(list) = tools else {
        return Ok(defaults.to_vec());
    };
    let entries = split_list(list);
    let changes = entries
        .iter()
        .filter(|e| e.starts_with('+') || e.starts_with('-'))
        .count();
    let known = |name: &str| {
        BUILTIN_TOOLS
            .contains(&name)
            .then_some(())
            .ok_or_else(|| ToolChoiceError::Unknown(name.to_string()))
    };
    if changes == 0 {
        let mut out: Vec<String> = Vec::new();
        for entry in &entries {
            let found: Vec<&str> = if entry.contains('*') {
                BUILTIN_TOOLS
                    .iter()
                    .copied()
                    .filter(|t| crate::config::mcp_json::glob(entry, t))
                    .collect()
            } else if entry.starts_with("mcp__") {
                Vec::new()
            } else {
                known(entry)?;
                vec![entry.as_str()]
            };
            for name in found {
                if !out.iter().any(|n| n == name) {
                    out.push(name.to_string());
                }
            }
        }
        return Ok(out);
    }
    if changes != entries.len() {
        return Err(ToolChoiceError::Mixed);
    }
    let mut out: Vec<String> = defaults.to_vec();
    for entry in &entries {
        let (sign, name) = entry.split_at(1);
        if name.contains('*') {
            return Err(ToolChoiceError::Pattern(entry.clone()));
        }
        known(name)?;
        out.retain(|n| n != name);
        if sign == "+" {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// The tools named `names`, over `workspace`, bash as `bash` says (its running commands
/// registered in `bash.commands`); `read` lists a directory instead of refusing it when
/// `read_lists_directories` (the `small` prompt profile).
pub(crate) fn build(
    names: &[String],
    workspace: &Workspace,
    bash: &BashSetup,
    read_lists_directories: bool,
) -> Result<Vec<AgentToolHandle>, ToolChoiceError> {
    names
        .iter()
        .map(|name| {
            let ws = workspace.clone();
            let built = match name.as_str() {
                "read" if read_lists_directories => {
                    AgentToolHandle::new(oxpi_tools::ReadTool::new(ws).listing_directories())
                }
                "read" => oxpi_tools::read_tool(ws),
                "bash" => bash_tool(ws, bash),
                "edit" => oxpi_tools::edit_tool(ws),
                "write" => oxpi_tools::write_tool(ws),
                "grep" => oxpi_tools::grep_tool(ws),
                "find" => oxpi_tools::find_tool(ws),
                "ls" => oxpi_tools::ls_tool(ws),
                other => return Err(ToolChoiceError::Unknown(other.to_string())),
            };
            built.map_err(|e| ToolChoiceError::Build {
                name: name.clone(),
                reason: e.to_string(),
            })
        })
        .collect()
}

/// The names of `list` oxpi has as built-in tools; the others (pi's `codemode`,
/// `tool_search`, `powershell`, extension tools) are left out with a warning on stderr.
pub(crate) fn known_tools(list: &[String]) -> Vec<String> {
    list.iter()
        .filter(|name| {
            let known = BUILTIN_TOOLS.contains(&name.as_str());
            if !known {
                eprintln!(
                    "Warning: defaultTools names {name:?}, which oxpi does not have; left out"
                );
            }
            known
        })
        .cloned()
        .collect()
}

/// The `bash` tool over `ws` as `setup` says (also what RPC's `bash` command runs).
#[cfg(unix)]
pub(crate) fn configured_bash(ws: Workspace, setup: &BashSetup) -> oxpi_tools::BashTool {
    let mut tool = oxpi_tools::BashTool::new(ws)
        .with_sandbox(setup.sandbox.clone())
        .sandbox_advice(crate::config::run::SANDBOX_ADVICE)
        .tracked_by(setup.commands.clone());
    if let Some(shell) = &setup.shell {
        tool = tool.shell(shell);
    }
    if let Some(prefix) = &setup.command_prefix {
        tool = tool.command_prefix(prefix);
    }
    tool
}

#[cfg(unix)]
fn bash_tool(ws: Workspace, setup: &BashSetup) -> Result<AgentToolHandle, oxpi_tools::SchemaError> {
    AgentToolHandle::new(configured_bash(ws, setup))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: Option<&str>, none: bool) -> Result<Vec<String>, ToolChoiceError> {
        let flags = ToolFlags::new(list, none, false, None);
        select_from(&flags, &DEFAULT_TOOLS.map(String::from))
    }

    #[test]
    fn defaults_allowlists_and_changes() {
        assert_eq!(names(None, false).unwrap(), DEFAULT_TOOLS);
        assert_eq!(
            names(Some("read,read"), true).unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(names(Some("ls, read,ls"), false).unwrap(), ["ls", "read"]);
        assert_eq!(
            names(Some("+grep,-write"), false).unwrap(),
            ["read", "bash", "edit", "grep"]
        );
        assert_eq!(
            names(Some("read,-write"), false),
            Err(ToolChoiceError::Mixed)
        );
        assert_eq!(
            names(Some("codemode"), false),
            Err(ToolChoiceError::Unknown("codemode".into()))
        );
        assert_eq!(
            names(Some("+gr*"), false),
            Err(ToolChoiceError::Pattern("+gr*".into()))
        );
        // Patterns over the built-in tools; `mcp__` entries select no built-in tool.
        assert_eq!(
            names(Some("*d*,mcp__srv__*"), false).unwrap(),
            ["read", "edit", "find"]
        );
    }

    #[test]
    fn settings_defaults_are_the_base_of_changes() {
        let defaults = ["read".to_string(), "grep".to_string()];
        let select = |tools| select_from(&ToolFlags::new(tools, false, false, None), &defaults);
        assert_eq!(select(None).unwrap(), defaults);
        assert_eq!(select(Some("-grep,+ls")).unwrap(), ["read", "ls"]);
        assert_eq!(select(Some("bash")).unwrap(), ["bash"]);
    }

    #[test]
    fn no_builtin_tools_and_exclusions_as_pi() {
        let defaults = DEFAULT_TOOLS.map(String::from);
        let flags = ToolFlags::new(None, false, true, None);
        assert!(select_from(&flags, &defaults).unwrap().is_empty());
        assert!(flags.keeps_mcp_tool("mcp__a__x"), "-nbt keeps MCP tools");
        let flags = ToolFlags::new(Some("+ls"), false, true, None);
        assert_eq!(select_from(&flags, &defaults).unwrap(), ["ls"]);
        let flags = ToolFlags::new(None, false, false, Some("bash, e*,mcp__a__*"));
        assert_eq!(select_from(&flags, &defaults).unwrap(), ["read", "write"]);
        assert!(!flags.keeps_mcp_tool("mcp__a__x") && flags.keeps_mcp_tool("mcp__b__x"));
        let flags = ToolFlags::new(Some("read,mcp__a__*"), false, false, None);
        assert!(flags.keeps_mcp_tool("mcp__a__x") && !flags.keeps_mcp_tool("mcp__b__x"));
        let flags = ToolFlags::new(Some("read"), false, false, None);
        assert!(
            flags.keeps_mcp_tool("mcp__b__x"),
            "no mcp__ entry: MCP tools stay"
        );
        assert!(!ToolFlags::new(None, true, false, None).keeps_mcp_tool("mcp__b__x"));
    }

    #[test]
    fn every_builtin_tool_builds_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let all: Vec<String> = BUILTIN_TOOLS.iter().map(|s| s.to_string()).collect();
        let tools = build(&all, &ws, &BashSetup::default(), false).unwrap();
        let built: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(built, BUILTIN_TOOLS);
    }
}
