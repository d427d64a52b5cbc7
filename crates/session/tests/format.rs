//! The session format without Node: files written and read back, migration of v1 and v2,
//! unknown entries kept, torn lines reported, the layout of files and directories.

mod common;

use oxpi_session::{
    list_sessions, session_dir_for, CompactionRecord, EntryType, LoadIssueKind, NewSessionOptions,
    SessionError, SessionManager,
};
use serde_json::{json, Value};

fn ids(manager: &SessionManager) -> Vec<String> {
    manager
        .entries()
        .map(|e| e.id().expect("id").to_string())
        .collect()
}

#[test]
fn a_new_session_is_written_once_it_has_a_conversation_and_reads_back_whole() {
    let d = common::dirs();
    let mut s = SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new().id("s-1"))
        .expect("create");
    let model = s.append_model_change("faux", "m1").expect("model");
    let file = s.session_file().expect("file").to_path_buf();
    assert!(!file.exists(), "setup entries alone write no file");
    let name = file
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        name.ends_with("_s-1.jsonl") && name.len() == "2024-12-03T14-00-00-000Z_s-1.jsonl".len(),
        "{name}"
    );
    assert_eq!(file.parent(), Some(d.sessions.as_path()));

    let user = s
        .append_message(&oxpi_ai::Message::user("hello"))
        .expect("user");
    let think = s.append_thinking_level_change("high").expect("thinking");
    let custom = s
        .append_custom_entry("ext", Some(json!({"n": 1})))
        .expect("custom");
    let info = s.append_session_info("  my\nsession ").expect("info");
    let label = s.append_label_change(&user, Some("start")).expect("label");

    let written = common::lines(&file);
    assert_eq!(written.len(), 7);
    assert_eq!(
        written[0],
        json!({"type": "session", "version": 3, "id": "s-1",
               "timestamp": written[0]["timestamp"], "cwd": d.cwd.to_string_lossy()})
    );
    let parents: Vec<(Value, Value, Value)> = written[1..]
        .iter()
        .map(|l| (l["type"].clone(), l["id"].clone(), l["parentId"].clone()))
        .collect();
    assert_eq!(
        parents,
        vec![
            (json!("model_change"), json!(model), Value::Null),
            (json!("message"), json!(user), json!(model)),
            (json!("thinking_level_change"), json!(think), json!(user)),
            (json!("custom"), json!(custom), json!(think)),
            (json!("session_info"), json!(info), json!(custom)),
            (json!("label"), json!(label), json!(info)),
        ]
    );
    assert_eq!(written[5]["name"], json!("my session"));
    drop(s);

    let again = SessionManager::open(&file, None).expect("open");
    assert!(again.load_issues().is_empty());
    assert_eq!(again.session_id(), "s-1");
    assert_eq!(again.leaf_id(), Some(label.as_str()));
    assert_eq!(again.label(&user), Some("start"));
    assert_eq!(again.session_name(), Some("my session"));
    let reread: Vec<Value> = again
        .entries()
        .map(|e| Value::Object(e.as_json().clone()))
        .collect();
    assert_eq!(reread, written[1..].to_vec());
    let context = serde_json::to_value(again.build_session_context()).expect("json");
    assert_eq!(
        context,
        json!({"messages": [written[2]["message"]], "thinkingLevel": "high",
               "model": {"provider": "faux", "modelId": "m1"}})
    );
}

#[test]
fn unknown_entry_types_and_fields_are_kept_byte_for_byte() {
    let d = common::dirs();
    std::fs::create_dir_all(&d.sessions).expect("dir");
    let path = d.sessions.join("hand.jsonl");
    let original = concat!(
        r#"{"type":"session","version":3,"id":"h","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p","extra":{"z":1,"a":[1.5,2]}}"#,
        "\n",
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1733234401000,"futureField":{"x":true}}}"#,
        "\n",
        r#"{"type":"future_kind","id":"f1","parentId":"a1","timestamp":"2024-12-03T14:00:02.000Z","payload":[null,"x"]}"#,
        "\n",
        r#"{"type":"message","id":"b1","parentId":"f1","timestamp":"2024-12-03T14:00:03.000Z","message":{"role":"system","content":"","sections":{"preamble":"P"},"timestamp":5}}"#,
        "\n",
    );
    std::fs::write(&path, original).expect("write");
    let mut s = SessionManager::open(&path, None).expect("open");
    let kinds: Vec<EntryType> = s.entries().map(|e| e.entry_type()).collect();
    assert_eq!(
        kinds,
        vec![
            EntryType::Message,
            EntryType::Other("future_kind".into()),
            EntryType::Message
        ]
    );
    let system = s.entry("b1").expect("b1");
    assert_eq!(system.message_role(), Some("system"));
    let typed = s.entry("a1").expect("a1").message().expect("a message");
    assert!(matches!(typed, Ok(oxpi_ai::Message::User(_))), "{typed:?}");
    let new = s
        .append_message(&oxpi_ai::Message::user("more"))
        .expect("append");
    drop(s);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(
        text.starts_with(original),
        "the lines read are not rewritten"
    );
    let last: Value = serde_json::from_str(text[original.len()..].trim_end()).expect("new line");
    assert_eq!(
        (last["id"].clone(), last["parentId"].clone()),
        (json!(new), json!("b1"))
    );
}

#[test]
fn a_v1_file_is_migrated_and_rewritten_as_v3() {
    let d = common::dirs();
    std::fs::create_dir_all(&d.sessions).expect("dir");
    let path = d.sessions.join("v1.jsonl");
    common::write_lines(
        &path,
        &[
            json!({"type": "session", "id": "old", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/p"}),
            json!({"type": "message", "timestamp": "2024-01-01T00:00:01.000Z", "message": {"role": "user", "content": "one", "timestamp": 1}}),
            json!({"type": "message", "timestamp": "2024-01-01T00:00:02.000Z", "message": {"role": "hookMessage", "customType": "h", "content": "hook", "display": true, "timestamp": 2}}),
            json!({"type": "message", "timestamp": "2024-01-01T00:00:03.000Z", "message": {"role": "user", "content": "three", "timestamp": 3}}),
            json!({"type": "compaction", "timestamp": "2024-01-01T00:00:04.000Z", "summary": "S", "firstKeptEntryIndex": 3, "tokensBefore": 9}),
        ],
    );
    let s = SessionManager::open(&path, None).expect("open");
    let ids = ids(&s);
    assert_eq!(ids.len(), 4);
    let written = common::lines(&path);
    assert_eq!(
        written[0]["version"],
        json!(3),
        "the file is rewritten as v3"
    );
    let chain: Vec<(Value, Value)> = written[1..]
        .iter()
        .map(|l| (l["id"].clone(), l["parentId"].clone()))
        .collect();
    assert_eq!(
        chain,
        vec![
            (json!(ids[0]), Value::Null),
            (json!(ids[1]), json!(ids[0])),
            (json!(ids[2]), json!(ids[1])),
            (json!(ids[3]), json!(ids[2])),
        ]
    );
    // Index 3 of the file (the header is 0) is the third message.
    assert_eq!(written[4]["firstKeptEntryId"], json!(ids[2]));
    assert_eq!(written[4].get("firstKeptEntryIndex"), None);
    assert_eq!(written[2]["message"]["role"], json!("custom"));
    let context = serde_json::to_value(s.build_session_context()).expect("json");
    assert_eq!(
        context["messages"],
        json!([
            {"role": "compactionSummary", "summary": "S", "tokensBefore": 9, "timestamp": 1_704_067_204_000_i64},
            {"role": "user", "content": "three", "timestamp": 3},
        ])
    );
}

#[test]
fn a_torn_last_line_is_reported_and_appends_go_on_a_line_of_their_own() {
    let d = common::dirs();
    std::fs::create_dir_all(&d.sessions).expect("dir");
    let path = d.sessions.join("torn.jsonl");
    let good = concat!(
        r#"{"type":"session","version":3,"id":"t","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p"}"#,
        "\n",
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
        "\n",
    );
    let torn = r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"assis"#;
    std::fs::write(&path, format!("{good}{torn}")).expect("write");

    let read_only = SessionManager::open_read_only(&path).expect("read-only");
    let issues: Vec<(usize, u64, LoadIssueKind)> = read_only
        .load_issues()
        .iter()
        .map(|i| (i.line, i.offset, i.kind.clone()))
        .collect();
    assert_eq!(issues, vec![(3, good.len() as u64, LoadIssueKind::Torn)]);
    assert!(
        read_only.load_issues()[0].to_string().contains("line 3"),
        "{}",
        read_only.load_issues()[0]
    );
    drop(read_only);

    let mut s = SessionManager::open(&path, None).expect("open");
    assert_eq!(s.load_issues().len(), 1);
    assert_eq!(s.leaf_id(), Some("a1"));
    let new = s
        .append_message(&oxpi_ai::Message::user("again"))
        .expect("append");
    drop(s);
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(
        text.lines().nth(2),
        Some(torn),
        "the torn bytes are kept on their own line"
    );
    let s = SessionManager::open(&path, None).expect("reopen");
    assert_eq!(s.leaf_id(), Some(new.as_str()));
    assert_eq!(s.entry(&new).and_then(|e| e.parent_id()), Some("a1"));
    assert!(matches!(
        s.load_issues()[0].kind,
        LoadIssueKind::Malformed(_)
    ));
}

#[test]
fn a_file_that_is_not_a_session_is_refused_and_left_alone() {
    let d = common::dirs();
    std::fs::create_dir_all(&d.sessions).expect("dir");
    let path = d.sessions.join("x.jsonl");
    std::fs::write(&path, "{\"type\":\"message\",\"id\":\"a\"}\n").expect("write");
    let err = SessionManager::open(&path, None).expect_err("not a session");
    assert!(matches!(err, SessionError::NotASession { .. }), "{err}");
    assert!(err.to_string().contains("x.jsonl"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "{\"type\":\"message\",\"id\":\"a\"}\n"
    );
}

#[test]
fn the_context_follows_the_leaf_through_compaction_branch_summary_and_edits() {
    let d = common::dirs();
    let mut s =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    let sys = s
        .append_message_json(
            json!({"role": "system", "content": "base", "sections": {"a": "A"}, "timestamp": 10}),
        )
        .expect("system");
    let u1 = s
        .append_message(&oxpi_ai::Message::user("one"))
        .expect("u1");
    let u2 = s
        .append_message(&oxpi_ai::Message::user("two"))
        .expect("u2");
    let u3 = s
        .append_message(&oxpi_ai::Message::user("three"))
        .expect("u3");
    let c = s
        .append_compaction(CompactionRecord::new("SUM", Some(u2.clone()), 123))
        .expect("compaction");
    let cm = s
        .append_custom_message_entry("ext", json!("injected"), false, None)
        .expect("custom message");
    s.append_context_edit(&u3, None).expect("edit");
    let compaction = s.entry(&c).expect("c").clone();
    fn at(s: &SessionManager, e: &str) -> Value {
        let iso = s
            .entry(e)
            .and_then(|e| e.timestamp())
            .expect("timestamp")
            .to_string();
        json!(chrono_millis(&iso))
    }
    let context = serde_json::to_value(s.build_session_context()).expect("json");
    assert_eq!(
        context["messages"],
        json!([
            {"role": "system", "content": "base", "sections": {"a": "A"}, "timestamp": at(&s, &c)},
            {"role": "compactionSummary", "summary": "SUM", "tokensBefore": 123, "timestamp": at(&s, &c)},
            s.entry(&u2).and_then(|e| e.message_json()).expect("u2"),
            {"role": "custom", "customType": "ext", "content": "injected", "display": false, "timestamp": at(&s, &cm)},
        ])
    );
    assert_eq!(compaction.get("firstKeptEntryId"), Some(&json!(u2)));
    let kept: Vec<&str> = s.context_entries().iter().filter_map(|e| e.id()).collect();
    assert_eq!(kept[..3], [c.as_str(), u2.as_str(), u3.as_str()]);
    assert!(!kept.contains(&sys.as_str()) && !kept.contains(&u1.as_str()));

    // Back to u1 with a summary of the path left.
    let leaf = s.leaf_id().expect("leaf").to_string();
    let bs = s
        .branch_with_summary(Some(&u1), "went elsewhere", None)
        .expect("branch");
    assert_eq!(
        s.entry(&bs).and_then(|e| e.str_field("fromId")),
        Some(leaf.as_str())
    );
    let context = serde_json::to_value(s.build_session_context()).expect("json");
    assert_eq!(
        context["messages"],
        json!([
            {"role": "system", "content": "base", "sections": {"a": "A"}, "timestamp": 10},
            s.entry(&u1).and_then(|e| e.message_json()).expect("u1"),
            {"role": "branchSummary", "summary": "went elsewhere", "fromId": leaf, "timestamp": at(&s, &bs)},
        ])
    );
    let path: Vec<&str> = s.branch_path(None).iter().filter_map(|e| e.id()).collect();
    assert_eq!(path, [sys.as_str(), u1.as_str(), bs.as_str()]);
    let llm = oxpi_session::to_llm_messages(&s.build_session_context().messages).expect("llm");
    let roles: Vec<&str> = llm.iter().map(oxpi_ai::Message::role).collect();
    assert_eq!(
        roles,
        ["system", "user", "user"],
        "the system message stays in place (pi 1.6's convertToLlm), the branch summary is a user turn"
    );
}

fn chrono_millis(iso: &str) -> i64 {
    let (date, time) = iso.trim_end_matches('Z').split_once('T').expect("iso");
    let d: Vec<i64> = date.split('-').map(|p| p.parse().expect("date")).collect();
    let (hms, ms) = time.split_once('.').expect("millis");
    let t: Vec<i64> = hms.split(':').map(|p| p.parse().expect("time")).collect();
    // Days from civil (Howard Hinnant's algorithm).
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1] + 9)
    } else {
        (d[0], d[1] - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 24 + t[0]) * 60 + t[1]) * 60_000 + t[2] * 1000 + ms.parse::<i64>().expect("ms")
}

#[test]
fn fork_branch_into_a_new_file_continue_and_list() {
    let d = common::dirs();
    let mut s =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    let u1 = s
        .append_message(&oxpi_ai::Message::user("first"))
        .expect("u1");
    let _l = s.append_label_change(&u1, Some("mark")).expect("label");
    let u2 = s
        .append_message(&oxpi_ai::Message::user("second"))
        .expect("u2");
    let _u3 = s
        .append_message(&oxpi_ai::Message::user("third"))
        .expect("u3");
    let original = s.session_file().expect("file").to_path_buf();

    let other_cwd = d.temp.path().join("other");
    let other_dir = d.temp.path().join("other-sessions");
    let fork =
        SessionManager::fork_from(&original, &other_cwd, &other_dir, NewSessionOptions::new())
            .expect("fork");
    assert_eq!(
        fork.header().parent_session(),
        Some(original.to_string_lossy().as_ref())
    );
    assert_eq!(
        fork.header().cwd(),
        Some(other_cwd.to_string_lossy().as_ref())
    );
    let forked: Vec<Value> = fork
        .entries()
        .map(|e| Value::Object(e.as_json().clone()))
        .collect();
    let source: Vec<Value> = s
        .entries()
        .map(|e| Value::Object(e.as_json().clone()))
        .collect();
    assert_eq!(forked, source);
    drop(fork);

    let branched = s
        .create_branched_session(&u2)
        .expect("branch")
        .expect("file");
    assert_ne!(branched, original);
    let lines = common::lines(&branched);
    assert_eq!(lines[0]["parentSession"], json!(original.to_string_lossy()));
    let kinds: Vec<(Value, Value)> = lines[1..]
        .iter()
        .map(|l| (l["type"].clone(), l["parentId"].clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (json!("message"), Value::Null),
            (json!("message"), json!(u1)),
            (json!("label"), json!(u2)),
        ],
        "the label is moved to the end, the message after it chained to u1"
    );
    assert_eq!(lines[3]["targetId"], json!(u1));
    assert_eq!(s.label(&u1), Some("mark"));
    drop(s);

    let listed = list_sessions(&d.sessions, &d.cwd).expect("list");
    let mut paths: Vec<_> = listed.iter().map(|i| i.path.clone()).collect();
    paths.sort();
    let mut expected = vec![original.clone(), branched.clone()];
    expected.sort();
    assert_eq!(paths, expected);
    let first = listed
        .iter()
        .find(|i| i.path == original)
        .expect("original");
    assert_eq!(
        (first.message_count, first.first_message.as_str()),
        (3, "first")
    );
    assert!(list_sessions(&d.sessions, &other_cwd)
        .expect("list")
        .is_empty());

    let recent = SessionManager::continue_recent(&d.cwd, &d.sessions).expect("continue");
    assert!(
        recent.session_file() == Some(branched.as_path())
            || recent.session_file() == Some(original.as_path())
    );
    assert!(recent.entries().count() >= 3);
}

#[test]
fn the_default_layout_is_pi_s() {
    let agent = std::path::Path::new("/home/u/.pi/agent");
    assert_eq!(
        session_dir_for(agent, std::path::Path::new("/work/my proj")),
        std::path::PathBuf::from("/home/u/.pi/agent/sessions/--work-my proj--")
    );
}

#[test]
fn a_system_message_keeps_its_section_order_on_disk_after_reopening_and_compaction() {
    // pi renders sections in their object order; oxpi's leading message names them preamble,
    // tools, cwd, … — not alphabetical, so a sorted map in between would reorder the prompt.
    let d = common::dirs();
    let mut s =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    let system = oxpi_ai::SystemMessage::text("base")
        .with_section("preamble", Some("P".into()))
        .with_section("tools", Some("T".into()))
        .with_section("cwd", Some("C".into()));
    let names = |m: &oxpi_ai::Message| match m {
        oxpi_ai::Message::System(sys) => sys
            .sections
            .iter()
            .flat_map(|s| s.0.iter().map(|(n, _)| n.clone()))
            .collect::<Vec<_>>(),
        other => panic!("not a system message: {other:?}"),
    };
    let id = s
        .append_message(&oxpi_ai::Message::System(system))
        .expect("system");
    s.append_message(&oxpi_ai::Message::user("hi"))
        .expect("user");
    let in_memory = s.entry(&id).and_then(|e| e.message()).expect("message");
    assert_eq!(
        names(&in_memory.expect("read")),
        ["preamble", "tools", "cwd"]
    );

    let file = s.session_file().expect("file").to_path_buf();
    let text = std::fs::read_to_string(&file).expect("read file");
    let line = text
        .lines()
        .find(|l| l.contains("\"system\""))
        .expect("line");
    let (p, t, c) = (
        line.find("\"preamble\"").expect("preamble"),
        line.find("\"tools\"").expect("tools"),
        line.find("\"cwd\"").expect("cwd"),
    );
    assert!(p < t && t < c, "sections reordered on disk: {line}");

    // A compaction stores the system message the path adds up to; its copy keeps the order too.
    s.append_message(&oxpi_ai::Message::user("more"))
        .expect("user");
    s.append_compaction(CompactionRecord::new("SUM", None, 10))
        .expect("compaction");
    let first_of_context = |s: &SessionManager| {
        let messages =
            oxpi_session::to_llm_messages(&s.build_session_context().messages).expect("messages");
        names(&messages[0])
    };
    assert_eq!(first_of_context(&s), ["preamble", "tools", "cwd"]);

    drop(s);
    let reopened = SessionManager::open(&file, None).expect("open");
    let read = reopened
        .entry(&id)
        .and_then(|e| e.message())
        .expect("message");
    assert_eq!(names(&read.expect("read")), ["preamble", "tools", "cwd"]);
    assert_eq!(first_of_context(&reopened), ["preamble", "tools", "cwd"]);
}
