//! What a run loaded besides its settings, kept beside the [`Runtime`] for the interactive
//! mode's startup header (pi's `[Context]` section: the `SYSTEM.md` and `APPEND_SYSTEM.md`
//! found, then the context files), and the runtime's prompt templates and skill commands.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::args::Args;
use crate::context_files::ContextFile;
use crate::runtime::Runtime;

/// The files that went into the system prompt, in pi's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Loaded {
    /// The discovered `SYSTEM.md` (none with `--system-prompt`), the discovered
    /// `APPEND_SYSTEM.md` (none with `--append-system-prompt`), then the context files.
    pub context_files: Vec<PathBuf>,
}

impl Loaded {
    /// The files of a run of `args` in `cwd`, `files` being its context files.
    pub(crate) fn new(
        args: &Args,
        cwd: &Path,
        agent_dir: Option<&Path>,
        trusted: bool,
        files: &[ContextFile],
    ) -> Self {
        use crate::config::system_md::discover;
        let system = args
            .system_prompt
            .is_none()
            .then(|| discover("SYSTEM.md", cwd, agent_dir, trusted))
            .flatten();
        let append = args
            .append_system_prompt
            .is_empty()
            .then(|| discover("APPEND_SYSTEM.md", cwd, agent_dir, trusted))
            .flatten();
        let context_files = system
            .into_iter()
            .chain(append)
            .chain(files.iter().map(|f| f.path.clone()))
            .collect();
        Self { context_files }
    }
}

impl Runtime {
    /// `text` with a prompt template expanded when it is `/name args` (pi's
    /// `expandPromptTemplate`), or a skill's when it is `/skill:name args` and skill commands
    /// are on.
    pub(crate) fn expand_prompt(&self, text: &str) -> String {
        if self.skill_commands.load(Ordering::SeqCst) && text.starts_with("/skill:") {
            return crate::config::skills::expand(text, &self.skills);
        }
        crate::config::templates::expand(text, &self.templates)
    }

    /// RPC `get_commands`: the prompt templates, then the skills (when skill commands are on).
    pub(crate) fn commands(&self) -> Vec<serde_json::Value> {
        let templates = self.templates.iter().map(|t| t.command_json());
        let skills = self
            .skills
            .iter()
            .filter(|_| self.skill_commands.load(Ordering::SeqCst))
            .map(|s| s.command_json());
        templates.chain(skills).collect()
    }
}
