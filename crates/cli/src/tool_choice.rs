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
    /// A tool could not be built.
    #[error("tool {name} could not be built: {reason}")]
    Build {
        /// The tool.
        name: String,
        /// Why.
        reason: String,
    },
}

/// The selected tool names, in the order given; `defaults` (pi's, or the `defaultTools`
/// setting) when no `--tools`, or the base `+name`/`-name` entries change.
pub(crate) fn select_from(
    tools: Option<&str>,
    no_tools: bool,
    defaults: &[String],
) -> Result<Vec<String>, ToolChoiceError> {
    if no_tools {
        return Ok(Vec::new());
    }
    let Some(list) = tools else {
        return Ok(defaults.to_vec());
    };
    let entries: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
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
        for name in entries {
            known(name)?;
            if !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
        return Ok(out);
    }
    if changes != entries.len() {
        return Err(ToolChoiceError::Mixed);
    }
    let mut out: Vec<String> = defaults.to_vec();
    for entry in entries {
        let (sign, name) = entry.split_at(1);
        known(name)?;
        out.retain(|n| n != name);
        if sign == "+" {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// The tools named `names`, over `workspace`, bash as `bash` says (its running commands
/// registered in `bash.commands`).
pub(crate) fn build(
    names: &[String],
    workspace: &Workspace,
    bash: &BashSetup,
) -> Result<Vec<AgentToolHandle>, ToolChoiceError> {
    names
        .iter()
        .map(|name| {
            let ws = workspace.clone();
            let built = match name.as_str() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: Option<&str>, none: bool) -> Result<Vec<String>, ToolChoiceError> {
        select_from(list, none, &DEFAULT_TOOLS.map(String::from))
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
    }

    #[test]
    fn settings_defaults_are_the_base_of_changes() {
        let defaults = ["read".to_string(), "grep".to_string()];
        assert_eq!(select_from(None, false, &defaults).unwrap(), defaults);
        assert_eq!(
            select_from(Some("-grep,+ls"), false, &defaults).unwrap(),
            ["read", "ls"]
        );
        assert_eq!(
            select_from(Some("bash"), false, &defaults).unwrap(),
            ["bash"]
        );
    }

    #[test]
    fn every_builtin_tool_builds_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let all: Vec<String> = BUILTIN_TOOLS.iter().map(|s| s.to_string()).collect();
        let tools = build(&all, &ws, &BashSetup::default()).unwrap();
        let built: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(built, BUILTIN_TOOLS);
    }
}
