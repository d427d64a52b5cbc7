//! Sessions across real processes: a second writer of a file is refused while the first holds
//! it, and `kill -9` during a run of appends loses at most the entry being written.
//!
//! The child is this test binary run again with `OXPI_SESSION_CHILD` set on its command (never
//! on this process), running `child_helper`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use oxpi_session::{LoadIssueKind, SessionError, SessionManager};
use serde_json::{json, Value};

/// Starts this binary as a child doing `role` on the session file `path`.
fn spawn_child(role: &str, path: &Path) -> Child {
    Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", "child_helper", "--nocapture", "--test-threads=1"])
        .env("OXPI_SESSION_CHILD", role)
        .env("OXPI_SESSION_FILE", path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child")
}

/// What the child prints after `@` on a line (libtest may print its own text first), read until `until` says stop (bounded by 60 s).
fn read_marked(child: &mut Child, mut until: impl FnMut(&str) -> bool) -> Vec<String> {
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some((_, rest)) = line.split_once('@') {
                if tx.send(rest.to_string()).is_err() {
                    break;
                }
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut got = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => {
                let stop = until(&line);
                got.push(line);
                if stop {
                    return got;
                }
            }
            Err(_) => break,
        }
    }
    panic!("the child did not report in time; got {got:?}");
}

#[test]
fn child_helper() {
    let Some(role) = std::env::var_os("OXPI_SESSION_CHILD") else {
        return;
    };
    let path = std::env::var_os("OXPI_SESSION_FILE").expect("file");
    let mut s = SessionManager::open(Path::new(&path), None).expect("child open");
    let out = std::io::stdout();
    match role.to_str() {
        Some("hold") => {
            s.append_message(&oxpi_ai::Message::user("child"))
                .expect("append");
            writeln!(out.lock(), "@ready").expect("stdout");
            // Hold the file until the parent closes stdin.
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
        }
        Some("append") => {
            // Long messages so a kill is likely to land mid-write.
            let body = "x".repeat(64 * 1024);
            for i in 0..100_000 {
                let id = s
                    .append_message(&oxpi_ai::Message::user(format!("{i} {body}")))
                    .expect("append");
                writeln!(out.lock(), "@{id}").expect("stdout");
            }
        }
        Some("agent") => run_agent(s),
        _ => panic!("unknown role {role:?}"),
    }
}

/// An agent bound to the session, prompting on and on (a tool call and a reply each time);
/// prints `@` after each message the session has appended.
fn run_agent(session: SessionManager) {
    use oxpi_ai::faux::{FauxProvider, FauxReply};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let faux = FauxProvider::new();
        let mut registry = oxpi_ai::ProviderRegistry::new();
        registry.register(faux.clone());
        let agent = oxpi_agent_core::Agent::new(
            oxpi_agent_core::AgentOptions::new(faux.model()).with_registry(registry),
        );
        let binding = oxpi_session::bind_agent(&agent, session).expect("bind");
        // Listeners run in order: this one after the session's append.
        let _printer = agent.subscribe(|event| {
            if let oxpi_agent_core::AgentEvent::MessageEnd { message } = event {
                writeln!(std::io::stdout().lock(), "@{}", message.role()).expect("stdout");
            }
        });
        for i in 0..100_000 {
            faux.push(FauxReply::new().with_raw_tool_call(
                Some(format!("call-{i}")),
                "missing_tool",
                "{}",
            ));
            faux.push(FauxReply::text("x".repeat(32 * 1024)));
            agent.prompt(format!("turn {i}")).await.expect("prompt");
        }
        drop(binding);
    });
}

fn new_session_file(d: &common::Dirs) -> std::path::PathBuf {
    let mut s = SessionManager::create(&d.cwd, &d.sessions, oxpi_session::NewSessionOptions::new())
        .expect("create");
    s.append_message(&oxpi_ai::Message::user("start"))
        .expect("start");
    s.session_file().expect("file").to_path_buf()
}

#[test]
fn a_second_writer_is_refused_while_another_process_holds_the_file() {
    let d = common::dirs();
    let path = new_session_file(&d);
    let mut child = spawn_child("hold", &path);
    read_marked(&mut child, |l| l == "ready");

    let err = SessionManager::open(&path, None).expect_err("the child holds the lock");
    assert!(matches!(err, SessionError::Locked { .. }), "{err}");
    assert!(
        err.to_string().contains("in use by another writer"),
        "{err}"
    );
    let reader = SessionManager::open_read_only(&path).expect("read-only");
    assert_eq!(
        reader.entries().count(),
        2,
        "the child's entry is visible to a reader"
    );

    drop(child.stdin.take());
    assert!(child.wait().expect("wait").success());
    let mut s = SessionManager::open(&path, None).expect("free again");
    s.append_message(&oxpi_ai::Message::user("parent"))
        .expect("append");
    assert_eq!(common::lines(&path).len(), 4);
}

#[test]
fn two_managers_in_one_process_do_not_both_write() {
    let d = common::dirs();
    let path = new_session_file(&d);
    let _first = SessionManager::open(&path, None).expect("first");
    let err = SessionManager::open(&path, None).expect_err("second");
    assert!(matches!(err, SessionError::Locked { .. }), "{err}");
}

#[test]
fn kill_9_during_appends_loses_at_most_the_entry_in_flight() {
    let d = common::dirs();
    let path = new_session_file(&d);
    let mut child = spawn_child("append", &path);
    let mut count = 0;
    let acknowledged = read_marked(&mut child, |_| {
        count += 1;
        count == 40
    });
    child.kill().expect("kill -9");
    let _ = child.wait();

    let s = SessionManager::open(&path, None).expect("open after the kill");
    for id in &acknowledged {
        assert!(s.entry(id).is_some(), "acknowledged entry {id} lost");
    }
    // Entries written after the last acknowledgement may be there too; at most one line is torn.
    let issues = s.load_issues();
    assert!(issues.len() <= 1, "{issues:?}");
    assert!(
        issues.iter().all(|i| i.kind == LoadIssueKind::Torn),
        "{issues:?}"
    );
    let path_ids: Vec<&str> = s.branch_path(None).iter().filter_map(|e| e.id()).collect();
    assert_eq!(path_ids.len(), s.entries().count(), "one unbroken chain");
}

#[test]
fn kill_9_during_an_agent_run_loses_at_most_the_message_in_flight() {
    let d = common::dirs();
    let path = new_session_file(&d);
    let mut child = spawn_child("agent", &path);
    let mut count = 0;
    let acknowledged = read_marked(&mut child, |_| {
        count += 1;
        count == 30
    });
    child.kill().expect("kill -9");
    let _ = child.wait();

    let s = SessionManager::open(&path, None).expect("open after the kill");
    let issues = s.load_issues();
    assert!(
        issues.len() <= 1 && issues.iter().all(|i| i.kind == LoadIssueKind::Torn),
        "{issues:?}"
    );
    let roles: Vec<String> = s
        .branch_path(None)
        .iter()
        .filter_map(|e| e.message_role().map(str::to_string))
        .collect();
    // The parent's "start", then every message the child acknowledged, in order.
    assert!(
        roles.len() > acknowledged.len(),
        "{} entries, {} acknowledged",
        roles.len(),
        acknowledged.len()
    );
    assert_eq!(roles[1..=acknowledged.len()], acknowledged[..]);
    // Each tool call's result follows it, except perhaps for the last call, cut by the kill.
    let messages: Vec<Value> = s
        .branch_path(None)
        .iter()
        .filter_map(|e| e.message_json().cloned())
        .collect();
    for (i, m) in messages.iter().enumerate() {
        let calls: Vec<&str> = m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "toolCall")
            .filter_map(|b| b["id"].as_str())
            .collect();
        for id in calls {
            match messages.get(i + 1) {
                Some(next) => assert_eq!(next["toolCallId"], json!(id), "call {id} unanswered"),
                None => assert_eq!(i, messages.len() - 1),
            }
        }
    }
}
