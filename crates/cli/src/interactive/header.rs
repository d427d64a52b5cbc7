//! The startup header, as pi's interactive mode prints it before the conversation: a line with
//! the name and version and one of key hints, then the loaded resources, one section each
//! (`[Context]` the system prompt files and context files, `[Skills]`, `[Prompts]`, and oxpi's
//! `[MCP servers]` in place of pi's `[Extensions]`), each a comma-separated list.
//! `quietStartup` decides (pi's `shouldShowStartupHeader` / `shouldShowStartupDetails`):
//! `true` shows nothing, `"header"` only the header, `false` (the default) both; `--verbose`
//! shows both whatever it says.

use std::path::Path;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use serde_json::Value;

use crate::runtime::Runtime;

/// The header's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Startup {
    /// `oxpi v<version>`.
    pub title: String,
    /// Show the title and key hints.
    pub header: bool,
    /// `(name, comma-separated list)` of the non-empty sections.
    pub sections: Vec<(String, String)>,
}

/// The key hints under the title (pi's compact hints, oxpi's keys).
pub(crate) const HINTS: &str =
    "Esc interrupt · Ctrl+C/Ctrl+D clear/exit · / commands · ! bash · /hotkeys all keys";

/// `path` as pi shows a context file: relative to `cwd` when inside it, else with `~` for
/// `home`, else as it is.
pub(crate) fn display_path(path: &Path, cwd: &Path, home: Option<&Path>) -> String {
    if let Ok(rest) = path.strip_prefix(cwd) {
        let rest = rest.display().to_string();
        return if rest.is_empty() { ".".into() } else { rest };
    }
    if let Some(rest) = home.and_then(|h| path.strip_prefix(h).ok()) {
        let rest = rest.display().to_string();
        return if rest.is_empty() {
            "~".into()
        } else {
            format!("~/{rest}")
        };
    }
    path.display().to_string()
}

/// What is shown of `quiet_startup` (the merged setting) and `verbose`: the header, the
/// sections.
pub(crate) fn shown(quiet_startup: Option<&Value>, verbose: bool) -> (bool, bool) {
    if verbose {
        return (true, true);
    }
    match quiet_startup {
        Some(Value::Bool(true)) => (false, false),
        Some(Value::String(s)) if s == "header" => (true, false),
        _ => (true, true),
    }
}

/// The sections: context files in their order, skills, prompts and servers sorted.
pub(crate) fn sections(
    context: Vec<String>,
    mut skills: Vec<String>,
    mut prompts: Vec<String>,
    mut servers: Vec<String>,
) -> Vec<(String, String)> {
    skills.sort();
    prompts.sort();
    servers.sort();
    [
        ("Context", context),
        ("Skills", skills),
        ("Prompts", prompts),
        ("MCP servers", servers),
    ]
    .into_iter()
    .filter(|(_, list)| !list.is_empty())
    .map(|(name, list)| (name.to_string(), list.join(", ")))
    .collect()
}

/// The header for `runtime` (`None` when `quietStartup` is `true` and not `verbose`).
pub(crate) fn startup(runtime: &Runtime, verbose: bool) -> Option<Startup> {
    let (header, details) = shown(runtime.config.settings.merged.get("quietStartup"), verbose);
    if !header && !details {
        return None;
    }
    let cwd = runtime.workspace.root();
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from);
    let sections = if details {
        sections(
            runtime
                .loaded
                .context_files
                .iter()
                .map(|p| display_path(p, cwd, home.as_deref()))
                .collect(),
            runtime.skills.iter().map(|s| s.name.clone()).collect(),
            runtime
                .templates
                .iter()
                .map(|t| format!("/{}", t.name))
                .collect(),
            runtime
                .mcp
                .iter()
                .map(|c| c.server_name().to_string())
                .collect(),
        )
    } else {
        Vec::new()
    };
    Some(Startup {
        title: format!("oxpi v{}", env!("CARGO_PKG_VERSION")),
        header,
        sections,
    })
}

/// The header's lines (unwrapped; the transcript wraps them).
pub(crate) fn lines(startup: &Startup) -> Vec<Line<'static>> {
    let dim = Style::new().fg(Color::DarkGray);
    let heading = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let mut out = Vec::new();
    if startup.header {
        out.push(Line::styled(startup.title.clone(), heading));
        out.push(Line::styled(HINTS, dim));
    }
    for (name, list) in &startup.sections {
        if !out.is_empty() {
            out.push(Line::default());
        }
        out.push(Line::styled(format!("[{name}]"), heading));
        out.push(Line::styled(format!("  {list}"), dim));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quiet_startup_hides_what_pi_hides() {
        assert_eq!(shown(None, false), (true, true));
        assert_eq!(shown(Some(&json!(false)), false), (true, true));
        assert_eq!(shown(Some(&json!("header")), false), (true, false));
        assert_eq!(shown(Some(&json!(true)), false), (false, false));
        assert_eq!(shown(Some(&json!(true)), true), (true, true));
        // A value pi does not take is its default.
        assert_eq!(shown(Some(&json!("loud")), false), (true, true));
    }

    #[test]
    fn paths_are_relative_inside_the_directory_then_under_home() {
        let (cwd, home) = (Path::new("/h/u/p"), Some(Path::new("/h/u")));
        assert_eq!(
            display_path(Path::new("/h/u/p/AGENTS.md"), cwd, home),
            "AGENTS.md"
        );
        assert_eq!(
            display_path(Path::new("/h/u/.pi/agent/AGENTS.md"), cwd, home),
            "~/.pi/agent/AGENTS.md"
        );
        assert_eq!(
            display_path(Path::new("/etc/AGENTS.md"), cwd, home),
            "/etc/AGENTS.md"
        );
    }

    #[test]
    fn empty_sections_are_left_out_and_lists_sorted_but_context() {
        let s = sections(
            vec!["b/AGENTS.md".into(), "AGENTS.md".into()],
            vec!["tidy".into(), "lint".into()],
            vec![],
            vec!["files".into()],
        );
        assert_eq!(
            s,
            [
                ("Context".to_string(), "b/AGENTS.md, AGENTS.md".to_string()),
                ("Skills".into(), "lint, tidy".into()),
                ("MCP servers".into(), "files".into()),
            ]
        );
    }
}
