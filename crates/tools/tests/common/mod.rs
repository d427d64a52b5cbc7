//! Shared fixtures: a workspace root with links pointing in and out, and helpers that call the
//! tools the way an agent does (JSON arguments through an `AgentToolHandle`).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use oxpi_agent_core::{AgentToolHandle, AgentToolResult, ToolUpdateFn};
use oxpi_ai::UserContent;
use oxpi_tools::{edit_tool, find_tool, grep_tool, ls_tool, read_tool, write_tool, Workspace};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub const SECRET: &str = "TOP SECRET, outside the workspace";

/// `base/` holds `root/` (the workspace), `root-evil/` and `outside/`, each of the last two
/// with a `secret.txt`. Inside the root:
///
/// - `notes.txt` (`hello\n`), `sub/` (empty dir)
/// - `link_out` -> `base/outside`, `link_secret` -> `base/outside/secret.txt`
/// - `dangling_out` -> `base/outside/missing.txt`, `dangling_in` -> `new_inside.txt`
/// - `link_in` -> `notes.txt`, `sub/up` -> `../..` (that is `base`)
/// - `loop_a` <-> `loop_b`
///
/// and `base/alias` -> `root`.
pub struct Fixture {
    pub base: tempfile::TempDir,
    pub root: PathBuf,
    pub ws: Workspace,
}

impl Fixture {
    pub fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        let b = fs::canonicalize(base.path()).unwrap();
        let root = b.join("root");
        for dir in ["root/sub", "root-evil", "outside"] {
            fs::create_dir_all(b.join(dir)).unwrap();
        }
        fs::write(b.join("outside/secret.txt"), SECRET).unwrap();
        fs::write(b.join("root-evil/secret.txt"), SECRET).unwrap();
        fs::write(root.join("notes.txt"), "hello\n").unwrap();
        symlink(b.join("outside"), root.join("link_out")).unwrap();
        symlink(b.join("outside/secret.txt"), root.join("link_secret")).unwrap();
        symlink(b.join("outside/missing.txt"), root.join("dangling_out")).unwrap();
        symlink("new_inside.txt", root.join("dangling_in")).unwrap();
        symlink("notes.txt", root.join("link_in")).unwrap();
        symlink("../..", root.join("sub/up")).unwrap();
        symlink("loop_b", root.join("loop_a")).unwrap();
        symlink("loop_a", root.join("loop_b")).unwrap();
        symlink(&root, b.join("alias")).unwrap();
        let ws = Workspace::new(&root).unwrap();
        Self { base, root, ws }
    }

    /// The canonical base directory.
    pub fn base(&self) -> PathBuf {
        fs::canonicalize(self.base.path()).unwrap()
    }

    /// Every file and link under `base` outside the root, with its content or link target.
    pub fn outside_snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let base = self.base();
        for dir in ["root-evil", "outside"] {
            snapshot(&base.join(dir), &mut out);
        }
        for entry in fs::read_dir(&base).unwrap() {
            let path = entry.unwrap().path();
            if fs::symlink_metadata(&path).unwrap().is_file() {
                out.insert(path.clone(), fs::read_to_string(&path).unwrap());
            }
        }
        out
    }
}

fn snapshot(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            out.insert(path.clone(), "<dir>".into());
            snapshot(&path, out);
        } else if meta.file_type().is_symlink() {
            let target = fs::read_link(&path).unwrap();
            out.insert(path, format!("-> {}", target.display()));
        } else {
            out.insert(path.clone(), fs::read_to_string(&path).unwrap_or_default());
        }
    }
}

pub fn noop() -> ToolUpdateFn {
    Arc::new(|_| {})
}

/// Runs a tool handle with JSON arguments; the error is the text the model would see.
pub async fn call(tool: &AgentToolHandle, args: Value) -> Result<AgentToolResult, String> {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    tool.execute("call-1", map, CancellationToken::new(), noop())
        .await
        .map_err(|e| e.to_string())
}

pub async fn read(ws: &Workspace, args: Value) -> Result<AgentToolResult, String> {
    call(&read_tool(ws.clone()).unwrap(), args).await
}

pub async fn write(ws: &Workspace, args: Value) -> Result<AgentToolResult, String> {
    call(&write_tool(ws.clone()).unwrap(), args).await
}

pub async fn edit(ws: &Workspace, args: Value) -> Result<AgentToolResult, String> {
    call(&edit_tool(ws.clone()).unwrap(), args).await
}

pub async fn ls(ws: &Workspace, args: Value) -> Result<AgentToolResult, String> {
    call(&ls_tool(ws.clone()).unwrap(), args).await
}

pub async fn find(ws: &Workspace, args: Value) -> Result<AgentToolResult, String> {
    call(&find_tool(ws.clone()).unwrap(), args).await
}

pub async fn grep(ws: &Workspace, args: Value) -> Result<AgentToolResult, String> {
    call(&grep_tool(ws.clone()).unwrap(), args).await
}

/// The single text block of a result.
pub fn text(result: &AgentToolResult) -> &str {
    match result.content.as_slice() {
        [UserContent::Text(t)] => &t.text,
        other => panic!("expected one text block, got {other:?}"),
    }
}
