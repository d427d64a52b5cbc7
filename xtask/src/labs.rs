//! `cargo xtask labs`: build every lab under `labs/`, run each N times, print a table.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::args;

const USAGE: &str = "\
cargo xtask labs [--repeat N] [--timeout SECS] [LAB...] [-- ARGS...]

Finds every lab under labs/ (each directory with a Cargo.toml), builds it with
`cargo build -p <package>`, runs its binary N times and prints a table of passes,
runs and total time. Exits non-zero if any build or run fails.

The environment is passed through: OXPI_* variables choose the model; with none set,
each lab starts the embedded local model itself (see `cargo xtask local-model`).

Options:
  --repeat N      Runs per lab (default 1)
  --timeout SECS  Kill a run that takes longer and count it as failed (default 900)
  LAB...          Only labs whose directory or package name contains one of these
  -- ARGS...      Pass ARGS to every lab binary
  -h, --help      Show this help";

/// Options of `labs`.
#[derive(Debug, PartialEq)]
pub(crate) struct Options {
    help: bool,
    repeat: u64,
    timeout: Duration,
    filters: Vec<String>,
    lab_args: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            help: false,
            repeat: 1,
            timeout: Duration::from_secs(900),
            filters: Vec::new(),
            lab_args: Vec::new(),
        }
    }
}

impl Options {
    /// Parses the arguments after `labs`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self::default();
        let mut rest = argv.into_iter();
        while let Some(arg) = rest.next() {
            let (flag, inline) = args::split_flag(&arg);
            match flag {
                "-h" | "--help" => options.help = true,
                "--repeat" => {
                    options.repeat = args::positive(flag, &args::value(flag, inline, &mut rest)?)?
                }
                "--timeout" => {
                    let secs = args::positive(flag, &args::value(flag, inline, &mut rest)?)?;
                    options.timeout = Duration::from_secs(secs);
                }
                "--" => {
                    options.lab_args = rest.by_ref().collect();
                }
                other if other.starts_with('-') => {
                    return Err(format!("labs: unknown option `{other}`\n\n{USAGE}"));
                }
                _ => options.filters.push(arg),
            }
        }
        Ok(options)
    }
}

/// A lab found under `labs/`.
#[derive(Debug, Clone, PartialEq)]
struct Lab {
    /// Directory name, e.g. `08-tool-calling`.
    dir: String,
    /// Cargo package name, e.g. `lab-08`.
    package: String,
    /// Its Cargo.toml.
    manifest: PathBuf,
}

/// The `name` in the `[package]` table of a Cargo.toml.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some((key, value)) = line.split_once('=') {
                if key.trim() == "name" {
                    return Some(
                        value
                            .trim()
                            .trim_matches(|c| c == '"' || c == '\'')
                            .to_string(),
                    );
                }
            }
        }
    }
    None
}

/// Every directory under `labs_dir` with a Cargo.toml, sorted by directory name.
fn find_labs(labs_dir: &Path) -> Result<Vec<Lab>, String> {
    let entries =
        std::fs::read_dir(labs_dir).map_err(|e| format!("reading {}: {e}", labs_dir.display()))?;
    let mut labs = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let package = package_name(&text)
            .ok_or_else(|| format!("no [package] name in {}", manifest.display()))?;
        let dir = entry.file_name().to_string_lossy().into_owned();
        // Cargo reports canonical manifest paths; compare like with like.
        let manifest = manifest.canonicalize().unwrap_or(manifest);
        labs.push(Lab {
            dir,
            package,
            manifest,
        });
    }
    labs.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(labs)
}

/// Builds `lab` and returns its executable, read from cargo's JSON messages.
async fn build(cargo: &str, root: &Path, lab: &Lab) -> Result<PathBuf, String> {
    let output = tokio::process::Command::new(cargo)
        .args([
            "build",
            "--message-format=json-render-diagnostics",
            "-p",
            &lab.package,
        ])
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .await
        .map_err(|e| format!("running {cargo}: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo build -p {} failed", lab.package));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|msg| msg["reason"] == "compiler-artifact")
        .filter(|msg| msg["manifest_path"].as_str().map(Path::new) == Some(lab.manifest.as_path()))
        .find_map(|msg| msg["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo build -p {} produced no binary", lab.package))
}

/// Runs `exe` once; `Ok(true)` when it exited 0 within `timeout`.
async fn run_once(
    exe: &Path,
    root: &Path,
    lab_args: &[String],
    timeout: Duration,
) -> Result<bool, String> {
    let mut child = tokio::process::Command::new(exe)
        .args(lab_args)
        .current_dir(root)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => status
            .map(|s| s.success())
            .map_err(|e| format!("waiting for {}: {e}", exe.display())),
        Err(_) => {
            eprintln!(
                "xtask: {} timed out after {timeout:?}; killing it",
                exe.display()
            );
            let _ = child.kill().await;
            Ok(false)
        }
    }
}

/// One row of the result table.
struct Row {
    lab: Lab,
    passes: u64,
    runs: u64,
    time: Duration,
    note: &'static str,
}

/// Runs `labs`; `Ok(true)` when every build and run passed.
pub(crate) async fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    let labs: Vec<Lab> = find_labs(&root.join("labs"))?
        .into_iter()
        .filter(|lab| {
            options.filters.is_empty()
                || options
                    .filters
                    .iter()
                    .any(|f| lab.dir.contains(f.as_str()) || lab.package.contains(f.as_str()))
        })
        .collect();
    if labs.is_empty() {
        return Err("no labs found (or none matched)".to_string());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut rows = Vec::new();
    for lab in labs {
        eprintln!("xtask: building {} ({})", lab.package, lab.dir);
        let exe = match build(&cargo, root, &lab).await {
            Ok(exe) => exe,
            Err(message) => {
                eprintln!("xtask: {message}");
                rows.push(Row {
                    lab,
                    passes: 0,
                    runs: options.repeat,
                    time: Duration::ZERO,
                    note: "build failed",
                });
                continue;
            }
        };
        let started = Instant::now();
        let mut passes = 0;
        for run in 1..=options.repeat {
            eprintln!("xtask: running {} ({run}/{})", lab.package, options.repeat);
            let run_started = Instant::now();
            let passed = run_once(&exe, root, &options.lab_args, options.timeout).await?;
            let verdict = if passed { "passed" } else { "FAILED" };
            eprintln!(
                "xtask: {} run {run} {verdict} in {:.1}s",
                lab.package,
                run_started.elapsed().as_secs_f64()
            );
            passes += u64::from(passed);
        }
        rows.push(Row {
            lab,
            passes,
            runs: options.repeat,
            time: started.elapsed(),
            note: "",
        });
    }
    print!("{}", table(&rows));
    let runs: u64 = rows.iter().map(|r| r.runs).sum();
    let passes: u64 = rows.iter().map(|r| r.passes).sum();
    println!("labs: {passes} passed, {} failed", runs - passes);
    Ok(passes == runs)
}

/// The result table.
fn table(rows: &[Row]) -> String {
    let names: Vec<String> = rows
        .iter()
        .map(|r| format!("{} ({})", r.lab.package, r.lab.dir))
        .collect();
    let width = names.iter().map(String::len).chain([3]).max().unwrap_or(3);
    let mut out = format!(
        "\n{:<width$}  {:>11}  {:>10}\n",
        "lab", "passes/runs", "total time"
    );
    for (row, name) in rows.iter().zip(&names) {
        let counts = format!("{}/{}", row.passes, row.runs);
        let time = format!("{:.1}s", row.time.as_secs_f64());
        out.push_str(format!("{name:<width$}  {counts:>11}  {time:>10}  {}", row.note).trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_repeat_filters_and_passthrough() {
        let options = Options::parse(argv("--repeat 3 08 --timeout=60 -- --verbose x")).unwrap();
        assert_eq!(options.repeat, 3);
        assert_eq!(options.timeout, Duration::from_secs(60));
        assert_eq!(options.filters, ["08"]);
        assert_eq!(options.lab_args, ["--verbose", "x"]);
        assert_eq!(Options::parse(vec![]).unwrap(), Options::default());
        assert!(Options::parse(argv("--repeat 0")).is_err());
        assert!(Options::parse(argv("--bogus")).is_err());
    }

    #[test]
    fn reads_package_name_from_the_package_table() {
        let toml = "[workspace]\nname = \"no\"\n[package]\nversion = \"1\"\nname = \"lab-08\"\n[dependencies]\nname = \"x\"\n";
        assert_eq!(package_name(toml), Some("lab-08".into()));
        assert_eq!(package_name("[dependencies]\nname = \"x\""), None);
    }

    #[test]
    fn finds_the_repository_labs() {
        let labs = find_labs(&crate::workspace_root().join("labs")).unwrap();
        assert!(
            labs.iter()
                .any(|lab| lab.package == "lab-08" && lab.dir == "08-tool-calling"),
            "{labs:?}"
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn runs_pass_fail_and_time_out() {
        let root = crate::workspace_root();
        let long = Duration::from_secs(30);
        assert_eq!(
            run_once(Path::new("true"), &root, &[], long).await,
            Ok(true)
        );
        assert_eq!(
            run_once(Path::new("false"), &root, &[], long).await,
            Ok(false)
        );
        let args = ["5".to_string()];
        let short = Duration::from_millis(200);
        assert_eq!(
            run_once(Path::new("sleep"), &root, &args, short).await,
            Ok(false)
        );
        assert!(run_once(Path::new("/nonexistent/lab"), &root, &[], long)
            .await
            .is_err());
    }

    #[test]
    fn table_lists_counts_and_time() {
        let lab = Lab {
            dir: "08-x".into(),
            package: "lab-08".into(),
            manifest: PathBuf::new(),
        };
        let rows = [Row {
            lab,
            passes: 2,
            runs: 3,
            time: Duration::from_millis(12_340),
            note: "",
        }];
        let text = table(&rows);
        assert!(text.contains("lab-08 (08-x)"), "{text}");
        assert!(text.contains("2/3") && text.contains("12.3s"), "{text}");
    }
}
