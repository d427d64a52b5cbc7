//! `ls`, `find` and `grep` through their handles: exact outputs, limits and notices, ignore
//! files, links, binary files, FIFOs.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use common::{find, grep, ls, text, Fixture};
use oxpi_tools::{Limits, Workspace};
use serde_json::json;

/// A workspace of its own (the shared fixture's links would be listed everywhere).
struct Tree {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    ws: Workspace,
}

impl Tree {
    /// Files (with content) and directories (ending in `/`) under a fresh root.
    fn new(entries: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        for (path, content) in entries {
            let full = root.join(path);
            if path.ends_with('/') {
                fs::create_dir_all(&full).unwrap();
            } else {
                fs::create_dir_all(full.parent().unwrap()).unwrap();
                fs::write(&full, content).unwrap();
            }
        }
        let ws = Workspace::new(&root).unwrap();
        Self {
            _dir: dir,
            root,
            ws,
        }
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.root.join(rel)
    }
}

async fn out(result: Result<oxpi_agent_core::AgentToolResult, String>) -> String {
    match result {
        Ok(r) => text(&r).to_string(),
        Err(e) => format!("ERROR {e}"),
    }
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn ls_sorts_without_case_and_marks_directories() {
    let t = Tree::new(&[
        ("b.txt", ""),
        ("A.txt", ""),
        (".hidden", ""),
        ("src/", ""),
        ("Zeta/", ""),
        ("c/inner.txt", ""),
    ]);
    symlink(t.path("src"), t.path("link_dir")).unwrap();
    symlink("/etc", t.path("link_out")).unwrap();
    let got = out(ls(&t.ws, json!({})).await).await;
    assert_eq!(
        got,
        ".hidden\nA.txt\nb.txt\nc/\nlink_dir/\nlink_out\nsrc/\nZeta/"
    );
    assert_eq!(
        out(ls(&t.ws, json!({"path": "c"})).await).await,
        "inner.txt"
    );
    assert_eq!(
        out(ls(&t.ws, json!({"path": "src"})).await).await,
        "(empty directory)"
    );
    assert_eq!(
        out(ls(&t.ws, json!({"path": "b.txt"})).await).await,
        "ERROR Not a directory: b.txt"
    );
    assert_eq!(
        out(ls(&t.ws, json!({"path": "nope"})).await).await,
        "ERROR Path not found: nope"
    );
}

#[tokio::test]
async fn ls_limits_entries_and_bytes_with_notices() {
    let names: Vec<String> = (0..30).map(|i| format!("f{i:02}")).collect();
    let entries: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "")).collect();
    let t = Tree::new(&entries);
    let got = out(ls(&t.ws, json!({"limit": 3})).await).await;
    assert_eq!(
        got,
        "f00\nf01\nf02\n\n[3 entries limit reached. Use limit=6 for more]"
    );
    // Exactly the limit: no notice.
    assert_eq!(
        out(ls(&t.ws, json!({"limit": 30})).await)
            .await
            .lines()
            .count(),
        30
    );
    let small =
        t.ws.clone()
            .with_limits(Limits::default().with_max_bytes(10));
    assert_eq!(
        out(ls(&small, json!({})).await).await,
        "f00\nf01\n\n[10B limit reached]"
    );
}

#[tokio::test]
async fn find_matches_globs_as_pi_describes() {
    let t = Tree::new(&[
        ("src/lib.rs", ""),
        ("src/deep/mod.rs", ""),
        ("src/app.spec.ts", ""),
        ("src/a/b/x.spec.ts", ""),
        ("lib/y.spec.ts", ""),
        ("data.json", ""),
        ("conf/app.json", ""),
        ("README.MD", ""),
        ("target/debug/out.rs", ""),
        (".gitignore", "target/\n*.log\n"),
        ("run.log", ""),
        (".git/HEAD", "ref"),
        (".env", ""),
    ]);
    let cases = [
        ("*.rs", "src/deep/mod.rs\nsrc/lib.rs"),
        ("**/*.json", "conf/app.json\ndata.json"),
        ("src/**/*.spec.ts", "src/a/b/x.spec.ts\nsrc/app.spec.ts"),
        ("src/*.rs", "src/lib.rs"),
        ("*.md", "README.MD"),
        ("*.MD", "README.MD"),
        ("*.Md", "No files found matching pattern"),
        ("src", "src/"),
        (".*", ".env\n.gitignore"),
        ("*.log", "No files found matching pattern"),
    ];
    for (pattern, expected) in cases {
        assert_eq!(
            out(find(&t.ws, json!({"pattern": pattern})).await).await,
            expected,
            "{pattern}"
        );
    }
    assert_eq!(
        out(find(&t.ws, json!({"pattern": "*.rs", "path": "src"})).await).await,
        "deep/mod.rs\nlib.rs"
    );
}

#[tokio::test]
async fn find_respects_ignore_files_above_the_search_directory_and_limits() {
    let t = Tree::new(&[
        (".gitignore", "*.tmp\n/src/gen/\n"),
        ("src/a.tmp", ""),
        ("src/gen/g.rs", ""),
        ("src/m.rs", ""),
        ("src/n.rs", ""),
        ("src/o.rs", ""),
    ]);
    assert_eq!(
        out(find(&t.ws, json!({"pattern": "*", "path": "src"})).await).await,
        "m.rs\nn.rs\no.rs"
    );
    assert_eq!(
        out(find(&t.ws, json!({"pattern": "*.rs", "limit": 2})).await).await,
        "src/m.rs\nsrc/n.rs\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    );
    assert_eq!(
        out(find(&t.ws, json!({"pattern": "*.rs", "limit": 3})).await).await,
        "src/m.rs\nsrc/n.rs\nsrc/o.rs"
    );
    assert_eq!(
        out(find(&t.ws, json!({"pattern": "a["})).await).await,
        "ERROR Invalid glob pattern \"a[\": error parsing glob 'a[': unclosed character class; missing ']'"
    );
}

#[tokio::test]
async fn grep_prints_matches_and_context_as_pi() {
    let t = Tree::new(&[
        ("a.txt", "one\nfoo two\nthree\nfour\nfive\nfoo six\nseven\n"),
        ("sub/b.rs", "fn foo() {}\n"),
        ("sub/c.md", "FOO upper\n"),
    ]);
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "foo"})).await).await,
        "a.txt:2: foo two\na.txt:6: foo six\nsub/b.rs:1: fn foo() {}"
    );
    // Context windows are merged: no line twice, no separators.
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "foo", "path": "a.txt", "context": 2})).await).await,
        "a.txt-1- one\na.txt:2: foo two\na.txt-3- three\na.txt-4- four\na.txt-5- five\na.txt:6: foo six\na.txt-7- seven"
    );
    assert_eq!(
        out(grep(
            &t.ws,
            json!({"pattern": "foo", "ignoreCase": true, "glob": "*.md"})
        )
        .await)
        .await,
        "sub/c.md:1: FOO upper"
    );
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "foo", "glob": "!*.txt"})).await).await,
        "sub/b.rs:1: fn foo() {}"
    );
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "foo()", "literal": true})).await).await,
        "sub/b.rs:1: fn foo() {}"
    );
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "foo", "path": "sub"})).await).await,
        "b.rs:1: fn foo() {}"
    );
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "nothing"})).await).await,
        "No matches found"
    );
    assert!(out(grep(&t.ws, json!({"pattern": "foo ("})).await)
        .await
        .starts_with("ERROR regex parse error"));
}

#[tokio::test]
async fn grep_limits_lines_and_skips_binary_and_ignored_files() {
    let long = format!("hit {}", "x".repeat(600));
    let t = Tree::new(&[
        ("a.txt", "hit 1\nhit 2\nhit 3\n"),
        ("b.bin", "hit\0binary\n"),
        ("c.txt", &long),
        (".gitignore", "ignored.txt\n"),
        ("ignored.txt", "hit ignored\n"),
        (".git/config", "hit in git\n"),
    ]);
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "hit", "limit": 2})).await).await,
        "a.txt:1: hit 1\na.txt:2: hit 2\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
    );
    let all = out(grep(&t.ws, json!({"pattern": "hit"})).await).await;
    assert_eq!(
        all,
        format!(
            "a.txt:1: hit 1\na.txt:2: hit 2\na.txt:3: hit 3\nc.txt:1: {}... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]",
            &long[..500]
        )
    );
    // Exactly the limit: no notice.
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "hit \\d", "limit": 3})).await).await,
        "a.txt:1: hit 1\na.txt:2: hit 2\na.txt:3: hit 3"
    );
}

#[tokio::test]
async fn walks_never_read_a_fifo_or_follow_a_link_out() {
    let fx = Fixture::new();
    mkfifo(&fx.root.join("pipe"));
    fs::write(fx.root.join("sub/x.txt"), "TOP SECRET inside\n").unwrap();
    let run = async {
        (
            out(grep(&fx.ws, json!({"pattern": "SECRET"})).await).await,
            out(find(&fx.ws, json!({"pattern": "*secret*"})).await).await,
            out(find(&fx.ws, json!({"pattern": "pipe"})).await).await,
        )
    };
    let (grep_out, find_secret, find_pipe) = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("no walk may block on the FIFO");
    // link_out and link_secret lead outside: listed by name, never followed or read.
    assert_eq!(grep_out, "sub/x.txt:1: TOP SECRET inside");
    assert_eq!(find_secret, "link_secret");
    assert_eq!(find_pipe, "pipe");
}

#[tokio::test]
async fn grep_over_many_files_is_in_name_order_and_stops_at_the_limit() {
    let names: Vec<String> = (0..700)
        .map(|i| format!("d{}/f{i:03}.txt", i % 7))
        .collect();
    let entries: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x hit y\n")).collect();
    let t = Tree::new(&entries);
    let mut sorted = names.clone();
    sorted.sort();
    let expected: Vec<String> = sorted.iter().map(|n| format!("{n}:1: x hit y")).collect();
    // Every file, in walk (name) order, whatever thread searched it.
    let all = out(grep(&t.ws, json!({"pattern": "hit", "limit": 1000})).await).await;
    assert_eq!(all, expected.join("\n"));
    // Cut at 250, across the batches the threads take.
    let cut = out(grep(&t.ws, json!({"pattern": "hit", "limit": 250})).await).await;
    assert_eq!(
        cut,
        format!(
            "{}\n\n[250 matches limit reached. Use limit=500 for more, or refine pattern]",
            expected[..250].join("\n")
        )
    );
}

#[tokio::test]
async fn cancelled_walks_stop_with_operation_aborted() {
    let t = Tree::new(&[("a.txt", "hit\n"), ("b/c.txt", "hit\n")]);
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    for (tool, args) in [
        (
            oxpi_tools::grep_tool(t.ws.clone()).unwrap(),
            json!({"pattern": "hit"}),
        ),
        (
            oxpi_tools::find_tool(t.ws.clone()).unwrap(),
            json!({"pattern": "*"}),
        ),
        (oxpi_tools::ls_tool(t.ws.clone()).unwrap(), json!({})),
    ] {
        let serde_json::Value::Object(args) = args else {
            unreachable!()
        };
        let got = tool
            .execute("c", args, cancel.clone(), common::noop())
            .await
            .map_err(|e| e.to_string());
        assert_eq!(
            got.map(|_| ()),
            Err("Operation aborted".to_string()),
            "{}",
            tool.name()
        );
    }
}

/// Ignore files are read by oxpi only when they are regular files inside the root: a FIFO named
/// `.gitignore` would block a plain open for ever, a link to `/dev/zero` would never end, and a
/// link out would read outside.
#[tokio::test]
async fn ignore_files_that_are_not_regular_files_inside_are_not_read() {
    let t = Tree::new(&[
        ("a/x.txt", "hit\n"),
        ("b/y.txt", "hit\n"),
        ("c/z.txt", "hit\n"),
    ]);
    mkfifo(&t.path("a/.gitignore"));
    symlink("/dev/zero", t.path("b/.ignore")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("rules"), "*\n").unwrap();
    symlink(outside.path().join("rules"), t.path("c/.gitignore")).unwrap();
    let run = async {
        (
            out(find(&t.ws, json!({"pattern": "*.txt"})).await).await,
            out(grep(&t.ws, json!({"pattern": "hit"})).await).await,
        )
    };
    let (found, grepped) = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("an ignore file must not block the walk");
    assert_eq!(found, "a/x.txt\nb/y.txt\nc/z.txt");
    assert_eq!(grepped, "a/x.txt:1: hit\nb/y.txt:1: hit\nc/z.txt:1: hit");
}

/// Searching inside an ignored directory works, as with `rg` and `fd` run there; the ignored
/// directory is still skipped when searching from above.
#[tokio::test]
async fn a_search_directory_inside_an_ignored_one_is_searched() {
    let t = Tree::new(&[
        (".gitignore", "node_modules/\n"),
        ("node_modules/lib/a.js", "foo\n"),
        ("src/b.js", "foo\n"),
    ]);
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "foo", "path": "node_modules/lib"})).await).await,
        "a.js:1: foo"
    );
    assert_eq!(
        out(find(&t.ws, json!({"pattern": "*", "path": "node_modules"})).await).await,
        "lib/\nlib/a.js"
    );
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "foo"})).await).await,
        "src/b.js:1: foo"
    );
}

#[tokio::test]
async fn an_excluding_glob_prunes_directories_too() {
    let t = Tree::new(&[
        ("vendor/a.rs", "foo\n"),
        ("src/vendor.rs", "foo\n"),
        ("src/main.rs", "foo\n"),
    ]);
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "foo", "glob": "!vendor"})).await).await,
        "src/main.rs:1: foo\nsrc/vendor.rs:1: foo"
    );
    assert_eq!(
        out(grep(&t.ws, json!({"pattern": "foo", "glob": "!vendor*"})).await).await,
        "src/main.rs:1: foo"
    );
}

/// A huge limit on a file full of matches keeps only what the output can show.
#[tokio::test]
async fn grep_stops_at_the_byte_limit_whatever_the_limit() {
    let lines: String = (0..5000).map(|i| format!("hit {i}\n")).collect();
    let t = Tree::new(&[("big.txt", &lines), ("z.txt", "hit later\n")]);
    let small =
        t.ws.clone()
            .with_limits(Limits::default().with_max_bytes(64));
    let got = out(grep(
        &small,
        json!({"pattern": "hit", "limit": 100000000u64, "context": 1000000000u64}),
    )
    .await)
    .await;
    assert_eq!(
        got,
        "big.txt:1: hit 0\nbig.txt:2: hit 1\nbig.txt:3: hit 2\n\n[64B limit reached]"
    );
}

/// Directories below the 32 kept open are reopened name by name: a tree 40 deep is walked
/// whole, in order, also after coming back up from the deepest level.
#[tokio::test]
async fn find_walks_trees_deeper_than_the_directories_it_keeps_open() {
    let deep: String = (0..40).map(|i| format!("d{i}/")).collect();
    let middle: String = (0..35).map(|i| format!("d{i}/")).collect();
    let t = Tree::new(&[
        (&format!("{deep}bottom.txt"), "x"),
        (&format!("{middle}e/z.txt"), "x"),
    ]);
    let got = out(find(&t.ws, json!({"pattern": "*.txt"})).await).await;
    assert_eq!(got, format!("{deep}bottom.txt\n{middle}e/z.txt"));
}

/// `grep`'s `glob` overrides the ignore rules as ripgrep's `--glob` (which pi passes) does: an
/// ignored file or directory the glob matches is searched; `!glob` only ever leaves out.
#[tokio::test]
async fn a_glob_overrides_the_ignore_rules_as_ripgreps_does() {
    let t = Tree::new(&[
        (".gitignore", "*.log\nbuild/\n"),
        ("debug.log", "foo\n"),
        ("build/out.txt", "foo\n"),
        ("build/x.log", "foo\n"),
        ("src/a.rs", "foo\n"),
    ]);
    let grep_with = |glob: Option<&str>| {
        let args = match glob {
            Some(glob) => json!({"pattern": "foo", "glob": glob}),
            None => json!({"pattern": "foo"}),
        };
        let ws = t.ws.clone();
        async move { out(grep(&ws, args).await).await }
    };
    assert_eq!(grep_with(None).await, "src/a.rs:1: foo");
    // The ignored file it names is searched; the ignored directory it does not name is not.
    assert_eq!(grep_with(Some("*.log")).await, "debug.log:1: foo");
    // It names the directory too: searched, and the files in it it names.
    assert_eq!(
        grep_with(Some("*")).await,
        "build/out.txt:1: foo\nbuild/x.log:1: foo\ndebug.log:1: foo\nsrc/a.rs:1: foo"
    );
    assert_eq!(grep_with(Some("!*.rs")).await, "No matches found");
    // find's pattern is a filter, as fd's: ignored files stay out.
    assert_eq!(
        out(find(&t.ws, json!({"pattern": "*.log"})).await).await,
        "No files found matching pattern"
    );
}
