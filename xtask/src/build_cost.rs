//! `cargo xtask build-cost`: what a user's first build of oxpi-ai costs. A fresh binary crate
//! that depends on `crates/ai` (by path, with the workspace's Cargo.lock) and makes one trivial
//! use of it is built from an empty target directory, debug and release; the wall time and the
//! number of crates compiled are printed beside the figures issue 21 measured for oxpi-ai and
//! its peers on this kind of machine (2 cores).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::args::split_flag;

const USAGE: &str = "\
cargo xtask build-cost [--variant NAME]... [--debug-only | --release-only]

Builds a fresh crate that depends on oxpi-ai from an empty target directory and prints the
wall time and the crates compiled, beside the figures measured for oxpi-ai 0.1.0 (before) and
its peers. Each build starts from nothing, so one variant takes about 3.5 minutes on 2 cores.

Options:
  --variant NAME  default (rustls), no-tls (--no-default-features), native-tls, vertex or
                  bedrock (default + that feature); repeatable; all = the first three.
                  Default: default
  --debug-only    Only the debug build
  --release-only  Only the release build";

/// How oxpi-ai's features are chosen for one measured build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// The default features (`rustls`).
    Default,
    /// No default features: no TLS, no HTTP/2.
    NoTls,
    /// The platform's TLS instead of rustls.
    NativeTls,
    /// Default plus `vertex` (Google credentials).
    Vertex,
    /// Default plus `bedrock` (AWS signing, credentials, event stream).
    Bedrock,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Default => "default",
            Variant::NoTls => "no-tls",
            Variant::NativeTls => "native-tls",
            Variant::Vertex => "vertex",
            Variant::Bedrock => "bedrock",
        }
    }

    /// The dependency line's feature settings.
    fn dependency_settings(self) -> &'static str {
        match self {
            Variant::Default => "",
            Variant::NoTls => ", default-features = false",
            Variant::NativeTls => ", default-features = false, features = [\"native-tls\"]",
            Variant::Vertex => ", features = [\"vertex\"]",
            Variant::Bedrock => ", features = [\"bedrock\"]",
        }
    }
}

/// Options of `build-cost`.
#[derive(Debug, PartialEq)]
pub(crate) struct Options {
    /// Print the usage and stop.
    pub(crate) help: bool,
    /// The variants, in order.
    pub(crate) variants: Vec<Variant>,
    /// Build with the debug profile.
    pub(crate) debug: bool,
    /// Build with the release profile.
    pub(crate) release: bool,
}

impl Options {
    /// Parses the arguments after `build-cost`.
    pub(crate) fn parse(args: Vec<String>) -> Result<Self, String> {
        let mut options = Options {
            help: false,
            variants: Vec::new(),
            debug: true,
            release: true,
        };
        let mut rest = args.into_iter();
        while let Some(arg) = rest.next() {
            let (flag, inline) = split_flag(&arg);
            match flag {
                "-h" | "--help" => options.help = true,
                "--variant" => {
                    let name = crate::args::value(flag, inline, &mut rest)?;
                    match name.as_str() {
                        "default" => options.variants.push(Variant::Default),
                        "no-tls" => options.variants.push(Variant::NoTls),
                        "native-tls" => options.variants.push(Variant::NativeTls),
                        "vertex" => options.variants.push(Variant::Vertex),
                        "bedrock" => options.variants.push(Variant::Bedrock),
                        "all" => options.variants.extend([
                            Variant::Default,
                            Variant::NoTls,
                            Variant::NativeTls,
                        ]),
                        other => {
                            return Err(format!(
                                "build-cost: unknown variant `{other}` (default, no-tls, native-tls, vertex, bedrock, all)"
                            ))
                        }
                    }
                }
                "--debug-only" => options.release = false,
                "--release-only" => options.debug = false,
                other => {
                    return Err(format!(
                        "build-cost: unexpected argument `{other}`\n\n{USAGE}"
                    ))
                }
            }
        }
        if !options.debug && !options.release {
            return Err("build-cost: --debug-only and --release-only exclude each other".into());
        }
        if options.variants.is_empty() {
            options.variants.push(Variant::Default);
        }
        Ok(options)
    }
}

/// One measured build.
#[derive(Debug)]
struct Build {
    seconds: f64,
    crates: usize,
}

/// Runs `build-cost`; `Ok(true)` when every build succeeded.
pub(crate) fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    let scratch = std::env::temp_dir().join(format!("oxpi-build-cost-{}", std::process::id()));
    let result = measure_all(root, &scratch, &options);
    let _ = std::fs::remove_dir_all(&scratch);
    let rows = result?;
    println!();
    println!("First build of a fresh crate, empty target directory (wall time; crates compiled):");
    println!();
    println!("| library | debug build | release build | crates |");
    println!("|---|---|---|---|");
    for (variant, debug, release) in &rows {
        let crates = debug.as_ref().or(release.as_ref()).map_or(0, |b| b.crates);
        println!(
            "| oxpi-ai (this tree, {}) | {} | {} | {crates} |",
            variant.name(),
            debug
                .as_ref()
                .map_or("–".into(), |b| format!("{:.0} s", b.seconds)),
            release
                .as_ref()
                .map_or("–".into(), |b| format!("{:.0} s", b.seconds)),
        );
    }
    println!("| oxpi-ai 0.1.0 (issue 21, before) | 90–94 s | 193 s | 157 |");
    println!("| rig-core 0.44 (issue 21) | 94–101 s | 183 s | 146 |");
    println!("| genai 0.7.2 (issue 21) | 74–77 s | 142 s | 146 |");
    println!("| async-openai 0.43 (issue 21) | 60–64 s | 118 s | 127 |");
    println!("| pi-ai 1.0.0, crates.io port (issue 21) | 49–53 s | 86 s | 118 |");
    println!();
    println!("Targets for the default variant: debug ≤ 75 s, release ≤ 140 s (genai's).");
    let default = rows.iter().find(|(v, _, _)| *v == Variant::Default);
    let met = default.is_none_or(|(_, debug, release)| {
        debug.as_ref().is_none_or(|b| b.seconds <= 75.0)
            && release.as_ref().is_none_or(|b| b.seconds <= 140.0)
    });
    println!("{}", if met { "targets met" } else { "TARGETS MISSED" });
    Ok(true)
}

type Row = (Variant, Option<Build>, Option<Build>);

fn measure_all(root: &Path, scratch: &Path, options: &Options) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for &variant in &options.variants {
        let project = scratch.join(format!("app-{}", variant.name()));
        write_project(root, &project, variant)?;
        let debug = if options.debug {
            Some(build(&project, variant, false)?)
        } else {
            None
        };
        let release = if options.release {
            Some(build(&project, variant, true)?)
        } else {
            None
        };
        rows.push((variant, debug, release));
    }
    Ok(rows)
}

/// A binary crate with one dependency, oxpi-ai, and one use of it.
fn write_project(root: &Path, project: &Path, variant: Variant) -> Result<(), String> {
    let io = |what: &str, e: std::io::Error| format!("build-cost: could not {what}: {e}");
    std::fs::create_dir_all(project.join("src")).map_err(|e| io("create the project", e))?;
    let ai = root.join("crates/ai");
    let manifest = format!(
        "[package]\nname = \"first-build\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\noxpi-ai = {{ path = {:?}{} }}\n\n[workspace]\n",
        ai.display().to_string(),
        variant.dependency_settings()
    );
    std::fs::write(project.join("Cargo.toml"), manifest).map_err(|e| io("write Cargo.toml", e))?;
    std::fs::write(
        project.join("src/main.rs"),
        "fn main() {\n    let message = oxpi_ai::UserMessage::text(\"hi\");\n    \
         println!(\"{}\", message.text_content());\n}\n",
    )
    .map_err(|e| io("write main.rs", e))?;
    // The workspace's lock file: the same versions oxpi is tested with, and no index update.
    std::fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock"))
        .map_err(|e| io("copy Cargo.lock", e))?;
    Ok(())
}

/// Builds `project` from an empty target directory; the wall time and the crates compiled.
fn build(project: &Path, variant: Variant, release: bool) -> Result<Build, String> {
    let profile = if release { "release" } else { "debug" };
    let target: PathBuf = project.join(format!("target-{profile}"));
    let _ = std::fs::remove_dir_all(&target);
    println!(
        "==> {} {profile}: cargo build{} (empty target directory)",
        variant.name(),
        if release { " --release" } else { "" }
    );
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .arg("build")
        .current_dir(project)
        .env("CARGO_TARGET_DIR", &target)
        // What the user's own shell would not have: the settings of the xtask's own build.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET_DIR");
    if release {
        command.arg("--release");
    }
    let started = Instant::now();
    let output = command
        .output()
        .map_err(|e| format!("build-cost: could not run cargo: {e}"))?;
    let seconds = started.elapsed().as_secs_f64();
    let log = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "build-cost: the {} {profile} build failed ({}):\n{log}",
            variant.name(),
            output.status
        ));
    }
    let crates = log
        .lines()
        .filter(|line| line.trim_start().starts_with("Compiling "))
        .count();
    println!("<== {seconds:.1} s, {crates} crates compiled");
    let _ = std::fs::remove_dir_all(&target);
    Ok(Build { seconds, crates })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_variants_and_profiles() {
        assert_eq!(
            Options::parse(argv("")),
            Ok(Options {
                help: false,
                variants: vec![Variant::Default],
                debug: true,
                release: true,
            })
        );
        assert_eq!(
            Options::parse(argv("--variant no-tls --variant=native-tls --release-only")),
            Ok(Options {
                help: false,
                variants: vec![Variant::NoTls, Variant::NativeTls],
                debug: false,
                release: true,
            })
        );
        assert_eq!(
            Options::parse(argv("--variant all")).map(|o| o.variants),
            Ok(vec![Variant::Default, Variant::NoTls, Variant::NativeTls])
        );
        assert!(Options::parse(argv("--variant fast"))
            .unwrap_err()
            .contains("unknown variant"));
        assert!(Options::parse(argv("--debug-only --release-only")).is_err());
    }
}
