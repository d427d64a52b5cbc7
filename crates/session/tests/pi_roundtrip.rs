//! Sessions that move between pi-coding-agent 1.6.0 (its own `SessionManager` under Node 22)
//! and oxpi, both ways: the tree, the leaf and the built context must be the same on both
//! sides, and a turn appended by one is seen by the other. Skips (with a line saying so) when
//! Node is not installed.

mod common;

use common::pi;
use oxpi_session::{CompactionRecord, NewSessionOptions, SessionManager};
use serde_json::{json, Value};

/// The context as JavaScript reads it (see [`common::as_js`]).
fn context(s: &SessionManager) -> Value {
    common::as_js(&serde_json::to_value(s.build_session_context()).expect("context json"))
}

fn ids(s: &SessionManager) -> Vec<Value> {
    s.entries().map(|e| json!(e.id())).collect()
}

fn assistant(text: &str, timestamp: i64) -> oxpi_ai::Message {
    serde_json::from_value(json!({
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "faux", "provider": "faux", "model": "faux-1",
        "usage": {"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop",
        "timestamp": timestamp,
    }))
    .expect("an oxpi-ai assistant message")
}

#[test]
fn a_session_pi_wrote_opens_in_oxpi_and_pi_sees_the_turn_oxpi_added() {
    let Some(prefix) = pi::pi("a_session_pi_wrote_opens_in_oxpi_and_pi_sees_the_turn_oxpi_added")
    else {
        return;
    };
    let d = common::dirs();
    let sessions = d.sessions.to_string_lossy().into_owned();
    let cwd = d.cwd.to_string_lossy().into_owned();
    let out = pi::run(
        &prefix,
        "writer.mjs",
        include_str!("pi/writer.mjs"),
        &[&sessions, &cwd],
    );
    let file = out["file"].as_str().expect("file").to_string();

    let mut s = SessionManager::open(file.as_ref(), None).expect("oxpi opens pi's file");
    assert!(s.load_issues().is_empty(), "{:?}", s.load_issues());
    assert_eq!(json!(s.leaf_id()), out["leaf"]);
    assert_eq!(json!(s.entries().count()), out["count"]);
    assert_eq!(context(&s), out["context"], "oxpi builds pi's context");
    assert_eq!(s.session_name(), Some("pi wrote this"));
    let kinds: Vec<&str> = s.entries().map(|e| e.type_name()).collect();
    for kind in [
        "model_change",
        "thinking_level_change",
        "message",
        "label",
        "custom",
        "compaction",
        "custom_message",
        "session_info",
        "branch_summary",
    ] {
        assert!(kinds.contains(&kind), "pi wrote no {kind}: {kinds:?}");
    }

    // The fork is a file of its own naming pi's file as its parent, with the same context.
    let fork_path = out["fork"].as_str().expect("fork").to_string();
    let fork = SessionManager::open_read_only(fork_path.as_ref()).expect("open fork");
    assert_eq!(fork.header().parent_session(), Some(file.as_str()));
    assert_eq!(context(&fork), out["forkContext"]);

    // The branch left behind is still in the tree.
    let before = out["beforeBranch"].as_str().expect("beforeBranch");
    let other: Vec<Value> = s
        .branch_path(Some(before))
        .iter()
        .map(|e| json!(e.id()))
        .collect();
    assert!(other.len() > 3 && !other.contains(&json!(s.leaf_id())));

    // oxpi continues by one turn on pi's leaf.
    let user = s
        .append_message(&oxpi_ai::Message::user("oxpi was here"))
        .expect("user");
    let reply = s
        .append_message(&assistant("and answered", 5))
        .expect("assistant");
    assert_eq!(
        s.entry(&user).and_then(|e| e.parent_id()),
        out["leaf"].as_str()
    );
    let ours = context(&s);
    let our_ids = ids(&s);
    drop(s);

    let seen = pi::run(
        &prefix,
        "reader.mjs",
        include_str!("pi/reader.mjs"),
        &[&file, ""],
    );
    assert_eq!(seen["leaf"], json!(reply));
    assert_eq!(seen["ids"], Value::Array(our_ids), "pi sees the whole tree");
    assert_eq!(seen["roots"], json!(1));
    assert_eq!(seen["name"], json!("pi wrote this"));
    assert_eq!(seen["context"], ours, "pi builds the context oxpi built");
}

#[test]
fn a_session_oxpi_wrote_opens_in_pi_and_oxpi_sees_the_turn_pi_added() {
    let Some(prefix) = pi::pi("a_session_oxpi_wrote_opens_in_pi_and_oxpi_sees_the_turn_pi_added")
    else {
        return;
    };
    let d = common::dirs();
    let mut s =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    s.append_model_change("faux", "faux-1").expect("model");
    s.append_thinking_level_change("medium").expect("thinking");
    s.append_message_json(json!({"role": "system", "content": "Be brief.", "sections": {"cwd": "/p"}, "timestamp": 1}))
        .expect("system");
    let u1 = s
        .append_message(&oxpi_ai::Message::user("first"))
        .expect("u1");
    let call: oxpi_ai::Message = serde_json::from_value(json!({
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "call_1", "name": "echo", "arguments": {"text": "hi"}}],
        "api": "faux", "provider": "faux", "model": "faux-1",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "toolUse", "timestamp": 2
    }))
    .expect("tool call");
    s.append_message(&call).expect("call");
    s.append_message_json(
        json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "echo",
        "content": [{"type": "text", "text": "echo: hi"}], "isError": false, "timestamp": 3}),
    )
    .expect("result");
    let a1 = s.append_message(&assistant("done one", 4)).expect("a1");
    s.append_label_change(&u1, Some("start")).expect("label");
    s.append_custom_entry("ext", Some(json!({"count": 2})))
        .expect("custom");
    s.append_entry(
        "oxpi_future",
        serde_json::Map::from_iter([("x".to_string(), json!([1, 2]))]),
    )
    .expect("unknown type");
    let c = s
        .append_compaction(
            CompactionRecord::new("Summary so far.", Some(a1.clone()), 999)
                .details(json!({"readFiles": [], "modifiedFiles": ["b.rs"]})),
        )
        .expect("compaction");
    s.append_custom_message_entry(
        "ext",
        json!([{"type": "text", "text": "Injected."}]),
        false,
        None,
    )
    .expect("custom message");
    let u2 = s
        .append_message(&oxpi_ai::Message::user("second"))
        .expect("u2");
    s.append_message(&assistant("done two", 6)).expect("a2");
    s.append_context_edit(&u2, Some(json!({"content": "second, edited"})))
        .expect("edit");
    s.append_session_info("oxpi wrote this").expect("name");
    s.branch_with_summary(Some(&c), "Left the second prompt.", None)
        .expect("branch");
    s.append_message(&oxpi_ai::Message::user("on the branch"))
        .expect("u3");
    let file = s
        .session_file()
        .expect("file")
        .to_string_lossy()
        .into_owned();
    let ours = context(&s);
    let our_ids = ids(&s);
    let our_branch: Vec<Value> = s.branch_path(None).iter().map(|e| json!(e.id())).collect();
    drop(s);

    let seen = pi::run(
        &prefix,
        "reader.mjs",
        include_str!("pi/reader.mjs"),
        &[&file, "pi was here"],
    );
    assert_eq!(
        seen["ids"],
        Value::Array(our_ids),
        "pi sees every entry, the unknown one too"
    );
    assert_eq!(seen["branch"], Value::Array(our_branch));
    assert_eq!(seen["name"], json!("oxpi wrote this"));
    assert_eq!(seen["context"], ours, "pi builds the context oxpi built");
    assert_eq!(seen["header"]["version"], json!(3));

    let s = SessionManager::open(file.as_ref(), None).expect("oxpi opens pi's append");
    assert!(s.load_issues().is_empty(), "{:?}", s.load_issues());
    assert_eq!(json!(s.leaf_id()), seen["appended"]["id"]);
    assert_eq!(context(&s), seen["appended"]["context"]);
}
