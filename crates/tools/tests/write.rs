//! The `write` tool: creating, replacing, permissions, refusals, atomicity.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::{edit, read, text, write, Fixture};
use oxpi_agent_core::AgentToolResult;
use oxpi_tools::WriteDetails;
use serde_json::json;

fn details(result: &AgentToolResult) -> WriteDetails {
    serde_json::from_value(result.details.clone().unwrap()).unwrap()
}

fn mode(path: &std::path::Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn creates_the_file_and_its_parents() {
    let fx = Fixture::new();
    let content = "é".repeat(617); // 1234 bytes
    let got = write(&fx.ws, json!({ "path": "notes/a.txt", "content": content }))
        .await
        .unwrap();
    assert_eq!(text(&got), "Successfully wrote 1234 bytes to notes/a.txt");
    assert_eq!(
        details(&got),
        WriteDetails {
            path: "notes/a.txt".into(),
            bytes: 1234,
            created: true,
        }
    );
    assert_eq!(
        fs::read_to_string(fx.root.join("notes/a.txt")).unwrap(),
        content
    );
    assert_eq!(names(&fx.root.join("notes")), ["a.txt"]);
    let deep = write(&fx.ws, json!({ "path": "x/y/z/w.txt", "content": "" }))
        .await
        .unwrap();
    assert_eq!(text(&deep), "Successfully wrote 0 bytes to x/y/z/w.txt");
    assert_eq!(fs::read(fx.root.join("x/y/z/w.txt")).unwrap(), b"");
}

#[tokio::test]
async fn replacing_keeps_permissions_and_leaves_no_temporary() {
    let fx = Fixture::new();
    let path = fx.root.join("script.sh");
    fs::write(&path, "old").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o750)).unwrap();
    let got = write(
        &fx.ws,
        json!({ "path": "script.sh", "content": "#!/bin/sh\n" }),
    )
    .await
    .unwrap();
    assert!(!details(&got).created);
    assert_eq!(fs::read_to_string(&path).unwrap(), "#!/bin/sh\n");
    assert_eq!(mode(&path), 0o750);

    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    write(&fx.ws, json!({ "path": "script.sh", "content": "again" }))
        .await
        .unwrap();
    assert_eq!(mode(&path), 0o600);
    assert!(names(&fx.root)
        .iter()
        .all(|n| !n.starts_with(".oxpi-write")));
}

#[tokio::test]
async fn round_trip_through_read() {
    let fx = Fixture::new();
    let content = "first\nsecond ✓\n\nlast";
    write(&fx.ws, json!({ "path": "sub/r.txt", "content": content }))
        .await
        .unwrap();
    let got = read(&fx.ws, json!({ "path": "sub/r.txt" })).await.unwrap();
    assert_eq!(text(&got), content);
}

#[tokio::test]
async fn writing_through_a_link_inside_replaces_its_target() {
    let fx = Fixture::new();
    write(&fx.ws, json!({ "path": "link_in", "content": "new" }))
        .await
        .unwrap();
    assert_eq!(
        fs::read_to_string(fx.root.join("notes.txt")).unwrap(),
        "new"
    );
    assert!(fs::symlink_metadata(fx.root.join("link_in"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[tokio::test]
async fn refuses_what_is_not_a_writable_regular_file() {
    let fx = Fixture::new();
    fs::write(fx.root.join("ro.txt"), "keep").unwrap();
    fs::set_permissions(fx.root.join("ro.txt"), fs::Permissions::from_mode(0o444)).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(fx.root.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let cases = [
        ("sub", "Cannot write sub: it is a directory"),
        (".", "Cannot write .: it is a directory"),
        ("pipe", "Cannot write pipe: it is a FIFO (named pipe)"),
        ("ro.txt", "Cannot write ro.txt: the file is read-only"),
    ];
    for (path, expected) in cases {
        let got = tokio::time::timeout(
            Duration::from_secs(10),
            write(&fx.ws, json!({ "path": path, "content": "x" })),
        )
        .await
        .expect("write must not hang");
        assert_eq!(got, Err(expected.to_string()), "{path}");
    }
    assert_eq!(fs::read_to_string(fx.root.join("ro.txt")).unwrap(), "keep");
    assert_eq!(
        write(&fx.ws, json!({ "path": "notes.txt/x", "content": "x" })).await,
        Err(r#"Path "notes.txt/x" cannot be resolved: "notes.txt" is not a directory"#.to_string())
    );
    assert_eq!(
        fs::read_to_string(fx.root.join("notes.txt")).unwrap(),
        "hello\n"
    );
}

#[tokio::test]
async fn absolute_path_inside_the_root() {
    let fx = Fixture::new();
    let path = fx.root.join("abs.txt").display().to_string();
    let got = write(&fx.ws, json!({ "path": path, "content": "abc" }))
        .await
        .unwrap();
    assert_eq!(text(&got), format!("Successfully wrote 3 bytes to {path}"));
    assert_eq!(details(&got).path, "abs.txt");
}

#[tokio::test]
async fn unknown_arguments_fail_validation() {
    let fx = Fixture::new();
    for args in [
        json!({ "path": "a.txt" }),
        json!({ "path": "a.txt", "content": "x", "append": true }),
        json!({ "path": "a.txt", "content": ["x"] }),
    ] {
        let err = write(&fx.ws, args.clone()).await.unwrap_err();
        assert!(
            err.starts_with("Validation failed for tool \"write\""),
            "{args}: {err}"
        );
    }
    assert!(!fx.root.join("a.txt").exists());
}

/// The (uid, gid, mode) of `path`.
fn owner_and_mode(path: &std::path::Path) -> (u32, u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(path).unwrap();
    (meta.uid(), meta.gid(), meta.mode() & 0o7777)
}

/// A file of another user, replaced by `edit` and by `write` as root, keeps its owner, group and
/// mode (set-user-ID bit included). Needs root to give the file away; the machine runs as root.
#[tokio::test]
async fn replacing_keeps_the_owner_group_and_mode() {
    let fx = Fixture::new();
    let probe = fx.root.join("probe");
    fs::write(&probe, "").unwrap();
    if owner_and_mode(&probe).0 != 0 {
        eprintln!("skipped: only root can give a file to another user");
        return;
    }
    for mode in [0o640, 0o4750] {
        let path = fx.root.join("theirs.txt");
        fs::write(&path, "one\n").unwrap();
        std::os::unix::fs::chown(&path, Some(4321), Some(4321)).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        edit(
            &fx.ws,
            json!({"path": "theirs.txt", "edits": [{"oldText": "one", "newText": "two"}]}),
        )
        .await
        .unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "two\n");
        assert_eq!(owner_and_mode(&path), (4321, 4321, mode), "after edit");
        write(&fx.ws, json!({"path": "theirs.txt", "content": "three\n"}))
            .await
            .unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "three\n");
        assert_eq!(owner_and_mode(&path), (4321, 4321, mode), "after write");
    }
    // A new file is the process's.
    write(&fx.ws, json!({"path": "mine.txt", "content": "x"}))
        .await
        .unwrap();
    assert_eq!(owner_and_mode(&fx.root.join("mine.txt")).0, 0);
}

/// Where the child of `a_user_who_may_not_give_a_file_away_keeps_it` works.
const CHILD_ROOT: &str = "OXPI_TOOLS_TEST_CHILD_ROOT";

/// As a user who may not give a file away (uid and gid 4321, no other group: a child process
/// started by root), `edit` and `write` replace root's set-user-ID files: the refusal of `fchown`
/// is not an error, the files become the user's, without the set-user-ID bit.
#[tokio::test]
async fn a_user_who_may_not_give_a_file_away_keeps_it() {
    use std::os::unix::process::CommandExt;
    let base = tempfile::tempdir().unwrap();
    if owner_and_mode(base.path()).0 != 0 {
        eprintln!("skipped: only root can start a process as another user");
        return;
    }
    fs::set_permissions(base.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let root = fs::canonicalize(base.path()).unwrap().join("root");
    fs::create_dir(&root).unwrap();
    std::os::unix::fs::chown(&root, Some(4321), Some(4321)).unwrap();
    for name in ["edited.txt", "written.txt"] {
        fs::write(root.join(name), "one\n").unwrap();
        fs::set_permissions(root.join(name), fs::Permissions::from_mode(0o4644)).unwrap();
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_replaces_files_as_another_user",
            "--ignored",
        ])
        .env(CHILD_ROOT, &root)
        .uid(4321)
        .gid(4321)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        fs::read_to_string(root.join("edited.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        fs::read_to_string(root.join("written.txt")).unwrap(),
        "three\n"
    );
    for name in ["edited.txt", "written.txt"] {
        assert_eq!(
            owner_and_mode(&root.join(name)),
            (4321, 4321, 0o644),
            "{name}"
        );
    }
}

/// Run by `a_user_who_may_not_give_a_file_away_keeps_it` as another user; does nothing alone.
#[tokio::test]
#[ignore = "run as another user by a_user_who_may_not_give_a_file_away_keeps_it"]
async fn child_replaces_files_as_another_user() {
    let Some(root) = std::env::var_os(CHILD_ROOT) else {
        return;
    };
    let ws = oxpi_tools::Workspace::new(root).unwrap();
    edit(
        &ws,
        json!({"path": "edited.txt", "edits": [{"oldText": "one", "newText": "two"}]}),
    )
    .await
    .unwrap();
    write(&ws, json!({"path": "written.txt", "content": "three\n"}))
        .await
        .unwrap();
}
