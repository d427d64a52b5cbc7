//! Property tests: resolved paths never leave the root, reading in windows follows the limits
//! and the offset/limit arithmetic exactly, and edits followed by their inverse restore a file.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::cell::Cell;
use std::fs;
use std::path::Path;

use common::{edit, read, Fixture};
use oxpi_agent_core::AgentToolResult;
use oxpi_tools::{Limits, ReadDetails};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::json;

/// Path pieces that exercise `..`, links in and out, absolute paths and prefixes.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_string()),
        Just(".".to_string()),
        Just(String::new()),
        Just("sub".to_string()),
        Just("up".to_string()),
        Just("link_out".to_string()),
        Just("link_in".to_string()),
        Just("link_secret".to_string()),
        Just("dangling_out".to_string()),
        Just("dangling_in".to_string()),
        Just("loop_a".to_string()),
        Just("root".to_string()),
        Just("root-evil".to_string()),
        Just("outside".to_string()),
        Just("alias".to_string()),
        Just("notes.txt".to_string()),
        "[a-z.~ -]{1,4}",
        any::<String>(),
    ]
}

fn path_string() -> impl Strategy<Value = (bool, Vec<String>)> {
    (any::<bool>(), prop::collection::vec(piece(), 1..8))
}

/// The deepest existing ancestor of `path`, canonicalized (following every link).
fn physical(path: &Path) -> std::path::PathBuf {
    path.ancestors()
        .find_map(|a| fs::canonicalize(a).ok())
        .unwrap()
}

#[test]
fn a_resolved_path_is_always_inside_the_root() {
    // One fixture for all cases: resolving changes nothing on disk.
    let fx = Fixture::new();
    let mut runner = TestRunner::new(ProptestConfig::with_cases(2048));
    let (inside, refused) = (Cell::new(0u32), Cell::new(0u32));
    let result = runner.run(&path_string(), |(absolute, pieces)| {
        let joined = pieces.join("/");
        let path = if absolute {
            format!("{}/{joined}", fx.base().display())
        } else {
            joined
        };
        if let Ok(resolved) = fx.ws.resolve(&path) {
            prop_assert!(resolved.starts_with(&fx.root), "{path:?} -> {resolved:?}");
            prop_assert!(
                physical(&resolved).starts_with(&fx.root),
                "{path:?} -> {resolved:?}"
            );
            inside.set(inside.get() + 1);
        } else {
            refused.set(refused.get() + 1);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Both outcomes were exercised.
    assert!(
        inside.get() > 100 && refused.get() > 100,
        "{inside:?} {refused:?}"
    );
}

/// The reference: lines with their `\n`, taken while they fit.
fn expected(
    content: &str,
    offset: usize,
    limit: Option<usize>,
    max_lines: usize,
    max_bytes: usize,
) -> Result<String, String> {
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let total = lines.len();
    if total == 0 && offset == 1 {
        return Ok("[Empty file]".into());
    }
    let start = offset - 1;
    if start >= total {
        return Err(format!(
            "Offset {offset} is beyond end of file ({total} lines total)"
        ));
    }
    let cap = limit.unwrap_or(usize::MAX).min(max_lines);
    let (mut take, mut bytes) = (0, 0);
    while take < cap && start + take < total && bytes + lines[start + take].len() <= max_bytes {
        bytes += lines[start + take].len();
        take += 1;
    }
    let body: String = lines[start..start + take].concat();
    let next = start + take + 1;
    if start + take == total {
        return Ok(body);
    }
    let end = start + take;
    let notice = if limit == Some(take) {
        format!(
            "[{} more lines in file. Use offset={next} to continue.]",
            total - end
        )
    } else if take == max_lines {
        format!("[Showing lines {offset}-{end} of {total}. Use offset={next} to continue.]")
    } else {
        format!("[Showing lines {offset}-{end} of {total} ({max_bytes}B limit). Use offset={next} to continue.]")
    };
    Ok(format!(
        "{}\n\n{notice}",
        body.strip_suffix('\n').unwrap_or(&body)
    ))
}

fn content() -> impl Strategy<Value = String> {
    // Lines of at most 30 characters (60 bytes), so every line fits in the byte limit.
    (
        prop::collection::vec("[a-zé \r]{0,30}", 0..40),
        any::<bool>(),
    )
        .prop_map(|(lines, end)| {
            let mut s = lines.join("\n");
            if end && !s.is_empty() {
                s.push('\n');
            }
            s
        })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn text_of(result: &AgentToolResult) -> String {
    result.content[0].as_text().unwrap().to_string()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn windows_follow_the_offset_limit_arithmetic(
        content in content(),
        offset in 1usize..45,
        limit in prop::option::of(1usize..15),
        max_lines in 1usize..12,
        max_bytes in 64usize..400,
    ) {
        let fx = Fixture::new();
        fs::write(fx.root.join("f.txt"), &content).unwrap();
        let ws = fx.ws.clone().with_limits(
            Limits::default().with_max_lines(max_lines).with_max_bytes(max_bytes),
        );
        let mut args = json!({ "path": "f.txt", "offset": offset });
        if let Some(limit) = limit {
            args["limit"] = json!(limit);
        }
        let got = runtime().block_on(read(&ws, args)).map(|r| text_of(&r));
        // Sizes under 1 KB print as bytes, which is what the reference writes.
        prop_assert_eq!(got, expected(&content, offset, limit, max_lines, max_bytes));
    }

    #[test]
    fn following_next_offset_reconstructs_the_file(
        content in content(),
        max_lines in 1usize..12,
        max_bytes in 64usize..400,
    ) {
        let fx = Fixture::new();
        fs::write(fx.root.join("f.txt"), &content).unwrap();
        let ws = fx.ws.clone().with_limits(
            Limits::default().with_max_lines(max_lines).with_max_bytes(max_bytes),
        );
        let rt = runtime();
        let mut offset = 1u64;
        let mut rebuilt = String::new();
        loop {
            let got = rt.block_on(read(&ws, json!({ "path": "f.txt", "offset": offset }))).unwrap();
            let ReadDetails::Text(d) = serde_json::from_value(got.details.clone().unwrap()).unwrap() else {
                panic!("text expected");
            };
            let text = text_of(&got);
            prop_assert!(d.lines <= max_lines as u64);
            prop_assert_eq!(d.start_line, offset);
            match d.next_offset {
                Some(next) => {
                    let body = text.split("\n\n[").next().unwrap();
                    prop_assert!(body.len() < max_bytes);
                    rebuilt.push_str(body);
                    rebuilt.push('\n');
                    prop_assert_eq!(next, offset + d.lines);
                    offset = next;
                }
                None => {
                    prop_assert!(text.len() <= max_bytes || content.is_empty());
                    if !content.is_empty() {
                        rebuilt.push_str(&text);
                    }
                    break;
                }
            }
        }
        prop_assert_eq!(rebuilt, content);
    }
}

/// A file of distinct lines (`<i>` starts line i, so no line's text is inside another's) with
/// typographic characters and tabs, either line ending, with or without a BOM and a final break.
fn edit_file() -> impl Strategy<Value = (Vec<String>, bool, bool, bool)> {
    (
        prop::collection::vec("[a-z “”–\t]{0,12}", 1..20),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(rests, crlf, bom, end)| {
            let lines = rests
                .into_iter()
                .enumerate()
                .map(|(i, rest)| format!("<{i}>{rest}"))
                .collect();
            (lines, crlf, bom, end)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Replacing some lines, then replacing the replacements back, gives the file back byte for
    /// byte (line endings, BOM and all).
    #[test]
    fn edits_then_their_inverse_restore_the_file(
        (lines, crlf, bom, end) in edit_file(),
        picks in prop::collection::btree_set(0usize..20, 1..4),
        news in prop::collection::vec("[a-z \n]{0,10}", 4),
    ) {
        let fx = Fixture::new();
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut original = if bom { "\u{feff}".to_string() } else { String::new() };
        original.push_str(&lines.join(eol));
        if end {
            original.push_str(eol);
        }
        fs::write(fx.root.join("f.txt"), &original).unwrap();
        let picks: Vec<usize> = picks.into_iter().filter(|&i| i < lines.len()).collect();
        prop_assume!(!picks.is_empty());
        // `@` is in no line, so each replacement is unique too.
        let replaced: Vec<String> = picks
            .iter()
            .zip(&news)
            .map(|(i, new)| format!("@{i}@{new}"))
            .collect();
        let forward: Vec<_> = picks
            .iter()
            .zip(&replaced)
            .map(|(&i, new)| json!({"oldText": lines[i], "newText": new}))
            .collect();
        let back: Vec<_> = picks
            .iter()
            .zip(&replaced)
            .rev()
            .map(|(&i, new)| json!({"oldText": new, "newText": lines[i]}))
            .collect();
        let rt = runtime();
        rt.block_on(edit(&fx.ws, json!({"path": "f.txt", "edits": forward}))).unwrap();
        let changed = fs::read_to_string(fx.root.join("f.txt")).unwrap();
        prop_assert_ne!(&changed, &original);
        prop_assert_eq!(changed.starts_with('\u{feff}'), bom);
        rt.block_on(edit(&fx.ws, json!({"path": "f.txt", "edits": back}))).unwrap();
        prop_assert_eq!(fs::read_to_string(fx.root.join("f.txt")).unwrap(), original);
    }
}
