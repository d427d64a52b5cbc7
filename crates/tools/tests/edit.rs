//! The `edit` tool through its handle, as an agent calls it: exact and fuzzy replacements, pi's
//! argument shapes and error texts, line endings, byte-order marks, permissions, diffs.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;

use common::{edit, text, Fixture};
use oxpi_agent_core::AgentToolResult;
use oxpi_tools::{EditDetails, Workspace};
use serde_json::json;

fn details(result: &AgentToolResult) -> EditDetails {
    serde_json::from_value(result.details.clone().unwrap()).unwrap()
}

#[tokio::test]
async fn one_replacement_with_its_diff() {
    let fx = Fixture::new();
    fs::write(fx.root.join("f.txt"), "one\ntwo\nthree\n").unwrap();
    let got = edit(
        &fx.ws,
        json!({"path": "f.txt", "edits": [{"oldText": "two", "newText": "TWO"}]}),
    )
    .await
    .unwrap();
    assert_eq!(text(&got), "Successfully replaced 1 block(s) in f.txt.");
    assert_eq!(
        fs::read_to_string(fx.root.join("f.txt")).unwrap(),
        "one\nTWO\nthree\n"
    );
    assert_eq!(
        details(&got),
        EditDetails {
            path: "f.txt".into(),
            diff: " 1 one\n-2 two\n+2 TWO\n 3 three".into(),
            patch: "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n".into(),
            first_changed_line: 2,
        }
    );
}

#[tokio::test]
async fn several_edits_are_matched_against_the_original() {
    let fx = Fixture::new();
    fs::write(fx.root.join("f.txt"), "a = 1\nb = 2\nc = 3\n").unwrap();
    // The second oldText exists only in the original: edits do not see each other.
    let got = edit(
        &fx.ws,
        json!({"path": "f.txt", "edits": [
            {"oldText": "c = 3", "newText": "c = 30"},
            {"oldText": "a = 1\nb", "newText": "a = 10\nbb"},
        ]}),
    )
    .await
    .unwrap();
    assert_eq!(text(&got), "Successfully replaced 2 block(s) in f.txt.");
    assert_eq!(
        fs::read_to_string(fx.root.join("f.txt")).unwrap(),
        "a = 10\nbb = 2\nc = 30\n"
    );
}

#[tokio::test]
async fn crlf_files_stay_crlf_and_keep_their_bom() {
    let fx = Fixture::new();
    let path = fx.root.join("win.txt");
    fs::write(&path, "\u{feff}first\r\nsecond\r\nthird\r\n").unwrap();
    edit(
        &fx.ws,
        json!({"path": "win.txt", "edits": [{"oldText": "first\nsecond", "newText": "1st\n2nd\nextra"}]}),
    )
    .await
    .unwrap();
    assert_eq!(
        fs::read(&path).unwrap(),
        "\u{feff}1st\r\n2nd\r\nextra\r\nthird\r\n".as_bytes()
    );
    // Mixed endings: only the replaced text changes; its breaks follow its own line.
    fs::write(&path, "a\r\nb\nc\n").unwrap();
    edit(
        &fx.ws,
        json!({"path": "win.txt", "edits": [{"oldText": "b", "newText": "B\nB2"}]}),
    )
    .await
    .unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"a\r\nB\nB2\nc\n");
}

#[tokio::test]
async fn fuzzy_matches_ignore_trailing_space_and_typography() {
    let fx = Fixture::new();
    let path = fx.root.join("q.txt");
    fs::write(
        &path,
        "say(“hello”);   \nx – y\u{a0}z\nuntouched “quote”  \n",
    )
    .unwrap();
    edit(
        &fx.ws,
        json!({"path": "q.txt", "edits": [
            {"oldText": "say(\"hello\");\nx - y z", "newText": "say(\"bye\");\nx - y z"},
        ]}),
    )
    .await
    .unwrap();
    // Only the matched text is replaced; the untouched line keeps its bytes.
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "say(\"bye\");\nx - y z\nuntouched “quote”  \n"
    );
}

/// Occurrences that overlap count, exactly and in the fuzzy view: an edit of `aa` in `aaa` could
/// mean either place, so it is refused as ambiguous and the file is left alone.
#[tokio::test]
async fn overlapping_occurrences_make_an_edit_ambiguous() {
    let fx = Fixture::new();
    let cases = [
        ("aaa", "aa", 2),
        ("}\n}\n}\n", "}\n}", 2),
        ("abababa", "aba", 3),
        // No exact match; in the fuzzy view (typographic quotes folded) `x'x` is at 0 and 2.
        ("x\u{2019}x\u{2019}x", "x'x", 2),
    ];
    for (content, old_text, count) in cases {
        fs::write(fx.root.join("f.txt"), content).unwrap();
        let got = edit(
            &fx.ws,
            json!({"path": "f.txt", "edits": [{"oldText": old_text, "newText": "X"}]}),
        )
        .await;
        assert_eq!(
            got.map(|r| text(&r).to_string()),
            Err(format!(
                "Found {count} occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
            )),
            "{old_text:?} in {content:?}"
        );
        assert_eq!(fs::read_to_string(fx.root.join("f.txt")).unwrap(), content);
    }
    // Among several edits, the message names the edit.
    fs::write(fx.root.join("f.txt"), "one\naaa\n").unwrap();
    let got = edit(
        &fx.ws,
        json!({"path": "f.txt", "edits": [
            {"oldText": "one", "newText": "1"}, {"oldText": "aa", "newText": "b"},
        ]}),
    )
    .await;
    assert_eq!(
        got.map(|r| text(&r).to_string()),
        Err("Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique.".to_string())
    );
}

#[tokio::test]
async fn errors_are_pis() {
    let fx = Fixture::new();
    fs::write(fx.root.join("f.txt"), "one\ntwo\ntwo\nthree\n").unwrap();
    let cases = [
        (json!([]), "Edit tool input is invalid. edits must contain at least one replacement."),
        (json!([{"oldText": "", "newText": "x"}]), "oldText must not be empty in f.txt."),
        (
            json!([{"oldText": "four", "newText": "4"}]),
            "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines.",
        ),
        (
            json!([{"oldText": "one", "newText": "1"}, {"oldText": "four", "newText": "4"}]),
            "Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines.",
        ),
        (
            json!([{"oldText": "two", "newText": "2"}]),
            "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique.",
        ),
        (
            json!([{"oldText": "one\ntwo", "newText": "x"}, {"oldText": "one", "newText": "y"}]),
            "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions.",
        ),
        (
            json!([{"oldText": "three", "newText": "three"}]),
            "No changes made to f.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.",
        ),
        (
            json!([{"oldText": "one", "newText": "one"}, {"oldText": "three", "newText": "three"}]),
            "No changes made to f.txt. The replacements produced identical content.",
        ),
    ];
    for (edits, expected) in cases {
        let got = edit(&fx.ws, json!({"path": "f.txt", "edits": edits})).await;
        assert_eq!(
            got.map(|r| text(&r).to_string()),
            Err(expected.to_string()),
            "{edits}"
        );
    }
    assert_eq!(
        fs::read_to_string(fx.root.join("f.txt")).unwrap(),
        "one\ntwo\ntwo\nthree\n"
    );
}

#[tokio::test]
async fn older_argument_shapes_are_accepted() {
    let fx = Fixture::new();
    let path = fx.root.join("f.txt");
    for (before, args, after) in [
        // pi 0.58: one oldText/newText at the top.
        (
            "v0",
            json!({"path": "f.txt", "oldText": "v0", "newText": "v1"}),
            "v1",
        ),
        // edits as one object, and as a JSON string.
        (
            "v0",
            json!({"path": "f.txt", "edits": {"oldText": "v0", "newText": "v2"}}),
            "v2",
        ),
        (
            "v0",
            json!({"path": "f.txt", "edits": "[{\"oldText\":\"v0\",\"newText\":\"v3\"}]"}),
            "v3",
        ),
        // Both: the top-level pair is added to the list.
        (
            "v0\nx",
            json!({"path": "f.txt", "edits": [{"oldText": "x", "newText": "y"}], "oldText": "v0", "newText": "v4"}),
            "v4\ny",
        ),
    ] {
        fs::write(&path, before).unwrap();
        edit(&fx.ws, args.clone()).await.unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), after, "{args}");
    }
    // Only one of the pair is not enough.
    let err = edit(&fx.ws, json!({"path": "f.txt", "oldText": "v4"}))
        .await
        .unwrap_err();
    assert!(
        err.starts_with("Validation failed for tool \"edit\""),
        "{err}"
    );
}

#[tokio::test]
async fn what_cannot_be_edited() {
    let fx = Fixture::new();
    fs::write(fx.root.join("ro.txt"), "keep").unwrap();
    fs::set_permissions(fx.root.join("ro.txt"), fs::Permissions::from_mode(0o444)).unwrap();
    fs::write(fx.root.join("bin.dat"), b"\xff\xfe\x00x").unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(fx.root.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let big = fs::File::create(fx.root.join("big.sql")).unwrap();
    big.set_len(oxpi_tools::MAX_EDIT_BYTES + 1).unwrap();
    let one = |path: &str| json!({"path": path, "edits": [{"oldText": "keep", "newText": "x"}]});
    for (path, expected) in [
        ("missing.txt", "File not found: missing.txt"),
        ("nodir/missing.txt", "File not found: nodir/missing.txt"),
        ("sub", "Cannot edit sub: it is a directory"),
        ("ro.txt", "Cannot edit ro.txt: the file is read-only"),
        (
            "bin.dat",
            "Cannot edit bin.dat: the file is not valid UTF-8 text",
        ),
    ] {
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), edit(&fx.ws, one(path)))
            .await
            .expect("edit must not block");
        assert_eq!(
            got.map(|r| text(&r).to_string()),
            Err(expected.to_string()),
            "{path}"
        );
    }
    assert_eq!(fs::read_to_string(fx.root.join("ro.txt")).unwrap(), "keep");
}

#[tokio::test]
async fn permissions_are_kept_and_no_temporary_is_left() {
    let fx = Fixture::new();
    let path = fx.root.join("run.sh");
    fs::write(&path, "echo one\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
    edit(
        &fx.ws,
        json!({"path": "run.sh", "edits": [{"oldText": "one", "newText": "two"}]}),
    )
    .await
    .unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "echo two\n");
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o751
    );
    let leftovers: Vec<_> = fs::read_dir(&fx.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".oxpi-write-"))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new());
}

#[tokio::test]
async fn an_edit_through_a_link_inside_changes_its_target() {
    let fx = Fixture::new();
    // link_in -> notes.txt
    edit(
        &fx.ws,
        json!({"path": "link_in", "edits": [{"oldText": "hello", "newText": "bye"}]}),
    )
    .await
    .unwrap();
    assert_eq!(
        fs::read_to_string(fx.root.join("notes.txt")).unwrap(),
        "bye\n"
    );
    assert!(fs::symlink_metadata(fx.root.join("link_in"))
        .unwrap()
        .file_type()
        .is_symlink());
}

/// Twenty edits of one file at once (an agent's parallel tool calls): each reads, changes and
/// writes the file; none may undo another.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_of_one_file_all_land() {
    let fx = Fixture::new();
    let original: String = (0..20).map(|i| format!("line {i}\n")).collect();
    fs::write(fx.root.join("f.txt"), &original).unwrap();
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let ws = fx.ws.clone();
            tokio::spawn(async move {
                let args = json!({"path": "f.txt", "edits": [
                    {"oldText": format!("line {i}\n"), "newText": format!("LINE {i}\n")},
                ]});
                edit(&ws, args).await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let expected: String = (0..20).map(|i| format!("LINE {i}\n")).collect();
    assert_eq!(fs::read_to_string(fx.root.join("f.txt")).unwrap(), expected);
}

/// Sixty edits of one file at once through two `Workspace` values made separately on the same
/// root (one through a link to it): each adds its own line, and every one must be in the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn edits_through_two_workspaces_of_one_root_all_land() {
    let fx = Fixture::new();
    fs::write(fx.root.join("f.txt"), "end\n").unwrap();
    let other = Workspace::new(fx.base().join("alias")).unwrap();
    let tasks: Vec<_> = (0..60)
        .map(|i| {
            let ws = if i % 2 == 0 {
                fx.ws.clone()
            } else {
                other.clone()
            };
            tokio::spawn(async move {
                let args = json!({"path": "f.txt", "edits": [
                    {"oldText": "end\n", "newText": format!("line {i}\nend\n")},
                ]});
                edit(&ws, args).await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let text = fs::read_to_string(fx.root.join("f.txt")).unwrap();
    let missing: Vec<usize> = (0..60)
        .filter(|i| !text.lines().any(|line| line == format!("line {i}")))
        .collect();
    assert!(
        missing.is_empty(),
        "{} edits lost: {missing:?}",
        missing.len()
    );
    assert_eq!(text.lines().count(), 61);
}
