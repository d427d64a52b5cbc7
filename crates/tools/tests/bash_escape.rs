//! Ways out of the `bash` tool's sandbox that Landlock's path rules alone do not close: a device
//! node made inside the workspace (it reaches the device wherever the node lies), and a
//! descriptor the program holds open without close-on-exec (Landlock checks `open`, not writes
//! through descriptors already open).

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

mod bash_common;

use std::fs;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use bash_common::run;
use oxpi_tools::{BashTool, Sandbox, Workspace, MIN_LANDLOCK_ABI};
use serde_json::json;

/// `base/root` (the workspace) and `base/outside`.
struct Fixture {
    _base: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let root = base.join("root");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(base.join("outside")).unwrap();
        Self {
            _base: dir,
            base,
            root,
        }
    }

    fn tool(&self, sandbox: Sandbox) -> BashTool {
        BashTool::new(Workspace::new(&self.root).unwrap()).with_sandbox(sandbox)
    }
}

fn landlock() -> bool {
    let enforced = Sandbox::probe().landlock_abi >= MIN_LANDLOCK_ABI;
    if !enforced {
        eprintln!("no Landlock ABI {MIN_LANDLOCK_ABI}: nothing to check here (bash_sandbox checks the refusal)");
    }
    enforced
}

#[tokio::test]
async fn device_nodes_cannot_be_made_inside_the_workspace() {
    let fx = Fixture::new();
    if !landlock() {
        return;
    }
    // Unconfined, this process may make nodes (root with CAP_MKNOD); otherwise there is
    // nothing the sandbox could add.
    let free = run(
        fx.tool(Sandbox::None),
        json!({"command": "mknod free_null c 1 3 && rm free_null"}),
    )
    .await;
    if free.result.is_err() {
        eprintln!(
            "this process cannot make device nodes at all: {}",
            free.text()
        );
        return;
    }
    let tool = fx.tool(Sandbox::workspace());
    for (node, kind) in [("null_node", "c 1 3"), ("loop_node", "b 7 0")] {
        let out = run(
            tool.clone(),
            json!({"command": format!("mknod {node} {kind}")}),
        )
        .await;
        assert!(
            out.result.is_err(),
            "mknod {kind} succeeded: {}",
            out.text()
        );
        assert!(
            out.text().contains("Operation not permitted")
                || out.text().contains("Permission denied"),
            "mknod {kind}: {}",
            out.text()
        );
        assert!(
            fs::symlink_metadata(fx.root.join(node)).is_err(),
            "{node} exists"
        );
    }
    // Everything else beneath the workspace stays allowed: files, directories, FIFOs, links.
    let out = run(
        tool,
        json!({"command": "mkdir d && echo x > d/f && mkfifo d/p && ln -s f d/l && ls d"}),
    )
    .await;
    assert_eq!(out.text(), "f\nl\np\n");
}

#[tokio::test]
async fn the_command_gets_no_descriptor_beyond_stdin_stdout_and_stderr() {
    let fx = Fixture::new();
    let target = fx.base.join("outside/log.txt");
    fs::write(&target, "before\n").unwrap();
    // As a wrapper's `7>>file` or a library's log file: open without close-on-exec.
    let file = fs::OpenOptions::new().append(true).open(&target).unwrap();
    rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::empty()).unwrap();
    let fd = file.as_raw_fd();
    let command = format!("echo escaped >&{fd}; ls /proc/self/fd");
    let mut sandboxes = vec![Sandbox::None];
    if landlock() {
        sandboxes.push(Sandbox::workspace());
    }
    for sandbox in sandboxes {
        let out = run(fx.tool(sandbox.clone()), json!({"command": command})).await;
        assert!(
            out.text().contains(&format!("{fd}: Bad file descriptor")),
            "{sandbox:?}: {}",
            out.text()
        );
        // `ls` lists 0, 1, 2 and the descriptor of the directory it reads.
        let text = out.text();
        let listed: Vec<&str> = text.lines().filter(|l| l.parse::<u32>().is_ok()).collect();
        assert_eq!(listed, ["0", "1", "2", "3"], "{sandbox:?}: {}", out.text());
        assert_eq!(fs::read_to_string(&target).unwrap(), "before\n");
    }
    // The program's own descriptor still works.
    use std::io::Write;
    (&file).write_all(b"after\n").unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "before\nafter\n");
}
