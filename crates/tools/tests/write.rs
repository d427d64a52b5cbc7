//! The `write` tool: creating, replacing, permissions, refusals, atomicity.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::{read, text, write, Fixture};
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
