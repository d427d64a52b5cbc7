//! Project automation, run as `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! Commands:
//! - `local-model`: install the embedded local model (engine + weights) ahead of time.
//! - `labs`: build and run every lab under `labs/`, print a table, fail if any run fails.
//! - `ci`: fmt, clippy, tests, docs, then the model and the labs: the README's test command.
//! - `chaos`: durable runs (oxpi-durable on Restate) under a few hundred kill -9s, with a report.
//!
//! - `fuzz`: run a cargo-fuzz target for a while.
//! - `bench`: oxpi against pi-ai (TypeScript) and the crates.io Rust port, one table.
//! - `pi-replay`: every recorded provider stream through oxpi and pi-ai 0.73.1 / 1.6.0, compared.
//! - `pi-reqdiff`: what oxpi sends against what pi-ai 1.6.0 sends, request for request.
//! - `build-cost`: a user's first build of oxpi-ai (fresh crate, empty target), timed.
//! - `models`: regenerate oxpi-ai's model catalogue from pi-ai's published list.
//! - `readme`: write README.md's facts (provider and crate tables, counts) from the code.
//! - `tasks`: the coding tasks of `tasks/` through `oxpi -p` (and `pi -p`) on the embedded model.

mod args;
mod bench;
mod build_cost;
mod chaos;
mod chaos_scale;
mod ci;
mod fuzz;
mod labs;
mod local_model;
mod models;
mod pi_replay;
mod pi_reqdiff;
mod readme;
mod tasks;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
cargo xtask <command> [options]

Commands:
  local-model   Install the embedded local model (llama.cpp engine + weights) ahead of time
  labs          Build every lab under labs/ and run each one, printing a pass/fail table
  fuzz          Run a cargo-fuzz target for N seconds (partial_json, sse_decoder, chat_stream, workspace_resolve)
  bench         Measure oxpi against pi-ai (TS) and the Rust port pi-ai; write BENCHMARKS.md
  pi-replay     Replay every recorded stream through oxpi and pi-ai 0.73.1 / 1.6.0; list the differences
  pi-reqdiff    Compare the requests oxpi and pi-ai 1.6.0 send for the same cases (needs Node)
  build-cost    Time a user's first build of oxpi-ai (fresh crate, empty target, debug + release)
  models        Regenerate crates/ai/data/models.json from pi-ai's model list (needs Node)
  readme        Write README.md's provider and crate tables and counts from the code (--check)
  tasks         Run the coding tasks of tasks/ through oxpi -p (and pi -p with --pi) on the embedded model
  chaos         Durable runs on Restate under kill -9 of their service processes; a report
  ci            Every check: fmt, clippy, tests, docs, local model, labs (what CI runs)
  help          Show this help

Run `cargo xtask <command> --help` for a command's options.";

/// A parsed command line.
#[derive(Debug, PartialEq)]
enum Command {
    /// Print the usage.
    Help,
    /// `local-model`.
    LocalModel(local_model::Options),
    /// `labs`.
    Labs(labs::Options),
    /// `ci`.
    Ci(ci::Options),
    /// `chaos`.
    Chaos(chaos::Options),
    /// One service process of `chaos`.
    ChaosService,
    /// `fuzz`.
    Fuzz(fuzz::Options),
    /// `bench`.
    Bench(bench::Options),
    /// `pi-replay`.
    PiReplay(pi_replay::Options),
    /// `pi-reqdiff`.
    PiReqdiff(pi_reqdiff::Options),
    /// `build-cost`.
    BuildCost(build_cost::Options),
    /// `models`.
    Models(models::Options),
    /// `tasks`.
    Tasks(tasks::Options),
    /// `readme`.
    Readme(readme::Options),
}

/// Parses the arguments after the program name.
fn parse(args: Vec<String>) -> Result<Command, String> {
    let mut args = args.into_iter();
    let Some(name) = args.next() else {
        return Ok(Command::Help);
    };
    let rest: Vec<String> = args.collect();
    match name.as_str() {
        "help" | "-h" | "--help" => Ok(Command::Help),
        "local-model" => local_model::Options::parse(rest).map(Command::LocalModel),
        "labs" => labs::Options::parse(rest).map(Command::Labs),
        "ci" => ci::Options::parse(rest).map(Command::Ci),
        "chaos" => chaos::Options::parse(rest).map(Command::Chaos),
        // A service process of `chaos` (not for people: configured by its environment).
        "chaos-service" => Ok(Command::ChaosService),
        "fuzz" => fuzz::Options::parse(rest).map(Command::Fuzz),
        "bench" => bench::Options::parse(rest).map(Command::Bench),
        "pi-replay" => pi_replay::Options::parse(rest).map(Command::PiReplay),
        "pi-reqdiff" => pi_reqdiff::Options::parse(rest).map(Command::PiReqdiff),
        "build-cost" => build_cost::Options::parse(rest).map(Command::BuildCost),
        "models" => models::Options::parse(rest).map(Command::Models),
        "tasks" => tasks::Options::parse(rest).map(Command::Tasks),
        "readme" => readme::Options::parse(rest).map(Command::Readme),
        other => Err(format!("unknown command `{other}`")),
    }
}

/// The workspace root (the parent of this crate's directory).
fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or(manifest_dir)
}

fn main() -> ExitCode {
    let command = match parse(std::env::args().skip(1).collect()) {
        Ok(command) => command,
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: could not start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = match command {
        Command::Help => {
            // Ignore a closed pipe (`cargo xtask help | head`).
            let _ = writeln!(std::io::stdout(), "{USAGE}");
            Ok(true)
        }
        Command::LocalModel(options) => runtime.block_on(local_model::run(options)),
        Command::Labs(options) => runtime.block_on(labs::run(&workspace_root(), options)),
        Command::Ci(options) => runtime.block_on(ci::run(&workspace_root(), options)),
        Command::Chaos(options) => runtime.block_on(chaos::run(&workspace_root(), options)),
        Command::ChaosService => runtime
            .block_on(oxpi_durable::scripted::serve_from_env())
            .map(|()| true),
        Command::Fuzz(options) => fuzz::run(&workspace_root(), options),
        Command::Bench(options) => bench::run(&workspace_root(), options),
        Command::PiReplay(options) => pi_replay::run(&workspace_root(), options),
        Command::PiReqdiff(options) => {
            runtime.block_on(pi_reqdiff::run(&workspace_root(), options))
        }
        Command::BuildCost(options) => build_cost::run(&workspace_root(), options),
        Command::Models(options) => models::run(&workspace_root(), options),
        Command::Tasks(options) => runtime.block_on(tasks::run(&workspace_root(), options)),
        Command::Readme(options) => readme::run(&workspace_root(), options),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn dispatches_commands() {
        assert_eq!(parse(argv("")), Ok(Command::Help));
        assert_eq!(parse(argv("--help")), Ok(Command::Help));
        assert!(matches!(
            parse(argv("local-model")),
            Ok(Command::LocalModel(_))
        ));
        assert!(matches!(
            parse(argv("labs --repeat 2")),
            Ok(Command::Labs(_))
        ));
        assert!(matches!(
            parse(argv("bench --quick")),
            Ok(Command::Bench(_))
        ));
        assert!(parse(argv("frobnicate"))
            .unwrap_err()
            .contains("unknown command"));
    }

    /// The package description (README's crate table) names every command.
    #[test]
    fn the_description_names_every_command() {
        let commands = USAGE
            .lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| !matches!(*c, "help" | "Run"));
        for command in commands {
            assert!(
                env!("CARGO_PKG_DESCRIPTION").contains(command),
                "xtask's description does not name `{command}`"
            );
        }
    }

    #[test]
    fn workspace_root_has_the_labs() {
        assert!(workspace_root().join("Cargo.toml").is_file());
    }
}
