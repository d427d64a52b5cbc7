//! Escape attempts: each is refused by every tool with a message naming the path, and nothing
//! outside the root is read or written.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::fs;

use common::{edit, find, grep, ls, read, text, write, Fixture, SECRET};
use oxpi_tools::PathError;
use serde_json::json;

/// Paths that must be refused, with `{base}` and `{root}` standing for the fixture's
/// directories.
const ESCAPES: &[&str] = &[
    "..",
    "../",
    "../outside/secret.txt",
    "./../outside/secret.txt",
    "sub/../../outside/secret.txt",
    "sub/../../root-evil/secret.txt",
    "{base}/outside/secret.txt",
    "{root}-evil/secret.txt",
    "{root}/../outside/secret.txt",
    "{root}/../root-evil/secret.txt",
    "/",
    "/etc/passwd",
    "link_out/secret.txt",
    "link_out/../outside/secret.txt",
    "link_out/new.txt",
    "link_out/deep/new.txt",
    "link_secret",
    "dangling_out",
    "sub/up/outside/secret.txt",
    "sub/up/root-evil/secret.txt",
    "{base}/alias/link_secret",
    "{base}/alias/../outside/secret.txt",
];

fn expand(path: &str, fx: &Fixture) -> String {
    path.replace("{base}", &fx.base().display().to_string())
        .replace("{root}", &fx.root.display().to_string())
}

#[tokio::test]
async fn every_escape_is_refused_by_every_tool() {
    let fx = Fixture::new();
    let before = fx.outside_snapshot();
    for template in ESCAPES {
        let path = expand(template, &fx);
        let expected = format!("Path {path:?} is outside the workspace");
        assert!(
            matches!(fx.ws.resolve(&path), Err(PathError::Outside { .. })),
            "resolve({path})"
        );
        let got = read(&fx.ws, json!({ "path": path })).await;
        assert_eq!(got, Err(expected.clone()), "read {path}");
        let got = write(&fx.ws, json!({ "path": path, "content": "pwned" })).await;
        assert_eq!(got, Err(expected.clone()), "write {path}");
        let replace = json!([{"oldText": "TOP SECRET", "newText": "pwned"}]);
        let got = edit(&fx.ws, json!({ "path": path, "edits": replace })).await;
        assert_eq!(got, Err(expected.clone()), "edit {path}");
        let got = ls(&fx.ws, json!({ "path": path })).await;
        assert_eq!(got, Err(expected.clone()), "ls {path}");
        let got = find(&fx.ws, json!({ "pattern": "*", "path": path })).await;
        assert_eq!(got, Err(expected.clone()), "find {path}");
        let got = grep(&fx.ws, json!({ "pattern": "SECRET", "path": path })).await;
        assert_eq!(got, Err(expected), "grep {path}");
    }
    assert_eq!(fx.outside_snapshot(), before);
}

#[tokio::test]
async fn empty_and_nul_paths_are_refused() {
    let fx = Fixture::new();
    let cases = [
        ("", r#"Path "" is outside the workspace: the path is empty"#),
        (
            "notes.txt\0../../x",
            r#"Path "notes.txt\0../../x" is outside the workspace: paths cannot contain NUL bytes"#,
        ),
    ];
    for (path, expected) in cases {
        assert_eq!(
            read(&fx.ws, json!({ "path": path })).await,
            Err(expected.to_string())
        );
        assert_eq!(
            write(&fx.ws, json!({ "path": path, "content": "x" })).await,
            Err(expected.to_string())
        );
    }
}

#[tokio::test]
async fn symlink_loops_are_refused() {
    let fx = Fixture::new();
    let expected = r#"Path "loop_a/x" cannot be resolved: too many levels of symbolic links"#;
    assert_eq!(
        read(&fx.ws, json!({ "path": "loop_a/x" })).await,
        Err(expected.to_string())
    );
    assert_eq!(
        write(&fx.ws, json!({ "path": "loop_a/x", "content": "x" })).await,
        Err(expected.to_string())
    );
}

#[test]
fn paths_inside_resolve_to_canonical_paths() {
    let fx = Fixture::new();
    let root = &fx.root;
    let base = fx.base().display().to_string();
    let cases = [
        ("notes.txt", root.join("notes.txt")),
        ("./notes.txt", root.join("notes.txt")),
        ("sub/../notes.txt", root.join("notes.txt")),
        ("sub//./../notes.txt", root.join("notes.txt")),
        ("link_in", root.join("notes.txt")),
        ("dangling_in", root.join("new_inside.txt")),
        ("new/dir/file.txt", root.join("new/dir/file.txt")),
        ("sub/up/root/notes.txt", root.join("notes.txt")),
        ("missing/../notes.txt", root.join("notes.txt")),
        (".", root.clone()),
        ("~", root.join("~")),
    ];
    for (path, expected) in cases {
        assert_eq!(fx.ws.resolve(path).unwrap(), expected, "{path}");
    }
    let absolute = [
        format!("{}/notes.txt", root.display()),
        format!("{base}/alias/notes.txt"),
        format!("{base}/root-evil/../root/notes.txt"),
    ];
    for path in absolute {
        assert_eq!(
            fx.ws.resolve(&path).unwrap(),
            root.join("notes.txt"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn links_inside_the_root_are_followed() {
    let fx = Fixture::new();
    let got = read(&fx.ws, json!({ "path": "link_in" })).await.unwrap();
    assert_eq!(text(&got), "hello\n");
    let got = write(&fx.ws, json!({ "path": "dangling_in", "content": "made" })).await;
    assert_eq!(
        got.map(|r| text(&r).to_string()),
        Ok("Successfully wrote 4 bytes to dangling_in".to_string())
    );
    assert_eq!(
        fs::read_to_string(fx.root.join("new_inside.txt")).unwrap(),
        "made"
    );
    // The link itself is left as it was.
    assert!(fs::symlink_metadata(fx.root.join("dangling_in"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[tokio::test]
async fn refusals_do_not_leak_content() {
    let fx = Fixture::new();
    for path in ["link_secret", "../outside/secret.txt"] {
        let err = read(&fx.ws, json!({ "path": path })).await.unwrap_err();
        assert!(!err.contains(SECRET), "{err}");
    }
}

/// A file followed by more path (`/`, `/.`, `/..`, a name) is "not a directory" to the OS; both
/// tools refuse it the same way instead of reading or writing the file itself.
#[tokio::test]
async fn a_file_used_as_a_directory_is_refused() {
    let fx = Fixture::new();
    for (path, component) in [
        ("notes.txt/.", "notes.txt"),
        ("notes.txt/", "notes.txt"),
        ("notes.txt/./", "notes.txt"),
        ("./notes.txt/.", "notes.txt"),
        ("notes.txt/..", "notes.txt"),
        ("notes.txt/../notes.txt", "notes.txt"),
        ("notes.txt/x", "notes.txt"),
        ("link_in/.", "notes.txt"),
        ("sub/../notes.txt/.", "notes.txt"),
    ] {
        let expected =
            format!("Path {path:?} cannot be resolved: {component:?} is not a directory");
        assert!(
            matches!(fx.ws.resolve(path), Err(PathError::NotADirectory { .. })),
            "resolve({path})"
        );
        assert_eq!(
            read(&fx.ws, json!({ "path": path })).await,
            Err(expected.clone()),
            "read {path}"
        );
        let got = write(&fx.ws, json!({ "path": path, "content": "x" })).await;
        assert_eq!(got, Err(expected), "write {path}");
    }
    assert_eq!(
        fs::read_to_string(fx.root.join("notes.txt")).unwrap(),
        "hello\n"
    );
    // A directory may end with `/` or `/.`; a new file may not.
    assert_eq!(fx.ws.resolve("sub/.").unwrap(), fx.root.join("sub"));
    assert_eq!(
        write(&fx.ws, json!({ "path": "sub/new.txt/", "content": "x" })).await,
        Err(
            r#"Cannot write sub/new.txt/: the path ends with "/", so it names a directory"#
                .to_string()
        )
    );
    assert!(!fx.root.join("sub/new.txt").exists());
}

/// Paths longer than the OS allows are refused before any work, quoting only their start.
#[tokio::test]
async fn overlong_paths_are_refused_up_front() {
    let fx = Fixture::new();
    let at_limit = "a/".repeat(2047) + "b";
    assert_eq!(at_limit.len(), oxpi_tools::MAX_PATH_BYTES);
    assert_eq!(fx.ws.resolve(&at_limit).unwrap(), fx.root.join(&at_limit));
    for len in [oxpi_tools::MAX_PATH_BYTES + 1, 512 * 1024] {
        let path = "a/".repeat(len / 2) + &"b".repeat(len % 2);
        assert_eq!(path.len(), len);
        let expected = format!(
            "Path {:?}… cannot be resolved: it is {len} bytes long, more than the 4095 bytes the OS allows",
            &path[..100]
        );
        assert!(matches!(
            fx.ws.resolve(&path),
            Err(PathError::TooLong { len: l, .. }) if l == len
        ));
        assert_eq!(
            read(&fx.ws, json!({ "path": path })).await,
            Err(expected.clone())
        );
        let got = write(&fx.ws, json!({ "path": path, "content": "x" })).await;
        assert_eq!(got, Err(expected));
    }
    assert!(!fx.root.join("a").exists());
}

#[tokio::test]
async fn an_unconfined_workspace_allows_any_path_and_read_roots_only_reading() {
    let fx = Fixture::new();
    let secret = fx.base().join("outside/secret.txt").display().to_string();
    // pi's tools (`--sandbox none`): any path, relative ones from the root.
    let open = fx.ws.clone().unconfined();
    assert!(!open.is_confined());
    let got = read(&open, json!({ "path": secret })).await.unwrap();
    assert_eq!(text(&got), SECRET);
    let got = read(&open, json!({ "path": "../outside/secret.txt" }))
        .await
        .unwrap();
    assert_eq!(text(&got), SECRET);
    let made = fx.base().join("outside/made.txt");
    write(
        &open,
        json!({ "path": made.display().to_string(), "content": "x" }),
    )
    .await
    .unwrap();
    assert_eq!(fs::read_to_string(&made).unwrap(), "x");
    // A read-only root: `read` may read beneath it, writing there stays refused.
    let ws = fx
        .ws
        .clone()
        .with_read_root(fx.base().join("outside"))
        .unwrap();
    assert_eq!(ws.read_roots(), [fx.base().join("outside")]);
    let got = read(&ws, json!({ "path": secret })).await.unwrap();
    assert_eq!(text(&got), SECRET);
    let refused = write(&ws, json!({ "path": secret, "content": "pwned" })).await;
    assert_eq!(
        refused,
        Err(format!("Path {secret:?} is outside the workspace"))
    );
    let other = fx.base().join("root-evil/secret.txt").display().to_string();
    let refused = read(&ws, json!({ "path": other })).await;
    assert_eq!(
        refused,
        Err(format!("Path {other:?} is outside the workspace"))
    );
    assert_eq!(
        fs::read_to_string(fx.base().join("outside/secret.txt")).unwrap(),
        SECRET
    );
}

#[tokio::test]
async fn listing_tools_reach_any_path_unconfined_and_read_roots_when_confined() {
    let fx = Fixture::new();
    let outside = fx.base().join("outside");
    let shown = outside.display().to_string();
    let file = outside.join("secret.txt").display().to_string();
    // pi's tools (`--sandbox none`): ls, find and grep take any directory or file.
    let open = fx.ws.clone().unconfined();
    let got = ls(&open, json!({ "path": shown })).await.unwrap();
    assert_eq!(text(&got), "secret.txt");
    let got = ls(&open, json!({ "path": "../outside" })).await.unwrap();
    assert_eq!(text(&got), "secret.txt");
    let got = find(&open, json!({ "pattern": "*.txt", "path": shown }))
        .await
        .unwrap();
    assert_eq!(text(&got), "secret.txt");
    let got = grep(&open, json!({ "pattern": "SECRET", "path": shown }))
        .await
        .unwrap();
    assert_eq!(text(&got), format!("secret.txt:1: {SECRET}"));
    let got = grep(&open, json!({ "pattern": "SECRET", "path": file }))
        .await
        .unwrap();
    assert_eq!(text(&got), format!("secret.txt:1: {SECRET}"));
    // Inside the root, nothing changes.
    let got = ls(&open, json!({ "path": "sub" })).await.unwrap();
    assert_eq!(text(&got), "up/");
    // Confined with a read-only root: the listing tools read beneath it, nothing beside it.
    let ws = fx.ws.clone().with_read_root(&outside).unwrap();
    let got = ls(&ws, json!({ "path": shown })).await.unwrap();
    assert_eq!(text(&got), "secret.txt");
    let got = find(&ws, json!({ "pattern": "*", "path": shown }))
        .await
        .unwrap();
    assert_eq!(text(&got), "secret.txt");
    let got = grep(&ws, json!({ "pattern": "TOP", "path": file }))
        .await
        .unwrap();
    assert_eq!(text(&got), format!("secret.txt:1: {SECRET}"));
    let beside = fx.base().join("root-evil").display().to_string();
    assert_eq!(
        ls(&ws, json!({ "path": beside })).await,
        Err(format!("Path {beside:?} is outside the workspace"))
    );
    // The default (confined, no read root) still refuses them all.
    assert_eq!(
        ls(&fx.ws, json!({ "path": shown })).await,
        Err(format!("Path {shown:?} is outside the workspace"))
    );
}
