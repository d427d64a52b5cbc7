//! `cargo xtask models`: regenerates oxpi-ai's model catalogue (`crates/ai/data/models.json`)
//! from pi-ai 1.6's published model list, so users get every pi model without Node.

use std::path::Path;
use std::process::Command;

use crate::bench::env::Node;

const USAGE: &str = "\
cargo xtask models [--check]

Regenerates crates/ai/data/models.json from pi-ai 1.6.0's model list (@earendil-works/pi-ai/compat
getProviders/getModels; installed with npm into $OXPI_HOME/bench on first use; needs Node and
npm): every chat model of every provider, in pi's JSON shape, one per line. Re-run it when pi is
updated (change PI16_VERSION in xtask/src/bench/env.rs), then run
`cargo test -p oxpi-ai --test catalogue`.

Options:
  --check     Fail if the committed file differs from what pi lists now (writes nothing)
  -h, --help  Show this help";

/// Options of `models`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    help: bool,
    check: bool,
}

impl Options {
    /// Parses the arguments after `models`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self::default();
        for arg in argv {
            match arg.as_str() {
                "-h" | "--help" => options.help = true,
                "--check" => options.check = true,
                other => return Err(format!("models: unexpected argument `{other}`\n\n{USAGE}")),
            }
        }
        Ok(options)
    }
}

/// Runs `models`; `Ok(true)` when the file was written (or, with `--check`, is current).
pub(crate) fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    let node = Node::prepare_pi16()?;
    let script = root.join("bench/node/models.mjs");
    println!(
        "==> node {} {}",
        script.display(),
        node.install_dir.display()
    );
    let output = Command::new(&node.node)
        .arg(&script)
        .arg(&node.install_dir)
        .output()
        .map_err(|e| format!("could not run node: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "node {} failed: {}",
            script.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let generated =
        String::from_utf8(output.stdout).map_err(|e| format!("the catalogue is not UTF-8: {e}"))?;
    let summary = summarize(&generated)?;
    let path = root.join("crates/ai/data/models.json");
    if options.check {
        let committed = std::fs::read_to_string(&path)
            .map_err(|e| format!("could not read {}: {e}", path.display()))?;
        let current = committed == generated;
        println!(
            "{}: {} ({summary})",
            path.display(),
            if current {
                "current"
            } else {
                "OUT OF DATE: run `cargo xtask models`"
            }
        );
        return Ok(current);
    }
    std::fs::write(&path, &generated)
        .map_err(|e| format!("could not write {}: {e}", path.display()))?;
    println!("wrote {}: {summary}", path.display());
    Ok(true)
}

/// `1698 models of 42 providers` from the generated file.
fn summarize(generated: &str) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_str(generated)
        .map_err(|e| format!("the generated catalogue is not JSON: {e}"))?;
    let models = value["models"].as_array().map_or(0, Vec::len);
    let providers = value["counts"].as_object().map_or(0, serde_json::Map::len);
    Ok(format!("{models} models of {providers} providers"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_its_options() {
        assert_eq!(Options::parse(vec![]), Ok(Options::default()));
        assert_eq!(
            Options::parse(vec!["--check".into()]),
            Ok(Options {
                help: false,
                check: true
            })
        );
        assert!(Options::parse(vec!["--x".into()]).is_err());
    }

    #[test]
    fn summarizes_a_catalogue() {
        let text = r#"{"counts": {"a": 1, "b": 1}, "models": [{}, {}]}"#;
        assert_eq!(summarize(text).unwrap(), "2 models of 2 providers");
    }
}
