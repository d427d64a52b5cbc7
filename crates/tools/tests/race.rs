//! A local attacker swaps a directory inside the root with a symbolic link to a directory outside
//! (`renameat2(RENAME_EXCHANGE)`, atomic) in a loop while the agent writes under it. Whatever the
//! timing, nothing may appear outside the root and no temporary file may be left anywhere; and
//! `find` and `grep` walking under it never list a name from outside.

#![cfg(target_os = "linux")]
// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use oxpi_tools::{find_tool, grep_tool, write_tool, Workspace};
use rustix::fs::{renameat_with, RenameFlags, CWD};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// How long the attacker swaps while the writers write.
const SWAP_FOR: Duration = Duration::from_secs(3);

/// Every path under `dir` (files, directories and links), sorted.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if fs::symlink_metadata(&path).unwrap().is_dir() {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Fails naming how many `paths` there are and the first few.
fn assert_none(what: &str, paths: &[PathBuf]) {
    assert!(
        paths.is_empty(),
        "{} {what}, e.g. {:?}",
        paths.len(),
        &paths[..paths.len().min(5)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swapping_a_directory_for_a_link_never_leads_a_write_outside() {
    let base = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(base.path()).unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    fs::create_dir_all(root.join("d/existing")).unwrap();
    fs::create_dir_all(outside.join("existing")).unwrap();
    symlink(&outside, root.join("swap")).unwrap();
    let ws = Workspace::new(&root).unwrap();
    let outside_before = tree(&outside);

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        let (a, b) = (root.join("d"), root.join("swap"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };

    let tool = write_tool(ws).unwrap();
    let deadline = Instant::now() + SWAP_FOR;
    let mut writers = Vec::new();
    for writer in 0..4 {
        let tool = tool.clone();
        writers.push(tokio::spawn(async move {
            let (mut ok, mut refused) = (0usize, 0usize);
            let mut n = 0usize;
            while Instant::now() < deadline {
                n += 1;
                let path = match n % 3 {
                    0 => format!("d/w{writer}-{n}.txt"),
                    1 => format!("d/existing/w{writer}-{n}.txt"),
                    _ => format!("d/new{writer}-{n}/deep/w.txt"),
                };
                let args = json!({ "path": path, "content": "written by the agent" });
                let serde_json::Value::Object(args) = args else {
                    unreachable!()
                };
                let result = tool
                    .execute("call", args, CancellationToken::new(), Arc::new(|_| {}))
                    .await;
                match result {
                    Ok(_) => ok += 1,
                    Err(_) => refused += 1,
                }
            }
            (ok, refused)
        }));
    }
    let (mut ok, mut refused) = (0, 0);
    for writer in writers {
        let (o, r) = writer.await.unwrap();
        ok += o;
        refused += r;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    eprintln!(
        "{} swaps, {ok} writes done, {refused} refused",
        swaps.load(Ordering::Relaxed)
    );

    assert!(ok > 0, "no write succeeded during the race");
    let leaked: Vec<PathBuf> = tree(&outside)
        .into_iter()
        .filter(|p| !outside_before.contains(p))
        .collect();
    assert_none("paths appeared outside the root", &leaked);
    let temporaries: Vec<PathBuf> = tree(&base)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".oxpi-write-"))
        .collect();
    assert_none("temporary files were left", &temporaries);
}

/// Swaps `a` and `b` (`renameat2(RENAME_EXCHANGE)`) until `stop`; returns the number of swaps.
fn swap_until(stop: Arc<AtomicBool>, a: PathBuf, b: PathBuf) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
            swaps += 1;
        }
        swaps
    })
}

/// The text of a tool call's result, or its error.
async fn run(tool: &oxpi_agent_core::AgentToolHandle, args: serde_json::Value) -> String {
    let serde_json::Value::Object(args) = args else {
        unreachable!()
    };
    match tool
        .execute("call", args, CancellationToken::new(), Arc::new(|_| {}))
        .await
    {
        Ok(result) => match result.content.as_slice() {
            [oxpi_ai::UserContent::Text(t)] => t.text.clone(),
            other => panic!("expected one text block, got {other:?}"),
        },
        Err(e) => format!("ERROR {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swapping_a_directory_for_a_link_never_lets_find_or_grep_list_outside() {
    let base = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(base.path()).unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    for i in 0..20 {
        let inside = root.join(format!("d/sub{}/inside-{i}.txt", i % 4));
        fs::create_dir_all(inside.parent().unwrap()).unwrap();
        fs::write(&inside, "needle inside\n").unwrap();
        let out = outside.join(format!("sub{}/OUTSIDE-{i}.txt", i % 4));
        fs::create_dir_all(out.parent().unwrap()).unwrap();
        fs::write(&out, "needle OUTSIDE\n").unwrap();
    }
    symlink(&outside, root.join("swap")).unwrap();
    let ws = Workspace::new(&root).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = swap_until(stop.clone(), root.join("d"), root.join("swap"));
    let (find, grep) = (find_tool(ws.clone()).unwrap(), grep_tool(ws).unwrap());
    let deadline = Instant::now() + SWAP_FOR;
    let (mut calls, mut listed_inside, mut leaks) = (0usize, 0usize, Vec::new());
    while Instant::now() < deadline {
        calls += 1;
        for text in [
            run(&find, json!({ "pattern": "*.txt" })).await,
            run(&grep, json!({ "pattern": "needle" })).await,
        ] {
            listed_inside += usize::from(text.contains("inside-"));
            leaks.extend(
                text.lines()
                    .filter(|line| line.contains("OUTSIDE"))
                    .map(PathBuf::from),
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!("{swaps} swaps, {calls} rounds of find and grep, {listed_inside} listed inside");
    assert!(
        listed_inside > 0,
        "no walk saw the directory during the race"
    );
    assert_none("names from outside were listed", &leaks);
}
