//! `cargo xtask pi-replay`: every recorded provider stream (`fixtures/recorded`) through oxpi and
//! through pi-ai 0.73.1 and/or 1.6.0 (installed with npm like the bench's), and where the final
//! messages differ. `docs/differences-from-pi.md` explains each difference found, in entries whose
//! `Concerns:` line names the pi version.

use std::path::Path;
use std::process::Command;

use crate::bench::env::{cargo, target_dir, Node};

const USAGE: &str = "\
cargo xtask pi-replay [--pi 0.73|1.6|both] [--out DIR]

Replays the 854 recorded streams of the four wire APIs (fixtures/recorded) through oxpi and
through pi-ai under Node (installed with npm into $OXPI_HOME/bench on first use), compares the
final messages (text, thinking, tool calls, stop reason, error or not, the five usage counts) and
prints the counts per API. A difference must be explained by an entry of
docs/differences-from-pi.md whose `Concerns:` line names that pi version, and an entry that names
a version must explain at least one of its streams. Writes manifest.jsonl, oxpi.jsonl and, per
version, pi-<version>.jsonl and differences-<version>.jsonl.

Options:
  --pi VERSION  0.73 (@mariozechner/pi-ai 0.73.1), 1.6 (@earendil-works/pi-ai 1.6.0, its
                `compat` entry point) or both (the default)
  --out DIR     Where the files go (default target/pi-replay)
  -h, --help    Show this help";

/// Which pi versions to replay through.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) enum Versions {
    /// pi-ai 0.73.1 only.
    V0_73,
    /// pi-ai 1.6.0 only.
    V1_6,
    /// Both, 0.73.1 first.
    #[default]
    Both,
}

/// Options of `pi-replay`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    help: bool,
    out: Option<String>,
    pi: Versions,
}

impl Options {
    /// Replays through pi-ai 1.6.0 only (what `cargo xtask ci` runs).
    pub(crate) fn pi16_only() -> Self {
        Self {
            pi: Versions::V1_6,
            ..Self::default()
        }
    }

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
                "--pi" => {
                    let value = args
                        .next()
                        .ok_or("pi-replay: --pi needs 0.73, 1.6 or both")?;
                    options.pi = match value.as_str() {
                        "0.73" | "0.73.1" => Versions::V0_73,
                        "1.6" | "1.6.0" => Versions::V1_6,
                        "both" => Versions::Both,
                        other => {
                            return Err(format!(
                                "pi-replay: --pi takes 0.73, 1.6 or both, not `{other}`"
                            ))
                        }
                    }
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

/// Runs `pi-replay`; `Ok(true)` when both sides replayed every stream and every difference is
/// explained for every version replayed.
pub(crate) fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    // `--pi VERSION=DIR` arguments of the bench's pi-replay program.
    let mut pis = Vec::new();
    if options.pi != Versions::V1_6 {
        pis.push(format!(
            "0.73.1={}",
            Node::prepare_pi073()?.install_dir.display()
        ));
    }
    if options.pi != Versions::V0_73 {
        pis.push(format!(
            "1.6.0={}",
            Node::prepare_pi16()?.install_dir.display()
        ));
    }
    println!("==> cargo build -p oxpi-bench --bin pi-replay");
    cargo(root, &["build", "-p", "oxpi-bench", "--bin", "pi-replay"])?;
    let out = options
        .out
        .map(|o| root.join(o))
        .unwrap_or_else(|| target_dir(root).join("pi-replay"));
    let mut command = Command::new(target_dir(root).join("debug").join("pi-replay"));
    command
        .arg("--fixtures")
        .arg(root.join("fixtures/recorded"))
        .arg("--script")
        .arg(root.join("bench/node/replay.mjs"))
        .arg("--docs")
        .arg(root.join("docs/differences-from-pi.md"))
        .arg("--out")
        .arg(&out);
    for pi in &pis {
        command.arg("--pi").arg(pi);
    }
    let status = command
        .status()
        .map_err(|e| format!("could not run pi-replay: {e}"))?;
    Ok(status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Options, String> {
        Options::parse(text.split_whitespace().map(String::from).collect())
    }

    #[test]
    fn parses_out_pi_and_help() {
        assert_eq!(
            parse("--out x"),
            Ok(Options {
                help: false,
                out: Some("x".into()),
                pi: Versions::Both,
            })
        );
        assert_eq!(parse("--pi 1.6").map(|o| o.pi), Ok(Versions::V1_6));
        assert_eq!(parse("--pi 0.73.1").map(|o| o.pi), Ok(Versions::V0_73));
        assert_eq!(parse("--pi both").map(|o| o.pi), Ok(Versions::Both));
        assert_eq!(Options::pi16_only().pi, Versions::V1_6);
        assert!(parse("--pi 2.0").unwrap_err().contains("`2.0`"));
        assert!(parse("--pi").is_err());
        assert!(parse("--out").is_err());
        assert!(parse("--nope").is_err());
        assert_eq!(parse("-h").map(|o| o.help), Ok(true));
    }
}
