//! pi's `mcp.json` (`docs/mcp.md`): `mcpServers` of `<agent dir>/mcp.json` and of the trusted
//! project's `.pi/mcp.json` (a project entry replaces the user's of the same name; one without
//! `command`, `url` or `type` changes only `enabled`, `exposure`, `toolExposure`). oxpi has no
//! `codemode` or `tool_search`: tools with pi's `codemode` (the default) or `deferred`
//! exposure are offered directly, like `direct` ones, so a pi user's servers are usable; only
//! `hidden` tools stay out. Tools are named `mcp__<server>__<tool>` as pi names them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use super::json_file;
use super::models_json::resolve_config_value;

/// One server entry, as configured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct McpEntry {
    /// The server's name.
    pub name: String,
    /// The merged entry.
    pub config: Map<String, Value>,
}

impl McpEntry {
    fn exposure(&self) -> &str {
        match self.config.get("exposure").and_then(Value::as_str) {
            Some("codemode-deferred") | None => "codemode",
            Some(other) => other,
        }
    }

    /// The exposure of the tool `tool`: an exact `toolExposure` key, else the first matching
    /// `*` pattern, else the server's.
    pub(crate) fn tool_exposure(&self, tool: &str) -> String {
        let map = self.config.get("toolExposure").and_then(Value::as_object);
        if let Some(map) = map {
            if let Some(e) = map.get(tool).and_then(Value::as_str) {
                return e.to_string();
            }
            for (pattern, e) in map {
                if pattern.contains('*') && glob(pattern, tool) {
                    if let Some(e) = e.as_str() {
                        return e.to_string();
                    }
                }
            }
        }
        self.exposure().to_string()
    }

    /// Whether the tool `tool` is offered to the model: every exposure but `hidden` (oxpi
    /// declares `codemode` and `deferred` tools directly, having neither).
    pub(crate) fn offers(&self, tool: &str) -> bool {
        self.tool_exposure(tool) != "hidden"
    }

    /// Whether the server is enabled and any of its tools can be offered (not all `hidden`).
    pub(crate) fn may_offer_tools(&self) -> bool {
        self.config.get("enabled") != Some(&Value::Bool(false))
            && (self.exposure() != "hidden"
                || self
                    .config
                    .get("toolExposure")
                    .and_then(Value::as_object)
                    .is_some_and(|m| m.values().any(|v| v.as_str() != Some("hidden"))))
    }

    /// The oxpi-mcp server, or why the entry cannot be used.
    pub(crate) fn server(
        &self,
        cwd: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<oxpi_mcp::McpServer, String> {
        let c = &self.config;
        let text = |k: &str| c.get(k).and_then(Value::as_str);
        let kind = text("type");
        if matches!(kind, Some("sse")) {
            return Err(format!("{}: the SSE transport is not supported", self.name));
        }
        let home = |s: &str| {
            super::settings::expand_home(s)
                .to_string_lossy()
                .into_owned()
        };
        let mut server = match (text("command"), text("url")) {
            (Some(command), _) => {
                let mut s = oxpi_mcp::McpServer::stdio(&self.name, home(command));
                if let Some(args) = c.get("args").and_then(Value::as_array) {
                    s = s.args(args.iter().filter_map(Value::as_str).map(home));
                }
                for (k, v) in c
                    .get("env")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    if let Some(v) = v.as_str().and_then(|v| resolve_config_value(v, env)) {
                        s = s.env(k, v);
                    }
                }
                let dir = text("cwd").map_or_else(|| cwd.to_path_buf(), |d| cwd.join(home(d)));
                s.current_dir(dir)
            }
            (None, Some(url)) => {
                let mut s = oxpi_mcp::McpServer::http(&self.name, url);
                for (k, v) in c
                    .get("headers")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    if let Some(v) = v.as_str().and_then(|v| resolve_config_value(v, env)) {
                        s = s.header(k, v);
                    }
                }
                s
            }
            (None, None) => {
                return Err(format!("{}: needs a `command` or a `url`", self.name));
            }
        };
        if let Some(secs) = c
            .get("timeout")
            .and_then(Value::as_f64)
            .filter(|s| *s > 0.0)
        {
            server = server.call_timeout(Duration::from_secs_f64(secs));
        }
        Ok(server.pi_tool_names())
    }
}

/// `*` matches any characters.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = (parts[0], &parts[1..]);
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    for (i, part) in rest.iter().enumerate() {
        if i == rest.len() - 1 {
            return remaining.ends_with(part);
        }
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.is_empty()
}

fn servers_of(path: &Path, warnings: &mut Vec<String>) -> Map<String, Value> {
    match json_file::read_object(path) {
        Ok(Some(map)) => match map.get("mcpServers") {
            Some(Value::Object(s)) => s.clone(),
            None => Map::new(),
            Some(other) => {
                warnings.push(format!(
                    "{}: mcpServers must be an object, found {}; ignored",
                    path.display(),
                    json_file::kind(other)
                ));
                Map::new()
            }
        },
        Ok(None) => Map::new(),
        Err(e) => {
            warnings.push(format!("{e}; no MCP server of it loads"));
            Map::new()
        }
    }
}

/// The configured servers (pi's merge) and warnings for entries that cannot be used.
pub(crate) fn load(
    agent_dir: Option<&Path>,
    cwd: &Path,
    trusted: bool,
) -> (Vec<McpEntry>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut merged: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut layers = Vec::new();
    if let Some(dir) = agent_dir {
        layers.push(dir.join("mcp.json"));
    }
    if trusted {
        layers.push(cwd.join(".pi").join("mcp.json"));
    }
    for (i, path) in layers.iter().enumerate() {
        for (name, value) in servers_of(path, &mut warnings) {
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            let Some(entry) = value.as_object().filter(|_| valid) else {
                warnings.push(format!(
                    "{}: server {name:?} is not a valid entry; skipped",
                    path.display()
                ));
                continue;
            };
            let partial = i > 0
                && !["command", "url", "type"]
                    .iter()
                    .any(|k| entry.contains_key(*k));
            match (partial, merged.get_mut(&name)) {
                (true, Some(base)) => {
                    for key in ["enabled", "exposure", "toolExposure"] {
                        if let Some(v) = entry.get(key) {
                            base.insert(key.to_string(), v.clone());
                        }
                    }
                }
                _ => {
                    if !order.contains(&name) {
                        order.push(name.clone());
                    }
                    merged.insert(name.clone(), entry.clone());
                }
            }
        }
    }
    let entries = order
        .into_iter()
        .filter_map(|name| {
            let config = merged.remove(&name)?;
            Some(McpEntry { name, config })
        })
        .collect();
    (entries, warnings)
}

/// The cleaned server name as pi puts it in tool names: every character but letters, digits
/// and `_` becomes `_`.
fn clean_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Connects the enabled servers of `mcp.json` that offer tools, all at once (each gets up to
/// 10 s, as pi waits for servers with `direct` tools before the first prompt), and adds their
/// offered tools that `keep` keeps (the command line's filters), in the file's order; a server
/// that fails is a warning.
pub(crate) async fn connect(
    env: &dyn Fn(&str) -> Option<String>,
    agent_dir: Option<&Path>,
    cwd: &Path,
    trusted: bool,
    keep: &dyn Fn(&str) -> bool,
    tools: &mut Vec<oxpi_agent_core::AgentToolHandle>,
    names: &mut Vec<String>,
) -> Vec<oxpi_mcp::McpClient> {
    let (entries, warnings) = load(agent_dir, cwd, trusted);
    for warning in warnings {
        eprintln!("Warning: {warning}");
    }
    let mut pending = tokio::task::JoinSet::new();
    let mut offered = Vec::new();
    for entry in entries.into_iter().filter(McpEntry::may_offer_tools) {
        let server = match entry.server(cwd, env) {
            Ok(server) => server,
            Err(e) => {
                eprintln!("Warning: MCP server {e}");
                continue;
            }
        };
        let index = offered.len();
        pending.spawn(async move {
            let connected = tokio::time::timeout(
                Duration::from_secs(10),
                oxpi_mcp::McpClient::connect(server),
            );
            (index, connected.await)
        });
        offered.push(entry);
    }
    let mut connected: Vec<Option<oxpi_mcp::McpClient>> = offered.iter().map(|_| None).collect();
    while let Some(joined) = pending.join_next().await {
        let Ok((index, result)) = joined else {
            continue;
        };
        let name = &offered[index].name;
        match result {
            Ok(Ok(client)) => connected[index] = Some(client),
            Ok(Err(e)) => eprintln!("Warning: MCP server {name} did not connect: {e}"),
            Err(_) => eprintln!("Warning: MCP server {name} did not connect within 10 s"),
        }
    }
    let mut clients = Vec::new();
    for (entry, client) in offered.iter().zip(connected) {
        let Some(client) = client else { continue };
        match client.tools_lenient().await {
            Ok((handles, rejected)) => {
                for e in rejected {
                    eprintln!("Warning: MCP server {}: {e}", entry.name);
                }
                let prefix = format!("mcp__{}__", clean_name(&entry.name));
                for handle in handles {
                    let tool = handle.name().strip_prefix(&prefix).unwrap_or(handle.name());
                    if entry.offers(tool) && keep(handle.name()) {
                        names.push(handle.name().to_string());
                        tools.push(handle);
                    }
                }
                clients.push(client);
            }
            Err(e) => {
                eprintln!("Warning: MCP server {}: {e}", entry.name);
                client.close().await;
            }
        }
    }
    clients
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn project_entries_replace_or_adjust_and_exposure_is_pi_s() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let user = json!({"mcpServers": {
            "files": {"command": "srv", "args": ["~/x"], "exposure": "direct"},
            "docs": {"url": "http://h/mcp"},
            "bad name": {"command": "x"}
        }});
        std::fs::write(agent.path().join("mcp.json"), user.to_string()).unwrap();
        std::fs::create_dir_all(cwd.path().join(".pi")).unwrap();
        let project = json!({"mcpServers": {
            "files": {"enabled": false},
            "docs": {"url": "http://other/mcp", "toolExposure": {"get_*": "direct", "get_x": "hidden"}}
        }});
        std::fs::write(cwd.path().join(".pi/mcp.json"), project.to_string()).unwrap();
        let (entries, warnings) = load(Some(agent.path()), cwd.path(), true);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["docs", "files"]);
        let files = &entries[1];
        assert_eq!(
            files.config["command"], "srv",
            "a partial entry keeps the rest"
        );
        assert!(!files.may_offer_tools(), "disabled in the project");
        let docs = &entries[0];
        assert_eq!(docs.config["url"], "http://other/mcp");
        assert!(docs.may_offer_tools());
        assert_eq!(docs.tool_exposure("get_y"), "direct");
        assert_eq!(docs.tool_exposure("get_x"), "hidden", "exact names win");
        assert_eq!(docs.tool_exposure("list"), "codemode");
        assert!(docs.offers("list"), "codemode tools are offered directly");
        assert!(!docs.offers("get_x"));
        let (entries, _) = load(Some(agent.path()), cwd.path(), false);
        assert!(
            entries[1].may_offer_tools(),
            "untrusted: the project file is not read"
        );
        assert!(glob("a*c*e", "abcde") && !glob("a*c", "abcd") && glob("*", ""));
    }
}
