//! `cargo xtask fuzz <target> --seconds N`: runs a cargo-fuzz target for a while.

use std::path::Path;
use std::process::Command;

const USAGE: &str = "\
cargo xtask fuzz <target> [--seconds N]
cargo xtask fuzz --list

Runs one of the cargo-fuzz targets in fuzz/ with libFuzzer for N seconds (default 60):
  partial_json       the incremental tool-argument JSON parser against serde_json
  sse_decoder        the server-sent-events decoder: any bytes, any split
  chat_stream        arbitrary Chat Completions stream data through the chunk processor
  chunk_readers      the chunk readers that skip a repeated envelope, against serde_json
  workspace_resolve  workspace path resolution never leaves the root

Needs cargo-fuzz (`cargo install cargo-fuzz`). On a stable toolchain the run sets
RUSTC_BOOTSTRAP=1 for the sanitizer flags cargo-fuzz passes. Findings land in
fuzz/artifacts/<target>/; the corpus grows in fuzz/corpus/<target>/ (both git-ignored).

Options:
  --seconds N  How long to fuzz (default 60)
  --list       List the targets
  -h, --help   Show this help";

/// The fuzz targets, as named in fuzz/Cargo.toml.
pub(crate) const TARGETS: [&str; 5] = [
    "partial_json",
    "sse_decoder",
    "chat_stream",
    "chunk_readers",
    "workspace_resolve",
];

/// Options of `fuzz`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    help: bool,
    list: bool,
    target: Option<String>,
    seconds: u64,
}

impl Options {
    /// Parses the arguments after `fuzz`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self {
            seconds: 60,
            ..Self::default()
        };
        let mut args = argv.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "-h" | "--help" => options.help = true,
                "--list" => options.list = true,
                "--seconds" => {
                    let value = args.next().ok_or("--seconds needs a value")?;
                    options.seconds = value
                        .parse()
                        .map_err(|_| format!("--seconds: not a number: {value}"))?;
                }
                other if other.starts_with('-') => {
                    return Err(format!("fuzz: unknown option `{other}`\n\n{USAGE}"))
                }
                target => {
                    if !TARGETS.contains(&target) {
                        return Err(format!(
                            "fuzz: unknown target `{target}` (targets: {})",
                            TARGETS.join(", ")
                        ));
                    }
                    options.target = Some(target.to_string());
                }
            }
        }
        Ok(options)
    }
}

/// Runs `fuzz`; `Ok(true)` when libFuzzer found nothing.
pub(crate) fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    if options.list {
        for target in TARGETS {
            println!("{target}");
        }
        return Ok(true);
    }
    let Some(target) = options.target else {
        return Err(format!("fuzz: name a target\n\n{USAGE}"));
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let installed = Command::new(&cargo)
        .args(["fuzz", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !installed {
        return Err("cargo-fuzz is not installed: run `cargo install cargo-fuzz`".to_string());
    }
    let fuzz_dir = root.join("fuzz");
    println!("==> cargo fuzz run {target} for {} s", options.seconds);
    let status = Command::new(&cargo)
        .args(["fuzz", "run", &target, "--fuzz-dir"])
        .arg(&fuzz_dir)
        .arg("--")
        .arg(format!("-max_total_time={}", options.seconds))
        .arg("-rss_limit_mb=4096")
        .arg("-print_final_stats=1")
        .env("RUSTC_BOOTSTRAP", "1")
        .current_dir(root)
        .status()
        .map_err(|e| format!("could not run cargo fuzz: {e}"))?;
    Ok(status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_targets_and_seconds() {
        assert_eq!(
            Options::parse(argv("partial_json --seconds 600")),
            Ok(Options {
                target: Some("partial_json".into()),
                seconds: 600,
                ..Options::default()
            })
        );
        assert!(Options::parse(argv("nope"))
            .unwrap_err()
            .contains("unknown target"));
        assert!(Options::parse(argv("chat_stream --seconds x"))
            .unwrap_err()
            .contains("not a number"));
    }
}
