//! `cargo xtask pi-reqdiff`: what oxpi sends against what pi-ai 1.6.0 sends for the same case.
//!
//! The same catalogue models, contexts and options ([`cases`]) go through pi-ai 1.6.0 under Node
//! (`xtask/pi-reqdiff/driver.mjs`, its `compat` entry point) and through `oxpi_ai`
//! ([`oxpi_side`]), both against one local [`server`] that records every request and answers it
//! with a final 400. Each pair is compared ([`diff`]); every difference must be explained by a
//! row of the tables in docs/differences-from-pi.md ([`explained`]), or the command fails.

mod cases;
mod diff;
mod explained;
mod oxpi_side;
mod report;
mod server;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::args;
use crate::bench::env::{target_dir, Node};

const USAGE: &str = "\
cargo xtask pi-reqdiff [--filter PROVIDER|API[,…]] [--json FILE] [--top N]

Runs the same cases (catalogue models of every provider, plain / tools / histories, every
reasoning level, caching, tool choice, max tokens, temperature, headers, metadata) through
pi-ai 1.6.0 under Node (installed with npm into $OXPI_HOME/bench on first use) and through
oxpi, against one local server that records each request. Compares method, path, query,
headers and JSON body, prints a table per API and per provider and the top difference
classes, and fails on any difference docs/differences-from-pi.md does not explain.

Options:
  --filter LIST  Only cases whose provider or API matches one of the comma-separated globs
  --json FILE    Also write the full report (every class and case) as JSON
  --top N        How many difference classes to print (default 25)
  -h, --help     Show this help";

/// The longest the Node side may run.
const NODE_LIMIT: Duration = Duration::from_secs(300);

/// Options of `pi-reqdiff`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    help: bool,
    filter: Vec<String>,
    json: Option<PathBuf>,
    top: Option<usize>,
}

impl Options {
    /// Parses the arguments after `pi-reqdiff`.
    pub(crate) fn parse(argv: Vec<String>) -> Result<Self, String> {
        let mut options = Self::default();
        let mut rest = argv.into_iter();
        while let Some(arg) = rest.next() {
            let (flag, inline) = args::split_flag(&arg);
            match flag {
                "-h" | "--help" => options.help = true,
                "--filter" => {
                    let list = args::value(flag, inline, &mut rest)?;
                    options.filter.extend(
                        list.split(',')
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .map(String::from),
                    );
                }
                "--json" => options.json = Some(args::value(flag, inline, &mut rest)?.into()),
                "--top" => {
                    let text = args::value(flag, inline, &mut rest)?;
                    options.top = Some(args::positive(flag, &text)? as usize);
                }
                other => {
                    return Err(format!(
                        "pi-reqdiff: unexpected argument `{other}`\n\n{USAGE}"
                    ))
                }
            }
        }
        Ok(options)
    }

    /// Options that run only the cases matching `filter`.
    #[cfg(test)]
    pub(crate) fn filtered(filter: &[&str]) -> Self {
        Self {
            filter: filter.iter().map(|s| s.to_string()).collect(),
            ..Self::default()
        }
    }
}

/// True when Node is on the PATH (the CI hook's check).
pub(crate) fn node_available() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `pi-reqdiff`; `Ok(true)` when every difference is explained.
pub(crate) async fn run(root: &Path, options: Options) -> Result<bool, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(true);
    }
    let started = Instant::now();
    let (report, rules) = collect(root, &options).await?;
    println!("{}", report.text(options.top.unwrap_or(25)));
    if options.filter.is_empty() {
        for rule in report.unused(&rules) {
            println!(
                "note: the {} row `{}` `{}` of docs/differences-from-pi.md matched nothing (fixed? remove it)",
                rule.status.as_str(),
                rule.scope,
                rule.path
            );
        }
    }
    if let Some(path) = &options.json {
        let path = if path.is_absolute() {
            path.clone()
        } else {
            root.join(path)
        };
        let text = serde_json::to_string_pretty(&report.json())
            .map_err(|e| format!("could not write the JSON report: {e}"))?;
        std::fs::write(&path, text)
            .map_err(|e| format!("could not write {}: {e}", path.display()))?;
        println!("JSON report: {}", path.display());
    }
    let unexplained = report.unexplained_cases();
    println!(
        "pi-reqdiff: {} in {:.1}s",
        if unexplained == 0 {
            "every difference is explained in docs/differences-from-pi.md".to_string()
        } else {
            format!(
                "{unexplained} cases with differences docs/differences-from-pi.md does not explain"
            )
        },
        started.elapsed().as_secs_f64()
    );
    Ok(unexplained == 0)
}

/// Runs the cases `options` selects through both sides and compares them.
async fn collect(
    root: &Path,
    options: &Options,
) -> Result<(report::Report, Vec<explained::Rule>), String> {
    let docs_path = root.join("docs/differences-from-pi.md");
    let docs = std::fs::read_to_string(&docs_path)
        .map_err(|e| format!("could not read {}: {e}", docs_path.display()))?;
    let rules = explained::parse(&docs).map_err(|e| format!("{}: {e}", docs_path.display()))?;
    let node = Node::prepare_pi16()?;

    let models = cases::select_models(oxpi_ai::models::builtin_models());
    let all = cases::build(&models);
    let cases: Vec<cases::Case> = all
        .into_iter()
        .filter(|c| {
            options.filter.is_empty()
                || options.filter.iter().any(|f| {
                    explained::glob(f, &c.model.provider)
                        || explained::glob(f, c.model.api.as_str())
                })
        })
        .collect();
    if cases.is_empty() {
        return Err(format!(
            "pi-reqdiff: no case matches --filter {}",
            options.filter.join(",")
        ));
    }
    let out_dir = target_dir(root).join("pi-reqdiff");
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| format!("could not create {}: {e}", out_dir.display()))?;
    // Per process, so a test's tiny run and a full one do not share files; removed after reading.
    let cases_file = out_dir.join(format!("cases-{}.json", std::process::id()));
    let driver_json: Vec<_> = cases.iter().map(cases::Case::to_driver_json).collect();
    std::fs::write(
        &cases_file,
        serde_json::Value::Array(driver_json).to_string(),
    )
    .map_err(|e| format!("could not write {}: {e}", cases_file.display()))?;
    let pi_out = out_dir.join(format!("pi-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&pi_out);

    let server = server::Server::start().await?;
    println!(
        "==> pi-reqdiff: {} cases ({} models) through pi-ai 1.6.0 and oxpi against {}",
        cases.len(),
        cases
            .iter()
            .map(|c| (&c.model.provider, &c.model.id))
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        server.url
    );
    let mut node_run = tokio::process::Command::new(&node.node);
    node_run
        .arg(root.join("xtask/pi-reqdiff/driver.mjs"))
        .arg(&node.install_dir)
        .arg(&cases_file)
        .arg(&server.url)
        .arg(&pi_out)
        // The AWS SDK's notice about Node 20 is not about the requests.
        .env("NODE_NO_WARNINGS", "1")
        .kill_on_drop(true);
    let pi_side = async {
        match tokio::time::timeout(NODE_LIMIT, node_run.status()).await {
            Err(_) => Err("the pi driver did not finish within 300 s".to_string()),
            Ok(Err(e)) => Err(format!("could not run node: {e}")),
            Ok(Ok(status)) if !status.success() => Err(format!("the pi driver failed ({status})")),
            Ok(Ok(_)) => Ok(()),
        }
    };
    let (pi_status, oxpi_errors) = tokio::join!(pi_side, oxpi_side::run_all(&cases, &server.url));
    pi_status?;
    let pi_errors = read_pi_results(&pi_out);
    let _ = std::fs::remove_file(&pi_out);
    let _ = std::fs::remove_file(&cases_file);
    let pi_errors = pi_errors?;

    let results: Vec<report::CaseResult> = cases
        .iter()
        .zip(oxpi_errors)
        .map(|(case, oxpi_error)| {
            let pi = server.take("pi", &case.id);
            let oxpi = server.take("ox", &case.id);
            let comparison = match (pi.as_slice(), oxpi.as_slice()) {
                ([a], [b]) => Some(diff::compare(a, b)),
                _ => None,
            };
            report::CaseResult::new(
                case,
                pi.len(),
                oxpi.len(),
                pi_errors.get(&case.id).cloned().flatten(),
                oxpi_error,
                comparison,
                &rules,
            )
        })
        .collect();
    Ok((report::Report { results }, rules))
}

/// The driver's `{id, error}` / `{id, thrown}` lines: each case's error text.
fn read_pi_results(
    path: &Path,
) -> Result<std::collections::HashMap<String, Option<String>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("could not read {}: {e}", path.display()))?;
    let mut out = std::collections::HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("{}: a line is not JSON: {e}", path.display()))?;
        let id = value["id"].as_str().unwrap_or_default().to_string();
        let error = value["thrown"]
            .as_str()
            .or_else(|| value["error"].as_str())
            .map(String::from);
        out.insert(id, error);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One real run over the smallest providers: both sides send exactly one request per case
    /// to the recording server, and pi's and oxpi's bodies are compared.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tiny_filter_sends_one_request_per_side_and_case() {
        if !node_available() {
            println!("pi-reqdiff integration test skipped: no node");
            return;
        }
        let root = crate::workspace_root();
        let report = match collect(&root, &Options::filtered(&["deepseek", "mistral"])).await {
            Ok((report, _)) => report,
            Err(message) if message.contains("npm") => {
                println!("pi-reqdiff integration test skipped: {message}");
                return;
            }
            Err(message) => panic!("{message}"),
        };
        assert!(report.results.len() > 20, "{} cases", report.results.len());
        for r in &report.results {
            assert_eq!((r.pi_requests, r.oxpi_requests), (1, 1), "{}", r.label);
        }
        let apis: std::collections::BTreeSet<&str> =
            report.results.iter().map(|r| r.api.as_str()).collect();
        assert_eq!(apis, ["mistral-conversations", "openai-completions"].into());
    }

    #[test]
    fn the_drivers_package_pins_the_installed_pi_ai() {
        let text =
            std::fs::read_to_string(crate::workspace_root().join("xtask/pi-reqdiff/package.json"))
                .unwrap();
        let package: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            package["dependencies"]["@earendil-works/pi-ai"],
            crate::bench::env::PI16_VERSION
        );
    }

    #[test]
    fn parses_filter_json_and_top() {
        let options = Options::parse(
            [
                "--filter",
                "openai, anthropic-messages",
                "--json=r.json",
                "--top",
                "5",
            ]
            .map(String::from)
            .to_vec(),
        )
        .unwrap();
        assert_eq!(options.filter, vec!["openai", "anthropic-messages"]);
        assert_eq!(options.json, Some(PathBuf::from("r.json")));
        assert_eq!(options.top, Some(5));
        assert!(Options::parse(vec!["--top".into(), "0".into()]).is_err());
        assert!(Options::parse(vec!["--nope".into()]).is_err());
    }
}
