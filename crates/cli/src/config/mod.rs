//! pi's configuration files, one loader each, shared by the command, RPC and the interactive
//! mode: `settings.json` (`settings.rs`), project trust and `trust.json` (`trust.rs`),
//! `models.json` (`models_json.rs`), `SYSTEM.md` / `APPEND_SYSTEM.md` (`system_md.rs`), the
//! prompt templates (`templates.rs`), skills (`skills.rs`), the JSON reading they share
//! (`json_file.rs`) and their YAML front matter (`front_matter.rs`), `mcp.json` (`mcp_json.rs`), and what they decide for a run (`run.rs`);
//! a setting changed in the session is saved by `settings_write.rs`.

pub(crate) mod front_matter;
pub(crate) mod json_file;
pub(crate) mod mcp_json;
pub(crate) mod models_json;
pub(crate) mod run;
pub(crate) mod settings;
pub(crate) mod settings_write;
pub(crate) mod skills;
pub(crate) mod system_md;
pub(crate) mod templates;
pub(crate) mod trust;
