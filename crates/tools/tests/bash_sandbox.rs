//! The `bash` tool's sandbox on this kernel: writes outside the workspace fail while the same
//! writes inside succeed, the network can be turned off, limits apply. On a kernel without
//! Landlock ABI 3 each test checks the refusal instead.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

mod bash_common;

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use bash_common::{run, Outcome};
use oxpi_tools::{BashTool, Sandbox, Workspace, MIN_LANDLOCK_ABI};
use serde_json::json;

/// `base/root` (the workspace, with `link_out` -> `base/outside`, `link_secret` ->
/// `base/outside/secret.txt`) and `base/outside/secret.txt`.
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
        fs::write(base.join("outside/secret.txt"), "secret").unwrap();
        symlink(base.join("outside"), root.join("link_out")).unwrap();
        symlink(base.join("outside/secret.txt"), root.join("link_secret")).unwrap();
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

/// Whether this kernel can run the workspace sandbox; if not, checks that it refuses.
async fn enforced(fx: &Fixture) -> bool {
    if Sandbox::probe().landlock_abi >= MIN_LANDLOCK_ABI {
        return true;
    }
    let out = run(fx.tool(Sandbox::workspace()), json!({"command": "true"})).await;
    assert!(out
        .text()
        .starts_with("Cannot run the command: the sandbox"));
    assert!(out.text().contains("Sandbox::None"));
    eprintln!("no Landlock ABI {MIN_LANDLOCK_ABI}: checked the refusal only");
    false
}

fn failed_with(out: &Outcome, what: &str) {
    let text = out.text();
    assert!(out.result.is_err(), "{what} succeeded: {text}");
    assert!(text.contains("Permission denied"), "{what}: {text}");
}

#[tokio::test]
async fn writes_outside_the_workspace_fail_and_inside_succeed() {
    let fx = Fixture::new();
    if !enforced(&fx).await {
        return;
    }
    let tool = fx.tool(Sandbox::workspace());
    let outside = fx.base.join("outside");
    let stray = std::env::temp_dir().join(format!("oxpi-sandbox-test-{}", std::process::id()));
    let denied = [
        format!("echo x > {}/abs.txt", outside.display()),
        "echo x > ../outside/dots.txt".to_string(),
        "echo x > link_out/via_link.txt".to_string(),
        format!("echo x > {}", stray.display()),
        "mkdir ../outside/made".to_string(),
        "rm link_out/secret.txt".to_string(),
        "echo x >> link_secret".to_string(),
        "truncate -s 0 link_secret".to_string(),
        "mv link_out/secret.txt moved.txt".to_string(),
    ];
    for command in &denied {
        let out = run(tool.clone(), json!({"command": command})).await;
        failed_with(&out, command);
    }
    assert_eq!(
        fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "secret"
    );
    let mut left: Vec<_> = fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["secret.txt"]);
    assert_eq!(
        fs::metadata(&stray).unwrap_err().kind(),
        ErrorKind::NotFound
    );

    // The same kinds of writes inside the root and the tool's own temporary directory work.
    let allowed = "echo x > abs.txt && mkdir -p sub/deeper && echo y > sub/../dots.txt \
                   && echo z > \"$TMPDIR/scratch.txt\" && cat \"$TMPDIR/scratch.txt\" \
                   && rm abs.txt && echo done > /dev/null && cat link_secret";
    let out = run(tool.clone(), json!({"command": allowed})).await;
    assert_eq!(out.text(), "z\nsecret");
    assert_eq!(fs::read_to_string(fx.root.join("dots.txt")).unwrap(), "y\n");
    assert!(fx.root.join("sub/deeper").is_dir());
    assert_eq!(
        fs::read_to_string(tool.temp_dir().unwrap().join("scratch.txt")).unwrap(),
        "z\n"
    );

    // Without the sandbox the first write outside succeeds: the denials above are the sandbox's.
    let free = run(fx.tool(Sandbox::None), json!({"command": &denied[0]})).await;
    assert!(free.result.is_ok(), "{}", free.text());
    assert!(outside.join("abs.txt").exists());
}

#[tokio::test]
async fn with_the_network_off_a_connect_to_a_local_listener_fails() {
    let fx = Fixture::new();
    if !enforced(&fx).await {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let off = run(
        fx.tool(Sandbox::workspace().network(false)),
        json!({"command": &command}),
    )
    .await;
    assert!(off.result.is_err(), "{}", off.text());
    assert!(off.text().contains("Permission denied"), "{}", off.text());
    assert_eq!(
        listener.accept().unwrap_err().kind(),
        ErrorKind::WouldBlock,
        "a connection reached the listener"
    );
    // Unix sockets still work with the network off.
    let unix = run(
        fx.tool(Sandbox::workspace().network(false)),
        json!({"command": "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"ok\"); print(b.recv(2).decode())' 2>&1 || echo no python"}),
    )
    .await;
    assert!(
        matches!(unix.text().as_str(), "ok\n" | "no python\n"),
        "{}",
        unix.text()
    );

    let on = run(fx.tool(Sandbox::workspace()), json!({"command": &command})).await;
    assert_eq!(on.text(), "connected\n");
}

#[tokio::test]
async fn resource_limits_apply_to_the_command() {
    let fx = Fixture::new();
    if !enforced(&fx).await {
        return;
    }
    let limited = fx.tool(
        Sandbox::workspace()
            .file_size_limit(4096)
            .cpu_time_limit(1)
            .process_limit(10_000),
    );
    // A writer past the file size limit gets SIGXFSZ: 128 + 25.
    let big = run(
        limited.clone(),
        json!({"command": "head -c 100000 /dev/zero > big"}),
    )
    .await;
    assert_eq!(big.details().exit_code, 153, "{}", big.text());
    assert_eq!(fs::metadata(fx.root.join("big")).unwrap().len(), 4096);
    // A shell past the CPU limit gets SIGXCPU: 128 + 24.
    let spin = run(
        limited.clone(),
        json!({"command": "while :; do :; done", "timeout": 120}),
    )
    .await;
    assert_eq!(spin.details().exit_code, 152, "{}", spin.text());
    let shown = run(
        limited,
        json!({"command": "ulimit -f; ulimit -t; ulimit -u"}),
    )
    .await;
    assert_eq!(shown.text(), "4\n1\n10000\n");
}

#[tokio::test]
async fn the_command_cannot_signal_processes_outside_the_sandbox() {
    let fx = Fixture::new();
    if !enforced(&fx).await || Sandbox::probe().landlock_abi < 6 {
        return;
    }
    let me = std::process::id();
    let out = run(
        fx.tool(Sandbox::workspace()),
        json!({"command": format!("kill -0 {me}")}),
    )
    .await;
    assert!(out.result.is_err());
    assert!(
        out.text().contains("Operation not permitted"),
        "{}",
        out.text()
    );
    let free = run(
        fx.tool(Sandbox::None),
        json!({"command": format!("kill -0 {me}")}),
    )
    .await;
    assert!(free.result.is_ok(), "{}", free.text());
}
