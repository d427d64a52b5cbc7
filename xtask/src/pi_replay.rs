//! `cargo xtask pi-replay`: every recorded provider stream (`fixtures/recorded`) through oxpi and
//! through pi-ai 0.73.1 (installed with npm like the bench's), and where the final messages
//! differ. `docs/differences-from-pi.md` explains each difference found.

use std::path::Path;
use std::process::Command;

use crate::bench::env::{cargo, target_dir, Node};

const USAGE: &str = "\
cargo xtask pi-replay [--out DIR]

Replays the 854 recorded streams of the four wire APIs (fixtures/recorded) through oxpi and
through pi-ai 0.73.1 under Node (installed with npm into $OXPI_HOME/bench on first use), compares
the final messages (text, thinking, tool calls, stop reason, error or not, the five usage
counts) and prints the counts per API. Writes oxpi.jsonl, pi.jsonl and differences.jsonl.

Options:
  --out DIR   Where the files go (default target/pi-replay)
  -h, --help  Show this help";

/// Options of `pi-replay`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    help: bool,
    out: Option<String>,
}

impl Options {
    /// Parses the arguments after `pi-replay`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self::default();
        let mut args = argv.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "-h" | "--help" => options.help = true,
                "--out" => {
                    options.out = Some(args.next().ok_or("pi-replay: --out needs a directory")?)
                }
                other => {
                    return Err(format!(
                        "pi-replay: unexpected argument `{other}`\n\n{USAGE}"
                    ))
                }
            }
        }
        Ok(options)
    }
}

/// Runs `pi-replay`; `Ok(true)` when both sides replayed every stream.
pub(crate) fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    let node = Node::prepare()?;
    println!("==> cargo build -p oxpi-bench --bin pi-replay");
    cargo(root, &["build", "-p", "oxpi-bench", "--bin", "pi-replay"])?;
    let out = options
        .out
        .map(|o| root.join(o))
        .unwrap_or_else(|| target_dir(root).join("pi-replay"));
    let status = Command::new(target_dir(root).join("debug").join("pi-replay"))
        .arg("--fixtures")
        .arg(root.join("fixtures/recorded"))
        .arg("--node-dir")
        .arg(&node.install_dir)
        .arg("--script")
        .arg(root.join("bench/node/replay.mjs"))
        .arg("--out")
        .arg(&out)
        .status()
        .map_err(|e| format!("could not run pi-replay: {e}"))?;
    Ok(status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_out_and_help() {
        assert_eq!(
            Options::parse(vec!["--out".into(), "x".into()]),
            Ok(Options {
                help: false,
                out: Some("x".into())
            })
        );
        assert!(Options::parse(vec!["--out".into()]).is_err());
        assert!(Options::parse(vec!["--nope".into()]).is_err());
        assert_eq!(Options::parse(vec!["-h".into()]).map(|o| o.help), Ok(true));
    }
}
