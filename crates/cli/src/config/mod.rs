//! pi's configuration files, one loader each, shared by the command, RPC and the interactive
//! mode: `settings.json` (`settings.rs`), project trust (`trust.rs`), and the JSON reading they
//! share (`json_file.rs`).

pub(crate) mod json_file;
pub(crate) mod models_json;
pub(crate) mod run;
pub(crate) mod settings;
pub(crate) mod trust;
