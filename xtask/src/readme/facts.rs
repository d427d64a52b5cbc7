//! What the code says, for `cargo xtask readme`: read from oxpi-ai (catalogue, provider facts,
//! registered wire APIs), the workspace's Cargo.toml files, `fixtures/recorded`, `tasks/` and
//! the test files whose tests README counts.

use std::collections::BTreeMap;
use std::path::Path;

use oxpi_ai::provider_facts::ProviderFacts;

/// One catalogue provider.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Provider {
    /// Its id.
    pub name: String,
    /// How many chat models the catalogue has of it.
    pub models: usize,
    /// The wire APIs of those models, sorted.
    pub apis: Vec<String>,
}

/// One workspace package of the crate table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Package {
    /// Its folder, relative to the root.
    pub path: String,
    /// Its name.
    pub name: String,
    /// Its Cargo.toml description.
    pub description: String,
}

/// Everything README states that the code knows.
#[derive(Debug)]
pub(crate) struct Facts {
    /// The catalogue's providers, sorted.
    pub providers: Vec<Provider>,
    /// The catalogue's chat models.
    pub models: usize,
    /// The models on `openai-codex-responses`.
    pub codex_models: usize,
    /// The wire APIs oxpi-ai registers (`ProviderRegistry::with_builtins`), sorted.
    pub wire_apis: Vec<String>,
    /// The workspace members, in Cargo.toml's order, then `fuzz`.
    pub packages: Vec<Package>,
    /// Recorded response streams in `fixtures/recorded`.
    pub streams: usize,
    /// Those whose request went to an API oxpi implements (pi-replay's set).
    pub streams_in_apis: usize,
    /// Task folders in `tasks/`.
    pub tasks: usize,
    /// Tests in `crates/cli/tests/interactive_tmux.rs`.
    pub tmux_tests: usize,
    /// Tests in `crates/cli/tests/pi_config.rs`.
    pub pi_config_tests: usize,
    /// README's first programs: (example under `crates/`, its non-blank lines between the
    /// `the program` markers).
    pub programs: Vec<(&'static str, usize)>,
}

/// The examples README counts the lines of.
const PROGRAMS: [&str; 5] = [
    "agent-core/examples/weather.rs",
    "ai/examples/streamed_reply.rs",
    "tools/examples/coding_tools.rs",
    "session/examples/continue_session.rs",
    "agent-core/examples/extract.rs",
];

impl Facts {
    /// Reads the facts of the workspace at `root`.
    pub(crate) fn gather(root: &Path) -> Result<Self, String> {
        let mut by_provider: BTreeMap<String, Provider> = BTreeMap::new();
        for model in oxpi_ai::models::builtin_models() {
            let entry = by_provider
                .entry(model.provider.clone())
                .or_insert_with(|| Provider {
                    name: model.provider.clone(),
                    models: 0,
                    apis: Vec::new(),
                });
            entry.models += 1;
            let api = model.api.as_str().to_string();
            if !entry.apis.contains(&api) {
                entry.apis.push(api);
                entry.apis.sort();
            }
        }
        let models = oxpi_ai::models::builtin_models().len();
        if models == 0 {
            return Err("oxpi-ai's model catalogue is empty (it did not parse)".into());
        }
        let codex_models = oxpi_ai::models::builtin_models()
            .iter()
            .filter(|m| m.api == oxpi_ai::API_OPENAI_CODEX_RESPONSES)
            .count();
        let wire_apis = oxpi_ai::ProviderRegistry::with_builtins().apis();
        let (streams, streams_in_apis) = recorded_streams(&root.join("fixtures/recorded"))?;
        let tasks = std::fs::read_dir(root.join("tasks"))
            .map_err(|e| format!("tasks/: {e}"))?
            .flatten()
            .filter(|e| {
                e.path().join("prompt.txt").is_file() || e.path().join("task.json").is_file()
            })
            .count();
        Ok(Self {
            providers: by_provider.into_values().collect(),
            models,
            codex_models,
            wire_apis,
            packages: packages(root)?,
            streams,
            streams_in_apis,
            tasks,
            tmux_tests: count_tests(&root.join("crates/cli/tests/interactive_tmux.rs"))?,
            pi_config_tests: count_tests(&root.join("crates/cli/tests/pi_config.rs"))?,
            programs: PROGRAMS
                .iter()
                .map(|example| Ok((*example, program_lines(&root.join("crates").join(example))?)))
                .collect::<Result<_, String>>()?,
        })
    }

    /// One line for the command's output.
    pub(crate) fn summary(&self) -> String {
        format!(
            "{} models of {} providers, {} wire APIs, {} packages",
            self.models,
            self.providers.len(),
            self.wire_apis.len(),
            self.packages.len()
        )
    }

    /// The provider table: provider, models, API(s), key variables.
    pub(crate) fn provider_table(&self) -> String {
        let mut out = String::from(
            "| provider | models | API | key variable |\n| --- | ---: | --- | --- |\n",
        );
        for p in &self.providers {
            let apis: Vec<String> = p.apis.iter().map(|a| format!("`{a}`")).collect();
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                p.name,
                p.models,
                apis.join(", "),
                key_column(&p.name, oxpi_ai::provider_facts::facts(&p.name))
            ));
        }
        out
    }

    /// The crate table: path, package, description.
    pub(crate) fn crate_table(&self) -> String {
        let mut out = String::from("| path | package | what it is |\n| --- | --- | --- |\n");
        for p in &self.packages {
            out.push_str(&format!(
                "| `{}` | `{}` | {} |\n",
                p.path, p.name, p.description
            ));
        }
        out
    }
}

/// How a provider gets its credential: its key variables from `data/providers.json`, with what
/// more a few of them need.
fn key_column(provider: &str, facts: Option<&ProviderFacts>) -> String {
    let Some(facts) = facts else {
        return "–".into();
    };
    let vars: Vec<String> = facts.api_key_env.iter().map(|v| format!("`{v}`")).collect();
    let vars = vars.join(", ");
    match provider {
        "amazon-bedrock" => "AWS's credentials chain (feature `bedrock`), or a Bedrock API key in \
                             `AWS_BEARER_TOKEN_BEDROCK`"
            .into(),
        "google-vertex" => format!(
            "{vars}, or application default credentials (feature `vertex`) with \
             `GOOGLE_CLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION`"
        ),
        "azure" => format!("{vars} (+ `AZURE_OPENAI_BASE_URL` or `AZURE_OPENAI_RESOURCE_NAME`)"),
        "cloudflare-ai-gateway" => {
            format!("{vars} (+ `CLOUDFLARE_ACCOUNT_ID`, `CLOUDFLARE_GATEWAY_ID`)")
        }
        "cloudflare-workers-ai" => format!("{vars} (+ `CLOUDFLARE_ACCOUNT_ID`)"),
        "github-copilot" => format!("{vars} (a Copilot token; see below)"),
        _ if vars.is_empty() => match &facts.oauth_login {
            Some(login) => format!("{login}: its access token as the key"),
            None => "–".into(),
        },
        _ => vars,
    }
}

/// The workspace members (Cargo.toml's order) and `fuzz`, with their descriptions.
fn packages(root: &Path) -> Result<Vec<Package>, String> {
    let manifest = read(&root.join("Cargo.toml"))?;
    let members = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("members = ["))
        .ok_or("Cargo.toml has no one-line `members = [...]`")?;
    let mut paths: Vec<String> = members
        .trim_end_matches(']')
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect();
    paths.push("fuzz".into());
    paths
        .into_iter()
        .map(|path| {
            let toml = read(&root.join(&path).join("Cargo.toml"))?;
            let field = |key: &str| {
                toml.lines().find_map(|l| {
                    let value = l.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim();
                    Some(
                        value
                            .strip_prefix('"')?
                            .strip_suffix('"')?
                            .replace("\\\"", "\""),
                    )
                })
            };
            Ok(Package {
                name: field("name").ok_or(format!("{path}/Cargo.toml has no name"))?,
                description: field("description")
                    .ok_or(format!("{path}/Cargo.toml has no description"))?,
                path,
            })
        })
        .collect()
}

/// (all recorded response streams, those of an API oxpi implements), counted as pi-replay
/// selects them (`bench/src/replay.rs`: by the recorded request's path).
fn recorded_streams(dir: &Path) -> Result<(usize, usize), String> {
    let mut all = 0;
    let mut in_apis = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let Some(stem) = path.to_str().and_then(|p| p.strip_suffix(".response.sse")) else {
                continue;
            };
            all += 1;
            let request: serde_json::Value =
                serde_json::from_str(&read(Path::new(&format!("{stem}.request.json")))?)
                    .map_err(|e| format!("{stem}.request.json: {e}"))?;
            let path = request["path"].as_str().unwrap_or("");
            if path.ends_with("/chat/completions")
                || path.ends_with("/responses")
                || path.ends_with("/messages")
                || path.contains(":streamGenerateContent")
            {
                in_apis += 1;
            }
        }
    }
    Ok((all, in_apis))
}

/// Non-blank lines between an example's `// --- the program` and `// --- end of the program`.
fn program_lines(path: &Path) -> Result<usize, String> {
    let text = read(path)?;
    let body = text
        .split_once("// --- the program")
        .and_then(|(_, rest)| rest.split_once('\n'))
        .and_then(|(_, rest)| rest.split_once("// --- end of the program"))
        .ok_or_else(|| format!("{} has no `the program` markers", path.display()))?
        .0;
    Ok(body.lines().filter(|l| !l.trim().is_empty()).count())
}

/// The `#[test]` and `#[tokio::test…]` functions of a file.
fn count_tests(path: &Path) -> Result<usize, String> {
    Ok(read(path)?
        .lines()
        .filter(|l| {
            let l = l.trim();
            l == "#[test]" || l.starts_with("#[tokio::test")
        })
        .count())
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("could not read {}: {e}", path.display()))
}
