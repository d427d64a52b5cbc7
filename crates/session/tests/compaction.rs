//! Compaction: thresholds, token estimates, the cut point (never between a tool call and its
//! result), the previous summary carried on; and pi's own `prepareCompaction` on the same file.

mod common;

use oxpi_session::{
    compact, estimate_tokens, prepare_compaction, should_compact, CompactionSettings,
    ContextMessage, NewSessionOptions, SessionManager,
};
use serde_json::{json, Value};

fn assistant_call(id: &str, ts: i64) -> Value {
    json!({"role": "assistant", "content": [{"type": "toolCall", "id": id, "name": "read", "arguments": {"path": "a.txt"}}],
           "api": "faux", "provider": "faux", "model": "faux-1", "stopReason": "toolUse", "timestamp": ts,
           "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}})
}

fn tool_result(id: &str, chars: usize, ts: i64) -> Value {
    json!({"role": "toolResult", "toolCallId": id, "toolName": "read",
           "content": [{"type": "text", "text": "r".repeat(chars)}], "isError": false, "timestamp": ts})
}

/// `turns` turns of a user message (400 chars), a tool call, its result (`result_chars`) and
/// a reply (40 chars).
fn long_session(d: &common::Dirs, turns: usize, result_chars: usize) -> SessionManager {
    let mut s =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    for t in 0..turns {
        let ts = t as i64 * 10;
        s.append_message_json(json!({"role": "user", "content": "u".repeat(400), "timestamp": ts}))
            .expect("user");
        s.append_message_json(assistant_call(&format!("call-{t}"), ts + 1))
            .expect("call");
        s.append_message_json(tool_result(&format!("call-{t}"), result_chars, ts + 2))
            .expect("result");
        s.append_message_json(json!({"role": "assistant", "content": [{"type": "text", "text": "a".repeat(40)}],
            "api": "faux", "provider": "faux", "model": "faux-1", "stopReason": "stop", "timestamp": ts + 3,
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}))
            .expect("reply");
    }
    s
}

/// Every tool result in `messages` follows the call it answers.
fn assert_paired(messages: &[ContextMessage]) {
    for (i, m) in messages.iter().enumerate() {
        if m["role"] == "toolResult" {
            let previous = i.checked_sub(1).map(|p| &messages[p]);
            let calls: Vec<&Value> = previous
                .and_then(|p| p["content"].as_array())
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "toolCall")
                .map(|b| &b["id"])
                .collect();
            assert!(
                calls.contains(&&m["toolCallId"]),
                "result {i} without its call: {messages:?}"
            );
        }
    }
}

#[test]
fn thresholds_and_estimates_are_pi_s() {
    let settings = CompactionSettings::new();
    assert_eq!(
        (settings.reserve_tokens, settings.keep_recent_tokens),
        (16_384, 20_000)
    );
    assert!(!should_compact(100_000 - 16_384, 100_000, &settings));
    assert!(should_compact(100_000 - 16_384 + 1, 100_000, &settings));
    assert!(!should_compact(
        1_000_000,
        100_000,
        &settings.clone().enabled(false)
    ));
    // Characters as JavaScript counts them (UTF-16), / 4 rounded up.
    assert_eq!(
        estimate_tokens(&json!({"role": "user", "content": "abcde"})),
        2
    );
    assert_eq!(
        estimate_tokens(&json!({"role": "user", "content": "😀😀"})),
        1
    );
    assert_eq!(
        estimate_tokens(&json!({"role": "assistant", "content": [
            {"type": "text", "text": "abcd"}, {"type": "thinking", "thinking": "efgh"},
            {"type": "toolCall", "id": "x", "name": "ls", "arguments": {"a": 1}}]})),
        5 // 4 + 4 + 2 + 7 = 17 chars
    );
    assert_eq!(
        estimate_tokens(
            &json!({"role": "user", "content": [{"type": "image", "data": "", "mimeType": "image/png"}]})
        ),
        1200
    );
}

#[test]
fn the_cut_keeps_the_recent_tokens_and_never_splits_a_call_from_its_result() {
    let d = common::dirs();
    let mut s = long_session(&d, 10, 800);
    let settings = CompactionSettings::new().keep_recent_tokens(500);
    let prep = prepare_compaction(&s, &settings).expect("something to compact");
    let first = s.entry(&prep.first_kept_entry_id).expect("first kept");
    assert_ne!(first.message_role(), Some("toolResult"));
    // Each turn is 100 + 5 + 200 + 10 tokens; 500 reach into the second-to-last turn, whose
    // reply is the nearest cut point: the cut falls inside that turn.
    assert_eq!(
        first.message_json().map(|m| m["timestamp"].clone()),
        Some(json!(83))
    );
    assert_eq!(prep.turn_prefix_messages.len(), 3);
    assert_eq!(prep.messages_to_summarize.len(), 8 * 4);
    assert_eq!(prep.tokens_before, 10 * 315);
    assert_eq!(prep.previous_summary, None);

    let id = compact(&mut s, &settings, |p| {
        Ok::<_, String>(format!("summary of {}", p.messages_to_summarize.len()))
    })
    .expect("compact")
    .expect("appended");
    let messages = s.build_session_context().messages;
    assert_eq!(messages[0]["role"], json!("compactionSummary"));
    assert_eq!(messages[0]["summary"], json!("summary of 32"));
    assert_eq!(messages.len(), 1 + 1 + 4);
    assert_paired(&messages);

    // Ten more turns, compacted again: the first summary is handed on.
    for t in 10..20 {
        let ts = t as i64 * 10;
        s.append_message_json(json!({"role": "user", "content": "u".repeat(400), "timestamp": ts}))
            .expect("user");
        s.append_message_json(assistant_call(&format!("call-{t}"), ts + 1))
            .expect("call");
        s.append_message_json(tool_result(&format!("call-{t}"), 800, ts + 2))
            .expect("result");
    }
    let mut seen_previous = None;
    compact(&mut s, &settings, |p| {
        seen_previous = p.previous_summary.clone();
        Ok::<_, String>("second".into())
    })
    .expect("compact")
    .expect("appended");
    assert_eq!(seen_previous.as_deref(), Some("summary of 32"));
    assert_ne!(s.entry(&id).map(|e| e.type_name()), None);
    assert_paired(&s.build_session_context().messages);
}

#[test]
fn tool_results_larger_than_the_budget_keep_the_call_they_answer() {
    let d = common::dirs();
    let s = long_session(&d, 3, 40_000);
    let mut s = s;
    s.append_message_json(json!({"role": "user", "content": "last", "timestamp": 100}))
        .expect("user");
    s.append_message_json(assistant_call("big", 101))
        .expect("call");
    s.append_message_json(tool_result("big", 200_000, 102))
        .expect("result");
    let prep =
        prepare_compaction(&s, &CompactionSettings::new().keep_recent_tokens(1_000)).expect("prep");
    let first = s.entry(&prep.first_kept_entry_id).expect("first");
    assert_eq!(
        first.message_json().map(|m| m["timestamp"].clone()),
        Some(json!(101)),
        "the call, not its result"
    );
}

#[test]
fn a_summarizer_that_fails_leaves_the_session_unchanged() {
    let d = common::dirs();
    let mut s = long_session(&d, 4, 800);
    let before = s.entries().count();
    let err = compact(
        &mut s,
        &CompactionSettings::new().keep_recent_tokens(300),
        |_| Err("model down"),
    )
    .expect_err("fails");
    assert!(matches!(
        err,
        oxpi_session::CompactError::Summarize("model down")
    ));
    assert_eq!(s.entries().count(), before);
}

#[test]
fn pi_prepares_the_same_compaction() {
    let Some(prefix) = common::pi::pi("pi_prepares_the_same_compaction") else {
        return;
    };
    let d = common::dirs();
    let mut s = long_session(&d, 10, 800);
    let settings = CompactionSettings::new().keep_recent_tokens(500);
    compact(&mut s, &settings, |_| {
        Ok::<_, String>("first summary".into())
    })
    .expect("compact");
    for t in 10..14 {
        let ts = t as i64 * 10;
        s.append_message_json(json!({"role": "user", "content": "u".repeat(400), "timestamp": ts}))
            .expect("user");
        s.append_message_json(assistant_call(&format!("call-{t}"), ts + 1))
            .expect("call");
        s.append_message_json(tool_result(&format!("call-{t}"), 800, ts + 2))
            .expect("result");
    }
    same_preparations_as_pi(&prefix, &s, &[1, 300, 500, 900, 5_000]);
}

/// Our preparation of `s` and pi's, for each `keepRecentTokens`, are the same.
fn same_preparations_as_pi(prefix: &std::path::Path, s: &SessionManager, keeps: &[u64]) {
    let file = s
        .session_file()
        .expect("file")
        .to_string_lossy()
        .into_owned();
    for &keep in keeps {
        let ours = prepare_compaction(s, &CompactionSettings::new().keep_recent_tokens(keep));
        let theirs = common::pi::run(
            prefix,
            "compact.mjs",
            include_str!("pi/compact.mjs"),
            &[&file, &keep.to_string()],
        );
        let ours = ours.map_or(Value::Null, |ours| {
            json!({
                "firstKeptEntryId": ours.first_kept_entry_id,
                "messagesToSummarize": ours.messages_to_summarize,
                "turnPrefixMessages": ours.turn_prefix_messages,
                "tokensBefore": ours.tokens_before,
                "previousSummary": ours.previous_summary,
                "readFiles": ours.file_ops.read_files(),
                "modifiedFiles": ours.file_ops.modified_files(),
            })
        });
        assert_eq!(common::as_js(&ours), theirs, "keepRecentTokens {keep}");
    }
}

fn with_usage(mut message: Value, total: u64) -> Value {
    message["usage"]["input"] = json!(total - 10);
    message["usage"]["output"] = json!(10);
    message["usage"]["totalTokens"] = json!(total);
    message
}

fn edit_call(id: &str, path: &str, ts: i64) -> Value {
    let mut call = assistant_call(id, ts);
    call["content"][0]["name"] = json!("edit");
    call["content"][0]["arguments"] = json!({"path": path, "oldText": "a", "newText": "b"});
    call
}

#[test]
fn tokens_before_come_from_the_last_reported_usage_and_file_lists_carry_on_as_pi_s() {
    let Some(prefix) = common::pi::pi("tokens_before_come_from_the_last_reported_usage") else {
        return;
    };
    let d = common::dirs();
    let mut s = long_session(&d, 6, 800);
    // A reply that reported 9,000 context tokens, then a call and its result after it.
    s.append_message_json(json!({"role": "user", "content": "edit b.txt", "timestamp": 200}))
        .expect("user");
    s.append_message_json(with_usage(edit_call("e1", "b.txt", 201), 9_000))
        .expect("edit");
    s.append_message_json(tool_result("e1", 400, 202))
        .expect("result");
    let tokens = oxpi_session::context_tokens(&s);
    assert_eq!(tokens, 9_000 + 100, "the usage plus the result after it");
    same_preparations_as_pi(&prefix, &s, &[300, 2_000]);

    // After a compaction (details from our summarizer) the old usage no longer counts, and the
    // next compaction carries the file lists on.
    let summarizer = |p: oxpi_session::CompactionPreparation, _cancel| async move {
        assert_eq!(p.file_ops.read_files(), ["a.txt"]);
        assert_eq!(p.file_ops.modified_files(), Vec::<String>::new());
        Ok(oxpi_session::CompactionSummary::new("first")
            .with_details(p.file_ops.details())
            .with_from_hook(false))
    };
    futures::executor::block_on(oxpi_session::compact_with(
        &mut s,
        &CompactionSettings::new().keep_recent_tokens(300),
        &summarizer,
        tokio_util::sync::CancellationToken::new(),
    ))
    .expect("compact");
    assert!(oxpi_session::context_tokens(&s) < 9_000);
    for t in 0..4 {
        s.append_message_json(
            json!({"role": "user", "content": "u".repeat(400), "timestamp": 300 + t}),
        )
        .expect("user");
        s.append_message_json(edit_call(&format!("e{t}x"), &format!("c{t}.txt"), 310 + t))
            .expect("edit");
        s.append_message_json(tool_result(&format!("e{t}x"), 800, 320 + t))
            .expect("result");
    }
    same_preparations_as_pi(&prefix, &s, &[300, 900]);
}

fn failed_reply(ts: i64) -> Value {
    json!({"role": "assistant", "content": [], "api": "faux", "provider": "faux", "model": "faux-1",
           "stopReason": "error", "errorMessage": "prompt is too long: 250000 tokens > 200000 maximum",
           "timestamp": ts,
           "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}})
}

/// A session ending in a large prompt whose reply failed and was left out of the context by a
/// context edit (the state overflow recovery compacts in).
fn hidden_attempt_session(d: &common::Dirs) -> (SessionManager, String, String) {
    let mut s = long_session(d, 4, 400);
    let prompt = s
        .append_message_json(
            json!({"role": "user", "content": "p".repeat(2_000), "timestamp": 100}),
        )
        .expect("prompt");
    let attempt = s.append_message_json(failed_reply(101)).expect("attempt");
    s.append_context_edit(&attempt, None).expect("edit");
    (s, prompt, attempt)
}

#[test]
fn the_cut_moves_past_a_hidden_failed_attempt_as_pi_s() {
    let d = common::dirs();
    let (s, prompt, attempt) = hidden_attempt_session(&d);
    // The prompt alone (500 tokens) exceeds the budget: pi moves the cut onto the hidden
    // attempt, so the prompt is summarized as the start of the split turn.
    let p = prepare_compaction(&s, &CompactionSettings::new().keep_recent_tokens(300))
        .expect("prepared");
    assert_eq!(p.first_kept_entry_id, attempt);
    assert_eq!(p.turn_prefix_messages.len(), 1);
    assert_eq!(p.turn_prefix_messages[0]["content"], "p".repeat(2_000));
    assert!(p
        .messages_to_summarize
        .iter()
        .all(|m| m["content"] != "p".repeat(2_000)));
    // A budget the prompt does not reach keeps the cut where it was, before the prompt.
    let p = prepare_compaction(&s, &CompactionSettings::new().keep_recent_tokens(900))
        .expect("prepared");
    assert_ne!(p.first_kept_entry_id, attempt);
    assert_ne!(p.first_kept_entry_id, prompt);

    if let Some(prefix) = common::pi::pi("the_cut_moves_past_a_hidden_failed_attempt_as_pi_s") {
        same_preparations_as_pi(&prefix, &s, &[1, 300, 499, 500, 900, 5_000]);
    }
}

#[test]
fn unsent_input_or_a_visible_reply_after_the_cut_keeps_it_as_pi_s() {
    let d = common::dirs();
    // A prompt typed after the hidden attempt is input not yet answered: the budget is
    // reached at the failed prompt, and the cut stays there.
    let (mut s, prompt, _) = hidden_attempt_session(&d);
    s.append_message_json(json!({"role": "user", "content": "q".repeat(1_200), "timestamp": 102}))
        .expect("unsent");
    let p = prepare_compaction(&s, &CompactionSettings::new().keep_recent_tokens(800))
        .expect("prepared");
    assert_eq!(p.first_kept_entry_id, prompt);
    assert!(p.turn_prefix_messages.is_empty());
    // An attempt replaced (not omitted) by its edit is visible: nothing is hidden.
    let d2 = common::dirs();
    let mut r = long_session(&d2, 4, 400);
    let prompt = r
        .append_message_json(
            json!({"role": "user", "content": "p".repeat(2_000), "timestamp": 100}),
        )
        .expect("prompt");
    let failed = r.append_message_json(failed_reply(101)).expect("attempt");
    r.append_context_edit(&failed, Some(json!({"content": "x"})))
        .expect("edit");
    let p = prepare_compaction(&r, &CompactionSettings::new().keep_recent_tokens(300))
        .expect("prepared");
    assert_eq!(p.first_kept_entry_id, prompt);

    if let Some(prefix) = common::pi::pi("unsent_input_or_a_visible_reply_after_the_cut") {
        same_preparations_as_pi(&prefix, &s, &[300, 800, 900]);
        same_preparations_as_pi(&prefix, &r, &[300, 900]);
    }
}
