//! Session files pi wrote that oxpi must read and keep: lines holding a lone UTF-16 surrogate,
//! unknown message roles, migrations through a symlink; and failures that reach the caller (a
//! folder that does not exist, an append that fails); and a long session's context shares its
//! messages with the entries rather than copying them (issue 46.14).

mod common;

use std::path::Path;

use oxpi_agent_core::{Agent, AgentOptions};
use oxpi_ai::faux::{FauxProvider, FauxReply};
use oxpi_ai::ProviderRegistry;
use oxpi_session::{bind_agent, to_llm_messages, NewSessionOptions, RunError, SessionManager};
use serde_json::{json, Value};

/// A header line (`version` when given) and the lines after it, as they are written.
fn write_raw(path: &Path, version: Option<u64>, lines: &[&str]) -> Vec<String> {
    let mut header = json!({"type": "session", "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"});
    if let Some(v) = version {
        header["version"] = json!(v);
    }
    let mut all = vec![header.to_string()];
    all.extend(lines.iter().map(|l| l.to_string()));
    std::fs::write(path, all.join("\n") + "\n").expect("write");
    all
}

/// An assistant line as `JSON.stringify` writes text cut between the halves of a surrogate pair.
const CUT: &str = r#"{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"cut \ud83d"}],"api":"faux","provider":"faux","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}}"#;
const USER_A: &str = r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}"#;
const USER_C: &str = r#"{"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":"three","timestamp":3}}"#;

fn texts(s: &SessionManager) -> Vec<Value> {
    s.build_session_context()
        .messages
        .iter()
        .map(|m| m["content"].clone())
        .collect()
}

#[test]
fn a_line_with_a_lone_surrogate_is_read_and_written_back_as_it_was() {
    let d = common::dirs();
    std::fs::create_dir_all(&d.sessions).expect("dir");
    let path = d.sessions.join("v3.jsonl");
    let written = write_raw(&path, Some(3), &[USER_A, CUT, USER_C]);
    let s = SessionManager::open(&path, None).expect("open");
    assert_eq!(s.load_issues(), &[]);
    assert_eq!(
        texts(&s),
        vec![
            json!("one"),
            json!([{"type": "text", "text": "cut \u{FFFD}"}]),
            json!("three")
        ]
    );
    drop(s);

    // A fork copies the line byte for byte.
    let fork = SessionManager::fork_from(&path, &d.cwd, &d.sessions, NewSessionOptions::new())
        .expect("fork");
    let forked = std::fs::read_to_string(fork.session_file().expect("file")).expect("read");
    let forked: Vec<&str> = forked.lines().collect();
    assert_eq!(forked[1..], written[1..]);

    // So does a branch into a new file (RPC `fork`): the entries it does not re-parent stay.
    let mut s = SessionManager::open(&path, None).expect("open again");
    let branched = s
        .create_branched_session("c")
        .expect("branch")
        .expect("file");
    drop(s);
    let branched = std::fs::read_to_string(branched).expect("read");
    let branched: Vec<&str> = branched.lines().collect();
    assert_eq!(branched[1..], written[1..]);

    // A v2 file is migrated (its header rewritten); the lines it did not change stay.
    let v2 = d.sessions.join("v2.jsonl");
    let written = write_raw(&v2, Some(2), &[USER_A, CUT, USER_C]);
    let s = SessionManager::open(&v2, None).expect("open v2");
    assert_eq!(texts(&s).len(), 3);
    let migrated = std::fs::read_to_string(&v2).expect("read");
    let migrated: Vec<&str> = migrated.lines().collect();
    let header: Value = serde_json::from_str(migrated[0]).expect("header");
    assert_eq!(header["version"], json!(3));
    assert_eq!(migrated[1..], written[1..]);

    // A v1 file gets ids at the end of each line; the rest of the line stays.
    let v1 = d.sessions.join("v1.jsonl");
    let strip = |l: &str| {
        let mut v: Value = serde_json::from_str(&l.replace("\\ud83d", "X")).expect("json");
        let o = v.as_object_mut().expect("object");
        o.remove("id");
        o.remove("parentId");
        v.to_string().replace('X', "\\ud83d")
    };
    let v1_lines: Vec<String> = [USER_A, CUT, USER_C].iter().map(|l| strip(l)).collect();
    let refs: Vec<&str> = v1_lines.iter().map(String::as_str).collect();
    write_raw(&v1, None, &refs);
    let s = SessionManager::open(&v1, None).expect("open v1");
    let ids: Vec<String> = s
        .entries()
        .map(|e| e.id().expect("id").to_string())
        .collect();
    assert_eq!(
        texts(&s)[1],
        json!([{"type": "text", "text": "cut \u{FFFD}"}])
    );
    let migrated = std::fs::read_to_string(&v1).expect("read");
    let migrated: Vec<&str> = migrated.lines().collect();
    let cut_line = format!(
        "{},\"id\":\"{}\",\"parentId\":\"{}\"}}",
        v1_lines[1].strip_suffix('}').expect("object"),
        ids[1],
        ids[0]
    );
    assert_eq!(migrated[2], cut_line);
}

/// Issue 46.14: a context message read from the file is its entry's very text (no copy per
/// context); the context stays what it was (messages, the model in force), and a request reads
/// it. The lone-surrogate line is shared too (its text with U+FFFD).
#[test]
fn a_context_shares_each_message_with_its_entry() {
    let d = common::dirs();
    std::fs::create_dir_all(&d.sessions).expect("dir");
    let path = d.sessions.join("shared.jsonl");
    write_raw(&path, Some(3), &[USER_A, CUT, USER_C]);
    let s = SessionManager::open_read_only(&path).expect("open");
    let first = s.build_session_context();
    let second = s.build_session_context();
    let entries: Vec<_> = s.entries().collect();
    assert_eq!(first.messages.len(), 3);
    for (i, entry) in entries.iter().enumerate() {
        let own = entry.message_text().expect("an entry read from the file");
        for context in [&first, &second] {
            let shared = context.messages[i].json_text().expect("shared text");
            assert_eq!(shared.as_ptr(), own.as_ptr(), "message {i} was copied");
            assert_eq!(shared.len(), own.len());
        }
    }
    assert_eq!(
        entries[1].message_text().map(|t| t.contains(r"cut \ufffd")),
        Some(true)
    );
    assert_eq!(
        first.model,
        Some(json!({"provider": "faux", "modelId": "m"}))
    );
    assert_eq!(
        first.messages[0],
        json!({"role": "user", "content": "one", "timestamp": 1})
    );
    assert_eq!(first.messages[2].role(), Some("user"));
    let llm = to_llm_messages(&first.messages).expect("llm");
    assert_eq!(
        serde_json::to_value(&llm[1]).expect("json")["content"],
        json!([{"type": "text", "text": "cut \u{FFFD}"}])
    );
    // As serialized for RPC, the messages are the JSON they were read as.
    let serialized = serde_json::to_value(&first.messages).expect("json");
    assert_eq!(serialized[2]["content"], json!("three"));

    // An entry appended in this process is kept as its line too, and shared likewise.
    let mut s = SessionManager::in_memory(&d.cwd);
    let id = s
        .append_message_json(json!({"role": "user", "content": "four", "timestamp": 4}))
        .expect("append");
    let own = s.entry(&id).and_then(|e| e.message_text()).expect("text");
    let context = s.build_session_context();
    assert_eq!(
        context.messages[0].json_text().map(str::as_ptr),
        Some(own.as_ptr())
    );
    assert_eq!(context.messages[0]["content"], json!("four"));
}

fn agent(faux: &FauxProvider) -> Agent {
    let mut registry = ProviderRegistry::new();
    registry.register(faux.clone());
    Agent::new(AgentOptions::new(faux.model()).with_registry(registry))
}

#[test]
fn open_creates_the_missing_folder_so_the_session_is_written() {
    let d = common::dirs();
    let path = d.temp.path().join("not/yet/here/s.jsonl");
    let mut s = SessionManager::open(&path, None).expect("open");
    s.append_message(&oxpi_ai::Message::user("hello"))
        .expect("append");
    let roles: Vec<Value> = common::lines(&path)
        .iter()
        .map(|l| l["message"]["role"].clone())
        .collect();
    assert_eq!(roles, vec![Value::Null, json!("user")]);
}

#[test]
fn open_fails_when_the_folder_cannot_be_made() {
    let d = common::dirs();
    let file = d.temp.path().join("a-file");
    std::fs::write(&file, "x").expect("write");
    let error = SessionManager::open(&file.join("s.jsonl"), None).expect_err("open must fail");
    assert!(
        error
            .to_string()
            .starts_with(&format!("could not create {}", file.display())),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_messages_were_not_appended_ends_with_an_error() {
    let d = common::dirs();
    let dir = d.temp.path().join("gone");
    let faux = FauxProvider::new();
    faux.push(FauxReply::text("hi"));
    let agent = agent(&faux);
    let session = SessionManager::open(&dir.join("s.jsonl"), None).expect("open");
    let binding = bind_agent(&agent, session).expect("bind");
    // The folder goes away before the first message is written.
    std::fs::remove_dir_all(&dir).expect("remove");
    let error = binding
        .prompt(&agent, "hello")
        .await
        .expect_err("not saved");
    let RunError::Append { errors, dropped } = &error else {
        panic!("{error}");
    };
    assert_eq!((errors.len(), *dropped), (2, 0), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("the session was not saved: could not create"),
        "{error}"
    );
    // Taken: the next check is clean.
    assert!(binding.check_appends().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_of_a_role_pi_does_not_know_stays_in_the_file_and_out_of_the_request() {
    let d = common::dirs();
    std::fs::create_dir_all(&d.sessions).expect("dir");
    let path = d.sessions.join("s.jsonl");
    let future = r#"{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"futureNote","note":"x","timestamp":2}}"#;
    let written = write_raw(&path, Some(3), &[USER_A, future, USER_C]);
    let s = SessionManager::open(&path, None).expect("open");
    let context = s.build_session_context().messages;
    assert_eq!(context.len(), 3);
    let messages = to_llm_messages(&context).expect("convert");
    assert_eq!(
        messages,
        vec![
            serde_json::from_value::<oxpi_ai::Message>(
                json!({"role": "user", "content": "one", "timestamp": 1})
            )
            .expect("m"),
            serde_json::from_value::<oxpi_ai::Message>(
                json!({"role": "user", "content": "three", "timestamp": 3})
            )
            .expect("m"),
        ]
    );
    let faux = FauxProvider::new();
    faux.push(FauxReply::text("four"));
    let agent = agent(&faux);
    let binding = bind_agent(&agent, s).expect("bind");
    binding.prompt(&agent, "go on").await.expect("prompt");
    let file = std::fs::read_to_string(&path).expect("read");
    let lines: Vec<&str> = file.lines().collect();
    assert_eq!(lines[..4], written[..]);
    assert_eq!(lines.len(), 6);
}

#[cfg(unix)]
#[test]
fn a_migration_through_a_symlink_rewrites_the_target_and_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let d = common::dirs();
    std::fs::create_dir_all(&d.sessions).expect("dir");
    let real = d.temp.path().join("real.jsonl");
    write_raw(&real, Some(2), &[USER_A]);
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let link = d.sessions.join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let mut s = SessionManager::open(&link, None).expect("open");
    s.append_message(&oxpi_ai::Message::user("two"))
        .expect("append");
    drop(s);
    assert!(std::fs::symlink_metadata(&link)
        .expect("link")
        .file_type()
        .is_symlink());
    let mode = std::fs::metadata(&real).expect("real").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let lines = common::lines(&real);
    assert_eq!(lines[0]["version"], json!(3));
    assert_eq!(lines.len(), 3);
}
