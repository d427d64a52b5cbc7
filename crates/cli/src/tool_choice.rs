//! Which tools the agent gets: pi's defaults (`read`, `bash`, `edit`, `write`), `--tools` as an
//! allowlist or as `+name`/`-name` changes to the defaults, `--no-tools` for none; every tool
//! confined to the working directory (bash under the workspace sandbox).

use oxpi_agent_core::AgentToolHandle;
use oxpi_tools::{RunningCommands, Workspace};

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

/// The selected tool names, in the order given (defaults in pi's order).
pub(crate) fn select(tools: Option<&str>, no_tools: bool) -> Result<Vec<String>, ToolChoiceError> {
    if no_tools {
        return Ok(Vec::new());
    }
    let Some(list) = tools else {
        return Ok(DEFAULT_TOOLS.iter().map(|s| s.to_string()).collect());
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
    let mut out: Vec<String> = DEFAULT_TOOLS.iter().map(|s| s.to_string()).collect();
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

/// The tools named `names`, over `workspace`; `bash` registers its commands in `commands`.
pub(crate) fn build(
    names: &[String],
    workspace: &Workspace,
    commands: &RunningCommands,
) -> Result<Vec<AgentToolHandle>, ToolChoiceError> {
    names
        .iter()
        .map(|name| {
            let ws = workspace.clone();
            let built = match name.as_str() {
                "read" => oxpi_tools::read_tool(ws),
                "bash" => {
                    AgentToolHandle::new(oxpi_tools::BashTool::new(ws).tracked_by(commands.clone()))
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: Option<&str>, none: bool) -> Result<Vec<String>, ToolChoiceError> {
        select(list, none)
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
    fn every_builtin_tool_builds_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let all: Vec<String> = BUILTIN_TOOLS.iter().map(|s| s.to_string()).collect();
        let tools = build(&all, &ws, &RunningCommands::new()).unwrap();
        let built: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(built, BUILTIN_TOOLS);
    }
}
